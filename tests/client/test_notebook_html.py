"""The notebook's HTML feedback: the terminal's content, in the learner's cells, escaped, theme-neutral.

The snapshots' JSON are real graded submissions (tests/exercises/feedback); the browser test in
tests/notebook renders this HTML in Chromium and reads it back from the screenshot.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from notebook_format.closure import LineMap, Span
from ppo_submit.html import message_html, submission_html
from ppo_submit.locations import CellLocator, FileLocator
from ppo_submit.render import plain_text, submission_result

SNAPSHOTS = Path(__file__).resolve().parents[1] / "exercises" / "feedback" / "snapshots"
VOID = {"br", "hr", "img", "meta", "input", "wbr"}


class _Checker(HTMLParser):
    """Balanced tags, and the visible text."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.text: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, (tag, self.stack)
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(html: str) -> _Checker:
    checker = _Checker()
    checker.feed(html)
    checker.close()
    assert checker.stack == []
    return checker


def words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("name", sorted(p.stem for p in SNAPSHOTS.glob("*.json")))
def test_every_snapshot_renders_what_the_terminal_says(name: str) -> None:
    sub = json.loads((SNAPSHOTS / f"{name}.json").read_text())
    page = parsed(submission_html(sub))
    shown = words("".join(page.text))
    assert {"style", "script"}.isdisjoint(page.tags)  # inline styles only; nothing runs
    terminal = plain_text(submission_result(sub), 200)
    assert words(terminal.splitlines()[1]) in shown  # the verdict line
    for check in sub["checks"]:
        assert words(check["name"]) in shown
    for cause in (sub.get("feedback") or {}).get("root_causes") or []:
        assert words(cause["headline"]) in shown
    for mistake in (sub.get("feedback") or {}).get("diagnosis") or []:
        assert words(mistake["title"]) in shown


def test_places_are_the_learners_cells() -> None:
    sub = json.loads((SNAPSHOTS / "syntax.json").read_text())
    cause = sub["feedback"]["root_causes"][0]
    line = cause["location"]["line"]
    locator = CellLocator(sub["filename"], LineMap((Span(line - 1, line + 5, "cell 7", 2),)))
    shown = words("".join(parsed(submission_html(sub, locator=locator)).text))
    assert f"{sub['filename']}: cell 7, line 3, column {cause['location']['column']}" in shown
    assert f"3 | {words(cause['location']['source'])}" in shown


def test_everything_is_escaped() -> None:
    sub = json.loads((SNAPSHOTS / "one_mistake.json").read_text())
    sub["checks"][0]["name"] = "<script>alert(1)</script>"
    sub["stdout"] = "<img src=x onerror=alert(1)>"
    page = submission_html(sub)
    assert "<script>" not in page and "<img" not in page and "&lt;script&gt;" in page


def test_text_keeps_the_notebooks_colour_on_light_and_dark_themes() -> None:
    sub = json.loads((SNAPSHOTS / "two_mistakes_diagnosed.json").read_text())
    page = submission_html(sub)
    # no fixed text colour on blocks of text and no opaque background: only translucent tints
    assert "color:inherit" in page
    assert not re.search(r"background:(#|rgb\()", page)
    assert all(float(alpha) <= 0.15 for alpha in re.findall(r"background:rgba\([^)]*,\s*([0-9.]+)\)", page))


def test_a_message_is_one_escaped_sentence() -> None:
    page = parsed(message_html("compute_gae uses `helper` <b>", kind="error"))
    assert words("".join(page.text)) == "error: compute_gae uses `helper` <b>"


def test_file_locator_keeps_the_py_behaviour() -> None:
    locator = FileLocator("typo.py", "src/typo.py")
    assert locator.where({"file": "typo.py", "line": 3, "column": 5}) == "src/typo.py:3:5"
    assert locator.text('File "typo.py", line 3') == 'File "src/typo.py", line 3'


def test_cell_locator_rewrites_tracebacks_and_says_when_a_line_is_its_own() -> None:
    locator = CellLocator("gae.ipynb", LineMap((Span(4, 9, "cell 7", 1),)))
    assert locator.text('  File "gae.ipynb", line 6, in compute_gae') == (
        '  File "gae.ipynb", cell 7, line 3, in compute_gae')
    assert locator.where({"line": 2, "column": 1}) == "gae.ipynb: line 2 of what was sent, column 1"

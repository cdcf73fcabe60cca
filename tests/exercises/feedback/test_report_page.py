"""server/submissions/report_page.py: the web pages' layout of the same feedback data the CLI shows."""

from __future__ import annotations

import copy
import re
from html.parser import HTMLParser
from typing import Any

from ppo_submit.render import plain_text, submission_result
from server.submissions.report_page import feedback_html


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def _read(html: str) -> _Text:
    parser = _Text()
    parser.feed(html)
    return parser


def test_the_page_and_the_terminal_say_the_same_things_once(graded: dict[str, dict[str, Any]]) -> None:
    sub = graded["typo"]
    page = "".join(_read(feedback_html(sub)).parts)
    terminal = plain_text(submission_result(sub), 120)
    summary, (cause,) = sub["feedback"]["summary"], sub["feedback"]["root_causes"]
    for text in (cause["headline"], summary["next_step"], "name 'value' is not defined", "typo.py:11:28",
                 cause["location"]["source"]):
        assert page.count(text) == 1, text
        assert terminal.count(text) == 1, text


def test_learner_text_is_escaped(graded: dict[str, dict[str, Any]]) -> None:
    sub = copy.deepcopy(graded["typo"])
    evil = '<script>alert("x")</script>'
    sub["feedback"]["root_causes"][0]["message"] = evil
    sub["feedback"]["root_causes"][0]["location"]["source"] = evil
    sub["checks"][0]["name"] = evil
    html = feedback_html(sub)
    assert "<script>" not in html and "script" not in _read(html).tags
    assert "&lt;script&gt;" in html


def test_a_row_without_feedback_data_shows_its_verdict_and_checks(graded: dict[str, dict[str, Any]]) -> None:
    sub = {**graded["one_mistake"], "feedback": None}
    html = feedback_html(sub)
    assert f"Verdict: graded · Score: {sub['score']:g} / 100" in html
    assert len(re.findall(r"<tr>", html)) == 1 + len(sub["checks"])
    assert feedback_html({**sub, "status": "queued"}) == '<p class="fb-summary">queued…</p>'


def test_the_dashboards_submission_block_uses_the_same_layout(graded: dict[str, dict[str, Any]]) -> None:
    """The dashboard's feedback section lays out a stored row's feedback data with this renderer."""
    from server.models import CheckResult, Submission
    from server.submissions.report_page import feedback_section as dashboard_block

    sub = graded["typo"]
    row = Submission(status="done", verdict=sub["verdict"], score=sub["score"], message=sub["message"],
                     feedback=sub["feedback"], stdout="", stderr="", timings={},
                     checks=[CheckResult(name=c["name"], weight=c["weight"], passed=c["passed"], message=c["message"],
                                         mistake_title=c["mistake_title"], position=i)
                             for i, c in enumerate(sub["checks"])])
    block = dashboard_block(row)
    assert feedback_html(sub) in block
    text = "".join(_read(block).parts)
    assert text.count("name 'value' is not defined") == 1 and text.count("typo.py:11:28") == 1
    row.feedback = None  # a row graded before feedback data: its checks, as before
    assert "Checks (0 of 12 passed)" in dashboard_block(row)  # the shape check is withheld: no right values

"""The layout of a submission's feedback data (the server's ``feedback`` field) for a terminal.

The server decides what the feedback says (``exercises/feedback.py``: root causes, named
mistakes, summary, next step); this module only arranges it, compiler-style::

    Verdict: graded · Score: 6 / 100 · 1 of 12 checks passed

    error: Your function raised NameError on every call (11 checks)
      --> typo.py:11:28
       |
    11 |     v = torch.where(valid, value, torch.zeros_like(values)).detach()
       |                            ^^^^^ NameError: name 'value' is not defined
       = failed: advantages on random padded inputs · returns = advantages + values ...

    Next: Fix this NameError first: it explains all 11 failed checks.

then the checks table. Everything wraps at word boundaries within the console's width; a
source line too wide for the caret under it is wrapped and its column named instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from .api import Submission
from .locations import FileLocator, Locator


def hanging(label: Text, body: RenderableType, indent: int = 0) -> RenderableType:
    """``label`` then ``body``, whose wrapped lines stay to the right of the label."""
    grid = Table.grid(padding=(0, 1, 0, 0))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row(label, body)
    return Padding(grid, (0, 0, 0, indent)) if indent else grid


class SourceSnippet:
    """The gutter, the source line and the caret with its label, fitted to the width."""

    def __init__(self, location: dict[str, Any], label: str, line: int | None = None) -> None:
        self.line = int(location.get("line") or 0) if line is None else line
        self.column = max(1, int(location.get("column") or 1))
        self.end_column = max(self.column + 1, int(location.get("end_column") or self.column + 1))
        # a tab is shown as one space so that the caret, counted in characters, stays aligned
        self.source = str(location.get("source") or "").replace("\t", " ")
        self.label = label

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        number = str(self.line)
        pad = " " * len(number)
        width = options.max_width
        yield Text(f"{pad} |", style="bold blue")
        gutter = f"{number} | "
        if len(gutter) + len(self.source) <= width:
            yield Text.assemble((gutter, "bold blue"), self.source)
            carets = " " * (self.column - 1) + "^" * (self.end_column - self.column)
            prefix = Text(f"{pad} | ", style="bold blue")
            if len(prefix) + len(carets) + 1 + len(self.label) <= width:
                yield Text.assemble(prefix, (carets, "bold red"), " ", (self.label, "bold red"))
            else:
                yield Text.assemble(prefix, (carets, "bold red"))
                yield Padding(Text(f"= {self.label}", style="bold red"), (0, 0, 0, len(pad) + 1))
        else:  # too wide to underline: wrap the line and name the column
            yield Padding(Text(self.source, overflow="fold"), (0, 0, 0, len(gutter)))
            yield Padding(Text(f"= at column {self.column}: {self.label}", style="bold red"), (0, 0, 0, len(pad) + 1))


def root_cause(cause: dict[str, Any], index: int | None, *, locator: Locator, verbose: bool) -> list[RenderableType]:
    """One root cause: headline, location (in the learner's terms: ``locator``), source with
    caret, and the checks it failed."""
    label = f"{cause.get('exception', 'Error')}: {cause.get('message', '')}".rstrip(": ")
    if cause.get("phase") == "syntax":  # the headline names the SyntaxError already
        label = str(cause.get("message") or "here")
    tag = f"error[{index}]" if index is not None else "error"
    parts: list[RenderableType] = [
        Text.assemble((tag, "bold red"), (": ", "bold"), (str(cause.get("headline") or label), "bold"))
    ]
    location = cause.get("location")
    if isinstance(location, dict):
        # one line even when wider than the terminal: editors and terminals link path:line:col
        parts.append(Text.assemble(("  --> ", "bold blue"), locator.where(location), no_wrap=True, overflow="ignore"))
        parts.append(SourceSnippet(location, label, line=locator.line(location)))
    else:
        parts.append(Padding(Text(label, style="bold red"), (0, 0, 0, 2)))
    checks = [str(c) for c in cause.get("checks") or []]
    if checks:
        line = str(cause.get("checks_line") or " · ".join(checks))
        parts.append(hanging(Text("= failed:", style="bold blue"), Text(line), indent=2))
    if verbose and cause.get("traceback"):
        parts.append(Padding(Text(locator.text(str(cause["traceback"])).rstrip(), style="dim"), (0, 0, 0, 2)))
    return parts


def mistakes(diagnosis: Sequence[dict[str, Any]]) -> list[RenderableType]:
    """The named mistakes, numbered, each with its fix and the checks it explains."""
    if not diagnosis:
        return []
    parts: list[RenderableType] = [Text(f"Mistakes found ({len(diagnosis)}):", style="bold yellow")]
    for i, item in enumerate(diagnosis, 1):
        lines: list[RenderableType] = [
            Text(str(item.get("title") or item.get("mistake_id") or item.get("misconception") or ""), style="bold")
        ]
        if item.get("fix"):
            lines.append(hanging(Text("fix:", style="bold"), Text(str(item["fix"]))))
        checks = [str(c) for c in item.get("checks") or []]
        if checks:
            lines.append(hanging(Text("checks:", style="dim bold"), Text(" · ".join(checks), style="dim")))
        parts.append(hanging(Text(f"{i}.", style="bold yellow"), Group(*lines), indent=2))
    return parts


def check_results(
    checks: Sequence[Mapping[str, Any]], causes: Sequence[Mapping[str, Any]], details: Iterable[Mapping[str, Any]]
) -> list[str]:
    """Each check's short result for the table: which error above, or the feedback's short text."""
    by_name = {str(d.get("check")): d for d in details if isinstance(d, dict)}
    out = []
    for check in checks:
        detail = by_name.get(str(check.get("name", "")))
        if check.get("passed") or detail is None:
            out.append("ok" if check.get("passed") else str(check.get("message") or "").strip().split("\n", 1)[0])
        elif detail.get("cause"):
            out.append("see the error above" if len(causes) == 1 else f"see error[{detail['cause']}] above")
        else:
            out.append(str(detail.get("text") or ""))
    return out


def layout(
    sub: Submission,
    data: dict[str, Any],
    *,
    verbose: bool,
    local_path: str | None = None,
    locator: Locator | None = None,
) -> list[RenderableType]:
    """The feedback, summary first: verdict and score, mistakes, root causes, next step, checks.

    Places are shown by ``locator``; by default the submitted file's name becomes ``local_path``.
    """
    from .render import _verdict_line, checks_table, failure_details

    summary = data.get("summary") or {}
    causes = [c for c in data.get("root_causes") or [] if isinstance(c, dict)]
    diagnosis = [d for d in data.get("diagnosis") or [] if isinstance(d, dict)]
    checks = sub.get("checks") or []
    locator = locator or FileLocator(sub.get("filename"), local_path)
    total = summary.get("checks_total") or 0
    counted = f"{summary.get('checks_passed', 0)} of {total} checks passed" if total else ""
    parts: list[RenderableType] = [_verdict_line(sub, counted)]
    headline = str(summary.get("headline") or "")
    # a graded run's headline is the count above; a root cause says the rest better than the
    # jail's one-line message (which repeats the syntax error's line, for one)
    if headline and sub.get("verdict") != "graded" and not causes:
        parts.append(Text(headline))
    if diagnosis:
        parts.append(Text(""))
        parts.extend(mistakes(diagnosis))
    numbered = len(causes) > 1
    for i, cause in enumerate(causes, 1):
        parts.append(Text(""))
        parts.extend(root_cause(cause, i if numbered else None, locator=locator, verbose=verbose))
    if summary.get("next_step"):
        parts.append(Text(""))
        parts.append(hanging(Text("Next:", style="bold green"), Text(str(summary["next_step"]))))
    if checks:
        parts.append(Text(""))
        parts.append(checks_table(checks, check_results(checks, causes, summary.get("details") or [])))
        if verbose:
            details = failure_details(checks, rename=locator.text)
            if details is not None:
                parts.append(details)
    return parts

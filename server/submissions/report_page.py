"""A submission's feedback as HTML: the one renderer the web pages use.

The same data ``ppo-submit`` lays out in a terminal (``exercises/feedback.py`` builds it; the
API serves it as ``feedback``), laid out for a browser: the summary first (verdict, score,
checks passed), the named mistakes, each root cause once with its file, line, source line and
caret, the next thing to fix, then the checks. Nothing here decides what to say.

Two entry points, one layout:

- :func:`feedback_html`: the fragment for the API's body (``GET /api/v1/submissions/{id}``).
- :func:`feedback_section`: a stored row's ``<section id="feedback">`` for a page (the dashboard's
  submission page): the same fragment, or the row's checks when it was graded before feedback
  data existed, then the timings and resources and the captured output (capped as the CLI caps it).
  A notebook submission's places are its cells (``cell 7, line 3``: ``server.submissions.places``).

Every value passes through ``e()``; the markup needs :data:`FEEDBACK_CSS` on the page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from exercises.report import WITHHELD
from sandbox.text import cap
from server.models import CheckResult, Status, Submission
from server.submissions.places import CellPlaces
from server.submissions.schemas import CheckPublic, Feedback, Mistake, RootCause, SubmissionPublic
from server.web.html import e, format_score

#: Captured output shown at most this many characters per stream (the CLI's cap).
OUTPUT_MAX_CHARS = 2000

#: Styles for the classes the markup uses: the fragment's (``fb-`` prefixed, to sit beside any
#: page's CSS) and the section's list of checks for rows graded before feedback data.
FEEDBACK_CSS = """
.fb-summary{font-weight:600;margin:.4rem 0}
.fb-error{border-left:4px solid #c0262d;padding:.2rem .8rem;margin:.8rem 0;background:#fdf3f3}
.fb-error h3,.fb-mistakes h3{font-size:1rem;margin:.3rem 0}
.fb-where{font-family:ui-monospace,monospace;color:#1d4ed8}
.fb-code{font:13px/1.4 ui-monospace,monospace;margin:.3rem 0;white-space:pre;overflow-x:auto}
.fb-caret{color:#c0262d;font-weight:700}
.fb-checks-line{color:#475467}
.fb-mistakes{border-left:4px solid #d97706;padding:.2rem .8rem;background:#fffaf0}
.fb-next{font-weight:600;color:#166534}
.fb-pass{color:#166534}.fb-fail{color:#c0262d}.fb-held{color:#b45309}
.check-message pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:.3rem 0}
.verdict{font-weight:600}
.pass{color:#166534}.fail{color:#b42318}.held{color:#b45309}
ul.checks{list-style:none;padding:0}ul.checks li{margin:.5rem 0;padding:.4rem .6rem;border-left:4px solid #e3e7ee}
ul.checks li.failed{border-left-color:#b42318}ul.checks li.held{border-left-color:#d97706}ul.checks li.passed{border-left-color:#166534}
.mistake{background:#fff8db;border:1px solid #f5d76e;border-radius:.3rem;padding:.3rem .5rem;margin-top:.3rem}
"""


def _snippet(cause: RootCause, places: CellPlaces | None) -> str:
    loc = cause.location
    assert loc is not None
    label = cause.message if cause.phase == "syntax" else f"{cause.exception}: {cause.message}"
    number = str(places.line(loc.line) if places else loc.line)
    pad = " " * len(number)
    source = loc.source.replace("\t", " ")
    carets = " " * (loc.column - 1) + "^" * max(1, loc.end_column - loc.column)
    return (
        f'<pre class="fb-code">{e(pad)} |\n{e(number)} | {e(source)}\n'
        f'{e(pad)} | <span class="fb-caret">{e(carets)} {e(label)}</span></pre>'
    )


def _root_cause(cause: RootCause, index: int | None, places: CellPlaces | None) -> str:
    tag = f"error[{index}]" if index is not None else "error"
    parts = [f'<section class="fb-error"><h3>{e(tag)}: {e(cause.headline)}</h3>']
    if cause.location is not None:
        loc = cause.location
        where = places.where(loc.file, loc.line, loc.column) if places else f"{loc.file}:{loc.line}:{loc.column}"
        parts.append(f'<div class="fb-where">{e(where)}</div>')
        parts.append(_snippet(cause, places))
    else:
        parts.append(f"<p>{e(cause.exception)}: {e(cause.message)}</p>")
    if cause.checks:
        parts.append(f'<p class="fb-checks-line">failed: {e(cause.checks_line or " · ".join(cause.checks))}</p>')
    parts.append("</section>")
    return "".join(parts)


def _results(checks: Sequence[CheckPublic], feedback: Feedback) -> list[str]:
    details = {d.check: d for d in feedback.summary.details}
    out = []
    for check in checks:
        detail = details.get(check.name)
        if check.passed or detail is None:
            out.append("ok" if check.passed else check.message.split("\n", 1)[0])
        elif detail.cause is not None:
            out.append("see the error above" if len(feedback.root_causes) == 1 else f"see error[{detail.cause}] above")
        else:
            out.append(detail.text)
    return out


def withheld(check: CheckResult | CheckPublic) -> bool:
    """A check that passed but whose points are not counted yet (the judge's ``Not counted
    yet: ...``): shown as such, never as a failure, in every view (a score-only one too)."""
    return not check.passed and (check.message or "").startswith(WITHHELD)


def _checks_table(checks: Sequence[CheckPublic], results: Sequence[str]) -> str:
    rows = []
    for check, result in zip(checks, results, strict=True):
        mark = '<td class="fb-pass">✓</td>' if check.passed else '<td class="fb-fail">✗</td>'
        if withheld(check):
            mark, result = '<td class="fb-held" title="not counted yet">–</td>', check.message.split("\n", 1)[0]
        rows.append(
            f'<tr>{mark}<td>{e(check.name)}</td><td class="num">{format_score(check.weight)}</td>'
            f"<td>{e(result)}</td></tr>"
        )
    return (
        '<table class="fb-checks"><thead><tr><th></th><th>Check</th><th class="num">Points</th>'
        f"<th>Result</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _mistakes(diagnosis: Sequence[Mistake]) -> str:
    items = []
    for mistake in diagnosis:
        fix = f"<br>fix: {e(mistake.fix)}" if mistake.fix else ""
        checks = (
            f'<br><span class="fb-checks-line">checks: {e(" · ".join(mistake.checks))}</span>' if mistake.checks else ""
        )
        items.append(f"<li>Likely mistake: <strong>{e(mistake.title)}</strong>{fix}{checks}</li>")
    return f'<section class="fb-mistakes"><h3>Mistakes found ({len(diagnosis)})</h3><ol>{"".join(items)}</ol></section>'


def _fragment(
    verdict: str | None,
    score: float | None,
    message: str,
    checks: Sequence[CheckPublic],
    feedback: Feedback | None,
    places: CellPlaces | None = None,
) -> str:
    """The layout itself: summary, mistakes, root causes, next step, checks. ``places``: a
    notebook submission's cells, which its locations are shown in."""
    head = f"Verdict: {verdict or '-'}"
    if score is not None:
        head += f" · Score: {format_score(score)} / 100"
    if feedback is None:
        results = [("ok" if c.passed else c.message.split("\n", 1)[0]) for c in checks]
        shown = f"<p>{e(message)}</p>" if message else ""
        table = _checks_table(checks, results) if checks else ""
        return f'<div class="fb"><p class="fb-summary">{e(head)}</p>{shown}{table}</div>'
    summary = feedback.summary
    if summary.checks_total:
        head += f" · {summary.checks_passed} of {summary.checks_total} checks passed"
    parts = ['<div class="fb">', f'<p class="fb-summary">{e(head)}</p>']
    if summary.headline and verdict != "graded" and not feedback.root_causes:
        parts.append(f"<p>{e(summary.headline)}</p>")
    if feedback.diagnosis:
        parts.append(_mistakes(feedback.diagnosis))
    numbered = len(feedback.root_causes) > 1
    for i, cause in enumerate(feedback.root_causes, 1):
        parts.append(_root_cause(cause, i if numbered else None, places))
    if summary.next_step:
        parts.append(f'<p class="fb-next">Next: {e(summary.next_step)}</p>')
    if checks:
        parts.append(_checks_table(checks, _results(checks, feedback)))
    parts.append("</div>")
    return "".join(parts)


def feedback_html(submission: SubmissionPublic | Mapping[str, Any]) -> str:
    """The feedback of one submission (``GET /api/v1/submissions/{id}``'s body, or its model)
    as an escaped HTML fragment: summary, mistakes, root causes, next step, checks.

    A submission still queued or running says so; one stored before feedback data existed
    shows its verdict, message and checks.
    """
    sub = submission if isinstance(submission, SubmissionPublic) else SubmissionPublic.model_validate(submission)
    if sub.status != "done":
        return f'<p class="fb-summary">{e(sub.status)}…</p>'
    return _fragment(sub.verdict, sub.score, sub.message, sub.checks, sub.feedback)


def _stored_fragment(submission: Submission) -> str | None:
    """The same fragment for a stored row (its checks loaded), when it carries feedback data;
    None for a row that does not (graded before migration 0005, or not done)."""
    if submission.status != Status.DONE.value or not submission.feedback:
        return None
    try:
        feedback = Feedback.model_validate(submission.feedback)
    except ValidationError:
        return None
    checks = [
        CheckPublic(name=c.name, weight=c.weight, passed=c.passed, message=c.message, mistake_title=c.mistake_title)
        for c in submission.checks
    ]
    places = CellPlaces.of(submission.filename, submission.source or "")
    return _fragment(submission.verdict, submission.score, submission.message, checks, feedback, places)


# --- a stored row's section on a page --------------------------------------------------------


def feedback_section(submission: Submission, visible: SubmissionPublic | None = None) -> str:
    """The feedback block for one stored submission (checks loaded), as escaped HTML. ``visible``:
    the record as the viewer may see it (``server.courses.feedback_policy.visible_report``),
    laid out instead of the row's own verdict, checks, feedback and output."""
    if submission.status != Status.DONE.value:
        state = "waiting in the queue" if submission.status == Status.QUEUED.value else "being graded now"
        if submission.status == Status.QUEUED.value and visible is not None:
            state += queue_place(visible.queue_position, visible.estimated_seconds)
        return (
            f'<section class="feedback" id="feedback"><p class="muted">This submission is {e(state)}; '
            "the page updates by itself when the verdict arrives.</p></section>"
        )
    parts = ['<section class="feedback" id="feedback">']
    if visible is not None:
        places = CellPlaces.of(submission.filename, submission.source or "")
        parts.append(
            _fragment(visible.verdict, visible.score, visible.message, visible.checks, visible.feedback, places)
            if visible.feedback is not None
            else _checks_html(visible)
        )
        return _with_output(parts, visible, _resources(visible))
    # the summary, mistakes, root causes and checks, laid out from the same data ppo-submit shows;
    # a row graded before feedback data (migration 0005) shows its checks as they were shown then
    parts.append(_stored_fragment(submission) or _checks_html(submission))
    return _with_output(parts, submission, _resources(submission))


def queue_place(ahead: int | None, estimated: int | None) -> str:
    """``: position 3 in the queue, about 12 s`` (the estimate only when the server measured a
    rate: ``SubmissionPublic.estimated_seconds``); "" without a position."""
    if ahead is None:
        return ""
    text = f": position {ahead + 1} in the queue"
    return text if estimated is None else f"{text}, about {estimated} s"


def _checks_html(submission: Submission | SubmissionPublic) -> str:
    """Verdict, score, message and every check with its message and named mistake."""
    verdict = submission.verdict or "–"
    parts = [f'<p><span class="verdict">Verdict: {e(verdict)}</span>']
    if submission.score is not None:
        parts.append(f' · <span class="score">Score: {e(format_score(submission.score))} / 100</span>')
    parts.append("</p>")
    if submission.message:
        parts.append(f'<p class="message">{e(submission.message)}</p>')
    checks: list[CheckResult | CheckPublic] = list(submission.checks)
    if checks:
        passed = sum(1 for c in checks if c.passed)
        parts.append(f'<h2>Checks ({passed} of {len(checks)} passed)</h2><ul class="checks">')
        for check in checks:
            mark, css, span = ("✓ passed", "passed", "pass") if check.passed else ("✗ failed", "failed", "fail")
            if withheld(check):
                mark, css, span = "– not counted yet", "held", "held"
            message = check.message or ""
            if check.mistake_title:
                # the judge appends the mistake to the message; show it once, on its own line
                message = message.replace(f" This matches a known mistake: {check.mistake_title}", "")
            body = (
                f'<div class="check-message"><pre>{e(message.rstrip())}</pre></div>'
                if message.strip() and not check.passed
                else ""
            )
            miss = (
                f'<div class="mistake">Likely mistake: {e(check.mistake_title)}</div>'
                if check.mistake_title and not check.passed
                else ""
            )
            parts.append(
                f'<li class="check {css}"><span class="{span}">{mark}</span> '
                f'<b class="check-name">{e(check.name)}</b> <span class="muted">({e(format_score(check.weight))} points)</span>'
                f"{body}{miss}</li>"
            )
        parts.append("</ul>")
    return "".join(parts)


def _with_output(parts: list[str], submission: Submission | SubmissionPublic, resources: str) -> str:
    """The timings and resources, the captured output, and the section's end."""
    if resources:
        parts.append(f'<p class="muted timing">{e(resources)}</p>')
    for stream in ("stdout", "stderr"):
        captured = getattr(submission, stream) or ""
        if captured.strip():
            shown = cap(captured, OUTPUT_MAX_CHARS)
            parts.append(f"<h2>Captured {stream}</h2><pre>{e(shown)}</pre>")
    parts.append("</section>")
    return "".join(parts)


def _resources(submission: Submission | SubmissionPublic) -> str:
    """``graded in 0.21 s (queued 0.003 s) · cpu 0.1 s · peak memory 12.0 MiB``, as the CLI says it."""
    timings = dict(submission.timings or {})
    found = []
    graded = timings.get("grade_seconds", timings.get("total"))
    if isinstance(graded, int | float):
        text = f"graded in {format_score(graded)} s"
        queued = timings.get("queue_seconds")
        if isinstance(queued, int | float):
            text += f" (queued {format_score(queued)} s)"
        found.append(text)
    if submission.cpu_seconds is not None:
        found.append(f"cpu {format_score(submission.cpu_seconds)} s")
    if submission.peak_memory_bytes is not None:
        found.append(f"peak memory {_memory(submission.peak_memory_bytes)}")
    return " · ".join(found)


def _memory(n_bytes: int) -> str:
    value = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")

"""A submission's feedback as an HTML fragment, for the web pages.

The same data ``ppo-submit`` lays out in a terminal (``exercises/feedback.py`` builds it; the
API serves it as ``feedback``), laid out for a browser: the summary first (verdict, score,
checks passed), the named mistakes, each root cause once with its file, line, source line and
caret, the next thing to fix, then the checks. Nothing here decides what to say.

Every value is escaped here; the fragment needs :data:`FEEDBACK_CSS` on the page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from pydantic import ValidationError

from server.models import Submission
from server.submissions.schemas import CheckPublic, Feedback, Mistake, RootCause, SubmissionPublic

#: Styles for the classes the fragment uses (``fb-`` prefixed, to sit beside any page's CSS).
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
.fb-pass{color:#166534}.fb-fail{color:#c0262d}
"""


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{float(value):.2f}".rstrip("0").rstrip(".")


def _snippet(cause: RootCause) -> str:
    loc = cause.location
    assert loc is not None
    label = cause.message if cause.phase == "syntax" else f"{cause.exception}: {cause.message}"
    number = str(loc.line)
    pad = " " * len(number)
    source = loc.source.replace("\t", " ")
    carets = " " * (loc.column - 1) + "^" * max(1, loc.end_column - loc.column)
    return (
        f'<pre class="fb-code">{_e(pad)} |\n{_e(number)} | {_e(source)}\n'
        f'{_e(pad)} | <span class="fb-caret">{_e(carets)} {_e(label)}</span></pre>'
    )


def _root_cause(cause: RootCause, index: int | None) -> str:
    tag = f"error[{index}]" if index is not None else "error"
    parts = [f'<section class="fb-error"><h3>{_e(tag)}: {_e(cause.headline)}</h3>']
    if cause.location is not None:
        loc = cause.location
        parts.append(f'<div class="fb-where">{_e(loc.file)}:{loc.line}:{loc.column}</div>')
        parts.append(_snippet(cause))
    else:
        parts.append(f"<p>{_e(cause.exception)}: {_e(cause.message)}</p>")
    if cause.checks:
        parts.append(f'<p class="fb-checks-line">failed: {_e(cause.checks_line or " · ".join(cause.checks))}</p>')
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


def _checks_table(checks: Sequence[CheckPublic], results: Sequence[str]) -> str:
    rows = []
    for check, result in zip(checks, results, strict=True):
        mark = '<td class="fb-pass">✓</td>' if check.passed else '<td class="fb-fail">✗</td>'
        rows.append(f"<tr>{mark}<td>{_e(check.name)}</td><td class=\"num\">{_number(check.weight)}</td>"
                    f"<td>{_e(result)}</td></tr>")
    return ('<table class="fb-checks"><thead><tr><th></th><th>Check</th><th class="num">Points</th>'
            f"<th>Result</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _mistakes(diagnosis: Sequence[Mistake]) -> str:
    items = []
    for mistake in diagnosis:
        fix = f"<br>fix: {_e(mistake.fix)}" if mistake.fix else ""
        checks = f'<br><span class="fb-checks-line">checks: {_e(" · ".join(mistake.checks))}</span>' if mistake.checks else ""
        items.append(f"<li>Likely misconception: <strong>{_e(mistake.title)}</strong>{fix}{checks}</li>")
    return (f'<section class="fb-mistakes"><h3>Mistakes found ({len(diagnosis)})</h3>'
            f"<ol>{''.join(items)}</ol></section>")


def _fragment(verdict: str | None, score: float | None, message: str, checks: Sequence[CheckPublic],
              feedback: Feedback | None) -> str:
    """The layout itself: summary, mistakes, root causes, next step, checks."""
    head = f"Verdict: {verdict or '-'}"
    if score is not None:
        head += f" · Score: {_number(score)} / 100"
    if feedback is None:
        results = [("ok" if c.passed else c.message.split("\n", 1)[0]) for c in checks]
        shown = f"<p>{_e(message)}</p>" if message else ""
        table = _checks_table(checks, results) if checks else ""
        return f'<div class="fb"><p class="fb-summary">{_e(head)}</p>{shown}{table}</div>'
    summary = feedback.summary
    if summary.checks_total:
        head += f" · {summary.checks_passed} of {summary.checks_total} checks passed"
    parts = ['<div class="fb">', f'<p class="fb-summary">{_e(head)}</p>']
    if summary.headline and verdict != "graded" and not feedback.root_causes:
        parts.append(f"<p>{_e(summary.headline)}</p>")
    if feedback.diagnosis:
        parts.append(_mistakes(feedback.diagnosis))
    numbered = len(feedback.root_causes) > 1
    for i, cause in enumerate(feedback.root_causes, 1):
        parts.append(_root_cause(cause, i if numbered else None))
    if summary.next_step:
        parts.append(f'<p class="fb-next">Next: {_e(summary.next_step)}</p>')
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
        return f'<p class="fb-summary">{_e(sub.status)}…</p>'
    return _fragment(sub.verdict, sub.score, sub.message, sub.checks, sub.feedback)


def stored_feedback_html(submission: Submission) -> str | None:
    """The same fragment for a stored row (its checks loaded), when it carries feedback data;
    None for a row that does not (graded before migration 0005, or not done), so a page can
    show such rows its own way."""
    if submission.status != "done" or not submission.feedback:
        return None
    try:
        feedback = Feedback.model_validate(submission.feedback)
    except ValidationError:
        return None
    checks = [CheckPublic(name=c.name, weight=c.weight, passed=c.passed, message=c.message,
                          misconception=c.misconception) for c in submission.checks]
    return _fragment(submission.verdict, submission.score, submission.message, checks, feedback)

"""A submission's feedback as an HTML fragment: what ``ppo-submit`` prints, for the browser.

The one trusted-side renderer of a stored report for the web pages: the verdict and
score, the message, every check with its message and the misconception it matches, the
timings and resources, and the captured output (capped as the CLI caps it). Every value
passes through ``e()``.
"""

from __future__ import annotations

from typing import Any

from server.feedback_view import stored_feedback_html
from server.models import Status, Submission
from server.web.html import e, format_score

#: Captured output shown at most this many characters per stream (the CLI's cap).
OUTPUT_MAX_CHARS = 2000


def feedback_html(submission: Submission) -> str:
    """The feedback block for one submission (checks loaded), as escaped HTML."""
    if submission.status != Status.DONE.value:
        state = "waiting in the queue" if submission.status == Status.QUEUED.value else "being graded now"
        return (
            f'<section class="feedback" id="feedback"><p class="muted">This submission is {e(state)}; '
            "the page updates by itself when the verdict arrives.</p></section>"
        )
    parts = ['<section class="feedback" id="feedback">']
    summary = stored_feedback_html(submission)
    if summary is not None:
        # the summary, mistakes, root causes and checks, laid out from the same data ppo-submit shows
        parts.append(summary)
    else:  # a row graded before feedback data (migration 0005)
        parts.append(_checks_html(submission))
    resources = _resources(submission)
    return _with_output(parts, submission, resources)


def _checks_html(submission: Submission) -> str:
    """Verdict, score, message and every check with its message and misconception."""
    verdict = submission.verdict or "–"
    parts = [f'<p><span class="verdict">Verdict: {e(verdict)}</span>']
    if submission.score is not None:
        parts.append(f' · <span class="score">Score: {e(format_score(submission.score))} / 100</span>')
    parts.append("</p>")
    if submission.message:
        parts.append(f'<p class="message">{e(submission.message)}</p>')
    checks = list(submission.checks)
    if checks:
        passed = sum(1 for c in checks if c.passed)
        parts.append(f"<h2>Checks ({passed} of {len(checks)} passed)</h2><ul class=\"checks\">")
        for check in checks:
            mark, css = ("✓ passed", "passed") if check.passed else ("✗ failed", "failed")
            message = check.message or ""
            if check.misconception:
                # the judge appends the misconception to the message; show it once, on its own line
                message = message.replace(f" This matches a known mistake: {check.misconception}", "")
            body = f'<div class="check-message"><pre>{e(message.rstrip())}</pre></div>' if message.strip() and not check.passed else ""
            miss = (
                f'<div class="misconception">Likely misconception: {e(check.misconception)}</div>'
                if check.misconception and not check.passed else ""
            )
            parts.append(
                f'<li class="check {css}"><span class="{"pass" if check.passed else "fail"}">{mark}</span> '
                f'<b class="check-name">{e(check.name)}</b> <span class="muted">({e(format_score(check.weight))} points)</span>'
                f"{body}{miss}</li>"
            )
        parts.append("</ul>")
    return "".join(parts)


def _with_output(parts: list[str], submission: Submission, resources: str) -> str:
    """The timings and resources, the captured output, and the section's end."""
    if resources:
        parts.append(f'<p class="muted timing">{e(resources)}</p>')
    for stream in ("stdout", "stderr"):
        captured = getattr(submission, stream) or ""
        if captured.strip():
            shown = captured if len(captured) <= OUTPUT_MAX_CHARS else captured[:OUTPUT_MAX_CHARS] + f"\n… ({len(captured) - OUTPUT_MAX_CHARS} more characters cut)"
            parts.append(f"<h2>Captured {stream}</h2><pre>{e(shown)}</pre>")
    parts.append("</section>")
    return "".join(parts)


def _number(value: Any) -> str:
    return f"{float(value):.2f}".rstrip("0").rstrip(".")


def _resources(submission: Submission) -> str:
    """``graded in 0.21 s (queued 0.003 s) · cpu 0.1 s · peak memory 12.0 MiB``, as the CLI says it."""
    timings = dict(submission.timings or {})
    found = []
    graded = timings.get("grade_seconds", timings.get("total"))
    if isinstance(graded, int | float):
        text = f"graded in {_number(graded)} s"
        queued = timings.get("queue_seconds")
        if isinstance(queued, int | float):
            text += f" (queued {_number(queued)} s)"
        found.append(text)
    if submission.cpu_seconds is not None:
        found.append(f"cpu {_number(submission.cpu_seconds)} s")
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

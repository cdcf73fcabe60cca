"""A submission's feedback as HTML, for a notebook's output cell (Jupyter, JupyterLab, Colab).

The same data and the same order as the terminal (``feedback.layout``): the header, the
verdict and score, the named mistakes, each root cause once with its place ("cell 7, line 3"),
source line and caret, the next step, then the checks; resources and captured output last;
every failed check's full message folded in a ``<details>``.

Readable on any theme: text keeps the notebook's own colour (``color: inherit``) and the
boxes are tinted with translucent backgrounds, so Jupyter's light and dark themes and Colab's
both show it; only short marks (✓, ✗, carets, labels) carry a colour, one of mid-tone hues
legible on white and on near-black. Inline styles only (notebook front ends strip ``<style>``
from untrusted outputs), no script. Every value is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from .api import Submission
from .feedback import check_results
from .locations import FileLocator, Locator
from .render import policy_note

RED, GREEN, AMBER, BLUE = "#e5484d", "#30a46c", "#d08700", "#3e8ede"
_MONO = "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px"
_BOX = "border-left:4px solid {color};padding:.35em .8em;margin:.6em 0;background:{tint};border-radius:2px"
_PRE = f"{_MONO};margin:.3em 0;padding:0;background:transparent;color:inherit;border:0;white-space:pre;overflow-x:auto"
_CELL = "text-align:left;vertical-align:top;padding:.25em .6em;border-bottom:1px solid rgba(128,128,128,.35)"
#: Captured output shown at most this many characters per stream.
OUTPUT_MAX_CHARS = 2000


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _number(value: Any) -> str:
    return "-" if value is None else f"{float(value):.2f}".rstrip("0").rstrip(".")


def _box(color: str, tint: str, body: str, css_class: str) -> str:
    return f'<div class="{css_class}" style="{_BOX.format(color=color, tint=tint)}">{body}</div>'


def verdict_line(sub: Submission, counted: str = "") -> str:
    """``Verdict: graded · Score: 56 / 100 · 7 of 12 checks passed``."""
    verdict = str(sub.get("verdict") or "-")
    color = "inherit" if verdict == "graded" else RED
    parts = [f'<b>Verdict:</b> <b style="color:{color}">{_e(verdict)}</b>']
    score = sub.get("score")
    if score is not None:
        full = float(score) >= 100
        parts.append(f'<b>Score:</b> <b style="color:{GREEN if full else AMBER}">{_e(_number(score))} / 100</b>')
    if counted:
        parts.append(_e(counted))
    return f'<div class="ppo-verdict" style="margin:.2em 0">{" · ".join(parts)}</div>'


def _snippet(cause: Mapping[str, Any], location: Mapping[str, Any], locator: Locator) -> str:
    label = (
        str(cause.get("message") or "")
        if cause.get("phase") == "syntax"
        else (f"{cause.get('exception', 'Error')}: {cause.get('message', '')}")
    )
    number = str(locator.line(location))
    pad = " " * len(number)
    column = max(1, int(location.get("column") or 1))
    end = max(column + 1, int(location.get("end_column") or column + 1))
    source = str(location.get("source") or "").replace("\t", " ")
    carets = " " * (column - 1) + "^" * (end - column)
    return (
        f'<pre class="ppo-code" style="{_PRE}">{_e(pad)} |\n{_e(number)} | {_e(source)}\n{_e(pad)} | '
        f'<span style="color:{RED};font-weight:700">{_e(carets)} {_e(label)}</span></pre>'
    )


def root_cause(cause: Mapping[str, Any], index: int | None, locator: Locator) -> str:
    """One root cause: headline, the place in the learner's terms, the line with its caret, the
    checks it failed."""
    tag = f"error[{index}]" if index is not None else "error"
    headline = cause.get("headline") or f"{cause.get('exception', 'Error')}: {cause.get('message', '')}"
    body = [f'<div style="font-weight:600"><span style="color:{RED}">{_e(tag)}:</span> {_e(headline)}</div>']
    location = cause.get("location")
    if isinstance(location, Mapping):
        body.append(f'<div class="ppo-where" style="{_MONO};color:{BLUE}">--&gt; {_e(locator.where(location))}</div>')
        body.append(_snippet(cause, location, locator))
    else:
        body.append(f"<div>{_e(cause.get('exception', 'Error'))}: {_e(cause.get('message', ''))}</div>")
    checks = [str(c) for c in cause.get("checks") or []]
    if checks:
        body.append(f'<div style="opacity:.8">failed: {_e(cause.get("checks_line") or " · ".join(checks))}</div>')
    return _box(RED, "rgba(229,72,77,.09)", "".join(body), "ppo-error")


def mistakes(diagnosis: Sequence[Mapping[str, Any]]) -> str:
    """The named mistakes, numbered, each with its fix and the checks it explains."""
    items = []
    for item in diagnosis:
        lines = [f"<b>{_e(item.get('title') or item.get('mistake_id') or item.get('misconception') or '')}</b>"]
        if item.get("fix"):
            lines.append(f"<div><b>fix:</b> {_e(item['fix'])}</div>")
        checks = [str(c) for c in item.get("checks") or []]
        if checks:
            lines.append(f'<div style="opacity:.75">checks: {_e(" · ".join(checks))}</div>')
        items.append(f'<li style="margin:.2em 0">{"".join(lines)}</li>')
    title = f'<div style="font-weight:600;color:{AMBER}">Mistakes found ({len(diagnosis)}):</div>'
    return _box(
        AMBER,
        "rgba(208,135,0,.10)",
        f'{title}<ol style="margin:.2em 0 .2em 1.4em;padding:0">{"".join(items)}</ol>',
        "ppo-mistakes",
    )


def checks_table(checks: Sequence[Mapping[str, Any]], results: Sequence[str]) -> str:
    """Mark, name, points and the short result of every check."""
    rows = []
    for check, result in zip(checks, results, strict=True):
        passed = bool(check.get("passed"))
        mark = (
            f'<span style="color:{GREEN};font-weight:700">✓</span>'
            if passed
            else (f'<span style="color:{RED};font-weight:700">✗</span>')
        )
        rows.append(
            f'<tr><td style="{_CELL}">{mark}</td><td style="{_CELL}">{_e(check.get("name", ""))}</td>'
            f'<td style="{_CELL};text-align:right">{_e(_number(check.get("weight")))}</td>'
            f'<td style="{_CELL}">{_e("ok" if passed else result)}</td></tr>'
        )
    head = "".join(f'<th style="{_CELL};font-weight:600">{h}</th>' for h in ("", "Check", "Points", "Result"))
    return (
        f'<table class="ppo-checks" style="border-collapse:collapse;margin:.6em 0;width:auto;font-size:13px;'
        f'color:inherit;background:transparent"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody>'
        "</table>"
    )


def _failure_details(checks: Sequence[Mapping[str, Any]], locator: Locator) -> str:
    failed = [c for c in checks if not c.get("passed")]
    if not failed:
        return ""
    parts = []
    for check in failed:
        message = locator.text(str(check.get("message") or ""))
        parts.append(
            f'<div style="margin:.4em 0"><b>✗ {_e(check.get("name", ""))}</b> '
            f'<span style="opacity:.7">({_e(_number(check.get("weight")))} points)</span>'
            f'<pre style="{_PRE};white-space:pre-wrap">{_e(message.rstrip())}</pre></div>'
        )
    return (
        f'<details style="margin:.4em 0"><summary style="cursor:pointer">Why checks failed, in full '
        f"({len(failed)})</summary>{''.join(parts)}</details>"
    )


def _resources(sub: Submission) -> str:
    bits = []
    timings = sub.get("timings") or {}
    graded = timings.get("grade_seconds", timings.get("total")) if isinstance(timings, Mapping) else None
    queued = timings.get("queue_seconds") if isinstance(timings, Mapping) else None
    if isinstance(graded, int | float):
        bits.append(
            f"graded in {_number(graded)} s"
            + (f" (queued {_number(queued)} s)" if isinstance(queued, int | float) else "")
        )
    if sub.get("cpu_seconds") is not None:
        bits.append(f"cpu {_number(sub.get('cpu_seconds'))} s")
    peak = sub.get("peak_memory_bytes")
    if isinstance(peak, int):
        bits.append(f"peak memory {peak / 2**20:.1f} MiB")
    captured = []
    for stream in ("stdout", "stderr"):
        text = sub.get(stream)
        if isinstance(text, str) and text.strip():
            cut = (
                text
                if len(text) <= OUTPUT_MAX_CHARS
                else text[:OUTPUT_MAX_CHARS] + f"\n… ({len(text) - OUTPUT_MAX_CHARS} more characters cut)"
            )
            captured.append(f'<div style="opacity:.75">captured {stream}:</div><pre style="{_PRE}">{_e(cut)}</pre>')
    line = f'<div style="opacity:.7;margin-top:.4em">{_e(" · ".join(bits))}</div>' if bits else ""
    return line + "".join(captured)


def submission_html(sub: Submission, *, locator: Locator | None = None) -> str:
    """``sub`` as one HTML fragment, summary first (see the module's docstring)."""
    locator = locator or FileLocator(sub.get("filename"))
    name = locator.name
    header = (
        f"Submission {sub.get('id', '?')} · {sub.get('exercise', '?')}"
        + (f" · {name}" if name else "")
        + f" · {sub.get('status', '?')}"
    )
    parts = [f'<div style="font-weight:700">{_e(header)}</div>']
    note = policy_note(sub)  # what the exercise's feedback policy holds back
    if note is not None:
        parts.append(f'<div class="ppo-policy" style="color:{AMBER}">{_e(note)}</div>')
    if sub.get("status") == "done":
        parts.extend(_done(sub, locator))
    return (
        f'<div class="ppo-feedback" style="font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;'
        f'font-size:14px;line-height:1.45;color:inherit;max-width:64rem">{"".join(parts)}</div>'
    )


def _done(sub: Submission, locator: Locator) -> list[str]:
    checks = sub.get("checks") or []
    data = sub.get("feedback")
    if not isinstance(data, Mapping) or not isinstance(data.get("summary"), Mapping):
        parts = [verdict_line(sub)]  # a server from before feedback data
        if sub.get("message"):
            parts.append(f"<div>{_e(locator.text(str(sub['message'])))}</div>")
        results = [str(c.get("message") or "").strip().split("\n", 1)[0] for c in checks]
        return [*parts, checks_table(checks, results) if checks else "", _resources(sub)]
    summary = data["summary"]
    causes = [c for c in data.get("root_causes") or [] if isinstance(c, Mapping)]
    diagnosis = [d for d in data.get("diagnosis") or [] if isinstance(d, Mapping)]
    total = summary.get("checks_total") or 0
    counted = f"{summary.get('checks_passed', 0)} of {total} checks passed" if total else ""
    parts = [verdict_line(sub, counted)]
    headline = str(summary.get("headline") or "")
    if headline and sub.get("verdict") != "graded" and not causes:
        parts.append(f"<div>{_e(locator.text(headline))}</div>")
    if diagnosis:
        parts.append(mistakes(diagnosis))
    for i, cause in enumerate(causes, 1):
        parts.append(root_cause(cause, i if len(causes) > 1 else None, locator))
    if summary.get("next_step"):
        parts.append(
            f'<div class="ppo-next" style="margin:.5em 0"><b style="color:{GREEN}">Next:</b> '
            f"{_e(summary['next_step'])}</div>"
        )
    if checks:
        parts.append(checks_table(checks, check_results(checks, causes, summary.get("details") or [])))
        parts.append(_failure_details(checks, locator))
    parts.append(_resources(sub))
    return parts


def message_html(text: str, *, kind: str = "error") -> str:
    """One sentence in a box: an error (red), a warning (amber) or a note."""
    color, tint, label = {
        "error": (RED, "rgba(229,72,77,.09)", "error:"),
        "warning": (AMBER, "rgba(208,135,0,.10)", "warning:"),
    }.get(kind, (BLUE, "rgba(62,142,222,.10)", ""))
    lead = f'<b style="color:{color}">{label}</b> ' if label else ""
    return _box(color, tint, f"{lead}{_e(text)}", f"ppo-{kind}")


def progress_html(text: str) -> str:
    """The waiting line while the submission is queued or running."""
    return message_html(f"⏳ {text}", kind="note")

"""What the CLI shows: tables, a submission's result, the live status line and error lines.

Server text is always wrapped in ``rich.text.Text`` so that brackets in a learner's output
or a check message are never read as Rich markup.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.status import Status
from rich.table import Table
from rich.text import Text

from .api import CheckResult, ExerciseSummary, Submission
from .terminal import plain_output

if TYPE_CHECKING:
    from .locations import Locator

#: Captured learner output shown at most this many lines / characters per stream.
OUTPUT_MAX_LINES = 20
OUTPUT_MAX_CHARS = 2000

_VERDICT_STYLE = {"graded": "bold", "internal_error": "bold magenta"}


def _console(stderr: bool) -> Console:
    plain = plain_output(sys.stderr if stderr else sys.stdout)
    # color_system=None: Rich writes no escape sequence at all, styles are dropped
    return Console(stderr=stderr, highlight=False, emoji=False, color_system=None if plain else "auto")


def stdout_console() -> Console:
    """A console on the current ``sys.stdout`` (made per call so tests' redirections apply)."""
    return _console(stderr=False)


def stderr_console() -> Console:
    """A console on the current ``sys.stderr``."""
    return _console(stderr=True)


def print_out(renderable: RenderableType) -> None:
    """Print ``renderable`` on stdout; plain output loses the spaces Rich pads lines with."""
    console = stdout_console()
    if console.color_system is not None:
        console.print(renderable, crop=False)  # never cut: a line that cannot wrap runs on
        return
    console.file.write(plain_text(renderable, console.width))
    console.file.flush()


def plain_text(renderable: RenderableType, width: int) -> str:
    """``renderable`` as plain text ``width`` columns wide, without trailing spaces."""
    # force_jupyter=False: inside a kernel Rich would also display what it captures
    console = Console(
        width=width,
        color_system=None,
        highlight=False,
        emoji=False,
        force_terminal=False,
        force_jupyter=False,
        file=io.StringIO(),
    )
    with console.capture() as captured:
        console.print(renderable, crop=False)
    return "".join(line.rstrip() + "\n" for line in captured.get().splitlines())


def table_box() -> box.Box | None:
    """Box-drawing for tables on a colour terminal; none for plain output."""
    return None if plain_output() else box.SIMPLE_HEAD


def error_line(message: str) -> None:
    """Print ``message`` on stderr as one red line (never wrapped)."""
    text = Text.assemble(("error: ", "bold red"), (" ".join(message.split()), "red"))
    stderr_console().print(text, soft_wrap=True)


def number(value: float | int | None) -> str:
    """``12.0`` -> ``12``, ``12.345`` -> ``12.35``, ``None`` -> ``-``."""
    if value is None:
        return "-"
    return f"{float(value):.2f}".rstrip("0").rstrip(".")


def memory(n_bytes: int | None) -> str:
    """Bytes in the largest binary unit that keeps the number >= 1."""
    if n_bytes is None:
        return "-"
    value = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def truncate(text: str, max_lines: int = OUTPUT_MAX_LINES, max_chars: int = OUTPUT_MAX_CHARS) -> str:
    """Keep the first ``max_lines`` lines and ``max_chars`` characters, saying how much was cut."""
    lines = text.rstrip("\n").splitlines()
    kept = "\n".join(lines[:max_lines])
    if len(kept) > max_chars:
        kept = kept[:max_chars]
    cut_chars = len(text.rstrip("\n")) - len(kept)
    if cut_chars <= 0:
        return kept
    cut_lines = max(0, len(lines) - len(kept.splitlines()))
    return f"{kept}\n… ({cut_lines} more lines, {cut_chars} more characters cut)"


def exercises_table(exercises: Sequence[ExerciseSummary]) -> Table:
    """Slug, function and title of each exercise, in the server's ``order``."""
    table = Table("Slug", "Function", "Title", title="Exercises", title_justify="left", box=table_box())
    for ex in sorted(exercises, key=lambda e: (e.get("order", 0), str(e.get("slug", "")))):
        table.add_row(Text(str(ex.get("slug", ""))), Text(str(ex.get("function", ""))), Text(str(ex.get("title", ""))))
    return table


def history_table(submissions: Sequence[Submission], zones: dict[str, str] | None = None) -> Table:
    """One row per submission: id, exercise, when (in its course's zone, to the minute),
    status, verdict, raw score, late mark, the score that counts; and, when a regrade
    changed one, what it changed and why."""
    regraded = any(sub.get("regrades") for sub in submissions)
    columns = ["Id", "Exercise", "Submitted", "Status", "Verdict", "Score", "Late", "Counts"]
    table = Table(
        *columns + (["Regraded"] if regraded else []), title="Submissions", title_justify="left", box=table_box()
    )
    for sub in submissions:
        zone = (zones or {}).get(str(sub.get("course") or ""), "UTC")
        cells = [
            Text(str(sub.get("id", ""))),
            Text(str(sub.get("exercise", ""))),
            Text(local_time(sub.get("created_at"), zone)),
            Text(str(sub.get("status", ""))),
            Text(str(sub.get("verdict") or "-")),
            Text(number(sub.get("score")), justify="right"),
            Text(late_mark(sub), style="yellow"),
            Text(number(sub.get("counted_score")), justify="right"),
        ]
        if regraded:
            notes = _regrades(sub)
            cells.append(Text(regrade_line(notes[-1], zone) if notes else "", style="yellow"))
        table.add_row(*cells)
    return table


def local_time(iso: object, zone: str) -> str:
    """A server time (ISO, UTC) as a person reads it in a course's zone: ``2026-12-11 17:00 CET``."""
    from datetime import datetime
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if not isinstance(iso, str) or not iso:
        return "-"
    try:
        moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
        at = moment.astimezone(ZoneInfo(zone))
    except (ValueError, ZoneInfoNotFoundError):
        return iso
    return f"{at:%Y-%m-%d %H:%M} {at.tzname()}"


def late_mark(sub: Submission) -> str:
    """``late 1h: -10%`` (as the web pages write it), ``late 2d`` when only flagged, empty when on time."""
    if not sub.get("late"):
        return ""
    seconds = int(sub.get("late_seconds") or 0)
    minutes = max(1, (seconds + 59) // 60)
    days, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    parts = [f"{days}d" if days else "", f"{hours}h" if hours else "", f"{mins}m" if mins and not days else ""]
    penalty = float(sub.get("penalty_percent") or 0)
    return f"late {' '.join(p for p in parts if p) or '1m'}" + (f": -{penalty:g}%" if penalty else "")


def version_lines(sub: Submission, zone: str = "UTC") -> list[Text]:
    """What graded the verdict (the exercise's and the grader's versions), then each regrade
    that changed it, with the instructor's reason (times in ``zone``, the course's)."""
    lines = []
    if sub.get("status") == "done":
        lines.append(
            Text(
                f"Graded by exercise version {sub.get('content_version') or 'unknown'}, "
                f"grader version {sub.get('grader_version') or 'unknown'}",
                style="dim",
            )
        )
    for note in _regrades(sub):
        lines.append(Text(regrade_line(note, zone), style="yellow"))
    return lines


def review_lines(review: dict[str, Any] | None, zone: str = "UTC") -> list[Text]:
    """The human review of a submission (``GET /submissions/{id}/review``): each staff comment
    under the line it is on, each review request and its answer (times in ``zone``); a note
    when the feedback policy holds them back until the score is released."""
    if not isinstance(review, dict):
        return []
    lines: list[Text] = []
    for c in _dicts(review.get("comments")):
        at = c.get("line") if isinstance(c.get("line"), int) else 0
        quoted = str(c.get("source_line") or "").strip()
        lines.append(
            Text(f"Comment on line {at} by {c.get('author')}, {local_time(c.get('created_at'), zone)}:", style="cyan")
        )
        if quoted:
            lines.append(Text(f"  {at} | {quoted}", style="dim"))
        lines.append(Text("  " + str(c.get("body") or "").replace("\n", "\n  ")))
    for r in _dicts(review.get("requests")):
        lines.append(
            Text(
                f"Review request {r.get('id')} ({r.get('state')}), {local_time(r.get('created_at'), zone)}: {r.get('message')}",
                style="yellow",
            )
        )
        if r.get("answer"):
            score = r.get("override_score")
            counted = f" The score that counts is now {number(score)}." if score is not None else ""
            lines.append(
                Text(
                    f"  Answer by {r.get('answered_by')}, {local_time(r.get('answered_at'), zone)}:{counted}",
                    style="green",
                )
            )
            lines.append(Text("  " + str(r.get("answer")).replace("\n", "\n  ")))
    if review.get("held"):
        lines.append(Text("Staff comments and answers are shown once the score is released.", style="dim"))
    return lines


def _dicts(value: object) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _regrades(sub: Submission) -> list[dict[str, Any]]:
    """The submission's applied regrades as the server sent them (none from older servers)."""
    notes = sub.get("regrades")
    return [n for n in notes if isinstance(n, dict)] if isinstance(notes, list) else []


def regrade_line(note: dict[str, Any], zone: str) -> str:
    """One applied regrade of a submission: old and new verdict, when (in ``zone``, saying
    which, as every time this client prints), and why."""

    def outcome(verdict: Any, score: Any) -> str:
        return f"{verdict} {number(score)}" if score is not None else str(verdict or "-")

    when = local_time(note.get("applied_at"), zone)
    reason = note.get("reason") or ""
    return (
        f"Regraded {when}: {outcome(note.get('old_verdict'), note.get('old_score'))} -> "
        f"{outcome(note.get('new_verdict'), note.get('new_score'))}" + (f" ({reason})" if reason else "")
    )


def _first_line(message: str) -> str:
    """The first line of a check's message (the table wraps it; nothing is cut)."""
    return message.strip().splitlines()[0] if message.strip() else ""


def checks_table(checks: Sequence[CheckResult], results: Sequence[str] | None = None) -> Table:
    """Pass/fail mark, name, points and a short result per check, wrapping within the width.

    ``results`` replaces each failed check's result text (the feedback's short form); by
    default it is the first line of the check's message.
    """
    table = Table(box=table_box(), title_justify="left", pad_edge=False, show_edge=False)
    table.add_column("", no_wrap=True, width=1)
    table.add_column("Check", ratio=2, min_width=14, overflow="fold")
    table.add_column("Points", justify="right", no_wrap=True)
    table.add_column("Result", ratio=3, min_width=14, overflow="fold")
    for i, check in enumerate(checks):
        passed = bool(check.get("passed"))
        text = "ok" if passed else (results[i] if results else _first_line(str(check.get("message") or "")))
        if not passed and withheld(check):  # passed, its points held back: not a failure
            mark, text, style = Text("–", style="yellow"), _first_line(str(check.get("message"))), "yellow"
        else:
            mark, style = (Text("✓", style="green"), "") if passed else (Text("✗", style="bold red"), "red")
        table.add_row(
            mark, Text(str(check.get("name", ""))), Text(number(check.get("weight"))), Text(text, style=style)
        )
    return table


#: How the judge opens the message of a contract check that passed but whose points wait for the
#: core values to be right (``exercises.scoring.WITHHELD``); every view shows it, a score-only one too.
WITHHELD = "Not counted yet:"


def withheld(check: CheckResult) -> bool:
    """Whether a check passed but its points are not counted yet (shown as such, not as failed)."""
    return not check.get("passed") and str(check.get("message") or "").startswith(WITHHELD)


def mistake_title(check: CheckResult) -> str | None:
    """The title of the mistake named on a check: ``mistake_title``, or from a server before
    the rename (issue 33), its old name ``misconception``."""
    return check["mistake_title"] if "mistake_title" in check else check.get("misconception")


def failure_details(checks: Sequence[CheckResult], rename: Any = None) -> RenderableType | None:
    """Each failed check in full: its message (tracebacks kept as lines) and the named mistake.

    ``rename`` maps text to text (the learner's local path into tracebacks).
    """
    failed = [c for c in checks if not c.get("passed")]
    if not failed:
        return None
    parts: list[RenderableType] = [Text("Why checks failed", style="bold")]
    for check in failed:
        parts.append(
            Text.assemble(
                ("✗ ", "bold red"),
                (str(check.get("name", "")), "bold"),
                (f"  ({number(check.get('weight'))} points)", "dim"),
            )
        )
        message = str(check.get("message") or "")
        if rename is not None:
            message = rename(message)
        mistake = mistake_title(check)
        if mistake:
            # the judge appends the mistake to the message; show it once, on its own line
            message = message.replace(f" This matches a known mistake: {mistake}", "")
        parts.append(Padding(Text(message.rstrip(), style="red"), (0, 0, 0, 4)))
        if mistake:
            parts.append(
                Padding(
                    Text.assemble(("Likely mistake: ", "bold yellow"), (str(mistake), "yellow")),
                    (0, 0, 0, 4),
                )
            )
    return Group(*parts)


def _timings(timings: dict[str, Any]) -> str:
    """``graded in 0.21 s (queued 0.003 s)``: the two figures a learner cares about.

    Every timing the server recorded stays in ``--json``.
    """
    graded = timings.get("grade_seconds", timings.get("total"))
    queued = timings.get("queue_seconds")
    text = f"graded in {number(graded)} s" if isinstance(graded, int | float) else ""
    if isinstance(queued, int | float):
        text += f" (queued {number(queued)} s)"
    return text.strip()


#: The longest file name the result's first line shows whole (longer: its last part).
_HEADER_NAME_CHARS = 40


def submission_result(
    sub: Submission, *, verbose: bool = False, local_path: str | None = None, locator: Locator | None = None
) -> RenderableType:
    """A submission as the CLI shows it: the summary first (score, verdict, mistakes, root
    causes, next step), then the checks, resources and captured output.

    ``local_path`` is the file as the learner named it on the command line: locations in
    the submitted file's name are shown with it, so an editor can jump to them.
    ``locator`` shows places otherwise (a notebook's cells: ``locations.CellLocator``).
    ``verbose`` adds every failed check's full message, with its case, seed and traceback.
    """
    from . import feedback

    parts: list[RenderableType] = []
    name = locator.name if locator is not None else local_path or sub.get("filename")
    if name and len(name) > _HEADER_NAME_CHARS:  # a long path would overrun an 80-column terminal: its file name
        name = name.replace("\\", "/").rsplit("/", 1)[-1]
    header = Text.assemble(
        ("Submission ", "bold"),
        (str(sub.get("id", "?")), "bold"),
        f" · {sub.get('exercise', '?')}" + (f" · {name}" if name else "") + f" · {sub.get('status', '?')}",
    )
    parts.append(header)
    if sub.get("status") != "done":
        parts.append(Text(status_text(sub), style="dim"))
        return Group(*parts)

    policy = policy_note(sub)
    if policy is not None:
        parts.append(Text(policy, style="yellow"))
    checks = sub.get("checks") or []
    data = sub.get("feedback")
    if isinstance(data, dict) and isinstance(data.get("summary"), dict):
        parts.extend(feedback.layout(sub, data, verbose=verbose, local_path=local_path, locator=locator))
    else:  # a server or a row from before feedback data: the checks and their messages
        parts.append(_verdict_line(sub))
        if sub.get("message"):
            parts.append(Text(str(sub["message"])))
        if checks:
            parts.append(checks_table(checks))
            details = failure_details(checks) if sub.get("feedback_view", "full") in ("full", "report") else None
            if details is not None:
                parts.append(details)

    resources = []
    if sub.get("timings"):
        resources.append(_timings(sub["timings"] or {}))
    if sub.get("cpu_seconds") is not None:
        resources.append(f"cpu {number(sub.get('cpu_seconds'))} s")
    if sub.get("peak_memory_bytes") is not None:
        resources.append(f"peak memory {memory(sub.get('peak_memory_bytes'))}")
    if resources:
        parts.append(Text(" · ".join(r for r in resources if r), style="dim"))

    for stream in ("stdout", "stderr"):
        captured = sub.get(stream)
        if isinstance(captured, str) and captured.strip():
            parts.append(Text(f"captured {stream}:", style="dim bold"))
            parts.append(Text(truncate(captured), style="dim"))
    return Group(*parts)


#: What each feedback view shows, said to the learner (the server decides; this only names it).
_VIEWS = {
    "report": "the report, without what your code printed or raised on the judge's inputs",
    "score": "the score and the check names only",
    "hidden": "received and graded; the score and feedback come at the due date",
}


#: What a ``hidden`` view says when it shows the verdict anyway: the code never reached a check
#: (the server shows that under every policy: server.courses.feedback_policy.UNCHECKED_VERDICTS).
_NOT_RUN = "your code never reached a check, so this is shown now; scores and feedback come at the due date"


def policy_note(sub: Submission) -> str | None:
    """``feedback (tokens:3): the score and the check names only · 2 tokens left today
    (ppo-submit token 12)``, when the exercise's feedback policy holds anything back."""
    view = sub.get("feedback_view") or "full"
    if view not in _VIEWS:
        return None
    said = _NOT_RUN if view == "hidden" and sub.get("verdict") not in (None, "internal_error") else _VIEWS[view]
    text = f"feedback ({sub.get('feedback_policy', '?')}): {said}"
    left = sub.get("tokens_left")
    if sub.get("token_spent"):
        text += " · a token was spent on it"
    elif isinstance(left, int):
        text += f" · {left} token{'s' if left != 1 else ''} left today (ppo-submit token {sub.get('id', 'ID')})"
    return text


def _verdict_line(sub: Submission, checks_line: str = "") -> Text:
    """``Verdict: graded · Score: 60 / 100 · 1 of 2 checks passed``."""
    verdict = str(sub.get("verdict") or "-")
    text = Text.assemble(("Verdict: ", "bold"), (verdict, _VERDICT_STYLE.get(verdict, "bold red")))
    score = sub.get("score")
    if score is not None:
        style = "bold green" if float(score) >= 100 else "bold yellow"
        text.append_text(Text.assemble(" · ", ("Score: ", "bold"), (f"{number(score)} / 100", style)))
    if checks_line:
        text.append(f" · {checks_line}")
    return text


def status_text(sub: Submission, elapsed: float | None = None) -> str:
    """The live status line: ``queued: position 3 in the queue, about 12 s · 3 s`` or
    ``running… · 5 s``.

    ``queue_position`` is read as the number of submissions ahead of this one;
    ``estimated_seconds`` (the server's, from its measured verdict rate) is shown only when the
    server sent one: without a measurement nothing claims a time.
    """
    status = str(sub.get("status") or "submitted")
    if status == "queued":
        ahead, estimated = sub.get("queue_position"), sub.get("estimated_seconds")
        text = "queued"
        if isinstance(ahead, int) and ahead >= 0:
            text += f": position {ahead + 1} in the queue"
            if isinstance(estimated, int) and not isinstance(estimated, bool) and estimated >= 0:
                text += f", about {estimated} s"
    elif status == "running":
        text = "running…"
    else:
        text = status
    return text if elapsed is None else f"{text} · {elapsed:.0f} s"


class StatusLine:
    """A live, self-erasing status line on stderr; a no-op when disabled."""

    def __init__(self, status: Status | None) -> None:
        self._status = status

    def update(self, sub: Submission, elapsed: float) -> None:
        """Show the current state of ``sub``."""
        if self._status is not None:
            self._status.update(Text(f"Submission {sub.get('id', '?')}: {status_text(sub, elapsed)}"))


@contextmanager
def live_status(enabled: bool) -> Iterator[StatusLine]:
    """A ``StatusLine`` shown while the block runs, only if ``enabled`` and stderr is a terminal."""
    console = stderr_console()
    if not enabled or not console.is_terminal or plain_output(sys.stderr):
        yield StatusLine(None)
        return
    with console.status("submitted…") as status:
        yield StatusLine(status)

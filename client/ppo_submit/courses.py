"""Courses on the client side: which course a command is about, the ``exercises`` tables
(what is open, due dates, time left), and the late warning before a submission is sent.

Kept apart from ``render.py``/``cli.py`` so that course features stay in one place; the
server decides every rule (and its clock is the one that counts): the client only shows
what ``GET /courses/{course}/exercises`` says.
"""

from __future__ import annotations

from rich.console import Group
from rich.text import Text

from .api import Board, Client, Course, CourseExercises, CourseScores, ExerciseWindow, Submission, UsageError

STATUS_STYLE = {"open": "green", "late": "yellow", "closed": "red", "not_released": "dim"}


def duration(seconds: int) -> str:
    """``3d 4h``, ``5h 10m``, ``12m``, ``40s``: the two largest units."""
    seconds = abs(int(seconds))
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m"
    return f"{secs}s"


def when(iso: str | None) -> str:
    """A server time (already in the course's zone) as ``2026-12-11 17:00 +01:00``."""
    if not iso:
        return "-"
    date, _, clock = iso.partition("T")
    hhmm, offset = clock[:5], clock[8:].lstrip("0123456789.") or ""
    return f"{date} {hhmm} {offset.replace('Z', 'UTC')}".strip()


def time_left(window: ExerciseWindow) -> str:
    """What the learner reads in the "time left" column."""
    status = window.get("status")
    to_due, to_close = window.get("seconds_to_due"), window.get("seconds_to_close")
    if status == "closed":
        return "closed"
    if status == "not_released":
        return "not open yet"
    if status == "late" and to_due is not None:
        left = f"; closes in {duration(to_close)}" if to_close is not None else ""
        return f"late by {duration(to_due)}{left}"
    if to_due is not None:
        return f"{duration(to_due)} left"
    return "no due date"


def late_policy(window: ExerciseWindow) -> str:
    """``10% per day`` or ``flagged only``."""
    percent = float(window.get("penalty_percent") or 0)
    return f"-{percent:g}% per {window.get('penalty_unit', 'day')}" if percent else "flagged only"


def feedback_policy(window: ExerciseWindow) -> str:
    """``  feedback: tokens:3 (2 left today)``; nothing for ``full`` (or an older server)."""
    policy = window.get("feedback_policy") or "full"
    if policy == "full":
        return ""
    left = window.get("tokens_left")
    return f"  feedback: {policy}" + (f" ({left} left today)" if isinstance(left, int) else "")


def wrap_fields(fields: list[tuple[str, str]], width: int, indent: str = "  ", more: str = "    ") -> list[Text]:
    """``(text, style)`` fields on lines of at most ``width`` columns, broken only between
    fields (two spaces apart), never inside one: ``-10% per day`` stays whole at 80 columns."""
    lines: list[Text] = []
    line, used = Text(indent), len(indent)
    for text, style in fields:
        gap = 2 if used > len(indent if not lines else more) else 0
        if used + gap + len(text) > width and used > len(indent if not lines else more):
            lines.append(line)
            line, used, gap = Text(more), len(more), 0
        line.append(" " * gap)
        line.append(text, style=style)
        used += gap + len(text)
    lines.append(line)
    return lines


def exercises_tables(listings: list[CourseExercises], width: int = 80) -> Group:
    """Per course, a heading and one line per exercise (wrapped between fields, so that no
    date or policy breaks mid-word in a narrow terminal): exercise, function, status, due
    date, time left, late policy, attempts used."""
    parts: list[Text] = []
    for listing in listings:
        parts.append(
            Text(f"{listing.get('course')}: {listing.get('title')} (times in {listing.get('time_zone')})", style="bold")
        )
        windows = listing.get("exercises", [])
        if not windows:
            parts.append(Text("  nothing open yet", style="dim"))
        for w in windows:
            status = str(w.get("status", ""))
            limit = w.get("max_attempts")
            attempts = (
                f"attempts {w.get('attempts_used', 0)}/{limit}" if limit else f"attempts {w.get('attempts_used', 0)}"
            )
            due = (
                f"due {when(w.get('due_at'))}" + (" (extended)" if w.get("extended") else "")
                if w.get("due_at")
                else "no due date"
            )
            parts.extend(
                wrap_fields(
                    [
                        (str(w.get("exercise", "")), ""),
                        (str(w.get("function", "")), ""),
                        (status, STATUS_STYLE.get(status, "")),
                        (due, ""),
                        (time_left(w), ""),
                        # an excused learner loses nothing for lateness: no late rule to read
                        ("excused" if w.get("excused") else f"late: {late_policy(w)}", ""),
                        (attempts, ""),
                    ]
                    + ([(feedback_policy(w).strip(), "")] if feedback_policy(w) else []),
                    width,
                )
            )
        parts.append(Text(""))
    return Group(*parts)


def scores_lines(listings: list[CourseScores]) -> Group | None:
    """Per course, the score that counts per exercise, written as every page writes it
    (``described``: late penalty, override and excuse with who and why; ``shown`` from a server
    before the rename, issue 33); None when there is none."""
    parts: list[Text] = []
    for listing in listings:
        rows = [s for s in listing.get("scores", []) if s.get("attempts") or s.get("override") or s.get("excused")]
        if not rows:
            continue
        parts.append(Text(f"Scores that count in {listing.get('course')}", style="bold"))
        for s in rows:
            line = Text(f"  {s.get('exercise')}: ")
            described = s["described"] if "described" in s else s.get("shown", "")
            line.append(str(described), style="yellow" if s.get("late") or s.get("excused") else "")
            parts.append(line)
    return Group(*parts) if parts else None


def pick_courses(courses: list[Course], wanted: str | None) -> list[Course]:
    """The courses a listing shows: ``wanted`` only, or every course of the learner."""
    if wanted is None:
        return courses
    chosen = [c for c in courses if c.get("slug") == wanted]
    if not chosen:
        names = ", ".join(str(c.get("slug")) for c in courses) or "none"
        raise UsageError(f"you are not in a course called {wanted!r} (yours: {names})")
    return chosen


def late_warning(course: str, window: ExerciseWindow) -> str | None:
    """The warning shown before a late submission is sent; None when it is on time."""
    if window.get("status") != "late":
        return None
    penalty = float(window.get("penalty_percent") or 0)
    cost = (
        f"it loses {penalty:g}% of its score per {window.get('penalty_unit', 'day')} started late"
        if penalty
        else "it is flagged late"
    )
    close = f"; submissions close {when(window.get('close_at'))}" if window.get("close_at") else ""
    return (
        f"{window.get('exercise')} was due {when(window.get('due_at'))} in {course} "
        f"({duration(window.get('seconds_to_due') or 0)} ago): {cost}{close}"
    )


def late_note(sub: Submission) -> str | None:
    """After grading: the late flag and the score that counts, when the submission was late."""
    if not sub.get("late"):
        return None
    penalty = float(sub.get("penalty_percent") or 0)
    counted = sub.get("counted_score")
    late_by = duration(int(sub.get("late_seconds") or 0))
    if penalty and counted is not None:
        return f"submitted late by {late_by}: -{penalty:g}%, the score that counts is {float(counted):g} (raw {sub.get('score')})"
    return f"submitted late by {late_by}: flagged late" + (f" ({penalty:g}% penalty)" if penalty else "")


def board_course(client: Client, wanted: str | None) -> str:
    """The course a board is about: ``wanted`` (one of yours), else your only course; a usage
    error naming your courses when you are in several and named none."""
    mine = client.courses() or []
    if wanted is not None:
        return str(pick_courses(mine, wanted)[0].get("slug"))
    if len(mine) == 1:
        return str(mine[0].get("slug"))
    names = ", ".join(str(c.get("slug")) for c in mine) or "none"
    raise UsageError(f"you are in several courses ({names}): say which board with --course NAME")


def board_lines(board: Board) -> Group:
    """One course's board as the terminal shows it: rank, learner (as the course names them:
    a pseudonym unless it shows names), board score, attempts, solved; your row marked."""
    exercise = board.get("exercise")
    title = f"Board of {board.get('course')}" + (f" · {exercise}" if exercise else " · overall")
    parts = [Text(title, style="bold")]
    entries = board.get("entries", [])
    if not entries:
        parts.append(Text("  nobody on this board yet", style="dim"))
    width = max([len(str(e.get("learner", ""))) for e in entries] + [7])
    parts.append(
        Text(f"  {'rank':>4}  {'learner':<{width}}  {'board score':>11}  {'attempts':>8}  {'solved':>6}", style="dim")
    )
    for entry in entries:
        score = float(entry.get("board_score") or 0)
        line = Text(
            f"  {entry.get('rank', 0):>4}  {entry.get('learner', '')!s:<{width}}  {score:>11g}  "
            f"{entry.get('attempts', 0):>8}  {entry.get('solved', 0):>6}",
            style="bold" if entry.get("is_you") else "",
        )
        if entry.get("is_you"):
            line.append("  ← you", style="bold green")
        parts.append(line)
    listed, total = len(entries), int(board.get("total") or 0)
    if total > listed:
        parts.append(Text(f"  ... {total - listed} more (the first {listed} are shown)", style="dim"))
    parts.append(Text("The board score counts the checks the judge confirmed, after late penalties.", style="dim"))
    return Group(*parts)

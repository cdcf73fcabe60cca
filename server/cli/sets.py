"""``ppo-grader sets``: publish an exercise in a course with its dates and policies, list, remove,
release its hidden scores now or hold them again."""

from __future__ import annotations

from contextlib import nullcontext
from typing import TYPE_CHECKING, Annotated, Any

import typer

from server.cli import common, remote
from server.courses.policy import late_rule
from server.terminal import plain
from server.times import zoned_time

if TYPE_CHECKING:
    from server.courses.schemas import CourseSet, ScoresReleasedPublic, SetEntryPublic

app = typer.Typer(
    help="Exercise sets: publish an exercise in a course with its dates and late policy.", no_args_is_help=True
)


@app.command("publish")
@common.edge
def sets_publish(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    exercise: Annotated[str, typer.Argument(help="Exercise slug (ppo-grader exercises list).")],
    release: Annotated[
        str | None, typer.Option(help="Opens at (ISO; course's zone unless an offset is given). Default: now.")
    ] = None,
    due: Annotated[str | None, typer.Option(help="Due at; later submissions are accepted and flagged late.")] = None,
    close: Annotated[str | None, typer.Option(help="Hard close; later submissions are refused.")] = None,
    penalty: Annotated[
        float, typer.Option(min=0, max=100, help="Percent of the score off per started --per late (0: only flag).")
    ] = 0.0,
    per: Annotated[str, typer.Option(help="day or hour.")] = "day",
    attempts: Annotated[int | None, typer.Option(min=1, help="At most this many attempts per learner.")] = None,
    feedback: Annotated[
        str,
        typer.Option(
            help="What learners see of a verdict: full, score (score and check names), hidden-until-due "
            "(released at the due date) or tokens:N (N full reports a day; the others score)."
        ),
    ] = "full",
    version: Annotated[
        str | None,
        typer.Option(
            "--version",
            help="Serve this stored, verified content version (`exercises versions SLUG`); default: the "
            "pack folder's current one, which must have passed verify.",
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Only say how many submissions so far the new rules would re-price (as the assignments page "
            "asks); nothing is written.",
        ),
    ] = False,
) -> None:
    """Publish an exercise in a course with its dates, late and feedback policies (or replace them);
    runs against a server with --server."""
    rules = {
        "penalty_percent": penalty,
        "penalty_unit": per,
        "max_attempts": attempts,
        "feedback_policy": feedback,
        "version": version,
    }
    dates = {"release_at": (release, "--release"), "due_at": (due, "--due"), "close_at": (close, "--close")}
    server = remote.target()
    if server is None:
        _publish_here(course, exercise, dates, rules, dry_run)
        return
    body = {
        **{
            key: None if value is None else common.iso_time(value, option).isoformat()
            for key, (value, option) in dates.items()
        },
        **rules,
    }
    from server.courses.schemas import RepricingPublic

    path = f"/courses/{remote.part(course)}/exercises/{remote.part(exercise)}"
    if dry_run:
        priced = RepricingPublic.model_validate(server.send("POST", path + "/preview", body))
        _say_dry_run(course, exercise, priced.rewritten, priced.counted)
        return
    server.send("PUT", path, body)
    book = _remote_set(server, course)
    _say_published(course, exercise, next(e for e in book.entries if e.exercise == exercise), book.time_zone)


def _remote_set(server: remote.Server, course: str) -> CourseSet:
    """The course's set as the server's ``GET /courses/{course}/sets`` answers it."""
    from server.courses.schemas import CourseSet

    return CourseSet.model_validate(server.get(f"/courses/{remote.part(course)}/sets"))


def _publish_here(
    course: str, exercise: str, dates: dict[str, tuple[str | None, str]], rules: dict[str, Any], dry_run: bool
) -> None:
    """``sets publish`` on this installation's database."""
    from server.courses.service import find_course
    from server.courses.sets import entry_public, preview, publish

    with common.session() as session:
        where = find_course(session, course)
        moments: dict[str, Any] = {key: common.when(value, where, option) for key, (value, option) in dates.items()}
        if dry_run:
            priced = preview(session, where, exercise, **moments, **rules)
            rewritten, counted = priced.rewritten, priced.counted
        else:
            entry = entry_public(
                publish(session, where, exercise, **moments, **rules, actor=common.actor()).entry, where
            )
            zone = where.time_zone
    if dry_run:
        _say_dry_run(course, exercise, rewritten, counted)
    else:
        _say_published(course, exercise, entry, zone)


def _say_published(course: str, exercise: str, entry: SetEntryPublic, zone: str) -> None:
    """What ``sets publish`` says it did (on the host or on a server alike)."""
    dates = ", ".join(
        f"{label} {zoned_time(moment, zone)}"
        for label, moment in (("opens", entry.release_at), ("due", entry.due_at), ("closes", entry.close_at))
        if moment is not None
    )
    pinned = entry.version
    common.err.print(
        f"Published {exercise!r} in {course!r}"
        + (f": {dates}" if dates else " (open, no dates)")
        + f"; feedback: {entry.feedback_policy}"
        + (f"; graded with version {pinned} from now on (running workers too)." if pinned else "."),
        highlight=False,
        soft_wrap=True,
    )


def _say_dry_run(course: str, exercise: str, rewritten: int, counted: int) -> None:
    """What ``sets publish --dry-run`` found: the count the assignments page asks to confirm."""
    common.err.print(
        f"Dry run: publishing {exercise!r} in {course!r} with these rules would change the score that counts of {counted} "
        f"submission{'s' if counted != 1 else ''} ({rewritten} would get a new lateness or penalty); nothing changed.",
        highlight=False,
        soft_wrap=True,
    )


@app.command("list")
@common.edge
def sets_list(course: Annotated[str, typer.Argument(help="Course slug.")]) -> None:
    """A course's exercise set, one line per exercise: dates (in the course's zone), policies;
    runs against a server with --server."""
    server = remote.target()
    if server is not None:
        book = _remote_set(server, course)
    else:
        from server.courses.service import find_course
        from server.courses.sets import course_set

        with common.session() as session:
            book = course_set(session, find_course(session, course))
    lines = []
    for e in book.entries:
        dates = "; ".join(
            f"{label} {zoned_time(m, book.time_zone) if m else '-'}"
            for label, m in (("opens", e.release_at), ("due", e.due_at), ("closes", e.close_at))
        )
        lines.append(
            f"{e.exercise}: {dates}; {late_rule(e.penalty_percent, e.penalty_unit)}; "
            f"attempts: {e.max_attempts or 'no limit'}; feedback: {e.feedback_policy}"
        )
    print("\n".join(lines) if lines else f"{course}: no exercise published yet")


@app.command("remove")
@common.edge
def sets_remove(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    exercise: Annotated[str, typer.Argument(help="Exercise slug.")],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only check it could be taken out (same refusals); nothing is written.")
    ] = False,
) -> None:
    """Take an exercise out of a course's set (its submissions and scores are kept); runs against
    a server with --server."""
    server = remote.target()
    if server is not None:
        server.delete(
            f"/courses/{remote.part(course)}/exercises/{remote.part(exercise)}", dry_run="true" if dry_run else None
        )
    else:
        from server.courses.service import find_course
        from server.courses.sets import unpublish
        from server.db import rolled_back

        with common.session() as session:
            where = find_course(session, course)
            with rolled_back(session) if dry_run else nullcontext():
                unpublish(session, where, exercise, actor=common.actor())
    common.err.print(
        f"Dry run: {exercise!r} would be taken out of {course!r} (its submissions and scores are kept); nothing changed."
        if dry_run
        else f"Removed {exercise!r} from {course!r}.",
        highlight=False,
        soft_wrap=True,
    )


@app.command("release")
@common.edge
def sets_release(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    exercise: Annotated[str, typer.Argument(help="Exercise slug.")],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only check and say what it would do; nothing is written.")
    ] = False,
) -> None:
    """Release an exercise's hidden scores now (feedback hidden-until-due becomes full), as the
    assignments page's button does; runs against a server with --server (a TA's token may)."""
    _release_or_hold(course, exercise, hold=False, dry_run=dry_run)


@app.command("hold")
@common.edge
def sets_hold(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    exercise: Annotated[str, typer.Argument(help="Exercise slug.")],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only check and say what it would do; nothing is written.")
    ] = False,
) -> None:
    """Hold an exercise's scores again until each learner's due date (feedback hidden-until-due,
    which needs a due date); runs against a server with --server."""
    _release_or_hold(course, exercise, hold=True, dry_run=dry_run)


def _release_or_hold(course: str, exercise: str, *, hold: bool, dry_run: bool) -> None:
    """``sets release`` and ``sets hold``, on a server or here; the same words on both."""
    from server.courses.schemas import ScoresReleasedPublic

    server = remote.target()
    if server is not None:
        done = ScoresReleasedPublic.model_validate(
            server.send(
                "POST",
                f"/courses/{remote.part(course)}/exercises/{remote.part(exercise)}/{'hold' if hold else 'release'}",
                {},
                dry_run="true" if dry_run else None,
            )
        )
    else:
        done = _release_here(course, exercise, hold, dry_run)
    covered = f"{done.submissions} submission{'s' if done.submissions != 1 else ''}"
    which = f"of {plain(repr(done.exercise))} in {plain(repr(done.course))}"
    if dry_run:
        said = (
            f"Dry run: the scores {which} would be held until each learner's due date ({covered}); nothing changed."
            if hold
            else f"Dry run: the hidden scores {which} would be released ({covered}); nothing changed."
        )
    elif hold:
        said = f"Held the scores {which} until each learner's due date ({covered}); feedback: {done.feedback_policy}."
    else:
        said = (
            f"Released the hidden scores {which}: learners see them now ({covered}); feedback: {done.feedback_policy}."
        )
    common.err.print(said, highlight=False, soft_wrap=True)


def _release_here(course: str, exercise: str, hold: bool, dry_run: bool) -> ScoresReleasedPublic:
    """``sets release``/``hold`` on this installation's database, answered as the API answers it."""
    from server.courses.schemas import ScoresReleasedPublic
    from server.courses.service import find_course
    from server.courses.sets import release_scores
    from server.db import rolled_back

    with common.session() as session:
        where = find_course(session, course)
        with rolled_back(session) if dry_run else nullcontext():
            done = release_scores(session, where, exercise, hold=hold, actor=common.actor())
            return ScoresReleasedPublic(
                course=where.slug,
                exercise=exercise,
                held=hold,
                feedback_policy=done.entry.feedback_policy,
                submissions=done.submissions,
            )

"""``ppo-grader sets``: publish an exercise in a course with its dates and policies, list, remove."""

from __future__ import annotations

from typing import Annotated

import typer

from server.cli import common

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
) -> None:
    """Publish an exercise in a course with its dates, late and feedback policies (or replace them)."""
    from server.courses.service import course_time, find_course
    from server.courses.sets import publish

    with common.session() as session:
        where = find_course(session, course)
        entry = publish(
            session,
            where,
            exercise,
            release_at=common.when(release, where, "--release"),
            due_at=common.when(due, where, "--due"),
            close_at=common.when(close, where, "--close"),
            penalty_percent=penalty,
            penalty_unit=per,
            max_attempts=attempts,
            feedback_policy=feedback,
            version=version,
            actor=common.actor(),
        ).entry
        dates = ", ".join(
            f"{label} {course_time(moment, where)}"
            for label, moment in (("opens", entry.release_at), ("due", entry.due_at), ("closes", entry.close_at))
            if moment is not None
        )
        policy = entry.feedback_policy
        pinned = entry.content_version
    common.err.print(
        f"Published {exercise!r} in {course!r}"
        + (f": {dates}" if dates else " (open, no dates)")
        + f"; feedback: {policy}"
        + (f"; graded with version {pinned} from now on (running workers too)." if pinned else "."),
        highlight=False,
        soft_wrap=True,
    )


@app.command("list")
@common.edge
def sets_list(course: Annotated[str, typer.Argument(help="Course slug.")]) -> None:
    """A course's exercise set, one line per exercise: dates (in the course's zone), policies."""
    from server.courses.service import course_time, find_course
    from server.courses.sets import entries, late_rule

    with common.session() as session:
        where = find_course(session, course)
        lines = []
        for e in entries(session, where):
            dates = "; ".join(
                f"{label} {course_time(m, where) if m else '-'}"
                for label, m in (("opens", e.release_at), ("due", e.due_at), ("closes", e.close_at))
            )
            lines.append(
                f"{e.exercise}: {dates}; {late_rule(e)}; attempts: {e.max_attempts or 'no limit'}; "
                f"feedback: {e.feedback_policy}"
            )
    print("\n".join(lines) if lines else f"{course}: no exercise published yet")


@app.command("remove")
@common.edge
def sets_remove(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    exercise: Annotated[str, typer.Argument(help="Exercise slug.")],
) -> None:
    """Take an exercise out of a course's set (its submissions and scores are kept)."""
    from server.courses.service import find_course
    from server.courses.sets import unpublish

    with common.session() as session:
        unpublish(session, find_course(session, course), exercise, actor=common.actor())
    common.err.print(f"Removed {exercise!r} from {course!r}.", highlight=False)

"""``ppo-grader extensions grant``: a later due date for one learner on one exercise."""

from __future__ import annotations

from typing import Annotated

import typer

from server.cli import common

app = typer.Typer(help="Extensions: a later due date for one learner on one exercise.", no_args_is_help=True)


@app.command("grant")
@common.edge
def extensions_grant(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    user: Annotated[str, typer.Argument(help="The learner's login name.")],
    exercise: Annotated[str, typer.Argument(help="Exercise slug.")],
    due: Annotated[
        str, typer.Option(help="The learner's new due date (ISO; course's zone unless an offset is given).")
    ],
) -> None:
    """Give one learner a later due date on one exercise (an earlier hard close moves with it)."""
    from server.courses.service import course_time, find_course
    from server.courses.sets import grant_extension

    with common.session() as session:
        where = find_course(session, course)
        granted = grant_extension(session, where, user, exercise, common.when(due, where, "--due"))
        when = course_time(granted.extension.due_at, where)
    common.err.print(
        f"{user!r} may hand in {exercise!r} in {course!r} until {when}; {_recomputed(granted.recomputed)}.",
        highlight=False,
    )


def _recomputed(count: int) -> str:
    """What an extension did to the submissions already made, in one phrase."""
    if not count:
        return "no earlier submission changed"
    return f"recomputed the late penalty of {count} earlier submission{'s' if count != 1 else ''}"

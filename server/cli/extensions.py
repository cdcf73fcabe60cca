"""``ppo-grader extensions grant``: a later due date for one learner on one exercise."""

from __future__ import annotations

from typing import Annotated

import typer

from server.cli import common, remote
from server.times import zoned_time

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
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Only say how many earlier submissions it would re-price; nothing is written."),
    ] = False,
) -> None:
    """Give one learner a later due date on one exercise (an earlier hard close moves with it);
    runs against a server with --server."""
    server = remote.target()
    if server is not None:
        from server.courses.schemas import ExtensionPublic

        granted = ExtensionPublic.model_validate(
            server.send(
                "PUT",
                f"/courses/{remote.part(course)}/extensions/{remote.part(user)}/{remote.part(exercise)}",
                {"due_at": common.iso_time(due, "--due").isoformat()},
                dry_run="true" if dry_run else None,
            )
        )
        moment, zone, count = granted.due_at, granted.time_zone, granted.recomputed
    else:
        from server.courses.service import find_course
        from server.courses.sets import grant_extension, preview_extension

        with common.session() as session:
            where = find_course(session, course)
            moment, zone = common.when(due, where, "--due"), where.time_zone
            if dry_run:
                count = preview_extension(session, where, user, exercise, moment)
            else:
                count = grant_extension(session, where, user, exercise, moment).recomputed
    common.err.print(
        (f"Dry run: {user!r} would hand in" if dry_run else f"{user!r} may hand in")
        + f" {exercise!r} in {course!r} until {zoned_time(moment, zone)}; {_recomputed(count, dry_run)}"
        + ("; nothing changed." if dry_run else "."),
        highlight=False,
        soft_wrap=True,
    )


def _recomputed(count: int, dry_run: bool) -> str:
    """What an extension did (or, a dry run, would do) to the submissions already made, in one phrase."""
    if not count:
        return f"no earlier submission {'would change' if dry_run else 'changed'}"
    plural = "s" if count != 1 else ""
    return f"{'would recompute' if dry_run else 'recomputed'} the late penalty of {count} earlier submission{plural}"

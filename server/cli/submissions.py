"""``ppo-grader submissions export``: a course's sources and scores in a zip."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from server.cli import common

app = typer.Typer(help="Submissions: export a course's sources and scores.", no_args_is_help=True)


@app.command("export")
@common.edge
def submissions_export(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    exercise: Annotated[str | None, typer.Option(help="Only this exercise.")] = None,
    out: Annotated[
        str | None, typer.Option(help="Where to write the zip (default: COURSE-submissions.zip here).")
    ] = None,
) -> None:
    """Write a zip of each learner's latest and counted sources, with a manifest CSV
    (learner, exercise, submission, raw and counted score, late, time)."""
    from server.courses.service import find_course
    from server.submissions.export import export_zip

    target = Path(out or f"{course}{'-' + exercise if exercise else ''}-submissions.zip")
    with common.session() as session:
        where = find_course(session, course)
        with open(target, "wb") as handle:
            done = export_zip(session, where, handle, exercise)
    common.err.print(
        f"Wrote {target}: {done.files} source file(s) of {done.learners} learner(s), and manifest.csv.", highlight=False
    )

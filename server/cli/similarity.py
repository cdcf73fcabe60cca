"""``ppo-grader similarity COURSE``: the pairs of learners whose code is most alike."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from server.cli import common
from server.config import Settings
from server.db import transaction
from server.terminal import plain


@common.edge
def similarity(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    exercise: Annotated[
        str | None, typer.Option(help="Rank by this exercise alone (default: over the course).")
    ] = None,
    top: Annotated[int, typer.Option(min=1, max=100, help="How many pairs to print.")] = 20,
    refresh: Annotated[bool, typer.Option("--refresh", help="Compute a new run now, in this process, first.")] = False,
) -> None:
    """Print the pairs of learners whose code is most alike, from the newest finished run
    (computed after a due date or on request; with --refresh, or when there is none yet,
    computed here first). For instructors: review each pair before acting on it."""
    from server.courses.service import find_course
    from server.similarity import service
    from server.similarity.views import pair_public
    from server.times import local_time

    with common.sessions() as sessions:  # the one guard: no new database, the service's packs
        with transaction(sessions) as session:
            where = find_course(session, course)
            needed = refresh or service.latest_done_run(session, where) is None
            run_id = service.request_run(session, where)[0].id if needed else None
        if run_id is not None:
            common.err.print(f"Comparing the submissions of {course!r}...", highlight=False)
            service.run_similarity(sessions, run_id, processes=Settings().SIMILARITY_PROCESSES)
        with sessions() as session:
            where = find_course(session, course)
            run = service.latest_done_run(session, where)
            if run is None:
                latest = service.latest_run(session, where)
                common.fail(
                    f"no finished similarity run for {course!r}"
                    + (f": {latest.message}" if latest and latest.message else "")
                )
            pairs = [pair_public(p) for p in service.ranked_pairs(session, run, exercise, top)]
            summary = run.summary
            zone_name = where.time_zone
    title = (
        f"{course}"
        + (f" · {exercise}" if exercise else "")
        + f" · run {run.id}"
        + (f" of {local_time(run.finished_at, zone_name)}" if run.finished_at else "")
    )
    table = Table("rank", "learners", "score", "similar on", "exercises (similarity)", "review", title=plain(title))
    for p in pairs:
        listed = [e for e in p.exercises if exercise is None or e.exercise == exercise]
        table.add_row(
            *map(
                plain,
                (
                    str(p.rank),
                    f"{p.learner_a} / {p.learner_b}",
                    f"{p.score:.2f}",
                    str(p.similar_on),
                    ", ".join(f"{e.exercise} {e.similarity:.2f}" for e in listed),
                    p.review or "",
                ),
            ),
        )
    common.out.print(table)
    common.err.print(
        f"{summary.get('learners', 0)} learners, {summary.get('submissions', 0)} submissions, "
        f"{summary.get('pairs_found', 0)} similar pair(s). Nothing here changes a score.",
        highlight=False,
    )

"""``ppo-grader similarity COURSE``: the pairs of learners whose code is most alike; on the host
or, with ``--server``, from the API (``GET /courses/{course}/similarity``), printed alike."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.table import Table

from server.cli import common, remote
from server.terminal import plain

if TYPE_CHECKING:
    from server.similarity.schemas import PairPublic, RunPublic, SimilarityReport

#: How long ``--server`` waits for a run it asked for to finish (the server computes it behind
#: every submission's grading); how often it asks meanwhile.
REMOTE_WAIT_SECONDS = 600.0
REMOTE_POLL_SECONDS = 0.5


@common.edge
def similarity(
    course: Annotated[str, typer.Argument(help="Course slug.")],
    exercise: Annotated[
        str | None, typer.Option(help="Rank by this exercise alone (default: over the course).")
    ] = None,
    top: Annotated[int, typer.Option(min=1, max=100, help="How many pairs to print.")] = 20,
    refresh: Annotated[
        bool, typer.Option("--refresh", help="Compute a new run now first (here; with --server, on the server).")
    ] = False,
) -> None:
    """Print the pairs of learners whose code is most alike, from the newest finished run
    (computed after a due date or on request; with --refresh, or when there is none yet,
    computed first: here, or by the server with --server, an instructor account's token). For
    instructors: review each pair before acting on it."""
    server = remote.target()
    if server is not None:
        run, pairs, zone = _remote(server, course, exercise, top, refresh)
    else:
        run, pairs, zone = _here(course, exercise, top, refresh)
    _print(course, exercise, run, pairs, zone)


def _comparing(course: str) -> None:
    common.err.print(f"Comparing the submissions of {plain(repr(course))}...", highlight=False)


def _no_run(course: str, latest: RunPublic | None) -> NoReturn:
    common.fail(
        f"no finished similarity run for {course!r}" + (f": {latest.message}" if latest and latest.message else "")
    )


def _here(course: str, exercise: str | None, top: int, refresh: bool) -> tuple[RunPublic, list[PairPublic], str]:
    """The newest finished run of this installation's database (computed here first when asked
    or when there is none), its ``top`` pairs and the course's zone."""
    from server.config import Settings
    from server.courses.service import find_course
    from server.db import transaction
    from server.similarity import service
    from server.similarity.views import pair_public, run_public

    with common.sessions() as sessions:  # the one guard: no new database, the service's packs
        with transaction(sessions) as session:
            where = find_course(session, course)
            needed = refresh or service.latest_done_run(session, where) is None
            run_id = service.request_run(session, where)[0].id if needed else None
        if run_id is not None:
            _comparing(course)
            service.run_similarity(sessions, run_id, processes=Settings().SIMILARITY_PROCESSES)
        with sessions() as session:
            where = find_course(session, course)
            run = service.latest_done_run(session, where)
            done = run_public(run)
            if run is None or done is None:
                _no_run(course, run_public(service.latest_run(session, where)))
            return done, [pair_public(p) for p in service.ranked_pairs(session, run, exercise, top)], where.time_zone


def _remote(
    server: remote.Server, course: str, exercise: str | None, top: int, refresh: bool
) -> tuple[RunPublic, list[PairPublic], str]:
    """The same from the server: the report of its newest finished run; a run asked for first
    (``POST``) when ``refresh`` or when there is none, and waited for."""
    from server.similarity.schemas import RunPublic

    path = f"/courses/{remote.part(course)}/similarity"
    report = _report(server, path, exercise, top)
    if refresh or report.pairs_run is None:
        asked = RunPublic.model_validate(server.send("POST", path, {}))
        _comparing(course)
        deadline = time.monotonic() + REMOTE_WAIT_SECONDS
        while not _finished(report.latest, asked.id):
            if time.monotonic() > deadline:
                common.fail(
                    f"the server has not finished similarity run {asked.id} of {course!r} in "
                    f"{REMOTE_WAIT_SECONDS:.0f} s (it runs behind the grading); run this again later."
                )
            time.sleep(REMOTE_POLL_SECONDS)
            report = _report(server, path, exercise, top)
    if report.pairs_run is None:
        _no_run(course, report.latest)
    return report.pairs_run, report.pairs, report.time_zone


def _finished(latest: RunPublic | None, asked: int) -> bool:
    """Whether the run ``asked`` for is over (done or failed, or a newer one is the latest)."""
    return latest is not None and (latest.id > asked or (latest.id == asked and latest.status in ("done", "failed")))


def _report(server: remote.Server, path: str, exercise: str | None, top: int) -> SimilarityReport:
    from server.similarity.schemas import SimilarityReport

    return SimilarityReport.model_validate(server.get(path, exercise=exercise, limit=str(top)))


def _print(course: str, exercise: str | None, run: RunPublic, pairs: list[PairPublic], zone: str) -> None:
    """The table of pairs and the run's summary line (on the host and from a server alike)."""
    from server.times import local_time

    title = (
        f"{course}"
        + (f" · {exercise}" if exercise else "")
        + f" · run {run.id}"
        + (f" of {local_time(run.finished_at, zone)}" if run.finished_at else "")
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
        f"{run.learners} learners, {run.submissions} submissions, "
        f"{run.pairs_found} similar pair(s). Nothing here changes a score.",
        highlight=False,
    )

"""``ppo-grader serve``, ``worker`` and ``migrate``: the service's own commands, the three that may
create the database (``serve``'s first start). Their own imports of the app, the worker and the
catalogue wait until they run: those load torch, which ``ppo-grader --help`` has no use for."""

from __future__ import annotations

import gc
import logging
import math
import os
import signal
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from exercises.packs import env_packs, path_pack
from server.catalog.packs_config import packs_line, record_packs
from server.cli import common
from server.config import Settings
from server.db import make_engine, make_session_factory, transaction
from server.location import ENV_URL, Located, absolute, remember
from server.logging_setup import configure_logging
from server.migrations import upgrade_to_head

if TYPE_CHECKING:
    from fastapi import FastAPI

    from exercises.framework import Exercise


@common.edge
def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.", envvar="PPO_GRADER_HOST")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.", envvar="PPO_GRADER_PORT")] = 8000,
    database: Annotated[
        str | None,
        typer.Option(
            "--database",
            help="Use this database URL from now on: recorded in this installation's data folder, so every "
            "command of this checkout finds it (PPO_GRADER_DATABASE_URL instead: this process only).",
        ),
    ] = None,
    pack: Annotated[
        list[Path] | None,
        typer.Option(
            "--pack",
            help="Serve this exercise pack folder (repeatable): recorded in the database, so every command "
            "(worker, admin, verify) sees the same packs. Without it: the packs recorded before.",
        ),
    ] = None,
) -> None:
    """Start the API and the in-process grading workers (migrations are applied first).

    SIGTERM stops it a second or two after ``SHUTDOWN_GRACE_SECONDS``, exit code 0: waiting
    long polls answer 503 at once, a job still grading then goes back to the queue.
    """
    from exercises import registry
    from server.app import create_app

    if database is not None:
        if os.environ.get(ENV_URL):
            common.fail(f"give the database once: --database or {ENV_URL}, not both")
        written = remember(database)
        where = Located(absolute(database), "--database" + (f", recorded in {written}" if written else ""), True)
    else:
        where = common.database(create=True)
    settings = Settings().model_copy(update={"DATABASE_URL": where.url})
    given = [str(p.expanduser().resolve()) for p in pack or []] + [str(p.root) for p in env_packs()]
    for folder in given:
        path_pack(folder)  # a folder given that is none: said as such, before anything is recorded
    if not given:
        common.served_packs(where.url)  # the packs recorded before
    # Every pack now: one that fails stops the service here, with one line (and is not recorded).
    catalogue = registry.load(served=list(dict.fromkeys(given)) if given else None)
    if given:  # loaded whole: the service's packs from now on, for every command on this database
        engine = make_engine(where.url)
        try:
            upgrade_to_head(engine)
            with transaction(make_session_factory(engine)) as session:
                record_packs(session, registry.served_folders())
        finally:
            engine.dispose()
    # The banner, before any log line: which database, which packs (issue 32: it used to be one
    # line after the installer's output, and a server on the wrong database went unnoticed).
    common.err.print(f"database: {where.shown} (from {where.source})", highlight=False, soft_wrap=True)
    common.err.print(packs_line(catalogue), highlight=False, soft_wrap=True)
    _serve_first_seen(settings, catalogue)
    # JSON lines on stderr (PPO_GRADER_LOG_FORMAT=text for the human format), uvicorn's too.
    configure_logging()
    _run_until_stopped(create_app(settings), settings, host, port)
    logging.getLogger(__name__).info("server stopped")
    # The interpreter's last collection walks every object torch and the catalogue made:
    # seconds on a busy machine, for memory the exit frees anyway (issue 38).
    gc.freeze()


def _run_until_stopped(app: FastAPI, settings: Settings, host: str, port: int) -> None:
    """uvicorn, with a shutdown that ends the long polls first and is bounded (issue 38).

    uvicorn's own shutdown waits for every connection to close before the app hears of it (the
    lifespan's end comes last), so a thousand long polls of up to 30 s held SIGTERM that long.
    Here the server tells the app first (``begin_shutdown``: every long poll answers 503 now),
    and gives the other requests in flight ``SHUTDOWN_GRACE_SECONDS``; the jobs in hand get
    until the same deadline (the lifespan's end).
    """
    import uvicorn

    from server.app import begin_shutdown

    class Server(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            begin_shutdown(app)
            await super().shutdown(sockets)

    grace = settings.SHUTDOWN_GRACE_SECONDS
    config = uvicorn.Config(
        app, host=host, port=port, log_level="info", log_config=None, timeout_graceful_shutdown=math.ceil(grace)
    )
    server = Server(config)
    # uvicorn raises the signal it stopped on again once it has restored the handlers it found:
    # with SIGTERM's default one, a clean stop would end as "killed by SIGTERM" (exit 143).
    # Found here instead: its own handler, so a SIGTERM before it installs one still stops it.
    previous = signal.signal(signal.SIGTERM, server.handle_exit)
    try:
        server.run()
    finally:
        signal.signal(signal.SIGTERM, previous)


def _serve_first_seen(settings: Settings, catalogue: list[Exercise]) -> None:
    """Give every pack exercise this service sees for the first time its served version (issue
    32: what grades where no set pins one): the folder's version, put through the gate here
    when no verify passed on it yet (the gate's seeds, the service's jail limits), each said in
    one line. Verified outside any transaction: the database is not held while the jail runs."""
    from exercises.verify import SEEDS, verify_exercise
    from server.catalog.verification import first_seen, serve_first

    engine = make_engine(settings.DATABASE_URL)
    sessions = make_session_factory(engine)
    judge = None
    try:
        with transaction(sessions) as session:
            fresh = first_seen(session, catalogue)
        for exercise, verified in fresh:
            result = None
            if not verified:
                if judge is None:
                    from exercises.judge import Judge
                    from server.grading.grader import sandbox_limits

                    unverified = sum(not v for _, v in fresh)
                    common.err.print(
                        f"verifying {unverified} pack exercise(s) seen for the first time", highlight=False
                    )
                    judge = Judge(secret=settings.secret_bytes, limits=sandbox_limits(settings), pool_size=1)
                result = verify_exercise(judge, exercise, SEEDS)
                for problem in result.problems():
                    common.err.print(f"  x {exercise.slug}: {problem}", highlight=False, soft_wrap=True)
            with transaction(sessions) as session:
                common.err.print(serve_first(session, exercise, result), highlight=False, soft_wrap=True)
    finally:
        if judge is not None:
            judge.close()
        engine.dispose()


@common.edge
def worker(
    queue: Annotated[str, typer.Option(help="Which queue to serve: cpu or gpu (gpu grades on CUDA).")] = "cpu",
    concurrency: Annotated[int, typer.Option(min=1, max=64, help="Jobs graded at once (one warm jail each).")] = 1,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            help="Serve this process's Prometheus metrics (and a health probe) on this port.",
            envvar="PPO_GRADER_METRICS_PORT",
        ),
    ] = None,
) -> None:
    """Grade submissions from the procrastinate queue (QUEUE=procrastinate, PostgreSQL).

    Run as many as you like, on any machine that reaches the database; SIGTERM finishes
    the jobs in hand, then exits.
    """
    from exercises import registry
    from server.grading.procrastinate_backend import QUEUES, run_worker

    if queue not in QUEUES:
        raise typer.BadParameter(f"use one of {', '.join(QUEUES)}", param_hint="--queue")
    settings = Settings().model_copy(update={"DATABASE_URL": common.database(create=True).url})
    common.served_packs(settings.DATABASE_URL)
    registry.load()  # the same packs as the API's (recorded in the database), or no worker
    configure_logging()
    upgrade_to_head(make_engine(settings.DATABASE_URL))  # idempotent; the job tables must exist
    run_worker(settings, queue, concurrency, metrics_port)


@common.edge
def migrate() -> None:
    """Apply pending database migrations, then exit (docker-compose's one-shot `migrate`)."""
    where = common.database(create=True)
    upgrade_to_head(make_engine(where.url))
    common.err.print(f"database {where.shown} (from {where.source}) is at the latest migration", highlight=False)

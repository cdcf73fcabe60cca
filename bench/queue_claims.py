"""The queue at deadline scale, on one PostgreSQL: long polls and procrastinate's job claims.

1. **The long poll.** ``--clients`` learners wait for verdicts that never come (no worker
   runs), spread over two ``ppo-grader serve`` processes (``QUEUE=procrastinate``), each
   client long-polling ``GET /submissions/{id}?wait=5`` as ``ppo-submit`` does. Measured
   twice in one run, the API restarted in between: re-reading every 50 ms
   (``LISTEN_NOTIFY=false``, the way before) and woken by LISTEN/NOTIFY. The figure is the
   database's own count of transactions per second (``pg_stat_database``: every read of a
   waiting row is one), next to the requests per second the clients made.
2. **Job claims.** ``--jobs`` no-op jobs in one procrastinate queue, claimed and finished by
   8, 32 and 128 simulated workers (each a registered procrastinate worker on a connection of
   its own, calling procrastinate's own ``fetch_job`` and ``finish_job``), in ``--processes``
   processes. Claims per second at each worker count show where one queue saturates.

Needs a PostgreSQL server it may create a database on (``--pg``, an admin URL); the
database is dropped at the end.

    .venv/bin/python bench/queue_claims.py --small            # a quick check (100 clients, 600 jobs)
    .venv/bin/python bench/queue_claims.py --write            # the record: 1,000 clients, 6,000 jobs
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BIN = Path(sys.executable).parent
WORKER_COUNTS = (8, 32, 128)
QUEUE = "bench"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _database(admin: str) -> Iterator[str]:
    """A fresh database on the admin URL's server; yields its SQLAlchemy URL."""
    import psycopg

    name = f"ppo_grader_bench_{os.getpid()}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield "postgresql+psycopg://" + admin.split("://", 1)[1].rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
                         "AND pid <> pg_backend_pid()", (name,))
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


# --------------------------------------------------------------------------- the long poll


def _seed(url: str, clients: int) -> list[tuple[str, int]]:
    """Migrate, then one learner and one queued submission per client: (token, id) pairs."""
    from server.config import Settings
    from server.db import make_engine, make_session_factory, transaction
    from server.grading.procrastinate_backend import ProcrastinateQueue
    from server.migrations import upgrade_to_head
    from server.models import Role
    from server.submissions.schemas import SubmissionCreate
    from server.submissions.service import create_submission
    from server.users.service import create_user

    settings = Settings(DATABASE_URL=url, QUEUE="procrastinate")
    engine = make_engine(url)
    upgrade_to_head(engine)
    sessions = make_session_factory(engine)
    queue = ProcrastinateQueue(settings)
    source = (ROOT / "exercises" / "actor_loss" / "reference.py").read_text()
    pairs = []
    for i in range(clients):
        with transaction(sessions) as session:
            created = create_user(session, f"learner{i}", Role.LEARNER, settings.secret_bytes)
        with sessions() as session:
            user = session.merge(created.user)
            row, _ = create_submission(session, queue, user, SubmissionCreate(exercise="actor-loss", source=source),
                                       max_source_bytes=settings.MAX_SOURCE_BYTES, idempotency_key=None,
                                       max_queued=None)
            pairs.append((created.token, row.id))
    engine.dispose()
    return pairs


def _serve(url: str, listen: bool, count: int) -> list[tuple[subprocess.Popen[bytes], str]]:
    """``count`` API processes, started together (each start-up takes seconds), once all answer."""
    import httpx

    env = {**os.environ, "PPO_GRADER_DATABASE_URL": url, "PPO_GRADER_QUEUE": "procrastinate",
           "PPO_GRADER_LISTEN_NOTIFY": "true" if listen else "false"}
    servers = []
    for _ in range(count):
        port = _free_port()
        proc = subprocess.Popen([str(BIN / "ppo-grader"), "serve", "--port", str(port)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        servers.append((proc, f"http://127.0.0.1:{port}"))
    deadline = time.monotonic() + 120
    waiting = [base for _, base in servers]
    while waiting and time.monotonic() < deadline:
        try:
            if httpx.get(f"{waiting[0]}/api/v1/health", timeout=1).status_code == 200:
                waiting.pop(0)
        except httpx.HTTPError:
            time.sleep(0.2)
    if waiting:
        for proc, _ in servers:
            proc.kill()
        raise SystemExit("the API did not start")
    return servers


def _transactions(admin: str, url: str) -> int:
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute("SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s",
                           (name,)).fetchone()
    return int(row[0]) if row else 0


async def _long_poll(bases: list[str], pairs: list[tuple[str, int]], seconds: float, warmup: float,
                     admin: str, url: str) -> tuple[float, float, int]:
    """(database transactions/s, client requests/s, failed requests) over ``seconds``."""
    import httpx

    requests = 0
    failed = 0
    counting = False
    stop = asyncio.Event()

    async def client(http: httpx.AsyncClient, base: str, token: str, sid: int) -> None:
        nonlocal requests, failed
        headers = {"Authorization": f"Bearer {token}"}
        while not stop.is_set():
            try:
                response = await http.get(f"{base}/api/v1/submissions/{sid}", params={"wait": "5"},
                                          headers=headers)
                ok = response.status_code == 200
            except httpx.HTTPError:
                ok = False
            if counting:
                requests += 1
                failed += not ok
            if not ok:
                await asyncio.sleep(0.5)

    limits = httpx.Limits(max_connections=len(pairs) + 10, max_keepalive_connections=len(pairs) + 10)
    async with httpx.AsyncClient(limits=limits, timeout=60) as http:
        tasks = [asyncio.create_task(client(http, bases[i % len(bases)], token, sid))
                 for i, (token, sid) in enumerate(pairs)]
        await asyncio.sleep(warmup)
        before = await asyncio.to_thread(_transactions, admin, url)
        counting = True
        t0 = time.monotonic()
        await asyncio.sleep(seconds)
        elapsed = time.monotonic() - t0
        counting = False
        await asyncio.sleep(1.0)  # backends report their counts at most once a second
        after = await asyncio.to_thread(_transactions, admin, url)
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return (after - before) / elapsed, requests / elapsed, failed


def long_poll_rates(admin: str, url: str, clients: int, seconds: float) -> dict[str, tuple[float, float, int]]:
    """The long poll's database load, polling and then LISTEN/NOTIFY, with ``clients`` waiting."""
    pairs = _seed(url, clients)
    rates = {}
    for way, listen in (("re-read every 50 ms (before)", False), ("LISTEN/NOTIFY (after)", True)):
        servers = _serve(url, listen, 2)
        try:
            rates[way] = asyncio.run(_long_poll([base for _, base in servers], pairs, seconds, 3.0, admin, url))
        finally:
            for proc, _ in servers:
                proc.terminate()
                proc.wait(timeout=30)
    return rates


# --------------------------------------------------------------------------- job claims


def _defer(url: str, jobs: int) -> None:
    from sqlalchemy import text

    from server.db import make_engine

    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM procrastinate_jobs WHERE queue_name = :q"), {"q": QUEUE})
        conn.execute(text(
            "SELECT procrastinate_defer_jobs_v1(ARRAY(SELECT ROW(CAST(:q AS varchar), CAST('noop' AS varchar), 0, "
            "NULL::text, NULL::text, CAST('{}' AS jsonb), NULL::timestamptz)::procrastinate_job_to_defer_v1 "
            "FROM generate_series(1, :n)))"), {"q": QUEUE, "n": jobs})
    engine.dispose()


def _claim_process(conninfo: str, workers: int, connections: int, start: float,
                   results: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    """``workers`` simulated workers claiming and finishing no-op jobs until none is left, on a
    pool of at most ``connections`` connections (a pooler's role at this scale)."""
    import logging

    import procrastinate
    from procrastinate.jobs import Status

    logging.getLogger("procrastinate").setLevel(logging.ERROR)  # "App is instantiated in the main module"

    async def main() -> int:
        size = min(workers, connections)
        connector = procrastinate.PsycopgConnector(conninfo=conninfo, min_size=size, max_size=size)
        app = procrastinate.App(connector=connector)
        async with app.open_async():
            manager = app.job_manager
            ids = [await manager.register_worker() for _ in range(workers)]
            while time.time() < start:
                await asyncio.sleep(0.005)

            async def worker(worker_id: int) -> int:
                done = 0
                while (job := await manager.fetch_job(queues=[QUEUE], worker_id=worker_id)) is not None:
                    await manager.finish_job(job, status=Status.SUCCEEDED, delete_job=False)
                    done += 1
                return done

            counts = await asyncio.gather(*(worker(i) for i in ids))
            for worker_id in ids:
                await manager.unregister_worker(worker_id)
            return sum(counts)

    results.put((asyncio.run(main()), time.time()))


def claim_rates(url: str, jobs: int, processes: int, connections: int,
                counts: tuple[int, ...] = WORKER_COUNTS) -> dict[int, float]:
    """Claims (fetch + finish) per second with ``counts`` simulated workers (8, 32 and 128),
    on at most ``connections`` database connections in all."""
    from server.grading.procrastinate_backend import conninfo

    info = conninfo(url)
    rates = {}
    for workers in counts:
        _defer(url, jobs)
        results: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
        start = time.time() + 3.0  # every process connected and its workers registered by then
        share = [workers // processes + (i < workers % processes) for i in range(processes)]
        per_process = max(1, connections // processes)
        procs = [multiprocessing.Process(target=_claim_process, args=(info, n, per_process, start, results))
                 for n in share if n]
        for proc in procs:
            proc.start()
        outcomes = [results.get(timeout=600) for _ in procs]
        for proc in procs:
            proc.join()
        claimed = sum(count for count, _ in outcomes)
        assert claimed == jobs, f"{claimed} of {jobs} jobs claimed"
        rates[workers] = claimed / (max(end for _, end in outcomes) - start)
    return rates


# --------------------------------------------------------------------------- report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", default=os.environ.get("PPO_GRADER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres"),
                        help="admin URL of the PostgreSQL server (a database is created and dropped)")
    parser.add_argument("--small", action="store_true", help="100 clients, 600 jobs, 5 s windows")
    parser.add_argument("--clients", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--seconds", type=float, default=None, help="measuring window of each long-poll run")
    parser.add_argument("--simulated-workers", default=",".join(map(str, WORKER_COUNTS)),
                        help="simulated worker counts to claim jobs with, comma-separated")
    parser.add_argument("--processes", type=int, default=2, help="processes the simulated workers run in")
    parser.add_argument("--connections", type=int, default=40,
                        help="database connections the simulated workers share (PostgreSQL's default "
                             "max_connections is 100, shared with everything else)")
    parser.add_argument("--write", action="store_true", help="write the table into docs/benchmarks.md")
    args = parser.parse_args()
    clients = args.clients or (100 if args.small else 1000)
    jobs = args.jobs or (600 if args.small else 6000)
    seconds = args.seconds or (5.0 if args.small else 15.0)
    load_before = os.getloadavg()[0]
    with _database(args.pg) as url:
        polls = long_poll_rates(args.pg, url, clients, seconds)
        counts = tuple(int(n) for n in args.simulated_workers.split(","))
        claims = claim_rates(url, jobs, args.processes, args.connections, counts)
    load_after = os.getloadavg()[0]
    rows = [f"| {way} | {clients} | {xacts:,.0f} | {reqs:,.0f} | {failed} |"
            for way, (xacts, reqs, failed) in polls.items()]
    (before, _, _), (after, _, _) = polls.values()
    claim_rows = [f"| {workers} | {rate:,.0f} |" for workers, rate in claims.items()]
    table = "\n".join([
        f"Load average {load_before:.1f} at the start, {load_after:.1f} at the end; {os.cpu_count()} cores; "
        "PostgreSQL on the same machine.", "",
        "| long poll, 2 API processes | waiting clients | database transactions/s | requests/s | failed |",
        "|---|---|---|---|---|", *rows, "",
        f"LISTEN/NOTIFY divides the database load of waiting clients by {before / max(after, 1e-9):.0f}. "
        "Each request is a long poll of up to 5 s (as `ppo-submit` asks); no verdict arrives, so this "
        "is the cost of waiting alone. Polling's figure is capped by the API processes' CPU: "
        "the demand (one read per client per 50 ms) is 20 per second per client.", "",
        f"| simulated procrastinate workers ({args.processes} processes, at most {args.connections} "
        f"connections) | claims/s ({jobs:,} no-op jobs) |",
        "|---|---|", *claim_rows,
    ])
    print(table)
    if args.write:
        from bench.report import write_section

        given = {"--clients": args.clients, "--jobs": args.jobs, "--seconds": args.seconds,
                 "--simulated-workers": None if counts == WORKER_COUNTS else args.simulated_workers,
                 "--processes": None if args.processes == 2 else args.processes,
                 "--connections": None if args.connections == 40 else args.connections}
        flags = "".join([" --small" if args.small else "", *(f" {k} {v}" for k, v in given.items() if v is not None)])
        write_section("The queue at deadline scale (issue 22)", f".venv/bin/python bench/queue_claims.py{flags} --write", table)


if __name__ == "__main__":
    main()

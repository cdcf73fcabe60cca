"""Dashboard page latency for a class of 200 learners and 20,000 submissions.

Fills a fresh database with the leaderboard bench's fill (``bench/leaderboard.py``:
learners, a realistic mix of verdicts, four check rows per graded submission, named
named mistakes on about half the failed checks, ``best_scores`` backfilled), then logs in
through ``POST /login`` like a browser and times every page through the real app
(TestClient, median of several calls). Runs on SQLite and, when it is reachable, on the
local PostgreSQL, side by side. It also follows the two clicks an instructor makes:
the class page's "most common mistake" link, then a learner who holds it.

    .venv/bin/python bench/dashboard.py --write
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from html import unescape
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastapi.testclient import TestClient  # noqa: E402
from sqlalchemy import create_engine  # noqa: E402

from bench.leaderboard import populate  # noqa: E402
from bench.report import write_section  # noqa: E402
from server.app import create_app  # noqa: E402
from server.config import Settings  # noqa: E402

TITLE = "Dashboard pages"
PG_ADMIN = os.environ.get("PPO_GRADER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
BUDGET_MS = 200


def pages(client: TestClient, exercise: str) -> dict[str, str]:
    """Label -> path of every page, with real ids and names read from the pages themselves."""
    home = client.get("/dashboard").text
    top = unescape(re.search(r'id="top-mistake">.*?href="([^"]+)"', home, re.S).group(1))  # type: ignore[union-attr]
    holders = client.get(top).text
    learner = re.search(r'<td class="learner"><a href="([^"]+)"', holders).group(1)  # type: ignore[union-attr]
    submission = re.search(r'href="(/dashboard/submissions/\d+)"', holders).group(1)  # type: ignore[union-attr]
    return {
        "class (/dashboard)": "/dashboard",
        f"exercise (/dashboard/exercises/{exercise})": f"/dashboard/exercises/{exercise}",
        "mistake's learners (click 2 from the class page)": top,
        "learners (/dashboard/learners)": "/dashboard/learners",
        "one learner": learner,
        "one submission": submission,
        "leaderboard (/leaderboard)": "/leaderboard",
        "live mark (/dashboard/live, every 5 s per open page)": "/dashboard/live",
        "Canvas gradebook CSV": "/dashboard/gradebook-canvas.csv",
    }


def time_pages(url: str, args: argparse.Namespace, exercises: list[str]) -> tuple[dict[str, tuple[float, float, float]], float, str]:
    """(label -> (median ms, fastest ms, median CPU ms of this process), fill seconds, what the
    two clicks found) for one database."""
    settings = Settings(DATABASE_URL=url, WORKERS=1)
    start = time.perf_counter()
    token = populate(url, args.submissions, args.learners, exercises, settings.secret_bytes)
    if url.startswith("postgresql"):
        # What autovacuum would have done by now: planner statistics for the bulk-loaded
        # tables (ANALYZE inside the fill's rolled-back connection is undone on PostgreSQL).
        engine = create_engine(url, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.exec_driver_sql("ANALYZE")
        engine.dispose()
    fill_s = time.perf_counter() - start
    noop = lambda _s: ((lambda *a: None), (lambda: None))  # noqa: E731  (no grading here)
    with TestClient(create_app(settings, noop)) as client:
        assert client.post("/login", data={"token": token}, follow_redirects=False).status_code == 303
        paths = pages(client, exercises[0])
        results = {}
        for label, path in paths.items():
            samples, cpu = [], []
            for _ in range(args.repeats):
                began, began_cpu = time.perf_counter(), time.process_time()
                response = client.get(path)
                samples.append((time.perf_counter() - began) * 1000)
                cpu.append((time.process_time() - began_cpu) * 1000)
                assert response.status_code == 200, (path, response.status_code)
            results[label] = (statistics.median(samples), min(samples), statistics.median(cpu))
        home = client.get("/dashboard").text
        found = re.sub(r"<[^>]+>", "", re.search(r'id="top-mistake">(.*?)</div>', home, re.S).group(1))  # type: ignore[union-attr]
    return results, fill_s, unescape(found).strip()


def _pg_database() -> tuple[str, object] | None:
    try:
        import psycopg

        admin = psycopg.connect(PG_ADMIN, autocommit=True, connect_timeout=3)
    except Exception:  # noqa: BLE001  (no PostgreSQL: SQLite only)
        return None
    name = f"ppo_grader_bench_{os.getpid()}"
    admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
    admin.execute(f'CREATE DATABASE "{name}"')
    url = "postgresql+psycopg://" + PG_ADMIN.split("://", 1)[1].rsplit("/", 1)[0] + f"/{name}"
    return url, (admin, name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=20_000)
    parser.add_argument("--learners", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--write", action="store_true", help="record the table in docs/benchmarks.md")
    args = parser.parse_args()

    from server.catalogue.service import list_exercises

    exercises = [e.slug for e in list_exercises()]
    columns: dict[str, tuple[dict[str, tuple[float, float, float]], float, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        columns["SQLite"] = time_pages(f"sqlite:///{tmp}/bench.db", args, exercises)
    pg = _pg_database()
    if pg is not None:
        url, (admin, name) = pg  # type: ignore[misc]
        try:
            columns["PostgreSQL"] = time_pages(url, args, exercises)
        finally:
            admin.execute(  # type: ignore[attr-defined]
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", (name,)
            )
            admin.execute(f'DROP DATABASE IF EXISTS "{name}"')  # type: ignore[attr-defined]

    names = list(columns)
    labels = list(next(iter(columns.values()))[0])
    rows = [
        f"| {label} | "
        + " | ".join(f"{columns[n][0][label][0]:.1f} / {columns[n][0][label][1]:.1f} / {columns[n][0][label][2]:.1f}" for n in names)
        + " |"
        for label in labels
    ]
    worst = max(v[0] for n in names for v in columns[n][0].values())
    worst_fastest = max(v[1] for n in names for v in columns[n][0].values())
    body = "\n".join(
        [
            f"{args.submissions:,} submissions ({args.learners} learners, {len(exercises)} exercises, 80% graded, "
            "4 check rows per graded submission, a named mistake on about half the failed checks), filled as "
            "`bench/leaderboard.py` does ("
            + ", ".join(f"{n}: {columns[n][1]:.1f} s" for n in names)
            + f"). Logged in through `POST /login`; each page fetched {args.repeats} times through the app "
            "(TestClient, session cookie): median wall time / fastest wall time / median CPU time of the benchmark "
            "process, in milliseconds. The machine (2 cores) was shared with other agents' test runs, so wall times "
            "carry their load; the CPU time is the page's own cost (app, SQLAlchemy, and for SQLite the database "
            "too; PostgreSQL's server process is not counted).",
            "",
            "| page | " + " | ".join(f"{n}: median / fastest / CPU (ms)" for n in names) + " |",
            "|---|" + "---:|" * len(names),
            *rows,
            "",
            f"Slowest page: median {worst:.1f} ms, fastest {worst_fastest:.1f} ms (budget {BUDGET_MS} ms); load average {os.getloadavg()[0]:.1f} on "
            f"{os.cpu_count()} cores at the end of the run. "
            f"The two clicks, on SQLite: the class page says \"{columns['SQLite'][2]}\"; its link lists who holds it.",
        ]
    )
    print(body)
    if args.write:
        write_section(TITLE, f".venv/bin/python bench/dashboard.py --submissions {args.submissions} --learners {args.learners} --write", body)


if __name__ == "__main__":
    main()

"""Leaderboard, statistics and gradebook latency with 100,000 submissions.

Builds a temporary SQLite database through the real migrations, bulk-inserts learners,
submissions (a realistic mix of verdicts) and their check results, fills ``best_scores``
with migration 0004's backfill, then times the HTTP endpoints through the real app (median
of several calls), first with the 0002 indexes and then with them dropped, to show what
they buy (the boards and the gradebook read ``best_scores``, which keeps its primary key).

    .venv/bin/python bench/leaderboard.py --submissions 100000 --write
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fastapi.testclient import TestClient  # noqa: E402
from sqlalchemy import Engine, insert, inspect, text  # noqa: E402

from bench.report import write_section  # noqa: E402
from server.app import create_app  # noqa: E402
from server.config import Settings  # noqa: E402
from server.db import make_engine, make_session_factory, transaction  # noqa: E402
from server.courses.best_scores import backfill_best_scores  # noqa: E402
from server.migrations import upgrade_to_head  # noqa: E402
from server.models import CheckResult, Role, Submission  # noqa: E402
from server.users.service import create_user  # noqa: E402

TITLE = "Leaderboard and statistics"
#: The columns of migration 0002's three indexes, as 0002 created them. Later migrations renamed
#: and widened two of them (0006 put ``course_id`` first in the covering one, 0007 added
#: ``check_id`` to the check results' one), so the bench looks up, in the migrated database,
#: the one index of each table that holds these columns in this order (``indexes_of_0002``).
INDEXES_0002 = [
    ("submissions", ("exercise", "user_id", "verdict", "score", "created_at")),
    ("submissions", ("user_id", "status")),
    ("check_results", ("submission_id", "name", "passed")),
]
CHECKS = ["value", "gradient", "clip", "shapes"]
VERDICTS = ["graded"] * 80 + ["runtime_error"] * 8 + ["crashed"] * 4 + ["time_limit"] * 4 + ["syntax_error"] * 3 + ["internal_error"]


def populate(url: str, n_submissions: int, n_learners: int, exercises: list[str], secret: bytes) -> str:
    """Create users and bulk-insert submissions and checks; return an instructor token."""
    engine = make_engine(url)
    upgrade_to_head(engine)
    factory = make_session_factory(engine)
    with transaction(factory) as session:
        token = create_user(session, "teacher", Role.INSTRUCTOR, secret).token
        for i in range(n_learners):
            create_user(session, f"learner{i:05d}", Role.LEARNER, secret, f"Learner {i}")
    rng = random.Random(6)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    batch = 10_000
    with engine.begin() as conn:
        user_ids = [r[0] for r in conn.execute(text("SELECT id FROM users WHERE role = 'learner'"))]
        next_id = 1
        for start in range(0, n_submissions, batch):
            subs, checks = [], []
            for sid in range(next_id, next_id + min(batch, n_submissions - start)):
                verdict = rng.choice(VERDICTS)
                graded = verdict == "graded"
                passed = [rng.random() < 0.7 for _ in CHECKS] if graded else []
                created = t0 + timedelta(seconds=sid * 7)
                subs.append({
                    "id": sid, "user_id": rng.choice(user_ids), "exercise": rng.choice(exercises),
                    "source": "def f():\n    return 1\n", "source_sha256": "0" * 64, "status": "done",
                    "verdict": verdict, "score": 25.0 * sum(passed) if graded else None, "message": "",
                    # the default course, nothing late: the score that counts is the raw one
                    "counted_score": 25.0 * sum(passed) if graded else None,
                    "stdout": "", "stderr": "", "timings": {}, "attempts": 1,
                    "peak_memory_bytes": rng.randint(10**6, 10**8), "cpu_seconds": rng.uniform(0.05, 2.0),
                    "created_at": created, "finished_at": created + timedelta(seconds=3),
                })
                for position, (name, ok) in enumerate(zip(CHECKS, passed)):
                    checks.append({
                        "submission_id": sid, "name": name, "weight": 25.0, "passed": ok, "message": "",
                        "mistake_title": None if ok or rng.random() < 0.5 else f"{name}-mistake", "position": position,
                    })
            next_id += len(subs)
            conn.execute(insert(Submission), subs)
            conn.execute(insert(CheckResult), checks)
        # The rows bypass the worker's transaction: fill best_scores as migrations 0004/0006 do.
        backfill_best_scores(conn)
    with engine.connect() as conn:
        conn.exec_driver_sql("ANALYZE")
    engine.dispose()
    return token


def _holds(columns: list[str], wanted: tuple[str, ...]) -> bool:
    """Whether ``columns`` contain ``wanted`` in this order (other columns may come between)."""
    rest = iter(columns)
    return all(column in rest for column in wanted)


def indexes_of_0002(engine: Engine) -> dict[str, str]:
    """The migrated database's indexes that migration 0002 created, by name: ``table (columns)``.

    Exits with a message if a table does not hold exactly one index with 0002's columns: the
    indexes moved again, and the bench must say which it now compares."""
    inspector = inspect(engine)
    found = {}
    for table, wanted in INDEXES_0002:
        matches = [i for i in inspector.get_indexes(table) if _holds(list(i["column_names"]), wanted)]
        if len(matches) != 1:
            names = ", ".join(f"{i['name']} {tuple(i['column_names'])}" for i in inspector.get_indexes(table))
            sys.exit(f"{len(matches)} indexes of {table} hold 0002's columns {wanted}; its indexes: {names}")
        found[str(matches[0]["name"])] = f"{table} ({', '.join(map(str, matches[0]['column_names']))})"
    return found


def time_endpoints(client: TestClient, token: str, exercise: str, repeats: int) -> dict[str, float]:
    """Median milliseconds per endpoint."""
    headers = {"Authorization": f"Bearer {token}"}
    endpoints = {
        f"GET /leaderboard?exercise={exercise}": ("/api/v1/leaderboard", {"exercise": exercise}),
        "GET /leaderboard (overall)": ("/api/v1/leaderboard", {}),
        f"GET /leaderboard?exercise={exercise}&offset=400": ("/api/v1/leaderboard", {"exercise": exercise, "offset": 400}),
        f"GET /leaderboard/{exercise}/speed": (f"/api/v1/leaderboard/{exercise}/speed", {}),
        f"GET /exercises/{exercise}/stats": (f"/api/v1/exercises/{exercise}/stats", {}),
        "GET /gradebook.csv": ("/api/v1/gradebook.csv", {}),
    }
    results = {}
    for label, (path, params) in endpoints.items():
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            response = client.get(path, params=params, headers=headers)
            samples.append((time.perf_counter() - start) * 1000)
            assert response.status_code == 200, response.text
        results[label] = statistics.median(samples)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=100_000)
    parser.add_argument("--learners", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--write", action="store_true", help="record the table in docs/benchmarks.md")
    args = parser.parse_args()

    from server.catalogue.service import list_exercises

    exercises = [e.slug for e in list_exercises()]
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(DATABASE_URL=f"sqlite:///{tmp}/bench.db", WORKERS=1)
        start = time.perf_counter()
        token = populate(settings.DATABASE_URL, args.submissions, args.learners, exercises, settings.secret_bytes)
        fill_s = time.perf_counter() - start
        noop = lambda _s: ((lambda *a: None), (lambda: None))  # noqa: E731  (no grading here)
        with TestClient(create_app(settings, noop)) as client:
            with_indexes = time_endpoints(client, token, exercises[0], args.repeats)
            engine = client.app.state.grader.engine  # type: ignore[attr-defined]
            indexes = indexes_of_0002(engine)
            with engine.begin() as conn:
                for name in indexes:
                    conn.exec_driver_sql(f"DROP INDEX {name}")
                conn.exec_driver_sql("ANALYZE")
            without = time_endpoints(client, token, exercises[0], args.repeats)

    rows = [f"| {label} | {with_indexes[label]:.1f} | {without[label]:.1f} |" for label in with_indexes]
    body = "\n".join(
        [
            f"{args.submissions:,} submissions ({args.learners} learners, {len(exercises)} exercises, 80% graded, "
            f"4 check rows per graded submission) bulk-inserted into a temporary SQLite file in {fill_s:.1f} s; "
            f"each endpoint called {args.repeats} times through the app (TestClient, instructor token, "
            "default page of 50), median in milliseconds. The machine is shared (2 cores, other jobs running): "
            "absolute times vary 2-4x between runs; compare the columns of one run.",
            "",
            "| endpoint | with 0002 indexes (ms) | without them (ms) |",
            "|---|---:|---:|",
            *rows,
            "",
            "Indexes (migration `0002`, as the migrations have since renamed them: `0006` put `course_id` first "
            "in the covering one, `0007` added `check_id` to the check results' one): "
            + "; ".join(f"`{name}` on {columns}" for name, columns in indexes.items()) + ".",
            "",
            "The per-exercise and overall boards and the gradebook read `best_scores` (migration `0004`: one row "
            "per learner and exercise, upserted with each verdict; filled here by the same backfill as the "
            "migration, included in the fill time) and rank in Python (`server.courses.counted.course_scores`, "
            "`server.leaderboard.service.board`); the speed board and the stats still aggregate the submissions "
            "in SQL.",
        ]
    )
    print(body)
    if args.write:
        command = (f".venv/bin/python bench/leaderboard.py --submissions {args.submissions} "
                   f"--learners {args.learners} --repeats {args.repeats} --write")
        write_section(TITLE, command, body)


if __name__ == "__main__":
    main()

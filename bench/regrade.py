"""Regrade throughput, and what a regrade costs live submissions, side by side in one run.

Starts ``ppo-grader serve`` (SQLite, the in-process queue, ``--workers`` warm jails) on a free
port, stores ``--n`` finished submissions of ``--exercise`` as verdicts of an unknown version
(what migration 0013 leaves, so all are stale), then measures, in one run:

1. live submit-to-verdict with no regrade running (``--live`` correct submissions, one at a
   time, each waited for with the long poll);
2. ``ppo-grader regrade preview --exercise ...``: regrades per second from the preview's
   start until its set is ready, while the same live submissions go on one at a time.

    .venv/bin/python bench/regrade.py --n 2000 --live 30 --write
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.submit_latency import _free_port, p95  # noqa: E402
from exercises.registry import get_exercise  # noqa: E402

BIN = Path(sys.executable).parent


def _seed(env: dict[str, str], exercise: str, n: int) -> None:
    """``n`` finished, graded submissions of an unknown version, from one learner."""
    from server.config import Settings
    from server.db import make_engine, make_session_factory, transaction
    from server.courses.best_scores import backfill_best_scores
    from server.migrations import upgrade_to_head
    from server.models import Role, Submission, utcnow
    from server.users.service import create_user

    settings = Settings(DATABASE_URL=env["PPO_GRADER_DATABASE_URL"])
    engine = make_engine(settings.DATABASE_URL)
    upgrade_to_head(engine)
    source = get_exercise(exercise).reference_source
    with transaction(make_session_factory(engine)) as session:
        user = create_user(session, "seeded", Role.LEARNER, settings.secret_bytes).user
        now = utcnow()
        session.add_all(Submission(
            user_id=user.id, exercise=exercise, source=source, source_sha256=hashlib.sha256(source.encode()).hexdigest(),
            status="done", verdict="graded", score=100.0, counted_score=100.0, created_at=now, finished_at=now,
        ) for _ in range(n))
        session.flush()
        backfill_best_scores(session)
    engine.dispose()


def _log_path(env: dict[str, str]) -> Path:
    return Path(env["PPO_GRADER_DATABASE_URL"].removeprefix("sqlite:///")).with_suffix(".log")


def _serve(env: dict[str, str], port: int) -> subprocess.Popen[str]:
    log = open(_log_path(env), "w")  # noqa: SIM115  (the server's, read back if a request fails)
    proc = subprocess.Popen([str(BIN / "ppo-grader"), "serve", "--port", str(port)], env=env,
                            stdout=log, stderr=log, text=True)
    url = f"http://127.0.0.1:{port}"
    for _ in range(1200):
        try:
            if httpx.get(f"{url}/api/v1/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit("the server did not start")


def _token(env: dict[str, str]) -> str:
    out = subprocess.run([str(BIN / "ppo-grader"), "users", "add", "bench-prof", "--role", "instructor"], env=env,
                         capture_output=True, text=True, check=True, timeout=120)
    return out.stdout.strip().splitlines()[-1]


def _live_one(client: httpx.Client, exercise: str, source: str) -> float:
    """One live submission, submit to verdict (long poll), in seconds."""
    t0 = time.perf_counter()
    answer = client.post("/api/v1/submissions", json={"exercise": exercise, "source": source})
    if answer.status_code != 202:
        raise SystemExit(f"submission refused: {answer.text}")
    sub = answer.json()
    while client.get(f"/api/v1/submissions/{sub['id']}?wait=30").json()["status"] != "done":
        pass
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2000, help="stored submissions to regrade")
    parser.add_argument("--live", type=int, default=30, help="live submissions in each phase")
    parser.add_argument("--exercise", default="kl-penalty")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    source = get_exercise(args.exercise).reference_source
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PPO_GRADER_DATABASE_URL": f"sqlite:///{tmp}/bench.db", "PPO_GRADER_WORKERS": str(args.workers),
               "PPO_GRADER_REGRADE_POLL_SECONDS": "0.5", "PPO_GRADER_RATE_LIMIT": "100000/minute"}
        _seed(env, args.exercise, args.n)
        token = _token(env)
        port = _free_port()
        proc = _serve(env, port)
        try:
            client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {token}"}, timeout=60)
            _live_one(client, args.exercise, source)  # the first grading measures the reference's memory once
            idle = [_live_one(client, args.exercise, source) for _ in range(args.live)]
            t0 = time.perf_counter()
            made = subprocess.run([str(BIN / "ppo-grader"), "regrade", "preview", "--exercise", args.exercise], env=env,
                                  capture_output=True, text=True, check=True, timeout=300)
            set_id = int(made.stdout.strip().splitlines()[0])
            during: list[float] = []
            while True:
                state = client.get(f"/api/v1/regrades/{set_id}").json()["regrade"]
                if state["state"] != "grading":
                    break
                if len(during) < args.live:
                    during.append(_live_one(client, args.exercise, source))
                else:
                    time.sleep(0.5)
            elapsed = time.perf_counter() - t0
            graded = state["graded"]
        except BaseException:
            print(_log_path(env).read_text()[-3000:], file=sys.stderr)
            raise
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    load = os.getloadavg()
    rows = [
        f"| no regrade | – | {statistics.median(idle) * 1000:.0f} | {p95(idle) * 1000:.0f} | {len(idle)} |",
        f"| during a {args.n}-submission regrade | {graded / elapsed:.2f} | "
        + (f"{statistics.median(during) * 1000:.0f} | {p95(during) * 1000:.0f} | {len(during)} |" if during else "– | – | 0 |"),
    ]
    table = "\n".join([
        f"`{args.exercise}`, SQLite and the in-process queue, {args.workers} worker(s) (regrades take at most "
        f"{max(1, args.workers - 1)}); {graded} regraded in {elapsed:.1f} s; load average {load[0]:.1f} / {load[1]:.1f} / "
        f"{load[2]:.1f} at the end.", "",
        "| phase | regrades/s | submit-to-verdict p50 ms | p95 ms | live submissions |",
        "|---|---|---|---|---|", *rows,
    ])
    print(table)
    if args.write:
        from bench.report import write_section

        write_section("Regrade throughput and live latency",
                      f".venv/bin/python bench/regrade.py --n {args.n} --live {args.live} --exercise {args.exercise} "
                      f"--workers {args.workers} --write", table)


if __name__ == "__main__":
    main()

"""Bounded loopback load test: API + 2 workers on PostgreSQL (procrastinate queue).

    .venv/bin/python bench/load.py --submissions 2000 [--clients 16] [--append-doc]

Creates a throwaway database on the local PostgreSQL, starts ``ppo-grader serve`` and two
``ppo-grader worker --queue cpu --concurrency 1`` on 127.0.0.1, pushes N submissions of
the correct ``actor-loss`` reference through the HTTP API, waits for every verdict and
reports: submissions accepted per second, median / p99 submit-to-verdict (created_at to
finished_at), and lost (accepted but no result) / duplicated (graded more than once)
results. Everything is stopped and the database dropped at the end.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
ADMIN = os.environ.get("PPO_GRADER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
SOURCE = (ROOT / "exercises" / "actor_loss" / "reference.py").read_text()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ppo_grader(*args: str) -> list[str]:
    exe = BIN / "ppo-grader"
    return [str(exe), *args] if exe.exists() else [sys.executable, "-m", "server.cli", *args]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submissions", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=16, help="concurrent HTTP clients")
    parser.add_argument("--timeout", type=float, default=1800, help="give up waiting for verdicts after this")
    parser.add_argument("--append-doc", action="store_true", help="append the table to docs/benchmarks.md")
    args = parser.parse_args()

    dbname = f"ppo_grader_load_{os.getpid()}"
    base = ADMIN.split("://", 1)[1].rsplit("/", 1)[0]
    db_url = f"postgresql+psycopg://{base}/{dbname}"
    with psycopg.connect(ADMIN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{dbname}"')
        admin.execute(f'CREATE DATABASE "{dbname}"')
    port = free_port()
    logs = Path(tempfile.mkdtemp(prefix="ppo-load-"))
    env = {
        **os.environ,
        "PPO_GRADER_DATABASE_URL": db_url,
        "PPO_GRADER_QUEUE": "procrastinate",
        "PPO_GRADER_RATE_LIMIT": "1000000/minute",  # one learner sends everything
        "PPO_GRADER_MAX_QUEUED_PER_USER": "1000000",
    }
    procs: list[subprocess.Popen[bytes]] = []
    try:
        subprocess.run(ppo_grader("migrate"), env=env, check=True, capture_output=True)
        token = subprocess.run(
            ppo_grader("users", "add", "loadtest"), env=env, check=True, capture_output=True, text=True
        ).stdout.strip()
        for name, cmd in [
            ("api", ppo_grader("serve", "--host", "127.0.0.1", "--port", str(port))),
            ("worker-0", ppo_grader("worker", "--queue", "cpu", "--concurrency", "1")),
            ("worker-1", ppo_grader("worker", "--queue", "cpu", "--concurrency", "1")),
        ]:
            out = open(logs / f"{name}.log", "wb")  # noqa: SIM115
            procs.append(subprocess.Popen(cmd, env=env, stdout=out, stderr=out))
        url = f"http://127.0.0.1:{port}/api/v1"
        headers = {"Authorization": f"Bearer {token}"}
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"API did not start; see {logs}")
            time.sleep(0.2)

        client = httpx.Client(headers=headers, timeout=30, limits=httpx.Limits(max_connections=args.clients))

        def submit(_: int) -> int:
            response = client.post(
                f"{url}/submissions",
                json={"exercise": "actor-loss", "source": SOURCE},
                headers={"Idempotency-Key": str(uuid.uuid4())},
            )
            response.raise_for_status()
            return int(response.json()["id"])

        began = time.perf_counter()
        with ThreadPoolExecutor(args.clients) as pool:
            ids = list(pool.map(submit, range(args.submissions)))
        submit_seconds = time.perf_counter() - began
        accepted_per_s = len(ids) / submit_seconds

        with psycopg.connect(f"postgresql://{base}/{dbname}", autocommit=True) as conn:
            deadline = time.monotonic() + args.timeout
            while True:
                (left,) = conn.execute("SELECT count(*) FROM submissions WHERE status <> 'done'").fetchone()
                if left == 0 or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            drain_seconds = time.perf_counter() - began
            rows = conn.execute(
                "SELECT id, status, verdict, attempts, EXTRACT(EPOCH FROM finished_at - created_at), "
                "(SELECT count(*) FROM check_results c WHERE c.submission_id = s.id) FROM submissions s"
            ).fetchall()
            jobs = conn.execute(
                "SELECT args->>'submission_id', count(*), bool_and(status = 'succeeded') FROM procrastinate_jobs GROUP BY 1"
            ).fetchall()
        by_id = {r[0]: r for r in rows}
        done = [r for r in rows if r[1] == "done"]
        lost = [i for i in ids if i not in by_id or by_id[i][1] != "done"]
        check_counts = {r[5] for r in done}
        duplicated = [r[0] for r in rows if r[3] != 1] + [j[0] for j in jobs if j[1] != 1]
        latencies = [float(r[4]) for r in done]
        verdicts = {v for v in (r[2] for r in done)}
        table = "\n".join([
            "| metric | value |",
            "|---|---|",
            f"| submissions | {len(ids)} accepted (HTTP 202), {args.clients} concurrent clients |",
            f"| accepted per second | {accepted_per_s:.0f} |",
            f"| submit-to-verdict median | {statistics.median(latencies):.2f} s |" if latencies else "| median | n/a |",
            f"| submit-to-verdict p99 | {percentile(latencies, 0.99):.2f} s |" if latencies else "| p99 | n/a |",
            f"| all verdicts in | {drain_seconds:.1f} s ({len(done) / drain_seconds:.1f} graded/s, 2 workers) |",
            f"| verdicts | {', '.join(sorted(map(str, verdicts)))} |",
            f"| lost | {len(lost)} |",
            f"| duplicated | {len(duplicated)} (attempts != 1 or more than one job), check-result sets per row: {sorted(check_counts)} |",
        ])
        print(table)
        if args.append_doc:
            doc = ROOT / "docs" / "benchmarks.md"
            section = (
                "\n## Load test (API + 2 workers, PostgreSQL, procrastinate)\n\n"
                f"Command: `.venv/bin/python bench/load.py --submissions {args.submissions} --clients {args.clients} --append-doc`\n"
                "(loopback only; one machine runs PostgreSQL, the API and both workers; the source is the correct "
                "`actor-loss` reference, graded by the real judge in the real jail).\n\n" + table + "\n"
            )
            if not doc.exists():
                section = "# Benchmarks\n" + section
            with doc.open("a") as fh:
                fh.write(section)
        return 0 if not lost and not duplicated else 1
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        with psycopg.connect(ADMIN, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (dbname,),
            )
            admin.execute(f'DROP DATABASE IF EXISTS "{dbname}"')


if __name__ == "__main__":
    raise SystemExit(main())

"""Bounded loopback load test: API + W workers on PostgreSQL (procrastinate queue), W swept.

    .venv/bin/python bench/load.py --submissions 100 --workers 1,2         # a quick check
    .venv/bin/python bench/load.py --submissions 2000 --workers 1,2,3,4 --write   # the record

For each worker count W: creates a throwaway database on the local PostgreSQL, starts
``ppo-grader serve`` and W ``ppo-grader worker --queue cpu --concurrency 1`` on 127.0.0.1,
pushes N submissions of the correct ``actor-loss`` reference through the HTTP API, waits for
every verdict and reports: submissions accepted per second, median / p99 submit-to-verdict
(created_at to finished_at), verdicts per second, lost (accepted but no result) / duplicated
(graded more than once) results, and the CPU seconds per verdict of the worker processes
(the judge, the database round trips, the JSON), of their jails (every descendant: hosts,
managers, learners' processes), of the API, and of the PostgreSQL backends serving this
database. The knee is where verdicts/s stops growing with W. Everything is stopped and the
database dropped after each run.
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
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _cpu_seconds(pids: set[int], *, descendants: bool) -> float:
    """User+system CPU seconds of ``pids`` (and, with ``descendants``, of every live process
    below them), children they have reaped included (a jail's finished jobs count)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = sum(int(f) for f in fields[11:15]) / tick  # utime stime cutime cstime
    chosen = set(pids)
    if descendants:
        grew = True
        while grew:
            below = {pid for pid, parent in parents.items() if parent in chosen} - chosen
            chosen |= below
            grew = bool(below)
    return sum(times.get(pid, 0.0) for pid in chosen)


def _backends(base: str, dbname: str) -> set[int]:
    with psycopg.connect(ADMIN, autocommit=True) as admin:
        rows = admin.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                             (dbname,)).fetchall()
    return {int(r[0]) for r in rows}


def run_once(workers: int, submissions: int, clients: int, timeout: float) -> dict[str, object]:
    """One load test with ``workers`` worker processes; its figures by name."""
    dbname = f"ppo_grader_load_{os.getpid()}_{workers}"
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
        commands = [("api", ppo_grader("serve", "--host", "127.0.0.1", "--port", str(port)))]
        commands += [(f"worker-{i}", ppo_grader("worker", "--queue", "cpu", "--concurrency", "1"))
                     for i in range(workers)]
        for name, cmd in commands:
            out = open(logs / f"{name}.log", "wb")
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
        time.sleep(5)  # let the workers' warm jails start before the clock runs

        client = httpx.Client(headers=headers, timeout=30, limits=httpx.Limits(max_connections=clients))

        def submit(_: int) -> int:
            response = client.post(
                f"{url}/submissions",
                json={"exercise": "actor-loss", "source": SOURCE},
                headers={"Idempotency-Key": str(uuid.uuid4())},
            )
            response.raise_for_status()
            return int(response.json()["id"])

        api_pid = {procs[0].pid}
        worker_pids = {p.pid for p in procs[1:]}
        cpu_before = (_cpu_seconds(api_pid, descendants=False), _cpu_seconds(worker_pids, descendants=False),
                      _cpu_seconds(worker_pids, descendants=True))
        began = time.perf_counter()
        with ThreadPoolExecutor(clients) as pool:
            ids = list(pool.map(submit, range(submissions)))
        submit_seconds = time.perf_counter() - began
        backends = _backends(base, dbname)
        pg_before = _cpu_seconds(backends, descendants=False)

        with psycopg.connect(f"postgresql://{base}/{dbname}", autocommit=True) as conn:
            deadline = time.monotonic() + timeout
            while True:
                row = conn.execute("SELECT count(*) FROM submissions WHERE status <> 'done'").fetchone()
                if row is None or row[0] == 0 or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            drain_seconds = time.perf_counter() - began
            cpu_after = (_cpu_seconds(api_pid, descendants=False), _cpu_seconds(worker_pids, descendants=False),
                         _cpu_seconds(worker_pids, descendants=True))
            pg_cpu = _cpu_seconds(backends, descendants=False) - pg_before
            rows = conn.execute(
                "SELECT id, status, verdict, attempts, EXTRACT(EPOCH FROM finished_at - created_at), "
                "(SELECT count(*) FROM check_results c WHERE c.submission_id = s.id) FROM submissions s"
            ).fetchall()
            jobs = conn.execute(
                "SELECT args->>'submission_id', count(*), bool_and(status = 'succeeded') FROM procrastinate_jobs "
                "WHERE task_name = 'ppo_grader.grade' GROUP BY 1"
            ).fetchall()
        by_id = {r[0]: r for r in rows}
        done = [r for r in rows if r[1] == "done"]
        lost = [i for i in ids if i not in by_id or by_id[i][1] != "done"]
        duplicated = [r[0] for r in rows if r[3] != 1] + [j[0] for j in jobs if j[1] != 1]
        latencies = [float(r[4]) for r in done]
        per = max(1, len(done))
        api_cpu, worker_cpu, tree_cpu = (after - before for after, before in zip(cpu_after, cpu_before, strict=True))
        return {
            "workers": workers, "submissions": len(ids), "accepted_per_s": len(ids) / submit_seconds,
            "median": statistics.median(latencies) if latencies else float("nan"),
            "p99": percentile(latencies, 0.99) if latencies else float("nan"),
            "drain_seconds": drain_seconds, "verdicts_per_s": len(done) / drain_seconds,
            "verdicts": sorted({str(r[2]) for r in done}), "check_sets": sorted({r[5] for r in done}),
            "lost": len(lost), "duplicated": len(duplicated),
            "cpu_worker": worker_cpu / per, "cpu_jail": (tree_cpu - worker_cpu) / per,
            "cpu_api": api_cpu / per, "cpu_pg": pg_cpu / per, "backends": len(backends),
        }
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submissions", type=int, default=2000)
    parser.add_argument("--workers", default="2", help="worker counts to sweep, comma-separated (1,2,3,4)")
    parser.add_argument("--clients", type=int, default=16, help="concurrent HTTP clients")
    parser.add_argument("--timeout", type=float, default=1800, help="give up waiting for verdicts after this")
    parser.add_argument("--write", action="store_true", help="write the table into docs/benchmarks.md")
    args = parser.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    load_before = os.getloadavg()[0]
    results = [run_once(w, args.submissions, args.clients, args.timeout) for w in counts]
    lines = [
        f"{args.submissions} correct `actor-loss` submissions per run from {args.clients} concurrent clients; "
        f"{os.cpu_count()} cores running PostgreSQL, the API and the workers; load average {load_before:.1f} "
        f"before, {os.getloadavg()[0]:.1f} after. CPU is seconds per verdict.", "",
        "| workers | verdicts/s | submit-to-verdict median / p99 s | accepted/s | lost | duplicated "
        "| CPU worker | CPU jails | CPU API | CPU PostgreSQL (backends) | verdicts |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['workers']} | {r['verdicts_per_s']:.1f} | {r['median']:.2f} / {r['p99']:.2f} | "
            f"{r['accepted_per_s']:.0f} | {r['lost']} | {r['duplicated']} | {r['cpu_worker']:.3f} | "
            f"{r['cpu_jail']:.3f} | {r['cpu_api']:.3f} | {r['cpu_pg']:.3f} ({r['backends']}) | {', '.join(r['verdicts'])} |")  # type: ignore[arg-type]
    table = "\n".join(lines)
    print(table)
    if args.write:
        sys.path.insert(0, str(ROOT))
        from bench.report import write_section

        write_section("Throughput against the worker count (PostgreSQL, procrastinate)",
                      f".venv/bin/python bench/load.py --submissions {args.submissions} --workers {args.workers} "
                      f"--clients {args.clients} --write", table)
    return 0 if all(r["lost"] == 0 and r["duplicated"] == 0 for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())

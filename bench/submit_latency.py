"""Submit-to-verdict through the real server, and where the time goes.

Starts ``ppo-grader serve`` (SQLite, in-process worker, warm jail) on a free port, submits a
correct solution N times one after another over HTTP, polls until each is done, and prints
the median and p95 submit-to-verdict with the median split recorded by the worker: queue
wait, jail start, building cases and the reference, the learner's visit to the jail, the
measured memory case, and the checks.

    .venv/bin/python bench/submit_latency.py --n 20 --exercise actor-loss --write
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from exercises.registry import get_exercise  # noqa: E402

BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(tmp: str) -> tuple[subprocess.Popen[str], str, str]:
    port = _free_port()
    env = {**os.environ, "PPO_GRADER_DATABASE_URL": f"sqlite:///{tmp}/bench.db", "PPO_GRADER_WORKERS": "1"}
    proc = subprocess.Popen([str(BIN / "ppo-grader"), "serve", "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    token = ""
    while not token:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit("the server exited before printing its token")
        if m := re.search(r"Instructor token \(shown once\): (\S+)", line):
            token = m.group(1)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{url}/api/v1/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.1)
    return proc, url, token


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--exercise", default="actor-loss")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    source = get_exercise(args.exercise).reference_source
    with tempfile.TemporaryDirectory() as tmp:
        proc, url, token = _start(tmp)
        try:
            client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
            totals: list[float] = []
            splits: dict[str, list[float]] = {}
            scores = set()
            for i in range(args.n + 1):
                t0 = time.perf_counter()
                sub = client.post("/api/v1/submissions", json={"exercise": args.exercise, "source": source}).json()
                while True:
                    got = client.get(f"/api/v1/submissions/{sub['id']}").json()
                    if got["status"] == "done":
                        break
                    time.sleep(0.02)
                elapsed = time.perf_counter() - t0
                if i == 0:
                    continue  # the first grading measures the reference's memory baseline once
                totals.append(elapsed)
                scores.add((got["verdict"], got["score"]))
                for k, v in (got.get("timings") or {}).items():
                    splits.setdefault(k, []).append(float(v))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    med = statistics.median(totals)
    rows = [f"| submit-to-verdict (client clock, 20 ms polling) | {med * 1000:.0f} | {p95(totals) * 1000:.0f} |"]
    for k, v in sorted(splits.items()):
        rows.append(f"| {k} | {statistics.median(v) * 1000:.1f} | {p95(v) * 1000:.1f} |")
    table = "\n".join([
        f"{args.n} correct `{args.exercise}` submissions, one at a time, verdicts {sorted(scores)}.", "",
        "| part | median ms | p95 ms |", "|---|---|---|", *rows, "",
        "- `queue_seconds`: submit to a worker picking the row up; `jail_*`: the learner's visit "
        "(fork and cgroup setup, the run, collecting results); `build_cases`: inputs and the reference's "
        "expected values in the judge; `memory_cases`: waiting for the measured large case (a second child on a second warm host, started beside the regular visit); "
        "`checks`: comparisons and misconception matching; `grade_seconds`: the whole judge call.",
    ])
    print(table)
    if args.write:
        from bench.report import write_section

        write_section(f"Submit-to-verdict through the server ({args.exercise})",
                      f".venv/bin/python bench/submit_latency.py --n {args.n} --exercise {args.exercise} --write", table)


if __name__ == "__main__":
    main()

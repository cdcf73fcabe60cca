"""Submit-to-verdict through the real server, and where the time goes.

Starts ``ppo-grader serve`` (SQLite, in-process worker, warm jail) on a free port, submits a
correct solution N times one after another over HTTP, and waits for each verdict two ways,
taking turns: a long poll (``GET /submissions/{id}?wait=30``, answered when the verdict is
stored) and client polling every ``--poll-ms`` (5 ms, as in issue 22). Prints the median and p95 of both
with the median split recorded by the worker (queue wait, jail start, building cases and the
reference, the learner's visit to the jail, the measured memory case, the checks), then the
real ``ppo-submit FILE`` end to end (its own start-up included; as a learner types it, and with
``--exercise``, which saves the catalogue request) and ``ppo-submit --help`` against a bare
``python -c pass``. ``--n 5`` is a quick check; the record uses the default 20.

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


def _time_cli(url: str, token: str, exercise: str, source: str, n: int) -> dict[str, list[float]]:
    """Wall times of the real client: ``ppo-submit FILE`` end to end, ``--help``, and ``python -c pass``."""
    # A pip-installed client has its bytecode compiled at install; a source checkout run under
    # PYTHONDONTWRITEBYTECODE would recompile the client on every start, which no learner pays.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env.update(PPO_GRADER_URL=url, PPO_GRADER_TOKEN=token)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "client" / "ppo_submit")],
                   check=True, capture_output=True)
    times: dict[str, list[float]] = {"ppo-submit FILE (start-up included)": [],
                                     "ppo-submit FILE --exercise SLUG": [], "ppo-submit --help": [],
                                     "python -c pass (the floor)": []}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "solution.py"
        path.write_text(source)
        commands = {
            "ppo-submit FILE (start-up included)": [str(BIN / "ppo-submit"), str(path)],
            "ppo-submit FILE --exercise SLUG": [str(BIN / "ppo-submit"), str(path), "--exercise", exercise],
            "ppo-submit --help": [str(BIN / "ppo-submit"), "--help"],
            "python -c pass (the floor)": [sys.executable, "-c", "pass"],
        }
        for _ in range(n):
            for name, command in commands.items():
                t0 = time.perf_counter()
                done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
                times[name].append(time.perf_counter() - t0)
                if done.returncode != 0:  # a refused or failed submission's time means nothing
                    raise SystemExit(f"{name} exited {done.returncode}: {(done.stdout + done.stderr)[-2000:]}")
    return times


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--exercise", default="actor-loss")
    parser.add_argument("--poll-ms", type=float, default=5.0, help="the polling client's interval")
    parser.add_argument("--cli-runs", type=int, default=None, help="runs of each client command (default: n / 2, at least 5)")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    source = get_exercise(args.exercise).reference_source
    with tempfile.TemporaryDirectory() as tmp:
        proc, url, token = _start(tmp)
        try:
            client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
            polling = f"{args.poll_ms:g} ms polling"
            totals: dict[str, list[float]] = {"long poll": [], polling: []}
            splits: dict[str, list[float]] = {}
            scores = set()
            for i in range(2 * args.n + 1):
                way = "long poll" if i % 2 else polling
                t0 = time.perf_counter()
                sub = client.post("/api/v1/submissions", json={"exercise": args.exercise, "source": source}).json()
                while True:
                    wait = "?wait=30" if way == "long poll" else ""
                    got = client.get(f"/api/v1/submissions/{sub['id']}{wait}").json()
                    if got["status"] == "done":
                        break
                    if way != "long poll":
                        time.sleep(args.poll_ms / 1000)
                elapsed = time.perf_counter() - t0
                if i == 0:
                    continue  # the first grading measures the reference's memory baseline once
                totals[way].append(elapsed)
                scores.add((got["verdict"], got["score"]))
                for k, v in (got.get("timings") or {}).items():
                    splits.setdefault(k, []).append(float(v))
            cli = _time_cli(url, token, args.exercise, source, args.cli_runs or max(5, args.n // 2))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    rows = [f"| submit-to-verdict, {way} (client clock) | {statistics.median(v) * 1000:.0f} | {p95(v) * 1000:.0f} |"
            for way, v in totals.items()]
    rows += [f"| {name} | {statistics.median(v) * 1000:.0f} | {p95(v) * 1000:.0f} |" for name, v in cli.items()]
    for k, v in sorted(splits.items()):
        rows.append(f"| {k} | {statistics.median(v) * 1000:.1f} | {p95(v) * 1000:.1f} |")
    table = "\n".join([
        f"{args.n} correct `{args.exercise}` submissions each way, one at a time, the ways taking turns; "
        f"verdicts {sorted(scores)}; load average {os.getloadavg()[0]:.1f} at the end.", "",
        "| part | median ms | p95 ms |", "|---|---|---|", *rows, "",
        "- `queue_seconds`: submit to a worker picking the row up; `jail_*`: the learner's visit "
        "(fork and cgroup setup, the run, collecting results); `build_cases`: inputs and the reference's "
        "expected values in the judge; `memory_cases`: waiting for the measured large case (a second child on a second warm host, started beside the regular visit); "
        "`checks`: comparisons and mistake matching; `grade_seconds`: the whole judge call.",
    ])
    print(table)
    if args.write:
        from bench.report import write_section

        write_section(f"Submit-to-verdict through the server ({args.exercise})",
                      f".venv/bin/python bench/submit_latency.py --n {args.n} --exercise {args.exercise} --write", table)


if __name__ == "__main__":
    main()

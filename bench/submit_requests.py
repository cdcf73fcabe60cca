"""Requests and client CPU per ``ppo-submit FILE``: the client before issue 38 and this tree's.

Starts ``ppo-grader serve`` (SQLite, in-process worker, the real jail) on a free port and
counts the requests each ``ppo-submit`` run makes in the server's access log (uvicorn's, one
line a request), beside the client process's own CPU time (user + system, from the kernel's
account of the finished child). Both clients run against this tree's server, which keeps the
old endpoints: the old client is ``--baseline``'s ``client/`` (``git archive``), started the
same way (``python -m ppo_submit``, its bytecode compiled first, as an install does).

Cases, each ``--n`` times per client, the clients taking turns:

* ``on time, cold cache``: a fresh config dir each run (no kept catalogue);
* ``on time, warm cache``: the config dir of an earlier run (this tree: catalogue kept);
* ``--exercise SLUG``: no catalogue needed;
* ``late, answered yes``: an exercise past its due date in a course, "Send it late?" answered
  ``y`` on stdin (warm cache).

The verdict usually arrives inside the submit's own wait; a run whose verdict took longer than
that makes more requests (the wait endpoint's polls), and shows in the maximum.

    .venv/bin/python bench/submit_requests.py --n 10
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from exercises.registry import get_exercise  # noqa: E402

BIN = Path(sys.executable).parent
#: The commit this branch started from: its client makes 4-5 requests a submit (issue 38).
DEFAULT_BASELINE = "5c2ff4e"
SECRET = "bench-requests-" + "k" * 32


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Served:
    url: str
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen[str]

    def grader(self, *args: str) -> str:
        done = subprocess.run([str(BIN / "ppo-grader"), *args], env=self.env, capture_output=True, text=True,
                              timeout=120, check=True)
        return done.stdout

    def requests(self) -> list[str]:
        """``METHOD path`` of every request in the access log so far."""
        found = []
        for line in self.log.read_text(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("logger") == "uvicorn.access":
                match = re.search(r'"([A-Z]+) (\S+) HTTP', str(entry.get("msg", "")))
                if match:
                    found.append(f"{match[1]} {match[2]}")
        return found


def _start(tmp: Path) -> Served:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PPO_GRADER_")},
           "PPO_GRADER_DATABASE_URL": f"sqlite:///{tmp}/bench.db", "PPO_GRADER_WORKERS": "1",
           "PPO_GRADER_SECRET_KEY": SECRET, "PPO_GRADER_RATE_LIMIT": "10000/minute"}
    port = _free_port()
    log = tmp / "server.log"
    proc = subprocess.Popen([str(BIN / "ppo-grader"), "serve", "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=log.open("w"), text=True)
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"the server exited before printing its token: {log.read_text()[-2000:]}")
        if "Instructor token (shown once)" in line:
            break
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{url}/api/v1/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.1)
    return Served(url, env, log, proc)


def _old_client(baseline: str, into: Path) -> Path:
    """``baseline``'s ``client/`` folder, unpacked into ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", baseline, "client"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / "client"


@dataclass(frozen=True)
class Run:
    requests: list[str]
    cpu_ms: float
    exit_code: int


def _submit(served: Served, client: Path, token: str, config: Path, args: list[str], answer: str | None,
            ok: tuple[int, ...] = (0, 1)) -> Run:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE" and not k.startswith("PPO_GRADER_")}
    env.update(PYTHONPATH=str(client), PPO_GRADER_URL=served.url, PPO_GRADER_TOKEN=token,
               XDG_CONFIG_HOME=str(config))
    before = len(served.requests())
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-m", "ppo_submit", *args], env=env, input=answer or "",
                          capture_output=True, text=True, timeout=300)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - used.ru_utime + after.ru_stime - used.ru_stime) * 1000
    if done.returncode not in ok:
        raise SystemExit(f"ppo-submit {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return Run(served.requests()[before:], cpu, done.returncode)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10, help="runs of each case with each client")
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help="git ref whose client/ is the old path")
    parser.add_argument("--exercise", default="actor-loss")
    args = parser.parse_args()

    ex = get_exercise(args.exercise)
    with tempfile.TemporaryDirectory(prefix="ppo-requests-") as name:
        tmp = Path(name)
        clients = {"old client": _old_client(args.baseline, tmp), "this tree": ROOT / "client"}
        for path in clients.values():
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(path / "ppo_submit")],
                           check=True, capture_output=True)
        solution = tmp / "solution.py"
        solution.write_text(ex.reference_source)
        served = _start(tmp)
        try:
            now = datetime.now(UTC).replace(microsecond=0)
            served.grader("courses", "create", "bench-late", "--time-zone", "UTC")
            roster = tmp / "roster.csv"
            roster.write_text("name\n" + "".join(f"late{i}\n" for i in range(len(clients))) + "\n")
            rows = served.grader("courses", "enroll", "bench-late", str(roster)).splitlines()[1:]
            late_tokens = [row.split(",")[-1] for row in rows if row.strip()]
            served.grader("sets", "publish", "bench-late", args.exercise,
                          "--release", (now - timedelta(days=2)).isoformat(),
                          "--due", (now - timedelta(hours=1)).isoformat(),
                          "--close", (now + timedelta(days=2)).isoformat(), "--penalty", "10", "--per", "day")
            tokens = {way: served.grader("users", "add", f"ontime{i}").strip().splitlines()[-1]
                      for i, way in enumerate(clients)}
            late = dict(zip(clients, late_tokens, strict=True))
            cases: dict[str, dict[str, list[Run]]] = {}

            def record(case: str, way: str, run: Run) -> None:
                cases.setdefault(case, {}).setdefault(way, []).append(run)

            warm = {way: tmp / f"warm-{i}" for i, way in enumerate(clients)}
            for way, client in clients.items():  # a first submit of each learner fills its kept catalogue
                _submit(served, client, tokens[way], warm[way], [str(solution)], None)
                _submit(served, client, late[way], warm[way], [str(solution)], "n\n", ok=(2,))  # not sent
            for i in range(args.n):
                for j, (way, client) in enumerate(clients.items()):
                    cold = tmp / f"cold-{j}-{i}"
                    record("on time, cold cache", way, _submit(served, client, tokens[way], cold, [str(solution)], None))
                    record("on time, warm cache", way,
                           _submit(served, client, tokens[way], warm[way], [str(solution)], None))
                    record("--exercise SLUG", way, _submit(served, client, tokens[way], tmp / f"bare-{j}-{i}",
                                                           [str(solution), "--exercise", args.exercise], None))
                    record("late, answered yes", way,
                           _submit(served, client, late[way], warm[way], [str(solution)], "y\n"))
        finally:
            served.proc.terminate()
            served.proc.wait(60)

    print(f"\n`ppo-submit FILE` ({args.exercise}), {args.n} runs per case and client; baseline {args.baseline}; "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print("| case | client | requests per submit (median / max) | client CPU ms (median) | requests of one run |")
    print("|---|---|---|---|---|")
    for case, ways in cases.items():
        for way, runs in ways.items():
            counts = [len(r.requests) for r in runs]
            shown = ", ".join(re.sub(r"\?.*", "", r) for r in runs[0].requests)
            print(f"| {case} | {way} | {statistics.median(counts):g} / {max(counts)} | "
                  f"{statistics.median(r.cpu_ms for r in runs):.0f} | {shown} |")


if __name__ == "__main__":
    main()

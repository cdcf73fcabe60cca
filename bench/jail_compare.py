"""The judge before and after a change to the jail, side by side in one run.

Checks out ``--baseline`` (a git ref) into a temporary worktree and grades the same correct
submissions with the baseline's judge and this tree's judge, in separate processes that take
turns (round after round, so both see the same machine load). For each it prints the median
submit-to-verdict of a warm pool and the ratio between them; for this tree it also times a
fresh jailed interpreter per submission, to show the warm pool's advantage is kept.

    .venv/bin/python bench/jail_compare.py --baseline 3b01c3e --rounds 4 --n 8 --write
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Run inside a child process whose working folder and import path are one checkout.
_MEASURE = r"""
import json, statistics, sys, time
from exercises.judge import Judge
from exercises.registry import get_exercise
slug, n, reuse = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "warm"
ex = get_exercise(slug)
judge = Judge(b"bench-secret", pool_size=1, reuse=reuse)
try:
    if reuse:
        judge.grade(slug, ex.reference_source, 0)  # warm-up: hosts started, first calls done
    times, scores = [], set()
    for i in range(1, n + 1):
        t0 = time.perf_counter()
        report = judge.grade(slug, ex.reference_source, 1000 + i)
        times.append(time.perf_counter() - t0)
        scores.add(report.score)
finally:
    judge.close()
print(json.dumps({"times": times, "scores": sorted(s for s in scores if s is not None)}))
"""


def measure(checkout: Path, slug: str, n: int, way: str) -> dict:
    """Grade ``n`` correct submissions with ``checkout``'s judge in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    out = subprocess.run([sys.executable, "-c", _MEASURE, slug, str(n), way], cwd=checkout, env=env,
                         capture_output=True, text=True, timeout=1800, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="git ref of the judge before the change")
    parser.add_argument("--exercise", default="actor-loss")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--n", type=int, default=8, help="submissions per round and side")
    parser.add_argument("--fresh", type=int, default=4, help="fresh jailed interpreters timed (this tree)")
    parser.add_argument("--write", action="store_true", help="append the table to docs/benchmarks.md")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="ppo-baseline-") as tmp:
        base = Path(tmp) / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(base), args.baseline],
                       check=True)
        try:
            sides: dict[str, list[float]] = {"baseline": [], "this tree": []}
            scores: dict[str, set] = {"baseline": set(), "this tree": set()}
            for _ in range(args.rounds):
                for name, checkout in (("baseline", base), ("this tree", ROOT)):
                    got = measure(checkout, args.exercise, args.n, "warm")
                    sides[name] += got["times"]
                    scores[name].update(got["scores"])
            fresh = measure(ROOT, args.exercise, args.fresh, "fresh")["times"]
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False)

    base_median = statistics.median(sides["baseline"])
    new_median = statistics.median(sides["this tree"])
    fresh_median = statistics.median(fresh)
    rows = [
        ("baseline " + args.baseline + ", warm pool", base_median, len(sides["baseline"]), "1.00x", sorted(scores["baseline"])),
        ("this tree, warm pool", new_median, len(sides["this tree"]), f"{new_median / base_median:.2f}x",
         sorted(scores["this tree"])),
        ("this tree, fresh jailed Python per submission", fresh_median, len(fresh),
         f"{fresh_median / base_median:.2f}x", ""),
    ]
    lines = [
        f"Command: `.venv/bin/python bench/jail_compare.py --baseline {args.baseline} --rounds {args.rounds} "
        f"--n {args.n} --fresh {args.fresh}{' --write' if args.write else ''}` ({time.strftime('%Y-%m-%d')}, {platform.machine()}, "
        f"Python {platform.python_version()}, {os.cpu_count()} cores, load average at the end "
        f"{os.getloadavg()[0]:.1f})",
        "",
        f"| {args.exercise}: correct submissions | median ms | graded | vs baseline | scores |",
        "|---|---|---|---|---|",
        *[f"| {name} | {1000 * med:.0f} | {count} | {ratio} | {sc} |" for name, med, count, ratio, sc in rows],
        "",
        f"- The hardened warm pool is {fresh_median / new_median:.1f}x faster than a fresh jailed interpreter "
        "per submission, measured in the same run.",
        f"- Rounds alternate the two checkouts ({args.rounds} rounds of {args.n} submissions each), each in a "
        "fresh process with its own warm pool, so both see the same load.",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        doc = ROOT / "docs" / "benchmarks.md"
        doc.write_text(doc.read_text() + "\n## The jail before and after per-job namespaces\n\n" + text + "\n")


if __name__ == "__main__":
    main()

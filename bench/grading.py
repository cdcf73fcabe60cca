"""Submit-to-verdict through the judge, three ways side by side in one run.

(a) the warm pool: pre-started, torch-loaded jail hosts forking one child per visit; a
    submission's measured (memory) case runs on a second warm host beside its regular cases;
(b) a fresh jailed interpreter (bubblewrap + Python + torch import) per submission, serving
    the submission's two visits (regular cases, then the measured case) in turn;
(c) the same with a fresh unjailed interpreter: the naive baseline most graders use.

Every way grades the same correct solutions with the same seeds; the script checks that the
verdicts and scores agree, then prints median and p95 latency, throughput per core and the
ratio of each way to (a), and appends the table to docs/benchmarks.md with ``--write``.

    .venv/bin/python bench/grading.py --n 20 --write
"""

from __future__ import annotations

import argparse
import os
from concurrent.futures import ThreadPoolExecutor
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from exercises.judge import Judge  # noqa: E402
from exercises.registry import get_exercise  # noqa: E402

WAYS = {
    "a: warm pool": {"jailed": True, "reuse": True},
    "b: fresh jailed Python": {"jailed": True, "reuse": False},
    "c: fresh unjailed Python": {"jailed": False, "reuse": False},
}


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def run(slugs: list[str], n: int, ways: list[str]) -> tuple[list[list[str]], list[str]]:
    """Grade ``n`` submissions per exercise per way (``ways``: keys of ``WAYS``, (a) always
    first); return table rows and notes."""
    rows: list[list[str]] = []
    verdicts: dict[tuple[str, str], list[tuple[str, float | None]]] = {}
    medians: dict[tuple[str, str], float] = {}
    throughput: dict[tuple[str, str], float] = {}
    splits: dict[str, dict[str, float]] = {}
    cores = os.cpu_count() or 1
    for way, options in ((way, WAYS[way]) for way in ways):
        judge = Judge(secret=b"bench-secret-" + b"x" * 20, pool_size=1, **options)
        try:
            for slug in slugs:
                source = get_exercise(slug).reference_source
                judge.grade(slug, source, 0)  # the reference's memory baseline is measured once per worker
                times = []
                results = []
                per_key: dict[str, list[float]] = {}
                for i in range(n):
                    t0 = time.perf_counter()
                    report = judge.grade(slug, source, i + 1)
                    times.append(time.perf_counter() - t0)
                    results.append((report.verdict, report.score))
                    for k, v in report.timings.items():
                        per_key.setdefault(k, []).append(v)
                verdicts[(way, slug)] = results
                med = statistics.median(times)
                medians[(way, slug)] = med
                if way.startswith("a"):
                    splits[slug] = {k: statistics.median(v) for k, v in per_key.items()}
                rows.append([slug, way, f"{med * 1000:.0f}", f"{p95(times) * 1000:.0f}"])
        finally:
            judge.close()
        # Throughput: as many gradings at once as there are cores, all of them busy.
        judge = Judge(secret=b"bench-secret-" + b"x" * 20, pool_size=cores, **options)
        try:
            for slug in slugs:
                source = get_exercise(slug).reference_source
                judge.grade(slug, source, 0)
                t0 = time.perf_counter()
                with ThreadPoolExecutor(max_workers=cores) as ex:
                    list(ex.map(lambda i: judge.grade(slug, source, 1000 + i), range(n)))
                per_core = n / (time.perf_counter() - t0) / cores
                next(r for r in rows if r[0] == slug and r[1] == way).append(f"{per_core:.2f}")
                throughput[(way, slug)] = per_core
        finally:
            judge.close()
    for row in rows:
        slug, way = row[0], row[1]
        row.append(f"{medians[(way, slug)] / medians[('a: warm pool', slug)]:.1f}x")
        row.append(f"{throughput[('a: warm pool', slug)] / throughput[(way, slug)]:.1f}x")
        base = verdicts[("a: warm pool", slug)]
        row.append("yes" if verdicts[(way, slug)] == base else "NO")
    notes = [
        f"Latency: {n} submissions per exercise and way, graded one after another (submit-to-verdict "
        f"of the judge). Throughput: another {n}, graded {cores} at a time ({cores} cores, all busy), "
        "in verdicts per second per core.",
    ]
    for slug, split in splits.items():
        parts = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in split.items() if v >= 0.0005)
        notes.append(f"Where the time goes in (a) for {slug} (medians): {parts}. `build_cases`: inputs and "
                     "the reference's expected values; `jail_*`: the regular visit (fork, cgroup and "
                     "seccomp setup; the learner's calls; collecting results); `memory_cases`: waiting for "
                     "the measured case after the regular visit ended; `checks`: comparisons.")
    return rows, notes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=20, help="submissions per exercise and way")
    parser.add_argument("--exercises", default="actor-loss,gae")
    parser.add_argument("--ways", default="a,b,c", help="which of the ways (a, b, c) to run; (a) always runs")
    parser.add_argument("--write", action="store_true", help="write the table to docs/benchmarks.md")
    args = parser.parse_args()
    slugs = [s for s in args.exercises.split(",") if s]
    letters = {"a", *args.ways.split(",")}
    unknown = letters - {way[0] for way in WAYS}
    if unknown:
        parser.error(f"unknown ways: {', '.join(sorted(unknown))}")
    rows, notes = run(slugs, args.n, [way for way in WAYS if way[0] in letters])
    header = ["exercise", "way", "median ms", "p95 ms", "verdicts/s per core", "median vs (a)",
              "(a)'s throughput vs this",
              "same verdicts and scores as (a)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    table = "\n".join(lines + [""] + [f"- {n}" for n in notes])
    print(table)
    if args.write:
        from bench.report import write_section

        ways = "" if letters == {"a", "b", "c"} else f" --ways {','.join(sorted(letters))}"
        command = f".venv/bin/python bench/grading.py --n {args.n} --exercises {args.exercises}{ways} --write"
        write_section("Submit-to-verdict: warm pool vs fresh interpreters", command, table)


if __name__ == "__main__":
    main()

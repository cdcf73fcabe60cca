"""Diagnosis of several mistakes: recall, precision and added time on the compound corpus.

For every exercise, the corpus of :mod:`exercises.corpus` (files with 2 or 3 catalogued
mistakes, generated from the fault switches) is graded in process and diagnosed; the table
gives, per exercise, how many injected mistakes were named (recall), how many named ones were
injected (precision), namings on a check the mistake does not explain, failed checks left
unexplained, and the time diagnosis adds to a failing submission (median and p95). Single
mistakes (every catalogued mutant) are timed too, as the common case.

    .venv/bin/python bench/diagnosis.py --write
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from exercises.corpus import Entry, build_corpus, evaluate  # noqa: E402
from exercises.registry import all_exercises  # noqa: E402

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
HEADING = "## Diagnosis of several mistakes (issue 11)"


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def run(exercises: list[str] | None) -> list[str]:
    rows = ["| exercise | files | mistakes | named | recall | named wrongly | precision | on a check it does not explain "
            "| unexplained checks | diagnosis ms, 2-3 mistakes (median / p95) | diagnosis ms, 1 mistake (median) "
            "| CPU ms, 2-3 mistakes (median) | CPU ms, 1 mistake (median) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    totals = {"files": 0, "mistakes": 0, "hits": 0, "false": 0, "wrong": 0, "unexplained": 0}
    all_times: list[float] = []
    single_times: list[float] = []
    all_cpu: list[float] = []
    single_cpu: list[float] = []
    for ex in all_exercises():
        if exercises and ex.slug not in exercises:
            continue
        corpus = build_corpus(ex)
        scored = [evaluate(ex, e) for e in corpus]
        singles = [evaluate(ex, Entry(ex.slug, (m.key,), 1000 + i))
                   for i, m in enumerate(ex.mistakes) if m.is_switch]
        mistakes = sum(len(s.entry.faults) for s in scored)
        hits = sum(s.hits for s in scored)
        false = sum(len(s.false) for s in scored)
        named = hits + false
        wrong = sum(len(s.wrong_check) for s in scored)
        unexplained = sum(len(s.unexplained) for s in scored)
        times = [s.seconds * 1000 for s in scored]
        single = [s.seconds * 1000 for s in singles]
        cpu = [s.cpu_seconds * 1000 for s in scored]
        single_c = [s.cpu_seconds * 1000 for s in singles]
        all_times += times
        single_times += single
        all_cpu += cpu
        single_cpu += single_c
        for key, value in (("files", len(scored)), ("mistakes", mistakes), ("hits", hits), ("false", false),
                           ("wrong", wrong), ("unexplained", unexplained)):
            totals[key] += value
        rows.append(f"| {ex.slug} | {len(scored)} | {mistakes} | {hits} | {hits / max(mistakes, 1):.1%} | {false} "
                    f"| {hits / max(named, 1):.1%} | {wrong} | {unexplained} "
                    f"| {statistics.median(times):.1f} / {p95(times):.1f} | {statistics.median(single):.1f} "
                    f"| {statistics.median(cpu):.1f} | {statistics.median(single_c):.1f} |")
        print(rows[-1], flush=True)
    named = totals["hits"] + totals["false"]
    rows.append(f"| **all** | {totals['files']} | {totals['mistakes']} | {totals['hits']} "
                f"| {totals['hits'] / max(totals['mistakes'], 1):.1%} | {totals['false']} "
                f"| {totals['hits'] / max(named, 1):.1%} | {totals['wrong']} | {totals['unexplained']} "
                f"| {statistics.median(all_times):.1f} / {p95(all_times):.1f} | {statistics.median(single_times):.1f} "
                f"| {statistics.median(all_cpu):.1f} | {statistics.median(single_cpu):.1f} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exercises", help="comma-separated slugs (default: all)")
    parser.add_argument("--write", action="store_true", help=f"replace the section in {DOC}")
    args = parser.parse_args()
    t0 = time.monotonic()
    rows = run(args.exercises.split(",") if args.exercises else None)
    print(rows[-1])
    print(f"({time.monotonic() - t0:.0f} s)")
    if args.write:
        command = "`.venv/bin/python bench/diagnosis.py --write`"
        section = "\n".join([
            HEADING, "",
            f"Command: {command} ({date.today().isoformat()}, {platform.machine()}, Python {platform.python_version()};"
            " a 2-core machine shared with other agents, so times are noisy).",
            "",
            "Corpus: per exercise, 6 files with 2 and 6 with 3 catalogued mistakes at distinct code sites, drawn "
            "reproducibly from the fault switches (`exercises/corpus.py`); a file is kept only when each of its "
            "mistakes changes a failed check it explains. Graded in process (the jail's outcome structure, same "
            "checks); diagnosis time is what `diagnose()` adds to a failing submission "
            "(`GradeReport.timings['diagnosis']` in the judge).",
            "",
            *rows, ""])
        text = DOC.read_text(encoding="utf-8")
        if HEADING in text:
            start = text.index(HEADING)
            end = text.find("\n## ", start + len(HEADING))
            text = text[:start] + section + (text[end + 1:] if end != -1 else "")
        else:
            text = text.rstrip("\n") + "\n\n" + section
        DOC.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()

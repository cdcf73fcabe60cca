"""Diagnosis of several mistakes: recall and precision on the blind corpus and the generated one.

The blind corpus (``tests/exercises/blind_mistakes``: hand-written wrong files, 1-3 mistakes
each, labelled in their author's words and mapped to catalogue ids by ``mapping.json``) is
graded through the real judge and jail; per exercise, a labelled mistake counts as named
when diagnosis names one of the catalogue mistakes it maps to (recall: named / labelled; a
label mapped to no catalogue mistake is a miss), and a named mistake that is none of the
file's labels is a false positive (precision: right namings / namings). ``dev`` is what the
diagnosis was developed on; ``heldout`` is only measured.

The generated corpus of :mod:`exercises.corpus` (files with 2 or 3 catalogued mistakes,
generated from the fault switches) is graded in process and diagnosed; its table gives, per
exercise, how many injected mistakes were named (recall), how many named ones were
injected (precision), namings on a check the mistake does not explain, failed checks left
unexplained, and the time diagnosis adds to a failing submission (median and p95). Single
mistakes (every catalogued mutant) are timed too, as the common case.

    .venv/bin/python bench/diagnosis.py --write                   # all three corpora
    .venv/bin/python bench/diagnosis.py --corpus dev,heldout     # the blind halves only
    .venv/bin/python bench/diagnosis.py --corpus stability       # seed stability (3 seeds)

Seed stability (``stability``): every file of both blind corpora (``blind_mistakes`` and issue 37's
``blind_mistakes_2``, both halves), graded through the real judge on each of
:data:`STABILITY_SEEDS`; a file is seed-stable when every seed names exactly the same mistakes
(the diagnosis entries' ids, "unexplained" included). It needs no labels.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from exercises.corpus import Entry, build_corpus, evaluate
from exercises.registry import all_exercises

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
HEADING = "## Diagnosis of several mistakes (issues 11 and 20)"
OLD_HEADING = "## Diagnosis of several mistakes (issue 11)"
BLIND = ROOT / "tests" / "exercises" / "blind_mistakes"
#: Issue 37's second blind corpus (no catalogue mapping yet: used for seed stability only).
BLIND_2 = ROOT / "tests" / "exercises" / "blind_mistakes_2"
#: The blind halves: ``dev`` to develop the diagnosis on, ``heldout`` only measured.
SPLITS = ("dev", "heldout")
#: The judge's secret and seed for the blind corpus (fixed: the same cases every run).
BLIND_SECRET = b"blind-corpus-" + b"x" * 20
BLIND_SEED = 20
#: The grading seeds of the seed-stability measure (the diagnosis must not depend on them).
STABILITY_SEEDS = (20, 21, 22)


@dataclass(frozen=True)
class Label:
    """One labelled mistake of a blind file: the author's id and the catalogue ids it maps to."""

    author_id: str
    catalogue: frozenset[str]


@dataclass(frozen=True)
class BlindFile:
    """One file of the blind corpus, relative to its folder (``dev/gae/sub01.py``)."""

    name: str
    slug: str
    labels: tuple[Label, ...]

    @property
    def path(self) -> Path:
        return BLIND / self.name


@dataclass
class Tally:
    """Recall and precision of the namings on some blind files."""

    files: int = 0
    labelled: int = 0
    found: int = 0
    named: int = 0
    false: int = 0
    unexplained: int = 0
    misses: list[str] = field(default_factory=list)
    false_names: list[str] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return self.found / max(self.labelled, 1)

    @property
    def precision(self) -> float:
        return (self.named - self.false) / max(self.named, 1)

    def add(self, other: Tally) -> None:
        for key in ("files", "labelled", "found", "named", "false", "unexplained"):
            setattr(self, key, getattr(self, key) + getattr(other, key))
        self.misses += other.misses
        self.false_names += other.false_names


def blind_files(split: str) -> list[BlindFile]:
    """The files of one half of the blind corpus with their mapped labels, by exercise then name."""
    labels = json.loads((BLIND / "labels.json").read_text(encoding="utf-8"))
    mapping = json.loads((BLIND / "mapping.json").read_text(encoding="utf-8"))
    out = []
    for name in sorted(k for k in labels if k.startswith(f"{split}/")):
        slug = name.split("/")[1]
        found = []
        for label in labels[name]:
            ids = mapping[f"{slug}/{label['id']}"]
            found.append(Label(label["id"], frozenset([ids] if isinstance(ids, str) else ids or [])))
        out.append(BlindFile(name, slug, tuple(found)))
    return out


def named_mistakes(diagnosis: Iterable[dict[str, Any]], slug: str) -> set[str]:
    """The catalogue ids a report's diagnosis names (its "unexplained" entry is no mistake)."""
    return {d["mistake_id"] for d in diagnosis} - {f"{slug}/unexplained"}


def score_blind_file(judge: Any, blind: BlindFile) -> Tally:
    """Grade one blind file through ``judge`` (the real jail) and score its diagnosis."""
    report = judge.grade(blind.slug, blind.path.read_text(encoding="utf-8"), BLIND_SEED)
    named = named_mistakes(report.diagnosis or [], blind.slug)
    tally = Tally(files=1, labelled=len(blind.labels), named=len(named))
    for label in blind.labels:
        if label.catalogue & named:
            tally.found += 1
        else:
            tally.misses.append(f"{blind.name}: {label.author_id}")
    allowed = set().union(*(label.catalogue for label in blind.labels))
    wrong = sorted(named - allowed)
    tally.false = len(wrong)
    tally.false_names += [f"{blind.name}: {m}" for m in wrong]
    tally.unexplained = sum(len(d["checks"]) for d in report.diagnosis or []
                            if d["mistake_id"] == f"{blind.slug}/unexplained")
    return tally


def score_blind(split: str, exercises: list[str] | None = None) -> dict[str, Tally]:
    """Per exercise, the tally of one blind half graded through a real judge."""
    from exercises.judge import Judge

    judge = Judge(secret=BLIND_SECRET, pool_size=1)
    tallies: dict[str, Tally] = {}
    try:
        for blind in blind_files(split):
            if not exercises or blind.slug in exercises:
                tallies.setdefault(blind.slug, Tally()).add(score_blind_file(judge, blind))
    finally:
        judge.close()
    return tallies


def names_per_seed(judge: Any, slug: str, source: str, seeds: Iterable[int] = STABILITY_SEEDS) -> list[frozenset[str]]:
    """The diagnosis entries' ids (mistakes, and "unexplained") of one file, per grading seed."""
    return [frozenset(d["mistake_id"] for d in judge.grade(slug, source, seed).diagnosis or []) for seed in seeds]


def stability_files(exercises: list[str] | None = None) -> list[tuple[str, str, Path]]:
    """(name, slug, path) of every wrong file of both blind corpora, both halves."""
    found = []
    for corpus in (BLIND, BLIND_2):
        for split in SPLITS:
            for path in sorted((corpus / split).glob("*/*.py")):
                slug = path.parent.name
                if not exercises or slug in exercises:
                    found.append((f"{corpus.name}/{split}/{slug}/{path.name}", slug, path))
    return found


@dataclass
class Stability:
    """Seed stability of one corpus: files graded, and those whose diagnosis changes with the seed."""

    files: int = 0
    #: Files whose entries change (a mistake, or an "unexplained" entry that comes and goes).
    unstable: list[str] = field(default_factory=list)
    #: Files whose named mistakes change ("unexplained" left out: a check only some seeds fail).
    unstable_mistakes: list[str] = field(default_factory=list)


def seed_stability(exercises: list[str] | None = None) -> dict[str, Stability]:
    """Per blind corpus, how the diagnosis of its files changes with the grading seed."""
    from exercises.judge import Judge

    judge = Judge(secret=BLIND_SECRET, pool_size=1)
    out: dict[str, Stability] = {}
    try:
        for name, slug, path in stability_files(exercises):
            tally = out.setdefault(name.split("/")[0], Stability())
            tally.files += 1
            names = names_per_seed(judge, slug, path.read_text(encoding="utf-8"))
            line = f"{name}: " + " | ".join(",".join(sorted(n)) or "-" for n in names)
            if len(set(names)) > 1:
                tally.unstable.append(line)
            if len({n - {f"{slug}/unexplained"} for n in names}) > 1:
                tally.unstable_mistakes.append(line)
    finally:
        judge.close()
    return out


def blind_rows(split: str, tallies: dict[str, Tally]) -> tuple[list[str], Tally]:
    """The markdown table of one blind half, and its overall tally."""
    rows = [f"| exercise ({split}) | files | labelled mistakes | named | recall | namings | false positives "
            "| precision | failed checks naming nothing |",
            "|---|---|---|---|---|---|---|---|---|"]
    total = Tally()
    for slug, tally in tallies.items():
        total.add(tally)
        rows.append(_blind_row(slug, tally))
    rows.append(_blind_row("**all**", total))
    return rows, total


def _blind_row(label: str, t: Tally) -> str:
    return (f"| {label} | {t.files} | {t.labelled} | {t.found} | {t.recall:.1%} | {t.named} | {t.false} "
            f"| {t.precision:.1%} | {t.unexplained} |")


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def run(exercises: list[str] | None) -> list[str]:
    """The generated corpus's table (recall, precision and time per exercise)."""
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
    parser.add_argument("--corpus", default="dev,heldout,generated",
                        help="comma-separated: dev, heldout (the blind halves), stability (3 seeds), generated "
                             "(default: dev,heldout,generated)")
    parser.add_argument("--misses", action="store_true", help="list the blind corpus's misses and false positives")
    parser.add_argument("--write", action="store_true", help=f"replace the section in {DOC}")
    args = parser.parse_args()
    exercises = args.exercises.split(",") if args.exercises else None
    corpora = args.corpus.split(",")
    t0 = time.monotonic()
    tables: list[str] = []
    for split in (s for s in SPLITS if s in corpora):
        rows, total = blind_rows(split, score_blind(split, exercises))
        print("\n".join(rows), flush=True)
        if args.misses:
            print("\n".join(["misses:", *total.misses, "false positives:", *total.false_names]))
        tables += [f"Blind corpus, `{split}/` ({'developed on' if split == 'dev' else 'only measured'}):", "",
                   *rows, ""]
    if "stability" in corpora:
        for corpus, t in seed_stability(exercises).items():
            line = (f"Seed stability of `{corpus}/` (seeds {', '.join(map(str, STABILITY_SEEDS))}, both halves): "
                    f"{t.files - len(t.unstable_mistakes)} of {t.files} files name the same mistakes on every seed, "
                    f"{t.files - len(t.unstable)} the same entries with \"unexplained\" too; these change:")
            print(line, *t.unstable, sep="\n", flush=True)
            tables += [line, "", *(f"- {u}" for u in t.unstable), ""]
    if "generated" in corpora:
        rows = run(exercises)
        print(rows[-1])
        tables += ["Generated corpus (`exercises/corpus.py`):", "", *rows, ""]
    print(f"({time.monotonic() - t0:.0f} s; load average {os.getloadavg()[0]:.1f})")
    if args.write:
        if exercises or not {*SPLITS, "generated"} <= set(corpora):
            sys.exit("--write needs every exercise and every corpus")
        write_section(tables)


def write_section(tables: list[str]) -> None:
    """Replace this benchmark's section of docs/benchmarks.md with ``tables``."""
    command = "`.venv/bin/python bench/diagnosis.py --write`"
    section = "\n".join([
        HEADING, "",
        f"Command: {command} ({date.today().isoformat()}, {platform.machine()}, Python {platform.python_version()};"
        f" a 2-core machine shared with other agents, so times are noisy; load average {os.getloadavg()[0]:.1f}"
        " at the end).",
        "",
        "Blind corpus (`tests/exercises/blind_mistakes/`): 132 wrong files, 1-3 mistakes each, written from the "
        "starters by an author who never saw the checks, the faults or the mutants, labelled in the author's "
        "words; `mapping.json` says which catalogue mistake each label is (or none: a miss). Each file is graded "
        "once through the real judge and jail (fixed secret and seed). A label is named when diagnosis names "
        "a catalogue mistake it maps to; a named mistake that is none of the file's labels is a false "
        "positive. Recall: named / labelled; precision: right namings / namings.",
        "",
        "Generated corpus: per exercise, 6 files with 2 and 6 with 3 catalogued mistakes at distinct code sites, "
        "drawn reproducibly from the fault switches (`exercises/corpus.py`); a file is kept only when each of its "
        "mistakes changes a failed check it explains. Graded in process (the jail's outcome structure, same "
        "checks); diagnosis time is what `diagnose()` adds to a failing submission "
        "(`GradeReport.timings['diagnosis']` in the judge).",
        "",
        "Before issue 20's changes (commit 00e3e57, scored with this `mapping.json`: the labels it maps to mistakes added since could not be named then), the same command "
        "measured: dev recall 43.2%, precision 95.0%; heldout recall 31.1%, precision 97.6%; generated recall "
        "99.7%, precision 99.7%. Issue 20's target (recall 95% and precision 98% on both blind halves) is not "
        "reached. The generated corpus is drawn from the switches, so the new switches changed which files it "
        "holds: its before and after rows are not the same files.",
        "",
        *tables])
    text = DOC.read_text(encoding="utf-8")
    heading = HEADING if HEADING in text else OLD_HEADING
    if heading in text:
        start = text.index(heading)
        end = text.find("\n## ", start + len(heading))
        text = text[:start] + section + (text[end:] if end != -1 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    DOC.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()

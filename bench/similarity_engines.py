"""Our winnowing engine against copydetect 0.5.0 on the same corpora: ranking and time.

Two corpora:
- the planted course of the acceptance test (tests/server/similarity/corpus/kl_penalty: 27
  independent hand-written solutions and 3 planted copies: verbatim, renamed with new
  comments, lines reordered);
- the synthetic course of ``bench/similarity_corpus.py`` (N learners x 11 exercises, 3
  planted copies).
Both engines get the starter as boilerplate and the same aggregation (per-exercise
similarity summed over the course), so only the engines differ. copydetect is run the way
its ``CopyDetector`` does (``CodeFingerprint`` per file, ``compare_files`` per pair, its
defaults: noise threshold 25, guarantee 30), with the mean of its two overlap ratios as
the pair's similarity; "copydetect + common" also gives it, as boilerplate, every
fingerprint more than 20% of the learners share (what our engine excludes).

copydetect is not a dependency of ppo-grader: ``pip install copydetect==0.5.0`` to run this.

    .venv/bin/python bench/similarity_engines.py --learners 200 --write
"""

from __future__ import annotations

import argparse
import io
import math
import sys
import time
from collections import Counter
from itertools import combinations
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.report import write_section  # noqa: E402
from bench.similarity_corpus import synthetic_course  # noqa: E402
from exercises.registry import all_exercises, get_exercise  # noqa: E402
from server.similarity.engine import Entry, ExerciseComparison, aggregate  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "server" / "similarity" / "corpus" / "kl_penalty"
TITLE = "Similarity engines: ours against copydetect"


def planted_corpus() -> tuple[dict[str, dict[int, str]], set[tuple[int, int]]]:
    """{exercise: {learner: source}} and the planted pairs, from the acceptance corpus."""
    files = sorted(CORPUS.glob("*.py"))
    index = {f.name.split("_")[0].removesuffix(".py"): i for i, f in enumerate(files)}
    planted = set()
    for i, f in enumerate(files):
        if "_" in f.stem:
            original = f.stem.rsplit("_", 1)[1]
            planted.add((min(index[original], i), max(index[original], i)))
    return {"kl-penalty": {i: f.read_text() for i, f in enumerate(files)}}, planted


def synthetic(learners: int) -> tuple[dict[str, dict[int, str]], set[tuple[int, int]]]:
    course = synthetic_course(learners)
    by_exercise = {ex.slug: {l.index: l.files[ex.slug] for l in course} for ex in all_exercises()}
    planted = {(l.copy_of, l.index) for l in course if l.copy_of is not None}
    return by_exercise, planted  # type: ignore[return-value]


def ours(corpus: dict[str, dict[int, str]]) -> dict[tuple[int, int], float]:
    comparisons = {
        slug: ExerciseComparison(get_exercise(slug).starter, [Entry(l, l, s) for l, s in files.items()])
        for slug, files in corpus.items()
    }
    return {(p.learner_a, p.learner_b): p.score for p in aggregate(comparisons)}


def copydetect_scores(corpus: dict[str, dict[int, str]], common: bool) -> dict[tuple[int, int], float]:
    import numpy as np
    from copydetect import CodeFingerprint, compare_files

    k, win = 25, 30 - 25 + 1
    scores: Counter[tuple[int, int]] = Counter()
    for slug, files in corpus.items():
        starter = CodeFingerprint("starter.py", k, 1, fp=io.StringIO(get_exercise(slug).starter), language="python")
        boilerplate = np.array(sorted(starter.hashes))
        if common:
            plain = {l: CodeFingerprint(f"{l}.py", k, win, fp=io.StringIO(s), language="python") for l, s in files.items()}
            held = Counter(h for fp in plain.values() for h in fp.hashes)
            limit = max(3, math.ceil(0.2 * len(files)))
            boilerplate = np.union1d(boilerplate, np.array([h for h, n in held.items() if n > limit]))
        prints = {
            l: CodeFingerprint(f"{l}.py", k, win, boilerplate=boilerplate, fp=io.StringIO(s), language="python")
            for l, s in files.items()
        }
        for a, b in combinations(sorted(prints), 2):
            _, (s1, s2), _ = compare_files(prints[a], prints[b])
            if s1 or s2:
                scores[(a, b)] += (s1 + s2) / 2
    return dict(scores)


def quality(scores: dict[tuple[int, int], float], planted: set[tuple[int, int]]) -> tuple[str, float]:
    """Ranks of the planted pairs, and the margin: worst planted minus best independent."""
    ranked = sorted(scores, key=lambda p: -scores[p])
    ranks = sorted(ranked.index(p) + 1 if p in scores else 10**9 for p in planted)
    independent = max((v for p, v in scores.items() if p not in planted), default=0.0)
    worst_planted = min(scores.get(p, 0.0) for p in planted)
    return ", ".join(str(r) for r in ranks), worst_planted - independent


ENGINES = {
    "ours": ours,
    "copydetect": lambda c: copydetect_scores(c, common=False),
    "copydetect + common": lambda c: copydetect_scores(c, common=True),
}


def measure(name: str, corpus: dict[str, dict[int, str]], planted: set[tuple[int, int]],
            engines: list[str]) -> list[str]:
    rows = []
    for engine in engines:
        run = ENGINES[engine]
        began = time.perf_counter()
        scores = run(corpus)
        seconds = time.perf_counter() - began
        ranks, margin = quality(scores, planted)
        rows.append(f"| {name} | {engine} | {ranks} | {margin:+.2f} | {seconds:.2f} |")
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, default=200)
    parser.add_argument("--engines", default="ours,copydetect",
                        help="ours and/or copydetect (copydetect also runs 'copydetect + common')")
    parser.add_argument("--write", action="store_true", help="write the table into docs/benchmarks.md")
    args = parser.parse_args()
    import os

    chosen = args.engines.split(",")
    if not set(chosen) <= {"ours", "copydetect"}:
        parser.error(f"unknown engines in {args.engines!r}: ours, copydetect")
    engines = [e for e in ENGINES if e.split(" ")[0] in chosen]

    load = os.getloadavg()
    rows = ["| corpus | engine | ranks of the 3 planted pairs | margin (worst planted - best independent) | seconds |",
            "|---|---|---|---|---|"]
    rows += measure("planted course: 30 learners, kl-penalty", *planted_corpus(), engines)
    rows += measure(f"synthetic: {args.learners} learners x {len(all_exercises())} exercises", *synthetic(args.learners), engines)
    body = "\n".join(rows) + f"\n\nLoad average at the start: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} (2 cores)."
    print(body)
    if args.write:
        flags = "" if set(chosen) == {"ours", "copydetect"} else f" --engines {args.engines}"
        write_section(TITLE, f"python bench/similarity_engines.py --learners {args.learners}{flags} --write", body)


if __name__ == "__main__":
    main()

"""The engine on the blind author's correct alternatives (tests/exercises/alternatives: 6 to
9 independent solutions per exercise, written without seeing each other's code): a course
where learner i hands in alternative i of every exercise. No independent pair is "similar"
on any exercise; a learner who copies another on three exercises, renamed, with new comments
and two independent lines swapped, ranks first."""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

from exercises.registry import get_exercise
from server.similarity.engine import Entry, ExerciseComparison, Tuning, aggregate
from server.similarity.normalize import defined_names

ALTERNATIVES = Path(__file__).resolve().parents[2] / "exercises" / "alternatives"
COPIED = ("gae", "whiten", "dpo-loss")


def disguised(source: str) -> str:
    """Every defined name renamed, comments replaced, the first two import lines swapped."""
    names = sorted(defined_names(source) or set())
    mapping = {n: f"my_{n}_{i}" for i, n in enumerate(names)}
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        text = tok.string
        if tok.type == tokenize.NAME:
            text = mapping.get(text, text)
        elif tok.type == tokenize.COMMENT:
            text = "# mine"
        out.append((tok.type, text))
    lines = tokenize.untokenize(out).splitlines()
    imports = [i for i, line in enumerate(lines) if line.startswith(("import ", "from "))]
    if len(imports) >= 2:
        a, b = imports[:2]
        lines[a], lines[b] = lines[b], lines[a]
    return "\n".join(lines) + "\n"


def test_independent_alternatives_are_never_similar_and_a_disguised_copy_ranks_first() -> None:
    folders = sorted(p for p in ALTERNATIVES.iterdir() if p.is_dir())
    assert len(folders) == 11
    comparisons = {}
    copier = 100
    for folder in folders:
        files = sorted(folder.glob("*.py"))
        assert len(files) >= 6
        entries = [Entry(i, i * 1000 + len(comparisons), f.read_text()) for i, f in enumerate(files)]
        if folder.name in COPIED:
            entries.append(Entry(copier, copier * 1000 + len(comparisons), disguised(files[0].read_text())))
        comparisons[folder.name] = ExerciseComparison(get_exercise(folder.name).starter, entries)
    pairs = aggregate(comparisons)
    tuning = Tuning()
    top = pairs[0]
    assert (top.learner_a, top.learner_b) == (0, copier) and top.similar_on(tuning) == len(COPIED), top
    independent = [p for p in pairs if copier not in (p.learner_a, p.learner_b)]
    assert all(p.similar_on(tuning) == 0 for p in independent), [
        (p.learner_a, p.learner_b, {k: round(m.similarity, 2) for k, m in p.exercises.items()}) for p in independent
        if p.similar_on(tuning)]
    assert top.score > 2 * max(p.score for p in independent)

"""The similarity engine on its own: normalisation, winnowing, exclusion, aggregation."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import server.similarity.normalize as normalize_module
from server.similarity.engine import Entry, ExerciseComparison, Tuning, aggregate, rank
from server.similarity.fingerprints import K, W, fingerprint, kgram_hashes, winnow
from server.similarity.normalize import MAX_TOKENS, normalize

ROOT = Path(__file__).resolve().parents[3]

ORIGINAL = '''
import torch


def compute(values, mask, gamma=0.99):
    """Discounted sums, right to left."""
    total = torch.zeros_like(values[:, 0])
    out = torch.empty_like(values)
    for t in reversed(range(values.shape[1])):
        total = values[:, t] + gamma * total * mask[:, t]   # carry while valid
        out[:, t] = total
    scale = out.abs().amax(dim=1, keepdim=True).clamp(min=1e-6)
    return out / scale
'''

RENAMED = """
import torch

def compute(v,m,g=0.99):
    # my own version
    acc = torch.zeros_like(v[:, 0])
    res = torch.empty_like(v)
    for step in reversed(range(v.shape[1])):
        acc = v[:, step] + \
              g * acc * m[:, step]
        res[:, step] = acc
    s = res.abs().amax(dim=1, keepdim=True).clamp(min=1e-6)
    return res / s
"""

OTHER = '''
import torch


def compute(values, mask, gamma=0.99):
    weights = gamma ** torch.arange(values.shape[1], dtype=values.dtype)
    flipped = torch.flip(values * mask, dims=[1]) * weights
    summed = torch.cumsum(flipped, dim=1) / weights
    result = torch.flip(summed, dims=[1])
    return result / result.abs().max(dim=1, keepdim=True).values.clamp(min=1e-6)
'''


def texts(source: str) -> list[str]:
    return [t.text for t in normalize(source)]


def test_renaming_comments_docstrings_and_layout_normalise_away() -> None:
    assert texts(ORIGINAL) == texts(RENAMED)
    assert texts(ORIGINAL) != texts(OTHER)


def test_api_names_and_attributes_stay_and_own_names_become_v() -> None:
    tokens = texts("import torch as T\nx = T.exp(y)\nprint(len(x), dim=1)\n")
    assert tokens == ["import", "torch", "as", "V", ";", "V", "=", "V", ".", "exp", "(", "y", ")", ";",
                      "print", "(", "len", "(", "V", ")", ",", "dim", "=", "1", ")", ";"]


def test_broken_and_hostile_sources_never_raise() -> None:
    for source in ("def f(:\n    return (", "\x00\x01", "'''unterminated", "if x:\n  a\n    b\n", "(" * 5000, "", "é = 1\n",
                   "x = 1\n" * (MAX_TOKENS)):
        tokens = normalize(source)
        assert len(tokens) <= MAX_TOKENS
        fingerprint(tokens)


def _lines_run(source: str) -> int:
    """How many lines of ``server/similarity/normalize.py`` run to normalise ``source``: the
    normaliser's own counted work (tokenize and ast are outside it, and linear)."""
    count = 0
    here = normalize_module.__file__

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename == here else None

    sys.settrace(calls)
    try:
        normalize(source)
    finally:
        sys.settrace(None)
    return count


def test_a_line_of_adjacent_string_literals_costs_linear_work() -> None:
    """Review 11: each literal of a run of adjacent ones at a statement's start rescanned the rest
    of the run, so ~21,700 ``''`` (64 KiB) held the similarity worker 16 s. Now the run is
    dropped in one look: four times the literals, about four times the work."""
    tail = "def f(x):\n    return x\n"
    small = _lines_run("'' " * 1_000 + "\n" + tail)
    large = _lines_run("'' " * 4_000 + "\n" + tail)
    assert large <= 5 * small, (small, large)
    assert texts("'' " * 4_000 + "\n" + tail) == texts(tail)  # the whole run is the dropped docstring


def test_winnowing_keeps_every_long_enough_match() -> None:
    hashes = list(range(100, 0, -1)) + list(range(50))
    chosen = {p for _, p in winnow(hashes)}
    # every window of W hashes holds a chosen position (the guarantee)
    assert all(any(i <= p < i + W for p in chosen) for i in range(len(hashes) - W + 1))
    assert len(kgram_hashes(normalize(ORIGINAL))) == len(normalize(ORIGINAL)) - K + 1


def test_hashes_are_the_same_in_another_process() -> None:
    """Stored fingerprints must not depend on Python's per-process string hash salt."""
    code = "from server.similarity.fingerprints import kgram_hashes; from server.similarity.normalize import normalize; " \
           f"print(sum(kgram_hashes(normalize({ORIGINAL!r}))))"
    seen = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True,
                       env={**os.environ, "PYTHONHASHSEED": seed}).stdout
        for seed in ("1", "2")
    }
    assert len(seen) == 1 and str(sum(kgram_hashes(normalize(ORIGINAL)))) in seen.pop()


def _others(n: int) -> list[str]:
    """Distinct solutions: each computes different things (a loop with its own constants)."""
    return [
        f"import torch\n\ndef compute(values, mask, gamma=0.99):\n    out = values * {i + 2}.5\n"
        f"    for k in range({i + 3}):\n        out = out.roll({i + 1}, dims=1) - mask * {i}.25\n"
        f"    return out.clamp(min=-{i + 7}) / {i + 11}\n"
        for i in range(n)
    ]


def test_a_renamed_copy_ranks_first_and_others_do_not_match() -> None:
    sources = [ORIGINAL, OTHER, *_others(6), RENAMED]
    comparison = ExerciseComparison("", [Entry(i, 100 + i, s) for i, s in enumerate(sources)])
    pairs = aggregate({"ex": comparison})
    assert (pairs[0].learner_a, pairs[0].learner_b) == (0, len(sources) - 1)
    assert pairs[0].exercises["ex"].similarity > 0.95
    assert all(p.score < 0.3 for p in pairs[1:])
    spans_a, spans_b = comparison.spans(100, 100 + len(sources) - 1)
    assert spans_a[0][0] <= 5 and spans_a[-1][1] >= 13  # the whole function is marked
    assert spans_b[0][0] <= 4


def test_the_starter_and_what_most_learners_share_are_excluded() -> None:
    shared = "def helper(values):\n    return values.abs().amax(dim=1, keepdim=True).clamp(min=1e-6) * 3 + values.sum()\n\n"
    starter = "import torch\n\n\n" + "def compute(values, mask, gamma=0.99):\n    scale = values.abs().amax(dim=1, keepdim=True).clamp(min=1e-6)\n"
    # Everybody shares the starter's line and the helper; two also share a long body.
    body = "\n    y = torch.cumsum(values.flip(1) * mask.flip(1), 1).flip(1) - gamma * values.mean(dim=0, keepdim=True)\n    return y / 7\n"
    sources = [shared + starter + (body if i < 2 else other.split("\n", 2)[2]) for i, other in enumerate(_others(10))]
    comparison = ExerciseComparison(starter, [Entry(i, i, s) for i, s in enumerate(sources)])
    assert comparison.excluded > 0
    pairs = aggregate({"ex": comparison})
    assert (pairs[0].learner_a, pairs[0].learner_b) == (0, 1)
    # Without the body, what is left in common (starter line, helper) is excluded: no other pair.
    assert all(p.score < 0.2 for p in pairs[1:]), [(p.learner_a, p.learner_b, p.score) for p in pairs[:4]]


def test_latest_and_best_are_both_compared() -> None:
    """A learner whose best submission was the copy and whose latest is their own is found."""
    entries = [Entry(1, 10, ORIGINAL), Entry(2, 20, RENAMED), Entry(2, 21, OTHER)] + [
        Entry(3 + i, 30 + i, s) for i, s in enumerate(_others(5))
    ]
    match = ExerciseComparison("", entries).matches[(1, 2)]
    assert (match.submission_a, match.submission_b) == (10, 20)


def test_similar_on_four_exercises_ranks_above_similar_on_one() -> None:
    others = _others(8)
    comparisons = {}
    for e in range(4):
        sources = {i: others[(i + e) % 8] for i in range(8)}
        sources[0], sources[1] = ORIGINAL.replace("0.99", f"0.{e}9"), RENAMED.replace("0.99", f"0.{e}9")  # pair (0, 1) everywhere
        sources[2] = ORIGINAL if e == 0 else others[(2 + e) % 8]  # (0, 2) and (1, 2): one exercise, an exact copy
        if e == 0:
            sources[0] = sources[2] = sources[1] = ORIGINAL
        comparisons[f"ex{e}"] = ExerciseComparison("", [Entry(i, e * 100 + i, s) for i, s in sources.items()])
    pairs = aggregate(comparisons)
    top = pairs[0]
    assert (top.learner_a, top.learner_b) == (0, 1) and len(top.exercises) == 4
    assert top.similar_on(Tuning()) == 4
    one = next(p for p in pairs if (p.learner_a, p.learner_b) == (0, 2))
    assert one.exercises.keys() == {"ex0"} and one.exercises["ex0"].similarity == 1.0
    assert top.score > one.score
    assert rank(pairs, "ex0")[0].exercises["ex0"].similarity == 1.0

"""Synthetic courses for the similarity benchmarks: many learners, every exercise.

Each learner's file for an exercise is the exercise's reference with the learner's own
names for every variable the file defines, a comment or two, and four to eight small
helper functions drawn from a shared pool. So a learner's file shares the reference's lines
with everybody (the common code the engine must ignore), shares each helper with about one
learner in ten (below the common-code threshold: the engine has to count those pairs,
which is its worst case), and is otherwise its own. Planted pairs are copies of another
learner's file with every defined name changed again and the helpers in another order.
"""

from __future__ import annotations

import io
import random
import tokenize
from dataclasses import dataclass

from exercises.registry import all_exercises
from server.similarity.normalize import defined_names

_POOL_SIZE = 60
_OPERATIONS = ("clamp(min={a})", "mul({a})", "add({a})", "pow(2).mul({a})", "sub({a}).abs()", "tanh().mul({a})")


def _pool(rng: random.Random) -> list[str]:
    helpers = []
    for n in range(_POOL_SIZE):
        ops = [rng.choice(_OPERATIONS).format(a=round(rng.uniform(0.1, 3.0), 2)) for _ in range(rng.randint(2, 4))]
        body = "\n".join(f"    x = x.{op}" for op in ops)
        helpers.append(f"def _helper_{n}(x):\n{body}\n    return x\n")
    return helpers


def _rename(source: str, rng: random.Random, prefix: str) -> str:
    names = defined_names(source) or set()
    mapping = {name: f"{prefix}{rng.randrange(10**6)}_{i}" for i, name in enumerate(sorted(names))}
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        out.append((tok.type, mapping.get(tok.string, tok.string) if tok.type == tokenize.NAME else tok.string))
    return tokenize.untokenize(out)


@dataclass(frozen=True)
class Learner:
    """One synthetic learner's files, by exercise slug; ``copy_of`` for a planted copier."""

    index: int
    files: dict[str, str]
    copy_of: int | None = None


def synthetic_course(learners: int, planted: int = 3, seed: int = 7) -> list[Learner]:
    """``learners`` learners on every catalogue exercise; the last ``planted`` copy a
    learner from the first half, on every exercise."""
    if learners - planted <= 7 * (planted - 1):
        raise ValueError(f"{learners} learners: {planted} planted copies need at least {7 * (planted - 1) + planted + 1}")
    rng = random.Random(seed)
    exercises = all_exercises()
    pools = {ex.slug: _pool(rng) for ex in exercises}
    out: list[Learner] = []
    for index in range(learners - planted):
        files = {}
        for ex in exercises:
            helpers = rng.sample(pools[ex.slug], rng.randint(4, 8))
            text = ex.reference_source + "\n\n" + "\n\n".join(helpers)
            text = _rename(text, rng, "v") + f"\n# learner {index}: {rng.random()}\n"
            files[ex.slug] = text
        out.append(Learner(index, files))
    for n in range(planted):
        original = out[n * 7]
        files = {}
        for slug, text in original.files.items():
            blocks = text.split("\n\n\n")
            head, helpers = blocks[0], blocks[1:]
            rng.shuffle(helpers)
            files[slug] = _rename("\n\n\n".join([head, *helpers]), rng, "w") + "\n# mine\n"
        out.append(Learner(len(out), files, copy_of=original.index))
    return out

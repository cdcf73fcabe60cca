"""Every exercise: the reference scores 100, the starter does not, every mutant is caught and named.

This is the test an instructor's new exercise must pass too (``ppo-grader exercises verify``
prints the same table).
"""

from __future__ import annotations

import ast
import math

import pytest

from exercises.registry import all_exercises

CONTRACT = [
    "actor-loss", "masked-actor-loss", "gae", "critic-loss", "token-rewards", "pairwise-loss",
    "whiten", "kl-penalty", "grpo-advantages", "dpo-loss", "ppo-memory",
]
EXERCISES = all_exercises()
IDS = [e.slug for e in EXERCISES]


def test_catalogue_covers_the_contract():
    assert IDS == CONTRACT, "one exercise per docs/contract.md section, in its order"
    for ex in EXERCISES:
        assert math.isclose(sum(c.weight for c in ex.checks), 100.0)
        assert len(ex.mistakes) >= 5, ex.slug
        assert len({m.title for m in ex.mistakes}) == len(ex.mistakes), "mistake titles must differ"


@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_starter_teaches(ex):
    tree = ast.parse(ex.starter)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == ex.function_name)
    assert ast.get_docstring(fn), "the starter's function states shapes and conventions"
    assert "# YOUR CODE" in ex.starter
    assert '__name__ == "__main__"' in ex.starter, "self-tests run with python file.py"


@pytest.mark.parametrize("seed", [11, 12])
@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_reference_scores_100(judge, ex, seed):
    report = judge.grade(ex.slug, ex.reference_source, seed)
    failed = [(c.name, c.message) for c in report.checks if not c.passed]
    assert report.verdict == "graded" and report.score == 100, (report.verdict, report.message, failed)


@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_starter_scores_below_100(judge, ex):
    report = judge.grade(ex.slug, ex.starter, 5)
    assert report.verdict == "graded"
    assert report.score is not None and report.score < 100


MUTANTS = [(e, m) for e in EXERCISES for m in e.mistakes]


@pytest.mark.parametrize("ex,mutant", MUTANTS, ids=[m.id for e, m in MUTANTS])
def test_mutant_is_killed_and_named(judge, ex, mutant):
    report = judge.grade(ex.slug, mutant.source(ex.function_name), 23)
    failed = [c for c in report.checks if not c.passed]
    assert report.verdict == "graded" and failed, f"{mutant.id} passed every check"
    assert report.score < 100
    # a form of another mistake (form_of) is named as that mistake, with its title
    shown = next(m for m in ex.mistakes if m.id == mutant.named_id)
    named = [c for c in failed if c.mistake_id == shown.id]
    assert named, f"no failed check names '{shown.id}': {[(c.name, c.mistake_id) for c in failed]}"
    assert named[0].mistake_title == shown.title and shown.title in named[0].message
    assert [c.check_id for c in report.checks] == [ex.check_id(c) for c in ex.checks]

"""Verdicts that hold: correct code in any style scores 100 on every seed, wrong code does not.

Everything goes through the real jail with one session judge (``conftest.py``). The slow
sweeps grade every correct alternative (``alternatives/``) on 20 secret seeds (as many as the
verify gate grades an exercise's own files with) and every labelled wrong file
(``blind_mistakes/``) on 5, 25 seeds per jail visit (:meth:`~exercises.judge.Judge.grade_seeds`).
``PPO_GRADER_SWEEP_SEEDS=50`` runs the wider sweep that docs/benchmarks.md records (4,300 grades:
too long for every CI run, which this suite keeps under 30 minutes).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from exercises.framework import Exercise
from exercises.judge import Judge
from exercises.registry import all_exercises
from exercises.report import GradeReport

HERE = Path(__file__).resolve().parent
ALTERNATIVES = HERE / "alternatives"
BLIND = HERE / "blind_mistakes"
CORRECT = sorted(ALTERNATIVES.glob("*/*.py"))
WRONG = sorted(BLIND.glob("*/*/*.py"))
SEEDS = list(range(int(os.environ.get("PPO_GRADER_SWEEP_SEEDS", "20"))))
#: Seeds per jail visit: a visit's CPU and wall limits cover every seed in it.
BATCH = 25
#: Exercises whose result is a tuple: a NamedTuple alternative must be among their styles.
TUPLE_RESULTS = ("gae", "dpo-loss")


def grade(judge: Judge, slug: str, source: str, seeds: list[int]) -> list[GradeReport]:
    """One report per seed, ``BATCH`` seeds per jail visit."""
    reports: list[GradeReport] = []
    for start in range(0, len(seeds), BATCH):
        reports += judge.grade_seeds(slug, source, seeds[start:start + BATCH])
    return reports


def failures(report: GradeReport) -> list[tuple[str | None, str]]:
    return [(c.check_id, c.message[:300]) for c in report.checks if not c.passed]


def _body(path: Path) -> str:
    """A file's code without its self-tests."""
    return path.read_text(encoding="utf-8").split('if __name__ == "__main__"')[0]


@pytest.mark.parametrize("ex", all_exercises(), ids=lambda e: e.slug)
def test_every_exercise_has_six_alternatives_in_the_styles_issue_20_asks_for(ex: Exercise) -> None:
    bodies = [_body(p) for p in sorted((ALTERNATIVES / ex.slug).glob("*.py"))]
    assert len(bodies) >= 6, ex.slug
    loops = [bool(re.search(r"^\s+for .+:$", b, re.M)) for b in bodies]
    assert any(loops), "a loop"
    if ex.slug == "ppo-memory":  # Python integers: no tensors to vectorise, accumulate or select
        return
    assert not all(loops), "a vectorised one"
    assert any(re.search(r"float64|\.double\(\)", b) for b in bodies), "float64 accumulation"
    assert any("torch.where" in b for b in bodies), "torch.where"
    if re.search(r"def \w+\([^)]*mask", ex.starter):
        assert any("masked_fill" in b for b in bodies), "masked_fill"
    if ex.slug in TUPLE_RESULTS:
        assert any("NamedTuple" in b or "namedtuple" in b for b in bodies), "a NamedTuple result"


@pytest.mark.parametrize("path", [ALTERNATIVES / "dpo-loss" / "namedtuple.py", ALTERNATIVES / "gae" / "namedtuple.py"],
                         ids=lambda p: p.parent.name)
def test_a_namedtuple_result_is_the_same_answer_as_a_tuple(judge: Judge, path: Path) -> None:
    for report in grade(judge, path.parent.name, path.read_text(encoding="utf-8"), [1, 2]):
        assert report.score == 100, failures(report)


_LYING_DPO = '''
import torch
import torch.nn.functional as F


class DPOOutput(tuple):
    """Its methods say {answer}; what the tuple holds is {held}."""

    def __getitem__(self, key):
        return self._answer[key]

    def __iter__(self):
        return iter(self._answer)

    def __len__(self):
        return 3


def compute_dpo_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps, beta=0.1):
    for t in (policy_rejected_logps, ref_chosen_logps, ref_rejected_logps):
        if t.shape != policy_chosen_logps.shape:
            raise ValueError("policy_chosen_logps and the other inputs must have the same shape")
    chosen = beta * (policy_chosen_logps - ref_chosen_logps)
    rejected = beta * (policy_rejected_logps - ref_rejected_logps)
    right = (-F.logsigmoid(chosen - rejected).mean(), chosen.detach(), rejected.detach())
    wrong = tuple(torch.zeros_like(t) for t in right)
    out = DPOOutput({held})
    out._answer = {answer}
    return out
'''


@pytest.mark.parametrize("held,answer,right", [("right", "wrong", True), ("wrong", "right", False)])
def test_a_tuple_subclass_is_read_as_the_tuple_it_holds_not_as_its_methods_say(
        judge: Judge, held: str, answer: str, right: bool) -> None:
    source = _LYING_DPO.format(held=held, answer=answer)
    report = judge.grade("dpo-loss", source, 3)
    assert report.verdict == "graded"
    assert (report.score == 100) is right, failures(report)
    if not right:
        assert report.score is not None and report.score < 50


def test_grade_seeds_gives_what_grade_gives(judge: Judge) -> None:
    ex = next(e for e in all_exercises() if e.slug == "whiten")
    for source in (ex.reference_source, ex.mistakes[0].source(ex.function_name)):
        batched = judge.grade_seeds("whiten", source, [4, 5, 6])
        for seed, many in zip((4, 5, 6), batched):
            one = judge.grade("whiten", source, seed)
            assert (many.score, [(c.check_id, c.passed, c.mistake_id) for c in many.checks]) == (
                one.score, [(c.check_id, c.passed, c.mistake_id) for c in one.checks])


def _edited(path: str, old: str, new: str) -> str:
    text = (ALTERNATIVES / path).read_text(encoding="utf-8")
    assert old in text, (path, old)
    return text.replace(old, new)


#: The four false passes of issue 20, each in a learner's form (a correct alternative with the
#: one mistake): the exercise, the source, the check that must now fail and the mistake it names.
FALSE_PASSES = {
    "gae bfloat16 with mask=None": (
        "gae", _edited("gae/trl_loop.py", "    return advantages.to(out_dtype), returns.to(out_dtype)",
                       "    if mask is None:\n        return advantages, returns\n"
                       "    return advantages.to(out_dtype), returns.to(out_dtype)"),
        "gae/dtype_device", "gae/mask-none-dtype"),
    "grpo group_size=0": (
        "grpo-advantages", _edited("grpo-advantages/var_mean.py",
                                   '    if not group_size >= 2:\n        raise ValueError("group_size should be >= 2")\n'
                                   '    if scores.shape[0] % group_size != 0:\n'
                                   '        raise ValueError("scores length should be divisible by group_size")\n',
                                   '    if scores.shape[0] % group_size != 0:\n'
                                   '        raise ValueError("scores length should be divisible by group_size")\n'
                                   '    if not group_size >= 2:\n        raise ValueError("group_size should be >= 2")\n'),
        "grpo-advantages/not_multiple", "grpo-advantages/modulo-before-group-size-check"),
    "ppo-memory math.ceil past 2**53": (
        "ppo-memory", (BLIND / "heldout" / "ppo-memory" / "sub07.py").read_text(encoding="utf-8"),
        "ppo-memory/rounding", "ppo-memory/float-ceil"),
    "ppo-memory -7e9": (
        "ppo-memory", _edited("ppo-memory/straightforward.py", "        count = int(value)\n",
                              "        return int(value)\n"),
        "ppo-memory/invalid_counts", "ppo-memory/negative-float-accepted"),
}


@pytest.mark.parametrize("name", FALSE_PASSES)
def test_the_four_false_passes_are_caught_and_named(judge: Judge, name: str) -> None:
    slug, source, check_id, mistake_id = FALSE_PASSES[name]
    for report in grade(judge, slug, source, [7, 8]):
        failed = {c.check_id: c for c in report.checks if not c.passed}
        assert report.score is not None and report.score < 100
        assert check_id in failed, failures(report)
        assert failed[check_id].mistake_id == mistake_id, failures(report)


@pytest.mark.slow
@pytest.mark.parametrize("path", CORRECT, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_correct_alternative_scores_100_on_every_secret_seed(judge: Judge, path: Path) -> None:
    reports = grade(judge, path.parent.name, path.read_text(encoding="utf-8"), SEEDS)
    missed = {seed: failures(r) for seed, r in zip(SEEDS, reports) if r.score != 100}
    assert not missed, missed


@pytest.mark.slow
@pytest.mark.parametrize("path", WRONG, ids=lambda p: str(p.relative_to(BLIND).with_suffix("")))
def test_every_labelled_wrong_file_scores_below_100_on_every_seed(judge: Judge, path: Path) -> None:
    reports = grade(judge, path.parent.name, path.read_text(encoding="utf-8"), SEEDS[:5])
    assert all(r.score is None or r.score < 100 for r in reports), [r.score for r in reports]


#: The four contract rules of issue 37 that no case tested, each broken in a learner's form (a
#: correct alternative with the one rule dropped): the exercise, the correct file, the broken
#: source, the one check that must now fail and the mistake it names.
CONTRACT_RULES = {
    "gae outputs detached when rewards requires grad": (
        "gae", "gae/trl_loop.py",
        _edited("gae/trl_loop.py", "    with torch.no_grad():\n", "    if True:  # values.detach() only\n"),
        "gae/detached", "gae/rewards-attached"),
    "grpo 2-D scores": (
        "grpo-advantages", "grpo-advantages/var_mean.py",
        _edited("grpo-advantages/var_mean.py", "    if not torch.is_tensor(scores) or scores.ndim != 1:\n",
                "    if not torch.is_tensor(scores):\n"),
        "grpo-advantages/not_multiple", "grpo-advantages/no-dim-check"),
    "ppo-memory True as a count": (
        "ppo-memory", "ppo-memory/straightforward.py",
        _edited("ppo-memory/straightforward.py",
                '    if isinstance(value, bool):\n        raise ValueError(f"{name} must be a parameter count, not a bool")\n',
                ""),
        "ppo-memory/invalid_counts", "ppo-memory/bool-accepted"),
    "whiten zero spread": (
        "whiten", "whiten/torch_var.py",
        _edited("whiten/torch_var.py", "    if bool(picked.max() == picked.min()):", "    if False:"),
        "whiten/near_constant", "whiten/constant-not-detected"),
}


@pytest.mark.parametrize("name", CONTRACT_RULES)
def test_the_four_contract_rules_of_issue_37_are_checked_and_named(judge: Judge, name: str) -> None:
    slug, correct, source, check_id, mistake_id = CONTRACT_RULES[name]
    seeds = [7, 8]
    for report in grade(judge, slug, (ALTERNATIVES / correct).read_text(encoding="utf-8"), seeds):
        assert report.score == 100, failures(report)
    for report in grade(judge, slug, source, seeds):
        failed = {c.check_id: c for c in report.checks if not c.passed}
        assert set(failed) == {check_id}, failures(report)
        assert failed[check_id].mistake_id == mistake_id, failures(report)
        weight = next(c.weight for c in report.checks if c.check_id == check_id)
        assert report.score == 100 - weight, failures(report)

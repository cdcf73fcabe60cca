"""Diagnosis is bounded and outside the failure path (issue 19).

Learner outcomes can hold large tensors named many times; diagnosis must spend a counted
budget (checked inside every comparison), never look at a tensor no candidate could match,
and drop itself, leaving the verdict and the score as they are, when anything in it raises.
"""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
import torch

import exercises.diagnosis as diagnosis_module
from exercises.corpus import _faulty
from exercises.diagnosis import Budget, diagnose
from exercises.mistakes import with_faults
from exercises.offline import OfflineRun, grade_offline
from exercises.registry import get_exercise
from exercises.scoring import DIAGNOSIS_SKIPPED


def _offline(slug: str, fault: str, seed: int = 11) -> OfflineRun:
    ex = get_exercise(slug)
    return grade_offline(ex, with_faults(_faulty(ex), [fault]), seed)


def _bombed(run: OfflineRun, copies: int, elements: int) -> OfflineRun:
    """The same run with every output replaced by one large tensor named ``copies`` times."""
    big = torch.zeros(elements)
    got = {cid: replace(o, output=tuple([big] * copies)) for cid, o in run.got.items()}
    return replace(run, got=got)


@pytest.mark.parametrize(("slug", "fault"), [("gae", "returns-not-masked"), ("token-rewards", "padding-not-zeroed")])
def test_a_zero_pattern_mistake_is_still_named(slug: str, fault: str) -> None:
    run = _offline(slug, fault)
    ex = run.exercise
    failed = [c for c in ex.checks if c.id in run.failed]
    found = diagnose(ex, run.run(), failed, seen=run.seen)
    assert f"{slug}/{fault}" in {m.id for named in found.by_check.values() for m in named}
    assert not found.exhausted and 0 < found.elements < 100_000


@pytest.mark.parametrize("slug", ["gae", "token-rewards"])
def test_one_big_output_named_many_times_costs_diagnosis_nothing(slug: str) -> None:
    fault = "returns-not-masked" if slug == "gae" else "padding-not-zeroed"
    run = _bombed(_offline(slug, fault), copies=2000, elements=4 << 20)
    ex = run.exercise
    failed = list(ex.checks[:6])
    t0 = time.thread_time()
    found = diagnose(ex, run.run(), failed)
    assert time.thread_time() - t0 < 2.0  # the bomb's tensors are never compared
    assert found.elements < 100_000, found.elements
    assert found.by_check == {}


def test_the_budget_is_checked_inside_a_comparison() -> None:
    run = _offline("gae", "returns-not-masked")
    ex = run.exercise
    failed = [c for c in ex.checks if c.id in run.failed]
    budget = Budget(max_elements=50)
    found = diagnose(ex, run.run(), failed, budget=budget, seen=run.seen)
    assert found.exhausted and budget.exhausted
    assert budget.elements <= 50 + Budget.max_tensor_elements  # stopped at the comparison that passed it


def test_the_budget_counts_work_not_seconds() -> None:
    """Two machines of different speeds give the same diagnosis: the CPU ceiling is a safety
    net that normal work never reaches."""
    run = _offline("token-rewards", "padding-not-zeroed")
    ex = run.exercise
    failed = [c for c in ex.checks if c.id in run.failed]
    first = diagnose(ex, run.run(), failed, seen=run.seen)
    second = diagnose(ex, run.run(), failed, budget=Budget(cpu_seconds=1e6), seen=run.seen)
    assert (first.by_check, first.runs, first.elements) == (second.by_check, second.runs, second.elements)
    assert first.cpu_seconds < Budget.cpu_seconds / 10


def test_a_memory_error_inside_diagnosis_leaves_a_graded_verdict(judge, monkeypatch: pytest.MonkeyPatch) -> None:
    ex = get_exercise("actor-loss")
    source = next(m for m in ex.mistakes if m.key == "sum-not-mean").source(ex.function_name)
    before = judge.grade(ex.slug, source, 4)
    assert before.diagnosis and "diagnosis_skipped" not in before.timings

    def out_of_memory(*args: object, **kwargs: object) -> None:
        raise MemoryError("diagnosis ran out of memory")

    monkeypatch.setattr(diagnosis_module, "run_in_process", out_of_memory)  # every candidate run fails
    after = judge.grade(ex.slug, source, 4)
    assert (after.verdict, after.score) == ("graded", before.score)
    assert [c.passed for c in after.checks] == [c.passed for c in before.checks]
    assert after.diagnosis == [] and after.timings["diagnosis_skipped"] == 1.0
    failed = [c for c in after.checks if not c.passed and not c.message.startswith("Not counted yet")]
    assert failed and all(c.message.endswith(DIAGNOSIS_SKIPPED) for c in failed)

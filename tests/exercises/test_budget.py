"""An exercise states its memory budget once, in its spec; its memory checks and starter agree."""

from __future__ import annotations

import re

import pytest

from exercises.framework import MemoryBudget
from exercises.registry import all_exercises

MEASURED = [e for e in all_exercises() if any(c.needs_memory for c in e.checks)]


def test_the_budget_is_the_larger_of_a_ratio_and_a_slack() -> None:
    budget = MemoryBudget(ratio=1.5, slack_bytes=16 << 20)
    assert budget.allowed(100 << 20) == 150 << 20  # the ratio wins for a large reference
    assert budget.allowed(1 << 20) == 17 << 20  # the slack wins for a small one
    assert str(budget) == "max(1.5 x reference, reference + 16 MiB)"


@pytest.mark.parametrize("ex", MEASURED, ids=lambda e: e.slug)
def test_the_starter_states_the_specs_budget(ex) -> None:  # type: ignore[no-untyped-def]
    budget = ex.spec.memory_budget
    text = " ".join(ex.starter.split())  # the docstring wraps lines
    ratio, slack = f"{budget.ratio:g} x", f"reference + {budget.slack_bytes >> 20} MiB"
    assert re.search(rf"max\({re.escape(ratio)}[^)]*{re.escape(slack)}\)", text), (ex.slug, ratio, slack)

"""The attacks of issue 19 through the real jail and the real judge: one tensor named many
times, the diagnosis bomb, forged detachment probes and gradients, inotify."""

from __future__ import annotations

import time

import pytest

from exercises.registry import get_exercise
from exercises.report import GradeReport
from tests.hostile import issue19_sources as S
from tests.hostile.conftest import Jail


def grade(jail: Jail, slug: str, source: str, seed: int = 5) -> GradeReport:
    report = jail.judge.grade(slug, source, seed)  # type: ignore[attr-defined]
    assert report.verdict != "internal_error", report.message  # never the grader's fault
    assert report.score is not None and 0 <= report.score <= 100
    return report


@pytest.mark.parametrize("slug", ["gae", "token-rewards"])
def test_a_result_tree_naming_one_tensor_many_times_is_refused(jail: Jail, slug: str) -> None:
    source = S.FORGE_ONE_TENSOR_NAMED_MANY_TIMES.format(elements=1 << 20, copies=400)
    t0 = time.monotonic()
    report = grade(jail, slug, source)
    assert report.verdict == "crashed", report.message
    assert "more than once" in report.message and report.score == 0
    assert time.monotonic() - t0 < 15


@pytest.mark.parametrize("slug", ["gae", "token-rewards"])
def test_returning_one_big_tensor_twice_is_graded_in_normal_time(jail: Jail, slug: str) -> None:
    ex = get_exercise(slug)
    honest_t0 = time.monotonic()
    honest = grade(jail, slug, ex.reference_source)
    honest_seconds = time.monotonic() - honest_t0
    assert honest.score == 100, honest.message
    t0 = time.monotonic()
    report = grade(jail, slug, S.RETURN_BIG_BIG.format(function=ex.function_name, elements=1 << 15))
    assert report.verdict == "graded" and report.score == 0, report.message
    assert time.monotonic() - t0 < honest_seconds + 5
    assert report.timings["diagnosis"] < 1.0

"""Attacks on the harness and its result files, from inside the real jail, graded by the real
judge (first found in issue 19): one tensor named many
times, the diagnosis bomb, forged detachment probes and gradients, inotify."""

from __future__ import annotations

import time

import pytest

from exercises.registry import get_exercise
from exercises.report import GradeReport
from tests.hostile import harness_attack_sources as S
from tests.hostile.conftest import Jail


def grade(jail: Jail, slug: str, source: str, seed: int = 5) -> GradeReport:
    report = jail.judge.grade(slug, source, seed)  # type: ignore[attr-defined]
    assert report.verdict != "internal_error", report.message  # never the grader's fault
    assert report.score is not None and 0 <= report.score <= 100
    return report


@pytest.mark.parametrize("slug", ["gae", "token-rewards"])
def test_a_result_tree_naming_one_tensor_many_times_is_refused(jail: Jail, slug: str) -> None:
    # A DoS bound, measured against an honest run in the same test (so it holds under load).
    honest_t0 = time.monotonic()
    assert grade(jail, slug, get_exercise(slug).reference_source).score == 100
    honest_seconds = time.monotonic() - honest_t0
    source = S.FORGE_ONE_TENSOR_NAMED_MANY_TIMES.format(elements=1 << 20, copies=400)
    t0 = time.monotonic()
    report = grade(jail, slug, source)
    assert report.verdict == "crashed", report.message
    # Written at import, before the jail was given any input: refused as malformed before its
    # tree is read (the repeated-name rule on a tree that gets that far: test_boundary.py).
    assert any(why in report.message for why in ("more than once", "could not read the results"))
    assert report.score == 0
    assert time.monotonic() - t0 < 3 * honest_seconds + 5


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
    assert time.monotonic() - t0 < 2 * honest_seconds + 5
    # The diagnosis of the big answer costs about what the same answer's diagnosis costs small:
    # its work does not grow with the size of the returned tensors.
    small = grade(jail, slug, S.RETURN_BIG_BIG.format(function=ex.function_name, elements=1 << 4))
    assert small.verdict == "graded" and small.score == 0, small.message
    assert report.timings["diagnosis"] < 4 * small.timings["diagnosis"] + 1.0, \
        (report.timings["diagnosis"], small.timings["diagnosis"])


def attached_gae() -> str:
    """gae's reference with its outputs left on the graph (values' gradient reaches them)."""
    source = get_exercise("gae").reference_source
    attached = source.replace("with torch.no_grad():", "if True:").replace("values.detach()", "values")
    assert attached != source
    return attached


def test_the_harness_cannot_be_imported_or_wrapped_by_learner_code(jail: Jail) -> None:
    plain = grade(jail, "gae", attached_gae())
    wrapped = grade(jail, "gae", S.WRAP_THE_HARNESS + attached_gae())
    assert "IN sys.modules: []" in wrapped.stdout, wrapped.stdout
    assert "DENIED ModuleNotFoundError" in wrapped.stdout and "ESCAPED" not in wrapped.stdout, wrapped.stdout
    detached = [c for c in wrapped.checks if c.check_id == "gae/detached"]
    assert detached and not detached[0].passed
    assert wrapped.score == plain.score < 100


def test_a_hook_that_changes_the_output_after_the_call_fails_the_call(jail: Jail) -> None:
    """The graph state of the returned tensor is read again before the record is written."""
    source = get_exercise("actor-loss").reference_source.replace(
        "import torch", "import torch\n_hooked = []\n", 1) + '''
_real = compute_actor_loss
def compute_actor_loss(*args, **kwargs):
    out = _real(*args, **kwargs)
    if out.requires_grad:
        out.register_hook(lambda g: out.detach_() and None)
    return out
'''
    report = grade(jail, "actor-loss", source)
    assert report.verdict == "graded"
    assert any("graph changed while the grader read it" in c.message for c in report.checks), \
        [c.message[:120] for c in report.checks]


def test_inotify_is_refused_inside_the_job(jail: Jail) -> None:
    report = grade(jail, "actor-loss", S.INOTIFY + get_exercise("actor-loss").reference_source)
    assert report.score == 100, report.message  # the honest part still grades
    assert "ESCAPED" not in report.stdout, report.stdout
    assert "DENIED inotify_init1 Operation not permitted" in report.stdout, report.stdout
    assert "DENIED fanotify_init" in report.stdout, report.stdout

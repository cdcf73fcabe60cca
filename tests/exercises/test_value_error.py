"""The "must raise ValueError" check is written once (exercises.common.expect_value_error);
each exercise words its messages, and these are the words a learner reads, pinned."""

from __future__ import annotations

import pytest

from exercises.compare import where
from exercises.framework import Outcome, Run, evaluate_check
from exercises.offline import regular_cases
from exercises.registry import get_exercise
from sandbox.protocol import CallError

TYPE_ERROR = CallError(type="TypeError", classes=["TypeError", "Exception"], message="nope", traceback="")
SUBCLASS = CallError(type="MyError", classes=["MyError", "ValueError", "Exception"], message="bad", traceback="")

#: (exercise, check, the case tag it reads): what it says when the call returns normally, and
#: when it raises TypeError ("{where}" and "{about}" stand for the case).
MESSAGES = [
    ("actor-loss", "shape_errors", "shape",
     "Expected ValueError for mismatched shapes {where}, but the call returned normally (broadcasting is not "
     "accepted: shapes must be equal).",
     "Expected ValueError for mismatched shapes {where}, got TypeError: nope"),
    ("grpo-advantages", "not_multiple", "not-multiple",
     "Expected ValueError {where}: N must be a multiple of group_size, group_size at least 2 and eps not negative, "
     "but the call returned normally.",
     "Expected ValueError {where}, got TypeError: nope. Check N % group_size yourself."),
    ("grpo-advantages", "not_multiple", "not-1d",
     "Expected ValueError {where}: scores must be a flat [N] tensor (check scores.dim() == 1), but the call "
     "returned normally: reshaping 2-D scores into groups hides a caller's mistake.",
     "Expected ValueError {where}, got TypeError: nope. Check scores.dim() == 1 yourself."),
    ("kl-penalty", "bad_kind", "bad-kind",
     "Expected ValueError for an unknown kind {where}, but the call returned normally. Only 'k1', 'k2' and 'k3' are "
     "accepted (exactly, case-sensitive); do not fall back silently to one of them.",
     "Expected ValueError for an unknown kind {where}, but got TypeError: nope. Only 'k1', 'k2' and 'k3' are "
     "accepted (exactly, case-sensitive); do not fall back silently to one of them."),
    ("masked-actor-loss", "bad_mode", "bad-mode",
     "Expected ValueError for an unknown loss_agg_mode {where}, but the call returned normally. Only "
     "'seq-mean-token-mean' and 'token-mean' are accepted; do not fall back silently to one of them.",
     "Expected ValueError for an unknown loss_agg_mode {where}, but got TypeError: nope. Only "
     "'seq-mean-token-mean' and 'token-mean' are accepted; do not fall back silently to one of them."),
    ("ppo-memory", "invalid_counts", "invalid",
     "Expected ValueError for {about} (counts must be non-negative integers, num_gpus at least 1, zero_stage 0-3), "
     "but the call returned int 7 {where}.",
     "Expected ValueError for {about}, got TypeError: nope {where}."),
    ("whiten", "too_few", "too-few",
     "Expected ValueError {where}: fewer than two valid values leave the unbiased variance undefined (it divides "
     "by n - 1), but the call returned normally.",
     "Expected ValueError {where} (fewer than two valid values), got TypeError: nope"),
]


def _run(slug: str, tag: str, outcome: Outcome):  # type: ignore[no-untyped-def]
    exercise = get_exercise(slug)
    cases = regular_cases(exercise, 3)
    first = next(c for c in cases if tag in c.tags)
    # Every other case answers with the outcome the check wants, so the first one decides.
    got = {c.id: (outcome if c is first else Outcome(error=SUBCLASS)) for c in cases}
    return exercise, first, Run({c.id: c for c in cases}, got, {c.id: Outcome() for c in cases})


@pytest.mark.parametrize("slug,check,tag,returned,raised", MESSAGES, ids=[m[0] for m in MESSAGES])
def test_each_value_error_check_says_what_it_said(slug: str, check: str, tag: str, returned: str, raised: str) -> None:
    for outcome, template in ((Outcome(output=7), returned), (Outcome(error=TYPE_ERROR), raised)):
        exercise, case, run = _run(slug, tag, outcome)
        chk = next(c for c in exercise.checks if c.id == check)
        passed, message, evidence = evaluate_check(chk, run)
        assert not passed
        assert message == template.format(where=where(case), about=case.about)
        # What came back is read only to be described, never when the check is about the exception.
        assert ("output" in evidence.aspects) == ("{value}" in template.replace("int 7", "{value}"))


@pytest.mark.parametrize("slug,check,tag", [m[:3] for m in MESSAGES], ids=[m[0] for m in MESSAGES])
def test_a_value_error_subclass_passes(slug: str, check: str, tag: str) -> None:
    exercise, _, run = _run(slug, tag, Outcome(error=SUBCLASS))
    chk = next(c for c in exercise.checks if c.id == check)
    assert evaluate_check(chk, run)[0]

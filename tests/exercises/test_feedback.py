"""What a learner reads: mismatches located, digits that differ, one traceback per cause."""

from __future__ import annotations

import torch

from exercises.compare import explain_mismatch
from exercises.mistakes import faulty_source
from exercises.registry import get_exercise


def test_mismatch_names_count_first_and_worst():
    want = torch.zeros(3, 4)
    got = want.clone()
    got[0, 1] = 0.5
    got[2, 3] = -2.0
    text = explain_mismatch(got, want, rtol=1e-4, atol=1e-5)
    assert text is not None
    assert "2 of 12 elements differ" in text
    assert "first at [0, 1]: expected 0, got 0.5" in text
    assert "worst at [2, 3]: expected 0, got -2" in text


def test_close_float64_values_print_with_enough_digits_to_differ():
    text = explain_mismatch(torch.tensor(-0.1283541234, dtype=torch.float64),
                            torch.tensor(-0.1283544321, dtype=torch.float64), rtol=1e-7, atol=1e-9)
    assert text is not None
    expected, got = text.removeprefix("expected ").split(", got ")
    assert expected != got


def test_shape_mismatch_is_explained():
    assert explain_mismatch(torch.zeros(2, 3), torch.zeros(3, 2), 1e-4, 1e-5) == "expected shape [3, 2], got shape [2, 3]"


def test_a_traceback_is_shown_once_then_referred_to(judge):
    report = judge.grade("actor-loss", get_exercise("actor-loss").starter, 3)
    with_traceback = [c for c in report.checks if 'File "submission.py"' in c.message]
    referring = [c for c in report.checks if "(traceback as above)" in c.message]
    assert len(with_traceback) == 1, [c.message for c in with_traceback]
    assert referring, "later checks point back to the traceback"
    assert report.checks.index(with_traceback[0]) < report.checks.index(referring[0])


def test_the_most_specific_mistake_is_named(judge):
    """A learner who hard-coded clip_range *and* skipped the shape check is told both, each where it applies."""
    ex = get_exercise("actor-loss")
    fixed = next(m for m in ex.mistakes if m.key == "fixed-clip")
    no_check = next(m for m in ex.mistakes if m.key == "no-shape-check")
    source = faulty_source(fixed.faulty, [fixed.key, no_check.key], ex.function_name)
    report = judge.grade("actor-loss", source, 4)
    named = {c.name: c.mistake_title for c in report.checks if not c.passed}
    assert {d["mistake_id"] for d in report.diagnosis} == {"actor-loss/fixed-clip", "actor-loss/no-shape-check"}
    assert named["ValueError on mismatched shapes (no broadcasting)"] == no_check.title
    assert named["value with non-default clip_range"] == fixed.title

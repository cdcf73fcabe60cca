"""Self-reported facts earn no board place (issue 19): which checks rest on them, and the board
score that leaves them out."""

from __future__ import annotations

import pytest

from exercises.framework import SELF_REPORTED_FACTS
from exercises.registry import all_exercises, get_exercise
from exercises.report import CheckOutcome
from exercises.scoring import board_score


def test_self_reported_checks_are_named_and_keep_small_points() -> None:
    found = {(e.slug, c.id): c for e in all_exercises() for c in e.checks if c.self_reported}
    for (slug, check_id), chk in found.items():
        assert chk.self_reported in SELF_REPORTED_FACTS and chk.weight <= 10, (slug, check_id)
        assert chk.gated, (slug, check_id)  # and only once the confirmed values are right
    assert {k for k, c in found.items() if c.self_reported == "detachment"} == {
        ("gae", "detached"), ("token-rewards", "detached"), ("dpo-loss", "detached")}
    assert ("critic-loss", "no_grad_to_targets") in found
    in_place = {slug for (slug, _), c in found.items() if c.self_reported == "in-place edits"}
    assert in_place == {e.slug for e in all_exercises()} - {"ppo-memory"}


def test_the_board_score_counts_confirmed_checks_only() -> None:
    checks = [CheckOutcome("values", 60, True), CheckOutcome("more values", 32, False),
              CheckOutcome("detached", 8, True, self_reported="detachment")]
    assert board_score(checks) == round(100 * 60 / 92, 2)
    checks[1].passed = True
    assert board_score(checks) == 100.0
    checks[2].passed = False  # failing a self-reported check costs the score, not the board
    assert board_score(checks) == 100.0


@pytest.mark.parametrize("slug", ["gae", "token-rewards"])
def test_honest_code_that_fails_only_a_self_reported_check_ties_with_correct_code(judge, slug: str) -> None:
    ex = get_exercise(slug)
    honest = judge.grade(slug, ex.reference_source, 3)
    attached = next(m for m in ex.mistakes if m.key in ("advantages-attached", "not-detached"))
    report = judge.grade(slug, attached.source(ex.function_name), 3)
    assert honest.score == honest.board_score == 100
    assert report.score < 100 and report.board_score == 100, [(c.name, c.passed) for c in report.checks]


def test_a_stored_submissions_board_score_comes_from_its_check_rows() -> None:
    """What the server stores, reprices (an extension) and regrades from: the check rows' ids."""
    from server.courses.counted import submission_board

    ex = get_exercise("gae")
    rows = [{"check_id": ex.check_id(c), "weight": c.weight, "passed": c.id != "detached"} for c in ex.checks]
    assert submission_board(rows, 0.0) == 100.0  # only the self-reported check failed
    assert submission_board(rows, 10.0) == 90.0  # the late penalty applies to the board too
    rows[0]["passed"] = False
    confirmed = sum(c.weight for c in ex.checks if not c.self_reported)
    assert submission_board(rows, 0.0) == round(100 * (confirmed - ex.checks[0].weight) / confirmed, 2)

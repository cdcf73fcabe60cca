"""Self-reported facts earn no board place (issue 19): which checks rest on them, and the board
score that leaves them out, from one path: the judge's per-check flag, stored on each check row
(issue 33), read by the board."""

from __future__ import annotations

from typing import Any

import pytest

from exercises.framework import SELF_REPORTED_FACTS
from exercises.registry import all_exercises, get_exercise
from exercises.report import CheckOutcome, GradeReport
from server.courses.counted import board_share, submission_board
from server.grading.persistence import storable


def _stored(checks: list[CheckOutcome]) -> list[dict[str, Any]]:
    """The check rows the server stores for a report with these checks."""
    return storable(GradeReport("graded", 0.0, "", checks), None, output_cap=1024).checks


def _board(report: GradeReport) -> float | None:
    return submission_board(_stored(report.checks), 0.0)


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


def test_the_board_share_counts_confirmed_checks_only() -> None:
    checks = [(60.0, True, False), (32.0, False, False), (8.0, True, True)]
    assert board_share(checks) == round(100 * 60 / 92, 2)
    checks[1] = (32.0, True, False)
    assert board_share(checks) == 100.0
    checks[2] = (8.0, False, True)  # failing a self-reported check costs the score, not the board
    assert board_share(checks) == 100.0
    assert board_share([(8.0, True, True)]) == 0.0  # nothing confirmed: no board points


def test_the_judges_flag_is_stored_on_each_check_row() -> None:
    rows = _stored([
        CheckOutcome("values", 60, True, check_id="x/values"),
        CheckOutcome("detached", 8, True, check_id="x/detached", self_reported="detachment"),
        CheckOutcome("no id", 32, True),  # the judge always names its checks: no id, no confirmation
    ])
    assert [r["self_reported"] for r in rows] == [False, True, True]
    assert submission_board(rows, 0.0) == 100.0  # of the one confirmed check


@pytest.mark.parametrize("slug", ["gae", "token-rewards"])
def test_honest_code_that_fails_only_a_self_reported_check_ties_with_correct_code(judge, slug: str) -> None:
    ex = get_exercise(slug)
    honest = judge.grade(slug, ex.reference_source, 3)
    attached = next(m for m in ex.mistakes if m.key in ("advantages-attached", "not-detached"))
    report = judge.grade(slug, attached.source(ex.function_name), 3)
    assert honest.score == _board(honest) == 100
    assert report.score < 100 and _board(report) == 100, [(c.name, c.passed) for c in report.checks]


def test_a_stored_submissions_board_score_comes_from_its_check_rows() -> None:
    """What the server stores, reprices (an extension) and regrades from: the rows' own flags."""
    ex = get_exercise("gae")
    rows = _stored([CheckOutcome(c.name, c.weight, c.id != "detached", check_id=ex.check_id(c),
                                 self_reported=c.self_reported) for c in ex.checks])
    assert submission_board(rows, 0.0) == 100.0  # only the self-reported check failed
    assert submission_board(rows, 10.0) == 90.0  # the late penalty applies to the board too
    rows[0]["passed"] = False
    confirmed = sum(c.weight for c in ex.checks if not c.self_reported)
    assert submission_board(rows, 0.0) == round(100 * (confirmed - ex.checks[0].weight) / confirmed, 2)


def test_the_board_never_asks_todays_catalogue() -> None:
    """A row of a check its pack no longer has, or stored without the flag, is not confirmed
    because the catalogue no longer knows it: the stored word decides."""
    gone = [{"check_id": "gone-pack/values", "weight": 90, "passed": False, "self_reported": False},
            {"check_id": "gone-pack/detached", "weight": 10, "passed": True, "self_reported": True}]
    assert submission_board(gone, 0.0) == 0.0  # the self-reported pass earns nothing
    unflagged = [{"check_id": "gae/advantages_default", "weight": 10, "passed": True}]
    assert submission_board(unflagged, 0.0) == 0.0  # a regrade result stored before the flag existed

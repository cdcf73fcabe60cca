"""Publishing a set again with another due date or late rule re-prices the submissions made so
far (``server.courses.sets.publish``), and ``preview`` counts exactly what that apply changes,
without writing: several learners, submissions before and after the old and the new due date,
an extension, an instructor's own try, another exercise."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from server.courses import sets
from server.db import transaction
from server.models import Course, Submission
from tests.server.courses.conftest import CLOSE, DAY, DUE, HOUR, RELEASE, Term

COURSE = "spring"
NEW_DUE = DUE + 30 * HOUR


def _priced(term: Term) -> dict[int, tuple[int | None, float | None, float | None]]:
    with term.api.state.session_factory() as session:
        rows = session.scalars(select(Submission).order_by(Submission.id))
        return {s.id: (s.late_seconds, s.penalty_percent, s.counted_score) for s in rows}


def _rules(due: datetime, penalty: float) -> dict[str, object]:
    return {"release_at": RELEASE, "due_at": due, "close_at": CLOSE + 5 * DAY, "penalty_percent": penalty}


def test_the_dry_run_counts_what_the_apply_changes(term: Term) -> None:
    term.course(COURSE)
    term.enroll(COURSE, "ann", "ben", "cid")
    assert term.publish(COURSE, **_rules(DUE, 10)).status_code == 200
    assert term.publish(COURSE, "gae", **_rules(DUE, 10)).status_code == 200
    term.tokens["prof"] = term.instructor
    for moment, who in [
        (DUE - 2 * HOUR, "ann"),  # on time under both due dates: unchanged
        (DUE + HOUR, "ann"),  # 1 day late (10%) -> on time
        (DUE + 25 * HOUR, "ben"),  # 2 days late (20%) -> on time
        (DUE + 3 * DAY, "ben"),  # 3 days late (30%) -> 42 h late, 2 days (20%)
        (DUE + 3 * DAY, "cid"),  # extended to DUE + 4 days: on time under both
        (DUE + 2 * DAY, "prof"),  # the instructor's try: never late
    ]:
        assert term.submit_at(moment, who, course=COURSE)["status"] == "done"
    term.submit_at(DUE + HOUR, "ann", exercise="gae", course=COURSE)  # another exercise: untouched
    granted = term.client.put(f"/api/v1/courses/{COURSE}/extensions/cid/actor-loss",
                              json={"due_at": (DUE + 4 * DAY).isoformat()}, headers=term.instructor)
    assert granted.status_code == 200
    before = _priced(term)

    with transaction(term.api.state.session_factory) as session:
        course = session.scalar(select(Course).where(Course.slug == COURSE))
        assert course is not None
        dry = sets.preview(session, course, "actor-loss", **_rules(NEW_DUE, 10))  # type: ignore[arg-type]
    assert _priced(term) == before  # the dry run wrote nothing
    assert dry == sets.Repricing(rewritten=3, counted=3)

    with transaction(term.api.state.session_factory) as session:
        course = session.scalar(select(Course).where(Course.slug == COURSE))
        assert course is not None
        applied = sets.publish(session, course, "actor-loss", actor="test", **_rules(NEW_DUE, 10))  # type: ignore[arg-type]
    after = _priced(term)
    changed = [i for i in before if before[i] != after[i]]
    assert len(changed) == applied.repriced.rewritten == dry.rewritten
    assert sum(before[i][2] != after[i][2] for i in before) == applied.repriced.counted == dry.counted
    assert sorted(after[i][2] for i in changed) == [60.0, 75.0, 75.0]  # 75 less 20%; two on time

    # only the late rule: 10% per day -> 5% per hour; ben's 42 h late costs 100%
    with transaction(term.api.state.session_factory) as session:
        course = session.scalar(select(Course).where(Course.slug == COURSE))
        assert course is not None
        rules = {**_rules(NEW_DUE, 5), "penalty_unit": "hour"}
        dry = sets.preview(session, course, "actor-loss", **rules)  # type: ignore[arg-type]
        again = sets.publish(session, course, "actor-loss", actor="test", **rules)  # type: ignore[arg-type]
    assert dry == again.repriced == sets.Repricing(rewritten=1, counted=1)
    assert _priced(term)[changed[-1]][2] == 0.0
    scores = term.client.get(f"/api/v1/courses/{COURSE}/scores", headers=term.instructor).json()["scores"]
    best = {(s["learner"], s["exercise"]): s["counted_score"] for s in scores}
    assert best[("ben", "actor-loss")] == 75.0 and best[("ann", "actor-loss")] == 75.0  # best scores re-counted

"""The API behind ``courses staff remove`` and ``sets release`` / ``sets hold`` (issue 36):
``DELETE /courses/{course}/staff/{user}`` for the course's instructors only (a TA, a learner,
another course's instructor and a read-only token are refused, nothing changes), and
``POST /courses/{course}/exercises/{exercise}/release`` and ``/hold`` for its staff, TAs
included. Each has a dry run that says the same and writes nothing; each write is in the
audit log under the caller."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from server.models import AuditEvent, Course, Enrollment, Role, SetEntry, Submission, User
from tests.server.conftest import Api, enroll_named

COURSE = "spring"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class Team:
    """A course ``spring`` with its instructor prof, a second instructor ines, the TA tara and
    the learner ann; olga teaches another course."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.prof = api.user("prof", Role.INSTRUCTOR)
        self.olga = api.user("olga", Role.INSTRUCTOR)
        for slug, who in ((COURSE, self.prof), ("autumn", self.olga)):
            made = api.client.post("/api/v1/courses", json={"slug": slug, "time_zone": "Europe/Paris"}, headers=who)
            assert made.status_code == 201, made.text
        added = self.call("POST", f"/courses/{COURSE}/staff", self.prof, json={"name": "tara"})
        self.tara = bearer(added.json()["token"])
        self.call("POST", f"/courses/{COURSE}/staff", self.prof, json={"name": "ines", "role": "instructor"})
        self.ann = api.user("ann")
        enroll_named(api.state.session_factory, [(COURSE, "ann", "learner")])

    def call(self, method: str, path: str, who: dict[str, str], **kwargs: Any) -> Any:
        return self.api.client.request(method, f"/api/v1{path}", headers=who, **kwargs)

    def read_only(self, who: dict[str, str]) -> dict[str, str]:
        made = self.call("POST", "/me/tokens", who, json={"scope": "read"})
        assert made.status_code == 201, made.text
        return bearer(made.json()["token"])

    def staff(self) -> list[str]:
        with self.api.state.session_factory() as session:
            return sorted(
                session.scalars(
                    select(User.name)
                    .join(Enrollment, Enrollment.user_id == User.id)
                    .join(Course, Course.id == Enrollment.course_id)
                    .where(Enrollment.role == "instructor", Course.slug == COURSE)
                )
            )

    def audited(self, prefix: str) -> list[tuple[str, str, str]]:
        with self.api.state.session_factory() as session:
            events = session.scalars(
                select(AuditEvent).where(AuditEvent.action.like(prefix + "%")).order_by(AuditEvent.id)
            )
            return [(e.actor, e.action, e.target) for e in events]


@pytest.fixture
def team(api: Api) -> Team:
    return Team(api)


def test_an_instructor_removes_staff_and_nobody_else_may(team: Team) -> None:
    before = team.staff()
    assert before == ["ines", "prof", "tara"]
    tara = f"/courses/{COURSE}/staff/tara"
    dry = team.call("DELETE", tara, team.prof, params={"dry_run": "true"})
    assert dry.status_code == 200 and dry.json() == {"course": COURSE, "name": "tara", "role": "ta"}
    assert team.staff() == before and team.audited("staff.remove") == []

    for who, status in ((team.tara, 403), (team.ann, 403), (team.olga, 404)):
        got = team.call("DELETE", tara, who, params={"dry_run": "true"})
        assert got.status_code == status, (got.status_code, got.text)
    read = team.call("DELETE", tara, team.read_only(team.prof))
    assert read.status_code == 403 and read.json()["error"] == "OutsideTokenScope"
    assert team.call("DELETE", f"/courses/{COURSE}/staff/ann", team.prof).status_code == 404  # a learner
    assert team.call("DELETE", f"/courses/{COURSE}/staff/nobody", team.prof).status_code == 404
    assert team.call("DELETE", f"/courses/{COURSE}/staff/ta%00ra", team.prof).json()["error"] == "InvalidText"
    assert team.staff() == before and team.audited("staff.remove") == []

    gone = team.call("DELETE", tara, team.prof)
    assert gone.status_code == 200 and gone.json()["role"] == "ta"
    assert team.call("GET", f"/courses/{COURSE}/sets", team.tara).status_code == 404  # not in the course any more
    ines = team.call("DELETE", f"/courses/{COURSE}/staff/ines", team.prof)
    assert ines.status_code == 200 and ines.json()["role"] == "instructor"
    last = team.call("DELETE", f"/courses/{COURSE}/staff/prof", team.prof, params={"dry_run": "true"})
    assert last.status_code == 422 and "last instructor" in last.json()["detail"]
    assert team.audited("staff.remove") == [("prof", "staff.remove", "tara"), ("prof", "staff.remove", "ines")]
    assert team.staff() == ["prof"]


def _policy(team: Team) -> list[str | None]:
    """The set entry's policy, then that of each of the exercise's submissions in the course."""
    with team.api.state.session_factory() as session:
        entry = session.scalar(select(SetEntry.feedback_policy).where(SetEntry.exercise == "actor-loss"))
        return [entry, *session.scalars(select(Submission.feedback_policy).order_by(Submission.id))]


def test_a_ta_releases_and_holds_hidden_scores_through_the_api(team: Team) -> None:
    due = (datetime.now(UTC) + timedelta(days=3)).isoformat()
    put = team.call(
        "PUT",
        f"/courses/{COURSE}/exercises/actor-loss",
        team.tara,
        json={"due_at": due, "feedback_policy": "hidden-until-due"},
    )
    assert put.status_code == 200, put.text
    sent = team.api.submit(team.ann, course=COURSE)
    assert sent.status_code in (200, 201, 202), sent.text
    team.api.wait_done(team.ann, sent.json()["id"])
    held = ["hidden-until-due", "hidden-until-due"]
    assert _policy(team) == held

    release = f"/courses/{COURSE}/exercises/actor-loss/release"
    dry = team.call("POST", release, team.tara, params={"dry_run": "true"})
    assert dry.status_code == 200, dry.text
    assert dry.json() == {
        "course": COURSE,
        "exercise": "actor-loss",
        "held": False,
        "feedback_policy": "full",
        "submissions": 1,
    }
    assert _policy(team) == held and team.audited("scores.") == []
    for who, status in ((team.ann, 403), (team.olga, 404), (team.read_only(team.tara), 403)):
        got = team.call("POST", release, who)
        assert got.status_code == status, (got.status_code, got.text)
    assert team.call("POST", f"/courses/{COURSE}/exercises/gae/release", team.tara).status_code == 404
    assert team.call("POST", f"/courses/{COURSE}/exercises/actor%00loss/hold", team.tara).json()["error"] == "InvalidText"
    assert team.call("POST", release.replace("/release", "/hold"), team.tara).status_code == 422  # held already
    assert _policy(team) == held and team.audited("scores.") == []

    done = team.call("POST", release, team.tara)
    assert done.status_code == 200 and done.json()["feedback_policy"] == "full", done.text
    assert _policy(team) == ["full", "full"]
    seen = team.call("GET", f"/submissions/{sent.json()['id']}", team.ann).json()
    assert seen["feedback_view"] == "full" and seen["score"] == 75.0
    assert team.call("POST", release, team.tara).status_code == 422  # not held back any more
    hold = team.call("POST", release.replace("/release", "/hold"), team.tara)
    assert hold.status_code == 200 and hold.json()["held"] is True and _policy(team) == held
    assert team.audited("scores.") == [
        ("tara", "scores.release", "actor-loss"),
        ("tara", "scores.hold", "actor-loss"),
    ]


def test_stale_verdicts_are_read_per_course_taught(team: Team) -> None:
    """``GET /regrades/stale`` (``regrade status --server``): the courses the caller teaches."""
    assert team.call("PUT", f"/courses/{COURSE}/exercises/actor-loss", team.prof, json={}).status_code == 200
    sent = team.api.submit(team.ann, course=COURSE)
    team.api.wait_done(team.ann, sent.json()["id"])
    lines = team.call("GET", "/regrades/stale", team.prof).json()
    assert [(x["course"], x["exercise"], x["verdicts"]) for x in lines] == [(COURSE, "actor-loss", 1)]
    assert set(lines[0]) == {"course", "exercise", "verdicts", "stale", "stale_on_boards", "current_version"}
    assert team.call("GET", "/regrades/stale", team.olga).json() == []  # she teaches another course
    assert team.call("GET", "/regrades/stale?exercise=gae", team.prof).json() == []
    for who in (team.tara, team.ann):  # a TA's learner account, a learner: no regrades
        assert team.call("GET", "/regrades/stale", who).status_code == 403
    limited = team.call("POST", "/me/tokens", team.prof, json={"course": COURSE})
    got = team.call("GET", "/regrades/stale", bearer(limited.json()["token"]))
    assert got.status_code == 403 and got.json()["error"] == "OutsideTokenScope"

"""The roster from the independent platform (NRPS), through ``ppo-grader lti sync-roster`` and
the course LTI page's button: new members added, roles updated, a dropped learner marked, never
deleted."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from server.models import Course, Enrollment, LtiContext, LtiMember, Submission, User
from tests.lti.conftest import LEARNER, STAFF, TA, Lti, finished_request
from tests.lti.servers import launch, lti_continue

PEOPLE = {
    "prof": {"sub": "r-prof", "login": "prof", "name": "Edsger Dijkstra", "roles": {"R1": [STAFF]}},
    "ada": {"sub": "r-ada", "login": "ada", "name": "Ada Lovelace", "email": "ada@example.edu", "roles": {"R1": [LEARNER]}},
    "bob": {"sub": "r-bob", "login": "bob", "name": "Bob Kahn", "email": "bob@example.edu", "roles": {"R1": [LEARNER]}},
}
SLUG = "roster-1"


@pytest.fixture(scope="module", autouse=True)
def opened(lti: Lti) -> None:
    lti.platform.people(PEOPLE, {"R1": {"title": "Rosters", "label": "ROSTER-1"}})
    with lti.client() as browser:
        lti_continue(browser, lti.tool, launch(browser, lti.platform, user="prof", context="R1"))


def _members(lti: Lti) -> dict[str, tuple[str, str, str | None]]:
    """login -> (LTI status, LMS roles, course role) of the course's LTI members."""
    with lti.state.session_factory() as session:
        course = session.scalar(select(Course).where(Course.slug == SLUG))
        link = session.scalar(select(LtiContext).where(LtiContext.course_id == course.id))  # type: ignore[union-attr]
        rows = session.execute(
            select(User.name, LtiMember.status, LtiMember.roles, Enrollment.role)
            .join(LtiMember, LtiMember.user_id == User.id)
            .outerjoin(Enrollment, (Enrollment.user_id == User.id) & (Enrollment.course_id == link.course_id))  # type: ignore[union-attr]
            .where(LtiMember.context_id == link.id)  # type: ignore[union-attr]
        ).tuples()
        return {name: (status, roles, role) for name, status, roles, role in rows}


def test_sync_roster_adds_members_the_lms_lists(lti: Lti) -> None:
    done = lti.cli("lti", "sync-roster", SLUG)
    assert done.returncode == 0, done.stderr
    assert "Added 2 (ada, bob)" in done.stderr and "dropped 0" in done.stderr
    members = _members(lti)
    assert members["ada"] == ("active", LEARNER, "learner") and members["bob"][0] == "active"
    assert members["prof"][2] == "instructor"
    again = lti.cli("lti", "sync-roster", SLUG)
    assert "Added 0" in again.stderr and "3 unchanged" in again.stderr


def test_sync_roster_updates_roles_and_marks_the_dropped_never_deleting(lti: Lti) -> None:
    with lti.state.session_factory() as session:  # bob has work here that must survive his drop
        bob = session.scalar(select(User).where(User.name == "bob"))
        course = session.scalar(select(Course).where(Course.slug == SLUG))
        session.add(Submission(user_id=bob.id, course_id=course.id, exercise="gae", source="x = 1\n", source_sha256="0" * 64, status="done", score=50.0))  # type: ignore[union-attr]
        session.commit()
    lti.platform.post(
        "/test/roster/R1",
        {
            "members": [
                {"user_id": "r-prof", "roles": [STAFF], "name": "Edsger Dijkstra"},
                {"user_id": "r-ada", "roles": [TA], "name": "Ada Lovelace"},  # now a teaching assistant
                {"user_id": "r-cat", "roles": [LEARNER], "name": "Cat Hopper", "email": "cat@example.edu"},  # new
                {"user_id": "r-dan", "roles": [LEARNER], "name": "Dan Never", "status": "Inactive"},  # never seen here
            ]  # bob is no longer listed: dropped
        },
    )
    done = lti.cli("lti", "sync-roster", SLUG)
    assert done.returncode == 0, done.stderr
    assert "Added 1 (cat)" in done.stderr and "roles changed 1 (ada)" in done.stderr and "dropped 1 (bob)" in done.stderr
    members = _members(lti)
    assert members["ada"] == ("active", TA, "instructor")
    assert members["bob"][0] == "dropped" and members["bob"][2] == "learner"  # still enrolled
    assert members["cat"] == ("active", LEARNER, "learner") and "dan" not in members and "dan-never" not in members
    with lti.state.session_factory() as session:
        bob = session.scalar(select(User).where(User.name == "bob"))
        assert bob is not None and session.scalar(select(Submission.score).where(Submission.user_id == bob.id)) == 50.0
        # a TA of this course teaches it (the enrollment above), and nothing more: no instructor account
        assert session.scalar(select(User.role).where(User.name == "ada")) == "learner"


def test_a_member_listed_inactive_is_dropped_and_the_page_shows_it(lti: Lti) -> None:
    lti.platform.post(
        "/test/roster/R1",
        {
            "members": [
                {"user_id": "r-prof", "roles": [STAFF]},
                {"user_id": "r-ada", "roles": [TA]},
                {"user_id": "r-cat", "roles": [LEARNER], "status": "Deleted"},
            ]
        },
    )
    with lti.client() as browser:  # the instructor's button
        lti_continue(browser, lti.tool, launch(browser, lti.platform, user="prof", context="R1"))
        page = browser.get(f"{lti.tool}/dashboard/lti", params={"course": SLUG})
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
        pressed = browser.post(  # queued for the background job: back to the page at once
            f"{lti.tool}/dashboard/lti/roster", data={"csrf": csrf, "course": SLUG}, headers={"Origin": lti.tool}
        )
        forged = browser.post(f"{lti.tool}/dashboard/lti/roster", data={"csrf": "nope", "course": SLUG})
        state, said = finished_request(lti, SLUG, "roster")
        synced = browser.get(f"{lti.tool}/dashboard/lti", params={"course": SLUG})
    assert pressed.status_code == 200 and forged.status_code == 403
    assert state == "done" and "dropped 1," in said, said  # cat (bob was dropped by the sync before)
    assert '<tr id="lti-task-roster" data-state="done">' in synced.text and "dropped 1," in synced.text
    assert re.search(r'<tr class="dropped"><td>Cat Hopper</td><td>cat</td>', synced.text)
    assert re.search(r'<tr class="dropped"><td>Bob Kahn</td><td>bob</td>', synced.text)
    assert _members(lti)["cat"][0] == "dropped"

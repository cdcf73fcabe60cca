"""Fifth white-box red team of LTI 1.3 (issue 35): attacks that worked, each a test that asserts
what a safe tool does (a strict xfail until fixed), driven over real HTTP against the real tool
and the independent test platform (``tests/lti/platform``), as the earlier rounds do.

Attempts that failed (the tool held), checked against the code that stops them:

- a state of one login posted with another login's cookie, or a state cookie planted under
  another state's name: refused (the cookie must hold the very state, named by its digest).
- a forged state (another HMAC key, ``alg`` none/RS256, a long ``pid``/``nonce``): refused by
  joserfc's HS256-only decode and the type checks of ``read_state``.
- a resource-link launch's ``custom.exercise`` naming an exercise the course does not publish:
  ignored (``_exercise`` only opens what the course offers); a line item URL of another course
  of the same LMS: the lookup is per context.
- an LMS learner whose LMS username is that of an existing account (``admin``, ``prof``): a
  new account named ``admin-2`` (``_free_names``); email never links an account.
- a deep-linking answer with ``accept_multiple`` false and many exercises: cut to one.
- ``/lti/continue`` and ``/lti/deep-link`` with tokens longer than 64 characters: cut, refused.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from html import unescape
from urllib.parse import urlencode

import pytest
from sqlalchemy import select

from server.courses.corrections import override
from server.courses.sets import publish
from server.lti.lineitems import CLAIM_EXPIRY
from server.models import Course, Enrollment, LtiContext, LtiLineItem, LtiMember, LtiUser, utcnow
from tests.lti.conftest import LEARNER, STAFF, TA, Lti
from tests.lti.servers import launch, lti_continue
from tests.lti.test_redteam import (
    Hostile,
    _hostile_course,
    _hostile_learners,
    hostile_launch,
    roster_button,
    served_and_registered,
    signed_in,
)

PEOPLE = {
    "r5-prof": {"sub": "r5-prof", "login": "r5prof", "name": "Edsger Dijkstra", "roles": {"R5": [STAFF]}},
    "r5-ada": {"sub": "r5-ada", "login": "r5ada", "name": "Ada Byron", "roles": {"R5": [LEARNER]}},
}
SLUG = "r5-dup"
EXERCISE = "actor-loss"


@pytest.fixture(scope="module", autouse=True)
def people(lti: Lti) -> None:
    lti.platform.people(PEOPLE, {"R5": {"title": "Round five", "label": "R5-DUP"}})


def _columns(lti: Lti, context: str, slug: str) -> list[dict]:  # type: ignore[type-arg]
    return [
        i for i in lti.platform.state()["line_items"] if i.get("resourceId") == slug and i.get("context") == context
    ]


# --- duplicate LMS columns: a grades apply while a deep-linking answer is on its way ---------------


def test_a_grades_apply_while_a_linking_answer_is_on_its_way_makes_no_second_column(lti: Lti) -> None:
    """The course publishes an exercise and a learner has a score in it (an override); the
    instructor links it from the LMS's picker: the tool's answer asks the LMS for its column
    (``lineItem``) and remembers the row with no URL, "the LMS is creating it". Before the LMS
    acts on the answer (the browser posts it; a real LMS makes the column only when the
    instructor saves the assignment), ``lti grades apply`` runs (or the automatic job, on any
    score change): ``line_item_url`` takes the empty row as unknown, finds no column by
    resource id and tag, and creates one. Then the LMS acts on the answer and makes a second
    column for the same exercise: two gradebook columns, the learners' scores in the one the
    assignment is not linked to. Secure: while a linking answer asks for the column (a recent
    row with no URL), the grades sync waits for it (its scores counted as waiting, sent by the
    next apply once the LMS lists the column), so the LMS ends with one column."""
    with lti.client() as browser:
        lti_continue(browser, lti.tool, launch(browser, lti.platform, user="r5-prof", context="R5"))
    with lti.client() as browser:
        lti_continue(browser, lti.tool, launch(browser, lti.platform, user="r5-ada", context="R5"))
    with lti.state.session_factory() as session:
        course = session.scalar(select(Course).where(Course.slug == SLUG))
        assert course is not None
        publish(session, course, EXERCISE)
        override(session, course, "r5ada", EXERCISE, 80, "by hand", "r5prof")
        session.commit()
    with lti.client() as browser:
        picker = launch(browser, lti.platform, user="r5-prof", context="R5", message="deeplink").response
        assert picker.status_code == 200, picker.text[-500:]
        action = re.search(r'<form id="lti-picker" method="post" action="([^"]+)"', picker.text).group(1)  # type: ignore[union-attr]
        answer = browser.post(
            lti.tool + unescape(action),
            content=urlencode([("exercise", EXERCISE)]),
            headers={"Origin": lti.tool, "Content-Type": "application/x-www-form-urlencoded"},
        )
        assert answer.status_code == 200, answer.text[-500:]
        return_url = unescape(re.search(r'<form id="lti-answer" method="post" action="([^"]+)"', answer.text).group(1))  # type: ignore[union-attr]
        signed = unescape(re.search(r'name="JWT" value="([^"]+)"', answer.text).group(1))  # type: ignore[union-attr]
        with lti.state.session_factory() as session:
            [row] = session.scalars(select(LtiLineItem).where(LtiLineItem.exercise == EXERCISE)).all()
            assert (row.url, row.claimed_at) == (None, None)  # the answer asks the LMS for the column
        # The answer is on its way (not yet acted on by the LMS); the administrator applies grades.
        applied = lti.cli("lti", "grades", "apply", SLUG)
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert "1 wait for a column" in applied.stderr, applied.stderr
        assert _columns(lti, "R5", EXERCISE) == []  # the apply waits for the column the answer asks for
        done = browser.post(return_url, data={"JWT": signed})
        assert done.status_code == 200, done.text
    assert len(_columns(lti, "R5", EXERCISE)) == 1, _columns(lti, "R5", EXERCISE)
    again = lti.cli("lti", "grades", "apply", SLUG)  # the next apply finds the LMS's column and sends
    assert again.returncode == 0 and "Sent 1 score(s)" in again.stderr, again.stdout + again.stderr
    [column] = _columns(lti, "R5", EXERCISE)
    with lti.state.session_factory() as session:
        [row] = session.scalars(select(LtiLineItem).where(LtiLineItem.exercise == EXERCISE)).all()
        assert row.url == column["id"]


# --- a roster pull drops a member who launched while the LMS was answering -------------------------


@dataclass
class SlowRoster(Hostile):
    """A hostile (here: merely slow) LMS whose roster answer waits until the test lets it go;
    ``asked`` is set when the tool has asked for it."""

    asked: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    listed: list[dict[str, object]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.roster = self._answer

    def _answer(self, _page: int) -> tuple[bytes, str]:
        self.asked.set()
        assert self.release.wait(60)
        return json.dumps({"members": self.listed}).encode(), ""


@pytest.fixture(scope="module")
def slow_roster(lti: Lti) -> Iterator[SlowRoster]:
    yield from served_and_registered(lti, SlowRoster)


def test_a_teaching_assistant_who_launches_during_a_roster_pull_keeps_the_course(
    lti: Lti, slow_roster: SlowRoster
) -> None:
    """The instructor presses "pull the roster"; the LMS's answer (a big course's many pages,
    or a slow LMS) was made before a new TA was added. While it is on its way the new TA
    launches: signed in, enrolled as an instructor of the course, a member. Then the sync
    applies the older answer: the members it read from the database *after* the LMS answered
    include the TA, the answer does not, so the TA is marked dropped and their instructor
    enrollment deleted, seconds after their own signed launch proved them a member; the
    dashboard they were just sent to is now a 403, and a new learner launched in the same window
    would get no grades sent. Secure: a member whose launch came after the roster was asked
    for is not dropped by that answer (compare ``seen_at`` with the sync's start)."""
    lms = slow_roster
    prof = "h-prof-R5R"
    lti.client().get(f"{lti.tool}/lti/jwks")  # the tool's key exists: the sync writes nothing before the LMS answers
    lms.listed = [{"user_id": prof, "roles": [STAFF], "status": "Active", "name": "Prof"}]
    with lti.client() as staff:
        slug = _hostile_course(staff, lti, lms, "R5R")
        pressed: list[int] = []
        sync = threading.Thread(target=lambda: pressed.append(roster_button(staff, lti, slug).status_code), daemon=True)
        sync.start()
        assert lms.asked.wait(30), "the roster was not asked for"
        with lti.client() as ta:
            answer = hostile_launch(ta, lti, lms, sub="h-new-ta", roles=[TA], context="R5R")
            assert answer.status_code == 200, answer.text[-400:]
            first = signed_in(ta, lti, answer)
            assert first.status_code == 200 and "/dashboard" in str(first.url)
            lms.release.set()
            sync.join(60)
            assert pressed == [303], pressed
            again = ta.get(f"{lti.tool}/dashboard", params={"course": slug}, follow_redirects=False)
    with lti.state.session_factory() as session:
        link = session.scalar(
            select(LtiContext).join(Course, Course.id == LtiContext.course_id).where(Course.slug == slug)
        )
        assert link is not None
        user_id = session.scalar(
            select(LtiUser.user_id).where(LtiUser.platform_id == link.platform_id, LtiUser.sub == "h-new-ta")
        )
        member = session.get(LtiMember, (link.id, user_id))
        teaches = session.get(Enrollment, (link.course_id, user_id))
        status, role = (member.status if member else None), (teaches.role if teaches else None)
    assert (status, role, again.status_code) == ("active", "instructor", 200)


# --- duplicate LMS columns: the CLI's apply and the background job at once ------------------------


@dataclass
class SlowColumns(Hostile):
    """A hostile (here: merely slow) LMS whose line item list answers the first two lookups only
    when both have arrived (a slow gradebook); then it lists the columns made so far."""

    met: threading.Barrier = field(default_factory=lambda: threading.Barrier(2, timeout=15))
    armed: bool = False
    lookups: int = 0

    @property  # type: ignore[override]
    def lineitems_body(self) -> bytes:
        if self.armed:
            self.lookups += 1
            if self.lookups <= 2:
                try:
                    self.met.wait()
                except threading.BrokenBarrierError:  # the tool asked once at a time: no race
                    pass
        made = [path for method, path, _ in self.hits if method == "POST" and path.startswith("/ags/lineitems?")]
        if not made:
            return b"[]"
        item = {"id": f"{self.url}/ags/lineitems/actor-loss", "resourceId": "actor-loss", "tag": "ppo-grader"}
        return json.dumps([item]).encode()

    @lineitems_body.setter
    def lineitems_body(self, _value: bytes) -> None:
        pass

    def created(self) -> int:
        return sum(1 for method, path, _ in self.hits if method == "POST" and path.startswith("/ags/lineitems?"))


@pytest.fixture(scope="module")
def slow_columns(lti: Lti) -> Iterator[SlowColumns]:
    yield from served_and_registered(lti, SlowColumns)


def test_the_clis_apply_and_the_background_job_at_once_make_one_column(lti: Lti, slow_columns: SlowColumns) -> None:
    """An administrator runs ``ppo-grader lti grades apply COURSE`` while the course's background
    job runs (automatic mode, or the dashboard's "Send" pressed a moment before). Nothing
    serializes the two (the job runner serializes its own jobs, the CLI is another process):
    each finds no remembered column, each asks the LMS by resource id and tag while the other
    has not yet made one, and each creates one: two gradebook columns for one exercise.
    Secure: one column (the creation claimed in the database before the LMS is asked, or the
    CLI's apply and the job serialized per course)."""
    lms = slow_columns
    slug = _hostile_learners(lti, lms, "R5C", ["r5cara"])
    with lti.state.session_factory() as session:
        course = session.scalar(select(Course).where(Course.slug == slug))
        assert course is not None
        publish(session, course, "actor-loss")
        override(session, course, "r5cara", "actor-loss", 80, "by hand", "prof")
        session.commit()
    lms.armed = True
    results: list[int] = []
    cli = threading.Thread(target=lambda: results.append(lti.cli("lti", "grades", "apply", slug).returncode))
    cli.start()
    with lti.state.session_factory() as session:
        link = session.scalar(select(LtiContext).where(LtiContext.course_id == course.id))
        assert link is not None
        link.send_requested_at = utcnow()
        session.commit()
    cli.join(120)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with lti.state.session_factory() as session:
            link = session.scalar(select(LtiContext).where(LtiContext.course_id == course.id))
            if link is not None and link.send_requested_at is None:
                break
        time.sleep(0.1)
    assert results == [0]
    assert lms.lookups >= 1
    assert lms.created() == 1, lms.created()


@pytest.fixture(scope="module")
def crashed_columns(lti: Lti) -> Iterator[SlowColumns]:
    yield from served_and_registered(lti, SlowColumns)


def test_a_claim_left_by_a_crashed_job_expires(lti: Lti, crashed_columns: SlowColumns) -> None:
    """A job that claimed an exercise's column and died before the LMS answered leaves its
    claim: one younger than the expiry makes the scores wait (nothing created), an older one
    is taken over by the next apply, which creates the one column and sends."""
    lms = crashed_columns
    slug = _hostile_learners(lti, lms, "R5S", ["r5sam"])
    with lti.state.session_factory() as session:
        course = session.scalar(select(Course).where(Course.slug == slug))
        assert course is not None
        publish(session, course, "actor-loss")
        override(session, course, "r5sam", "actor-loss", 70, "by hand", "prof")
        link = session.scalar(select(LtiContext).where(LtiContext.course_id == course.id))
        assert link is not None
        row = LtiLineItem(context_id=link.id, exercise="actor-loss", url=None, claimed_at=utcnow())
        session.add(row)
        session.commit()
    fresh = lti.cli("lti", "grades", "apply", slug)
    assert fresh.returncode == 0 and "1 wait for a column" in fresh.stderr, fresh.stdout + fresh.stderr
    assert lms.created() == 0
    with lti.state.session_factory() as session:
        [row] = session.scalars(select(LtiLineItem).where(LtiLineItem.context_id == link.id)).all()
        row.claimed_at = utcnow() - CLAIM_EXPIRY - timedelta(seconds=1)
        session.commit()
    stale = lti.cli("lti", "grades", "apply", slug)
    assert stale.returncode == 0 and "Sent 1 score(s)" in stale.stderr, stale.stdout + stale.stderr
    assert lms.created() == 1
    with lti.state.session_factory() as session:
        [row] = session.scalars(select(LtiLineItem).where(LtiLineItem.context_id == link.id)).all()
        assert row.url is not None and row.url.startswith(lms.url) and row.claimed_at is None

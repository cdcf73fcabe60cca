"""The sixth LTI red team's fixes, beyond the attacks themselves (``test_attack_round6``):
what the refusals say, what the preview shows, and the paths next to each attack.

- roles: only the context roles decide (``server.lti.claims.standing``);
- an LMS's account under a login: refused by ``courses staff add`` (TA too) and ``courses create
  --instructor``, naming the LMS; a roster import lists the row as skipped, exits 1, imports
  the rest;
- a score that no longer counts is previewed and sent once as "no score";
- a send overtaken by one stamped later is neither sent nor recorded (``grades apply`` says so);
- a second installation's deep-linking answer names that installation's deployment, and its
  launches open the one course.
"""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape
from pathlib import Path
from urllib.parse import urlencode

from sqlalchemy import select, update

from server.courses.corrections import override, take_back
from server.courses.sets import publish
from server.db import transaction
from server.lti import claims as c
from server.lti.platforms import add_deployment
from server.models import Course, Enrollment, LtiContext, LtiPlatform, LtiScoreSent, User, utcnow
from server.models.correction import CorrectionKind
from tests.lti.conftest import LEARNER, STAFF, TA, Lti
from tests.lti.servers import launch, lti_continue
from tests.lti.test_attack_round6 import EXERCISE, INSTITUTION_ADMIN, _squatter
from tests.lti.test_redteam import (  # noqa: F401  (module fixtures, used by name)
    Hostile,
    _hostile_learners,
    evil,
    hostile,
    people,
)

SYSTEM_ADMIN = "http://purl.imsglobal.org/vocab/lis/v2/system/person#SysAdmin"
CONTEXT_ADMIN = "http://purl.imsglobal.org/vocab/lis/v2/membership#Administrator"


def test_only_the_context_roles_decide_a_standing() -> None:
    assert c.standing([INSTITUTION_ADMIN]) is c.Standing.NONE
    assert c.standing([SYSTEM_ADMIN, INSTITUTION_ADMIN]) is c.Standing.NONE
    assert c.standing([LEARNER, INSTITUTION_ADMIN]) is c.Standing.LEARNER
    assert c.standing([INSTITUTION_ADMIN, LEARNER, SYSTEM_ADMIN]) is c.Standing.LEARNER
    assert c.standing([CONTEXT_ADMIN]) is c.Standing.STAFF  # the course's own Administrator role
    assert c.standing([TA, INSTITUTION_ADMIN]) is c.Standing.STAFF


def _user(lti: Lti, name: str) -> User | None:
    with lti.state.session_factory() as session:
        user = session.scalar(select(User).where(User.name == name))
        session.expunge_all()
        return user


def test_adding_staff_by_login_refuses_an_lms_account_and_names_it(lti: Lti, hostile: Hostile) -> None:
    _squatter(lti, hostile, "R6F-SQ", "r6f-squat", "r6fjane")
    made = lti.cli("courses", "create", "r6f-term", "--title", "Term")
    assert made.returncode == 0, made.stderr
    for role in ("ta", "instructor"):
        refused = lti.cli("courses", "staff", "add", "r6f-term", "r6fjane", "--role", role)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        text = " ".join(refused.stderr.split())
        assert "'r6fjane' is an account the LMS 'Hostile LMS' made" in text and "another login" in text, text
        assert "Traceback" not in refused.stderr
    squatter = _user(lti, "r6fjane")
    assert squatter is not None and squatter.role == "learner"
    with lti.state.session_factory() as session:
        course_id = session.scalar(select(Course.id).where(Course.slug == "r6f-term"))
        assert session.get(Enrollment, (course_id, squatter.id)) is None
    other = lti.cli("courses", "create", "r6f-other", "--instructor", "r6fjane")
    assert other.returncode == 2 and "Hostile LMS" in other.stderr, other.stderr
    with lti.state.session_factory() as session:
        assert session.scalar(select(Course.id).where(Course.slug == "r6f-other")) is None  # nothing made
    colleague = lti.cli("courses", "staff", "add", "r6f-term", "r6fcolleague", "--role", "instructor")
    assert colleague.returncode == 0 and colleague.stdout.strip().startswith("ppg_"), colleague.stderr
    made_here = _user(lti, "r6fcolleague")
    assert made_here is not None and made_here.role == "instructor"  # the tool's own accounts still work


def test_a_roster_import_skips_an_lms_account_by_name_and_imports_the_rest(
    lti: Lti, hostile: Hostile, tmp_path: Path
) -> None:
    _squatter(lti, hostile, "R6F-SQ2", "r6f-squat-2", "s6f000001")
    assert lti.cli("courses", "create", "r6f-seminar").returncode == 0
    roster = tmp_path / "roster.csv"
    roster.write_text("name,display_name\ns6f000001,Sam Student\ns6f000002,Sue Student\n")
    done = lti.cli("users", "import", str(roster), "--course", "r6f-seminar")
    assert done.returncode == 1, done.stdout + done.stderr
    text = " ".join(done.stderr.split())
    assert "line 2: skipped 's6f000001'" in text and "an account the LMS 'Hostile LMS' made" in text, text
    assert "s6f000002" in done.stdout and "s6f000001" not in done.stdout  # only the new one's token
    with lti.state.session_factory() as session:
        course_id = session.scalar(select(Course.id).where(Course.slug == "r6f-seminar"))
        enrolled = set(
            session.scalars(
                select(User.name)
                .join(Enrollment, Enrollment.user_id == User.id)
                .where(Enrollment.course_id == course_id)
            )
        )
    assert enrolled == {"s6f000002"}


def test_a_score_that_no_longer_counts_is_previewed_and_cleared_once(lti: Lti, evil: Hostile) -> None:
    slug = _hostile_learners(lti, evil, "R6F-CL", ["r6fcal"])
    with transaction(lti.state.session_factory) as session:
        course = session.scalar(select(Course).where(Course.slug == slug))
        assert course is not None
        publish(session, course, EXERCISE)
        override(session, course, "r6fcal", EXERCISE, 70, "by hand", "prof")
    assert lti.cli("lti", "grades", "apply", slug).returncode == 0
    with transaction(lti.state.session_factory) as session:
        course = session.scalar(select(Course).where(Course.slug == slug))
        assert course is not None
        take_back(session, course, "r6fcal", EXERCISE, CorrectionKind.OVERRIDE, "prof")
    preview = lti.cli("lti", "grades", "preview", slug)
    assert preview.returncode == 0, preview.stderr
    assert "no score" in preview.stdout and "1 to send" in preview.stderr, preview.stdout + preview.stderr
    assert lti.cli("lti", "grades", "apply", slug).returncode == 0
    last = [s for s in evil.scores if s["userId"] == "r6fcal"][-1]
    assert "scoreGiven" not in last and "scoreMaximum" not in last
    assert (last["activityProgress"], last["gradingProgress"], last["comment"]) == (
        "Initialized",
        "FullyGraded",
        "no score (nothing counts now)",
    )
    sent = len(evil.scores)
    again = lti.cli("lti", "grades", "apply", slug)
    assert again.returncode == 0 and "Sent 0 score(s)" in again.stderr, again.stderr
    assert len(evil.scores) == sent
    quiet = lti.cli("lti", "grades", "preview", slug)
    assert "0 to send" in quiet.stderr and "r6fcal" not in quiet.stdout  # nothing counts, nothing held: no line


def test_a_send_overtaken_by_a_later_stamped_one_is_neither_sent_nor_recorded(lti: Lti, evil: Hostile) -> None:
    slug = _hostile_learners(lti, evil, "R6F-OT", ["r6fotto"])
    with transaction(lti.state.session_factory) as session:
        course = session.scalar(select(Course).where(Course.slug == slug))
        assert course is not None
        publish(session, course, EXERCISE)
        override(session, course, "r6fotto", EXERCISE, 60, "by hand", "prof")
    assert lti.cli("lti", "grades", "apply", slug).returncode == 0
    later = utcnow() + timedelta(days=1)  # as if another apply, which read later, had sent and recorded
    with transaction(lti.state.session_factory) as session:
        course = session.scalar(select(Course).where(Course.slug == slug))
        assert course is not None
        override(session, course, "r6fotto", EXERCISE, 65, "by hand, again", "prof")
        session.execute(update(LtiScoreSent).values(sent_at=later).where(LtiScoreSent.exercise == EXERCISE))
    sent = len(evil.scores)
    done = lti.cli("lti", "grades", "apply", slug)
    assert done.returncode == 0, done.stderr
    assert "Sent 0 score(s)" in done.stderr and "1 left to another apply" in done.stderr, done.stderr
    assert len(evil.scores) == sent
    with lti.state.session_factory() as session:
        scores = [row.score for row in session.scalars(select(LtiScoreSent).where(LtiScoreSent.exercise == EXERCISE))]
    assert 60 in scores and 65 not in scores


PEOPLE = {
    "r6f-prof": {"sub": "r6f-sub-prof", "login": "r6fprof", "name": "Prof", "roles": {"R6FDL": [STAFF]}},
}


def test_a_second_installations_deep_link_names_its_deployment_and_opens_the_one_course(lti: Lti) -> None:
    lti.platform.people(PEOPLE, {"R6FDL": {"title": "Two installs", "label": "R6FDL"}})
    with transaction(lti.state.session_factory) as session:
        platform = session.scalar(select(LtiPlatform).where(LtiPlatform.issuer == lti.platform.url))
        assert platform is not None
        add_deployment(session, platform, "never-registered")
    with lti.client() as browser:
        first = lti_continue(browser, lti.tool, launch(browser, lti.platform, user="r6f-prof", context="R6FDL"))
        assert first.status_code == 200, first.text[-400:]
    with lti.client() as browser:
        picker = launch(
            browser, lti.platform, user="r6f-prof", context="R6FDL", message="deeplink", forge="bad_deployment"
        ).response
        assert picker.status_code == 200, picker.text[-500:]
        action = re.search(r'<form id="lti-picker" method="post" action="([^"]+)"', picker.text).group(1)  # type: ignore[union-attr]
        answer = browser.post(
            lti.tool + unescape(action),
            content=urlencode([("exercise", EXERCISE)]),
            headers={"Origin": lti.tool, "Content-Type": "application/x-www-form-urlencoded"},
        )
        assert answer.status_code == 200, answer.text[-500:]
        back = unescape(re.search(r'<form id="lti-answer" method="post" action="([^"]+)"', answer.text).group(1))  # type: ignore[union-attr]
        jwt = unescape(re.search(r'name="JWT" value="([^"]+)"', answer.text).group(1))  # type: ignore[union-attr]
        done = browser.post(back, data={"JWT": jwt})
    assert done.status_code == 200 and "dl-done" in done.text, done.text[-400:]  # the LMS took it: its deployment
    with lti.state.session_factory() as session:
        links = session.scalars(select(LtiContext).where(LtiContext.context_id == "R6FDL")).all()
    assert [link.deployment_id for link in links] == ["deployment-1"]  # one course for the LMS course

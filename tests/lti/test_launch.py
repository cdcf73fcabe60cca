"""Launches from an independent LTI 1.3 platform (its own process, its own keys), made the way a
browser makes them (redirects, the state cookie, the auto-posted form), without a browser: who
lands where, signed in; and every forged or replayed launch refused with a 4xx and a clear page,
leaving nothing behind."""

from __future__ import annotations

import re
from html import unescape

import pytest
from sqlalchemy import func, select

from server.models import Course, Enrollment, LtiContext, LtiLogin, LtiMember, LtiPlatform, LtiUser, Role, User
from tests.lti.conftest import INSTITUTION_STUDENT, LEARNER, STAFF, TA, Lti
from tests.lti.servers import launch, lti_continue

PEOPLE = {
    "prof": {"sub": "sub-prof", "name": "Grace Hopper", "email": "grace@example.edu", "login": "ghopper", "roles": {"L1": [STAFF]}},
    "ta": {"sub": "sub-ta", "name": "Alan Turing", "email": "alan@example.edu", "roles": {"L1": [TA]}},
    "ada": {"sub": "sub-ada", "name": "Ada Lovelace", "email": "ada@example.edu", "roles": {"L1": [LEARNER], "L2": [LEARNER]}},
    "eve": {"sub": "sub-eve", "name": "Eve Outsider", "email": "eve@example.edu", "roles": {"L1": [INSTITUTION_STUDENT]}},
}
CONTEXTS = {"L1": {"title": "RLHF in practice", "label": "RLHF-201"}, "L2": {"title": "Never opened", "label": "NOPE-1"}}


@pytest.fixture(scope="module", autouse=True)
def people(lti: Lti) -> None:
    lti.platform.people(PEOPLE, CONTEXTS)


def _count(lti: Lti, model: type) -> int:
    with lti.state.session_factory() as session:
        return int(session.scalar(select(func.count()).select_from(model)) or 0)


def _title(html: str) -> str:
    found = re.search(r'<h1 id="lti-refused">([^<]+)</h1>', html)
    return unescape(found.group(1)) if found else ""


def test_staff_open_the_course_and_land_on_its_dashboard_signed_in(lti: Lti) -> None:
    with lti.client() as browser:
        done = launch(browser, lti.platform, user="prof", context="L1")
        assert done.response.status_code == 200, done.response.text[-500:]
        assert "frame-ancestors *" in done.response.headers["content-security-policy"]
        page = lti_continue(browser, lti.tool, done)
        assert page.status_code == 200
        assert page.url.path == "/dashboard" and page.url.params["course"] == "rlhf-201"
        assert "Signed in as Grace Hopper" in page.text
    with lti.state.session_factory() as session:
        course = session.scalar(select(Course).where(Course.slug == "rlhf-201"))
        assert course is not None and course.title == "RLHF in practice"
        link = session.scalar(select(LtiContext).where(LtiContext.course_id == course.id))
        assert link is not None and link.context_id == "L1" and link.memberships_url == f"{lti.platform.url}/nrps/L1"
        assert link.lineitems_url == f"{lti.platform.url}/ags/L1/lineitems"
        prof = session.scalar(select(User).join(LtiUser, LtiUser.user_id == User.id).where(LtiUser.sub == "sub-prof"))
        # staff of this course only: a learner account (an LMS never makes instructor accounts)
        assert prof is not None and prof.name == "ghopper" and prof.role == Role.LEARNER
        assert session.get(Enrollment, (course.id, prof.id)).role == "instructor"  # type: ignore[union-attr]


def test_a_teaching_assistant_is_staff_and_a_learner_lands_on_their_page_for_the_exercise(lti: Lti) -> None:
    with lti.client() as browser:
        page = lti_continue(browser, lti.tool, launch(browser, lti.platform, user="ta", context="L1"))
        assert page.url.path == "/dashboard"
    with lti.client() as browser:
        done = launch(browser, lti.platform, user="ada", context="L1", exercise="actor-loss", link="link-ada")
        page = lti_continue(browser, lti.tool, done)
        assert page.status_code == 200 and page.url.path == "/dashboard/learners/ada"
        assert "Your work" in page.text and "Signed in as Ada Lovelace" in page.text
        assert page.url.params["course"] == "rlhf-201"
        # the learner's own way to a token for the command line ("Use from a terminal")
        terminal = browser.get(f"{lti.tool}/dashboard/terminal")
        assert terminal.status_code == 200 and "Make a new token" in terminal.text
        csrf = re.search(r'name="csrf" value="([^"]+)"', terminal.text).group(1)  # type: ignore[union-attr]
        made = browser.post(f"{lti.tool}/dashboard/terminal", data={"csrf": csrf}, headers={"Origin": lti.tool})
        token = re.search(r'<pre id="new-token"><code>(ppg_[^<]+)</code>', made.text).group(1)  # type: ignore[union-attr]
        me = browser.get(f"{lti.tool}/api/v1/me", headers={"Authorization": f"Bearer {token}"})
        assert me.json()["name"] == "ada" and me.json()["role"] == "learner"
    with lti.state.session_factory() as session:
        ada = session.scalar(select(User).where(User.name == "ada"))
        course = session.scalar(select(Course).where(Course.slug == "rlhf-201"))
        assert ada is not None and course is not None and ada.display_name == "Ada Lovelace"
        assert session.get(Enrollment, (course.id, ada.id)).role == "learner"  # type: ignore[union-attr]
        link = session.scalar(select(LtiContext).where(LtiContext.course_id == course.id))
        member = session.get(LtiMember, (link.id, ada.id))  # type: ignore[union-attr]
        assert member is not None and member.status == "active" and LEARNER in member.roles


def test_a_second_launch_reuses_the_account(lti: Lti) -> None:
    before = _count(lti, User)
    with lti.client() as browser:
        lti_continue(browser, lti.tool, launch(browser, lti.platform, user="ada", context="L1"))
    assert _count(lti, User) == before


REFUSED = [
    ("wrong_aud", 401, "Wrong audience"),
    ("expired", 401, "Launch expired"),
    ("other_key", 401, "Signature does not verify"),
    ("bad_deployment", 403, "Deployment not registered"),
]


@pytest.mark.parametrize(("forge", "status", "title"), REFUSED)
def test_forged_launches_are_refused_with_a_clear_page(lti: Lti, forge: str, status: int, title: str) -> None:
    users, members = _count(lti, User), _count(lti, LtiMember)
    with lti.client() as browser:
        done = launch(browser, lti.platform, user="ada", context="L1", forge=forge)
    assert done.response.status_code == status, done.response.text[-400:]
    assert _title(done.response.text) == title
    assert "lti-continue" not in done.response.text and "ppo_grader_session" not in done.response.headers.get("set-cookie", "")
    assert (_count(lti, User), _count(lti, LtiMember)) == (users, members)


def test_an_unknown_kid_refetches_the_key_set_once_then_is_refused(lti: Lti) -> None:
    with lti.state.session_factory() as session:
        platform = session.scalar(select(LtiPlatform))
        assert platform is not None
        platform.jwks_miss_at = None  # the forged signature's refresh above (other_key) started a cooldown
        session.commit()
    fetched = lti.platform.state()["jwks_fetches"]
    with lti.client() as browser:
        first = launch(browser, lti.platform, user="ada", context="L1", forge="unknown_kid")
        second = launch(browser, lti.platform, user="ada", context="L1", forge="unknown_kid")
    assert (first.response.status_code, _title(first.response.text)) == (401, "Unknown signing key")
    assert (second.response.status_code, _title(second.response.text)) == (401, "Unknown signing key")
    # one refresh for the first unknown kid; the second, within the cooldown, fetches nothing
    assert lti.platform.state()["jwks_fetches"] == fetched + 1


def test_a_rotated_platform_key_is_found_by_one_refresh(lti: Lti) -> None:
    with lti.state.session_factory() as session:
        platform = session.scalar(select(LtiPlatform))
        assert platform is not None
        platform.jwks_miss_at = None  # the previous test's miss: no cooldown for a real rotation
        session.commit()
    fetched = lti.platform.state()["jwks_fetches"]
    lti.platform.post("/test/rotate-key")
    with lti.client() as browser:
        done = launch(browser, lti.platform, user="ada", context="L1")
        assert done.response.status_code == 200, _title(done.response.text)
    assert lti.platform.state()["jwks_fetches"] == fetched + 1


def test_a_replayed_launch_is_refused(lti: Lti) -> None:
    with lti.client() as browser:
        done = launch(browser, lti.platform, user="ada", context="L1")
        assert done.response.status_code == 200
        # the same form again, from the same browser (its state cookie restored)
        for cookie in done.cookies:
            browser.cookies.jar.set_cookie(cookie)
        again = browser.post(done.action, data=done.form)
        assert (again.status_code, _title(again.text)) == (403, "Launch already used")
        # the old id_token with a fresh login's state: its nonce is not that login's
        fresh = browser.get(lti.platform.launch_url(user="ada", context="L1"))
        state = re.search(r"name='state' value='([^']+)'", fresh.text).group(1)  # type: ignore[union-attr]
        replay = browser.post(done.action, data={"id_token": done.form["id_token"], "state": unescape(state)})
        assert (replay.status_code, _title(replay.text)) == (403, "Launch already used")
        assert "nonce" in replay.text


def test_a_launch_posted_from_another_browser_is_refused(lti: Lti) -> None:
    with lti.client() as attacker:
        start = attacker.get(lti.platform.launch_url(user="ada", context="L1"))
    action = re.search(r"action='([^']+)'", start.text).group(1)  # type: ignore[union-attr]
    fields = dict(re.findall(r"name='([^']+)' value='([^']*)'", start.text))
    with lti.client() as victim:  # has no state cookie: the login did not begin here
        posted = victim.post(unescape(action), data={k: unescape(v) for k, v in fields.items()})
    assert (posted.status_code, _title(posted.text)) == (403, "Launch not started in this browser")


def test_a_learner_launching_into_a_course_they_are_not_in_is_refused(lti: Lti) -> None:
    users = _count(lti, User)
    with lti.client() as browser:
        outsider = launch(browser, lti.platform, user="eve", context="L1")  # an institution role only
        unopened = launch(browser, lti.platform, user="ada", context="L2")  # no instructor opened it yet
    assert (outsider.response.status_code, _title(outsider.response.text)) == (403, "Not a member of this course")
    assert (unopened.response.status_code, _title(unopened.response.text)) == (403, "Course not set up yet")
    assert _count(lti, User) == users
    with lti.state.session_factory() as session:
        assert session.scalar(select(Course).where(Course.slug == "nope-1")) is None


def test_a_sign_in_link_works_once(lti: Lti) -> None:
    with lti.client() as browser:
        done = launch(browser, lti.platform, user="ada", context="L1")
        assert lti_continue(browser, lti.tool, done).status_code == 200
        for cookie in done.response.cookies.jar:  # the ticket cookie again, as a replaying browser would
            browser.cookies.jar.set_cookie(cookie)
        again = lti_continue(browser, lti.tool, done)
    assert again.status_code == 403 and _title(again.text) == "Sign-in link used or expired"
    with lti.client() as other:
        elsewhere = lti_continue(other, lti.tool, done)
    assert elsewhere.status_code == 403 and _title(elsewhere.text) == "Sign-in link not for this browser"


def test_every_login_state_is_spent_once(lti: Lti) -> None:
    with lti.state.session_factory() as session:
        unspent = session.scalar(select(func.count()).select_from(LtiLogin).where(LtiLogin.used_at.is_(None)))
    # every launch above posted its form once (the ones that did not, above, started a login only)
    assert unspent is not None and unspent <= 2


def test_a_login_for_an_unknown_platform_or_another_site_is_refused(lti: Lti) -> None:
    with lti.client() as browser:
        unknown = browser.get(f"{lti.tool}/lti/login", params={"iss": "https://lms.invalid", "login_hint": "x", "target_link_uri": f"{lti.tool}/lti/launch"})
        elsewhere = browser.get(
            f"{lti.tool}/lti/login",
            params={"iss": lti.platform.url, "login_hint": "x", "target_link_uri": "https://evil.invalid/steal"},
        )
        junk = browser.post(f"{lti.tool}/lti/launch", data={"id_token": "x" * 10, "state": "y"})
    assert (unknown.status_code, _title(unknown.text)) == (400, "Unknown LMS")
    assert (elsewhere.status_code, _title(elsewhere.text)) == (400, "Launch for another site")
    assert junk.status_code == 403  # no state cookie for a made-up state

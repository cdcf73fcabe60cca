"""Sixth white-box red team of LTI 1.3: attacks that worked, each a test that asserts what a
safe tool does (a strict xfail until fixed; the fixes' own tests: ``test_round6_fixes``), driven over real HTTP against the real tool, the independent test
platform (``tests/lti/platform``) and the hostile LMS of the first round
(``tests/lti/test_redteam.Hostile``: a second platform registered with the tool, whose
launches and service answers the attacker writes).

Attempts that failed (the tool held), with what stops them:

- an id_token with ``alg`` none, or HS256 keyed with the platform's public JWK (key
  confusion), or RS256 with an embedded ``jwk`` header naming the platform's ``kid``: refused
  (``_verified``: RS256 only, the key from the platform's own set, RSA only).
- HS256 keyed with the RSA modulus text, under the platform's ``kid``: 401 (RS256 only).
- a hostile LMS's roster URL on the cloud metadata address (``169.254.169.254``, http or
  https): the LMS error page, nothing fetched (link-local is refused whatever the platform).
- a login begun with the real LMS and a token the hostile LMS signs claiming the real issuer:
  "Unknown signing key" (the key set is the state's platform's); a login begun with the
  hostile LMS and a token claiming the real issuer: "Wrong issuer".
- a hostile-LMS user whose ``sub`` and username are a real-LMS user's: a separate account
  (``LtiUser`` is keyed by platform and sub), never the real one.
- an accepted id_token replayed with a fresh state (nonce mismatch) or with its own spent
  state: 403.
- a burst of logins in the victim's browser (cookie bomb, CSRF on ``/lti/login``): 400 state
  cookies (96 KiB) later the tool still takes a launch (the cookies are path
  ``/lti/launch`` and expire in ten minutes; browsers' own cookie caps are not in reach of
  these tests).
- ``target_link_uri`` of another host, or ``localhost:port@evil``: "Launch for another site";
  the value is never redirected to (the destination is the tool's own page).
- a learner's "Use from a terminal" token on ``/api/v1/lti/platforms`` and ``/api/v1/users``:
  403 (admin and instructor accounts only); a TA's token gets no instructor API either.
- a deep-linking return URL on the host of another registered platform (same IP, another
  port): accepted by the site rule, but the answer is signed for the opener's platform and
  deployment, so another LMS would refuse it: no line item of another course is made.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from html import unescape
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import Body, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from sqlalchemy import select

from server.courses.corrections import override, take_back
from server.courses.sets import publish
from server.db import transaction
from server.lti import claims as c
from server.lti.platforms import add_deployment
from server.models import Course, Enrollment, LtiContext, LtiPlatform, LtiUser, utcnow
from server.models.correction import CorrectionKind
from tests.lti.conftest import LEARNER, STAFF, TA, Lti
from tests.lti.servers import launch, lti_continue
from tests.lti.test_attacks_round5 import SlowRoster
from tests.lti.test_redteam import (  # noqa: F401  (module fixtures, used by name)
    Hostile,
    _hostile_course,
    _hostile_learners,
    evil,
    hostile,
    hostile_launch,
    people,
    roster_button,
    served_and_registered,
    signed_in,
)

INSTITUTION_ADMIN = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator"
EXERCISE = "actor-loss"


def _course_role(lti: Lti, sub: str, slug: str) -> str | None:
    """The course role in ``slug`` of the account an LMS knows as ``sub`` (each test's subs are its
    own); None without one."""
    with lti.state.session_factory() as session:
        user_id = session.scalar(select(LtiUser.user_id).where(LtiUser.sub == sub))
        course_id = session.scalar(select(Course.id).where(Course.slug == slug))
        assert course_id is not None, slug
        row = session.get(Enrollment, (course_id, user_id)) if user_id is not None else None
        return row.role if row is not None else None


def _no_dashboard(answer: httpx.Response) -> str:
    """What ``/dashboard?course=`` gave: ``"none"`` when it is not the class dashboard (404, or a
    learner's redirect to their own page: ``server.dashboard.router.class_page``), else its status."""
    if answer.status_code == 404:
        return "none"
    if answer.status_code == 303 and "/dashboard/learners/" in answer.headers.get("location", ""):
        return "none"
    return str(answer.status_code)


# --- role escalation: an institution role over the course's own ------------------------------------


def test_a_learner_who_is_an_lms_administrator_elsewhere_stays_a_learner_in_their_course(
    lti: Lti, hostile: Hostile
) -> None:
    """A student who also holds an account-level admin role in the LMS (a student worker on a
    department's help desk: Canvas sends every account admin role as the institution role
    ``Administrator``) launches from a course where the LMS names them, in that course,
    ``Learner``. ``claims.standing`` takes any institution or system Administrator for staff
    before it looks at the context role, so they land on the course's dashboard as its
    instructor: every classmate's work and scores, overrides and excuses (their own included),
    the grades sent to the LMS gradebook. The LMS itself gives them in the course what its
    context role says. Secure: the context role the LMS gives for this course decides (docs:
    "A TA of one LMS course is a learner in the course where they learn")."""
    with lti.client() as browser:
        slug = _hostile_course(browser, lti, hostile, "R6-IA")
    with lti.client() as browser:
        answer = hostile_launch(browser, lti, hostile, sub="r6-ia", roles=[LEARNER, INSTITUTION_ADMIN], context="R6-IA")
        assert answer.status_code == 200, answer.text[-400:]
        page = signed_in(browser, lti, answer)
        dashboard = browser.get(f"{lti.tool}/dashboard", params={"course": slug}, follow_redirects=False)
    role = _course_role(lti, "r6-ia", slug)
    assert (role, _no_dashboard(dashboard)) == ("learner", "none"), (role, dashboard.status_code, str(page.url))
    assert "/dashboard/learners/" in str(page.url)


def test_someone_with_only_an_institution_role_is_refused(lti: Lti, hostile: Hostile) -> None:
    """docs/lti.md: "Anyone else (a Mentor, or someone with only an institution role) is
    refused with a page that says so." A launch whose only role is the institution role
    ``Administrator`` (any account admin, whatever its LMS permissions, opening a course it
    is not enrolled in) is taken for staff: the person becomes an instructor of the course,
    with its grades and the LMS gradebook sync. Secure: refused (403, "Not a member of this
    course"), nothing enrolled."""
    with lti.client() as browser:
        slug = _hostile_course(browser, lti, hostile, "R6-IO")
    with lti.client() as browser:
        answer = hostile_launch(browser, lti, hostile, sub="r6-io", roles=[INSTITUTION_ADMIN], context="R6-IO")
    assert answer.status_code == 403 and "Not a member of this course" in answer.text, answer.status_code
    assert _course_role(lti, "r6-io", slug) is None


# --- a roster answer older than a launch ------------------------------------------------------------


@pytest.fixture(scope="module")
def slow_roster(lti: Lti) -> Iterator[SlowRoster]:
    yield from served_and_registered(lti, SlowRoster)


def test_a_roster_answer_older_than_a_launch_does_not_give_back_a_removed_staff_role(
    lti: Lti, slow_roster: SlowRoster
) -> None:
    """A TA of the course launches (instructor of it here). The instructor presses "Sync the
    roster"; the LMS's answer (a big course's pages, a slow LMS) is made before the LMS took
    the TA role away (the TA is now a learner of the course: say they are a student who was a
    grader, now graded). While the answer is on its way the former TA launches: the LMS
    says ``Learner``, the tool enrolls them as a learner. Then the sync applies the older
    answer: the round-5 fix keeps a member who launched since the ask from being *dropped*,
    but a member the answer *lists* gets the answer's roles whatever came after
    (``record_member``): the former TA is an instructor again, with every classmate's scores
    and the overrides, until the next sync. Secure: a member seen after the roster was asked
    for keeps what their launch said."""
    lms = slow_roster
    prof, ta = "h-prof-R6-RR", "r6-rr-ta"
    lti.client().get(f"{lti.tool}/lti/jwks")  # the tool's key exists: the sync writes nothing before the LMS answers
    lms.listed = [
        {"user_id": prof, "roles": [STAFF], "status": "Active", "name": "Prof"},
        {"user_id": ta, "roles": [TA], "status": "Active", "name": "Former TA"},
    ]
    with lti.client() as staff:
        slug = _hostile_course(staff, lti, lms, "R6-RR")
        with lti.client() as browser:
            first = hostile_launch(browser, lti, lms, sub=ta, roles=[TA], context="R6-RR")
            assert first.status_code == 200, first.text[-400:]
        assert _course_role(lti, ta, slug) == "instructor"
        pressed: list[int] = []
        sync = threading.Thread(target=lambda: pressed.append(roster_button(staff, lti, slug).status_code), daemon=True)
        sync.start()
        assert lms.asked.wait(30), "the roster was not asked for"
        with lti.client() as former:
            answer = hostile_launch(former, lti, lms, sub=ta, roles=[LEARNER], context="R6-RR")
            assert answer.status_code == 200, answer.text[-400:]
            page = signed_in(former, lti, answer)
            assert "/dashboard/learners/" in str(page.url), str(page.url)
            assert _course_role(lti, ta, slug) == "learner"
            lms.release.set()
            sync.join(60)
            assert pressed == [303], pressed
            again = former.get(f"{lti.tool}/dashboard", params={"course": slug}, follow_redirects=False)
    assert (_course_role(lti, ta, slug), _no_dashboard(again)) == ("learner", "none")


# --- grades: a score taken back stays in the LMS ----------------------------------------------------


def _course(lti: Lti, slug: str) -> tuple[Course, LtiContext]:
    with lti.state.session_factory() as session:
        course = session.scalar(select(Course).where(Course.slug == slug))
        assert course is not None
        link = session.scalar(select(LtiContext).where(LtiContext.course_id == course.id))
        assert link is not None
        session.expunge_all()
    return course, link


def test_an_override_taken_back_does_not_stay_in_the_lms_gradebook(lti: Lti, evil: Hostile) -> None:
    """An instructor overrides a learner's exercise to 100 by mistake (the wrong learner, who
    never handed it in); the grades go to the LMS (``grades apply`` or the automatic job). The
    instructor takes the override back: the score that counts is now nothing (never
    attempted), so ``plan`` has no line for it (``score.counted is None and not
    score.excused``: "nothing to send"), and the LMS gradebook keeps the 100 for good; the
    preview shows nothing to send, so nobody sees it. Secure: what was sent and no longer
    counts is cleared in the LMS (a score without ``scoreGiven``, as for an excuse)."""
    slug = _hostile_learners(lti, evil, "R6-TB", ["r6tom"])
    with transaction(lti.state.session_factory) as session:
        course = session.scalar(select(Course).where(Course.slug == slug))
        assert course is not None
        publish(session, course, EXERCISE)
        override(session, course, "r6tom", EXERCISE, 100, "by hand (wrong learner)", "prof")
    first = lti.cli("lti", "grades", "apply", slug)
    assert first.returncode == 0, first.stdout + first.stderr
    assert [s.get("scoreGiven") for s in evil.scores if s["userId"] == "r6tom"] == [100]
    with transaction(lti.state.session_factory) as session:
        course = session.scalar(select(Course).where(Course.slug == slug))
        assert course is not None
        take_back(session, course, "r6tom", EXERCISE, CorrectionKind.OVERRIDE, "prof")
    again = lti.cli("lti", "grades", "apply", slug)
    assert again.returncode == 0, again.stdout + again.stderr
    last = [s for s in evil.scores if s["userId"] == "r6tom"][-1]
    assert last.get("scoreGiven") is None, (last, again.stderr[-300:])


# --- grades: two applies at once leave an older score in the LMS --------------------------------------


@dataclass
class RacingGradebook(Hostile):
    """A hostile (here: merely slow) LMS whose gradebook keeps the newest score per learner
    by its ``timestamp`` (AGS §3.4: an older one is ignored), lists the exercise's column,
    and holds two answers until the test lets them go: the first column lookup, and the
    answer to the first score of 90 (which it has kept already)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    lookups: int = 0
    posts: int = 0
    lookup_held: threading.Event = field(default_factory=threading.Event)
    release_lookup: threading.Event = field(default_factory=threading.Event)
    score_held: threading.Event = field(default_factory=threading.Event)
    release_score: threading.Event = field(default_factory=threading.Event)
    kept: dict[str, dict[str, Any]] = field(default_factory=dict)

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.middleware("http")
        async def record(request: Request, call_next: Any) -> Any:
            self.hits.append((request.method, request.url.path + "?" + request.url.query, dict(request.headers)))
            return await call_next(request)

        @app.get("/jwks")
        def jwks() -> Response:
            return JSONResponse(
                {"keys": [{**self.key.as_dict(private=False), "kid": self.key.kid, "alg": "RS256", "use": "sig"}]}
            )

        @app.post("/token")
        def token() -> Response:
            return JSONResponse({"access_token": self.access_token, "token_type": "Bearer", "expires_in": 3600})

        @app.get("/ags/lineitems")
        def line_items() -> Response:  # a plain def: served from a thread, so a held answer holds only itself
            with self.lock:
                self.lookups += 1
                first = self.lookups == 1
            if first:
                self.lookup_held.set()
                assert self.release_lookup.wait(12)  # within the tool's 15 s per LMS request
            item = {
                "id": f"{self.url}/ags/lineitems/{EXERCISE}",
                "resourceId": EXERCISE,
                "tag": c.LINE_ITEM_TAG,
                "scoreMaximum": 100,
            }
            return JSONResponse([item])

        @app.post("/ags/lineitems/{item}/scores")
        def score(item: str, body: dict[str, Any] = Body(...)) -> Response:  # noqa: B008
            with self.lock:
                self.posts += 1
                held = body.get("scoreGiven") == 90 and not self.score_held.is_set()  # the newer score's answer is slow
                last = self.kept.get(str(body.get("userId")))
                if last is None or str(last["timestamp"]) <= str(body["timestamp"]):
                    self.kept[str(body.get("userId"))] = body
            if held:
                self.score_held.set()
                assert self.release_score.wait(12)
            return JSONResponse({})

        @app.api_route("/{rest:path}", methods=["GET", "POST"])
        def anything(rest: str) -> Response:
            return JSONResponse([])

        return app


@pytest.fixture(scope="module")
def racing(lti: Lti) -> Iterator[RacingGradebook]:
    yield from served_and_registered(lti, RacingGradebook)


def test_the_clis_apply_and_the_background_job_at_once_leave_the_score_that_counts_in_the_lms(
    lti: Lti, racing: RacingGradebook
) -> None:
    """An administrator runs ``ppo-grader lti grades apply COURSE``; it reads what to send (an
    override of 80), then waits on the LMS (its column lookup: a slow gradebook). Meanwhile the
    instructor corrects the override to 90 and presses "Send" (or the automatic job runs on
    the change): the job reads 90, sends it, and the LMS is slow to answer. Then the CLI's
    lookup comes back and it sends its 80, timestamped later, which the LMS keeps (AGS: the
    newest timestamp wins), and records 80; then the job's answer comes and it records 90.
    The tool now holds "90 sent", the LMS shows 80, and every later apply sends nothing (the
    preview: "up to date"). Secure: the LMS ends with the score that counts (90): what a job
    sends is what counts when it sends it, or the two applies of a course are serialized, or
    what is recorded is only ever the newest send."""
    lms = racing
    slug = _hostile_learners(lti, lms, "R6-AP", ["r6amy"])
    with transaction(lti.state.session_factory) as session:
        course = session.scalar(select(Course).where(Course.slug == slug))
        assert course is not None
        publish(session, course, EXERCISE)
        override(session, course, "r6amy", EXERCISE, 80, "by hand", "prof")
    _course_row, link = _course(lti, slug)
    done: list[int] = []
    cli = threading.Thread(target=lambda: done.append(lti.cli("lti", "grades", "apply", slug).returncode), daemon=True)
    cli.start()
    assert lms.lookup_held.wait(90), "the CLI's apply did not look up the column"
    with transaction(lti.state.session_factory) as session:
        course = session.scalar(select(Course).where(Course.slug == slug))
        assert course is not None
        override(session, course, "r6amy", EXERCISE, 90, "by hand, corrected", "prof")
        row = session.get(LtiContext, link.id)
        assert row is not None
        row.send_requested_at = utcnow()  # the LMS page's "Send" button
    lms.score_held.wait(10)  # the background job sent 90 (a tool that serializes the two sends it later)
    lms.release_lookup.set()
    cli.join(20)
    lms.release_score.set()
    cli.join(60)
    assert done == [0]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with lti.state.session_factory() as session:
            row = session.get(LtiContext, link.id)
            if row is not None and row.send_requested_at is None:
                break
        time.sleep(0.1)
    final = lti.cli("lti", "grades", "apply", slug)  # what an administrator runs to be sure
    assert final.returncode == 0, final.stdout + final.stderr
    assert lms.kept["r6amy"].get("scoreGiven") == 90, (lms.kept["r6amy"], final.stderr[-300:])


# --- an LMS's user under a login the tool's own staff hand out ---------------------------------------


def _terminal_token(browser: httpx.Client, lti: Lti) -> str:
    """A personal token made on "Use from a terminal" by the browser's signed-in user."""
    page = browser.get(f"{lti.tool}/dashboard/terminal")
    csrf = unescape(re.search(r'name="csrf" value="([^"]+)"', page.text).group(1))  # type: ignore[union-attr]
    made = browser.post(f"{lti.tool}/dashboard/terminal", data={"csrf": csrf}, headers={"Origin": lti.tool})
    return unescape(re.search(r'<pre id="new-token"><code>([^<]+)</code>', made.text).group(1))  # type: ignore[union-attr]


def _squatter(lti: Lti, lms: Hostile, context: str, sub: str, login: str) -> str:
    """A learner of the hostile LMS whose LMS username is ``login`` (the LMS's to choose: a
    Moodle with self-registration lets its users pick theirs): signed in once, their own
    terminal token returned."""
    with lti.client() as browser:
        _hostile_course(browser, lti, lms, context)
    with lti.client() as browser:
        answer = hostile_launch(browser, lti, lms, sub=sub, roles=[LEARNER], context=context, preferred_username=login)
        assert answer.status_code == 200, answer.text[-400:]
        page = signed_in(browser, lti, answer)
        assert f"/dashboard/learners/{login}" in str(page.url), str(page.url)  # the account is called ``login``
        return _terminal_token(browser, lti)


def _api(lti: Lti, token: str, path: str) -> int:
    with httpx.Client(verify=str(lti.cert), timeout=30) as api:
        return api.get(f"{lti.tool}{path}", headers={"Authorization": f"Bearer {token}"}).status_code


def test_adding_an_instructor_by_login_never_raises_an_lms_made_account(lti: Lti, hostile: Hostile) -> None:
    """A registered LMS (a partner school's Moodle, compromised or with self-registration)
    launches a learner whose username is the login the tool's administrator will give a new
    colleague (``r6jdoe``: logins are SIS ids or initials, docs/instructors.md "Logins"). The
    tool names the LMS's account after it (the name is free). The administrator then runs
    ``ppo-grader courses staff add r6-term r6jdoe --role instructor``: ``add_staff`` finds the
    account by name and, as it is a learner account, raises it to an **instructor account**
    (``reads_everything``: every user, roster and gradebook of the tool, the instructor API).
    Whoever the LMS launches as ``r6-squat`` now holds it, through their LMS launches and the
    token they made. docs/lti.md: "Nobody is made an instructor or admin account by an LMS";
    "an account an LMS made has instructor powers only in the courses it teaches there".
    Secure: an account an LMS made is never found by login for staff (refused, or a new
    account), so its token stays a learner's (403 on ``/api/v1/users``)."""
    token = _squatter(lti, hostile, "R6-SQ", "r6-squat", "r6jdoe")
    assert _api(lti, token, "/api/v1/users") == 403
    made = lti.cli("courses", "create", "r6-term", "--title", "Term six")
    assert made.returncode == 0, made.stdout + made.stderr
    lti.cli("courses", "staff", "add", "r6-term", "r6jdoe", "--role", "instructor")
    assert _api(lti, token, "/api/v1/users") == 403


def test_a_roster_import_never_enrolls_an_lms_made_account(lti: Lti, hostile: Hostile, tmp_path: Path) -> None:
    """The same squatter (an LMS's learner named after a login the school hands out, here a
    student number). An instructor of a course that is not linked to any LMS imports the
    term's roster (``ppo-grader users import roster.csv --course r6-seminar``): the row
    ``s6123456`` finds the LMS's account by name and enrolls it ("users who exist already are
    enrolled"), and prints no token for the real student (an existing account). The LMS's user
    is now a learner of a course of the tool's own: its exercises, boards and classmates'
    pseudonyms, submitting as the student. docs/lti.md: "An account an LMS made is in the
    courses the LMS puts it in and no other". Secure: not enrolled (the row refused as an
    LMS's account, or a new account made for it)."""
    _squatter(lti, hostile, "R6-SQ2", "r6-squat-2", "s6123456")
    made = lti.cli("courses", "create", "r6-seminar", "--title", "Seminar")
    assert made.returncode == 0, made.stdout + made.stderr
    roster = tmp_path / "roster.csv"
    roster.write_text("name,display_name\ns6123456,Sam Student\n")
    lti.cli("users", "import", str(roster), "--course", "r6-seminar")
    assert _course_role(lti, "r6-squat-2", "r6-seminar") is None


# --- two installations in one LMS course: one gradebook column, two courses' scores ------------------


R6_PEOPLE = {
    "r6-prof": {"sub": "r6-sub-prof", "login": "r6prof", "name": "Prof Six", "roles": {"R6DEP": [STAFF]}},
    "r6-dana": {"sub": "r6-sub-dana", "login": "r6dana", "name": "Dana Six", "roles": {"R6DEP": [LEARNER]}},
}
SECOND_INSTALL = "never-registered"  # the test platform's other deployment id (forge="bad_deployment")


def test_two_installations_in_one_lms_course_never_send_to_one_column(lti: Lti) -> None:
    """docs/lti.md: "Another installation of the same key in a sub-account has its own
    deployment id: ``ppo-grader lti add-deployment``". Canvas shows a course every
    installation of the key above it (its account's and a sub-account's), each launch naming
    its own deployment, the course the same context. The tool keys a linked course by
    platform, deployment and context, so the second installation's first launch makes a
    second course for the same LMS course; each has the exercise, each learner's score that
    counts there (its own dates, overrides, submissions). But an exercise's column is found by
    resource id and tag in the LMS course ("a second installation never makes a duplicate
    column"): the second course finds the first's column and sends its own scores there, so
    the one gradebook column takes whichever course sent last (here Dana's 30 of the second
    course over her 90 of the first, back and forth at every change). Secure: one LMS course's
    column holds one course's scores (the installations share the course, or each its own
    column)."""
    lti.platform.people(R6_PEOPLE, {"R6DEP": {"title": "Two installs", "label": "R6DEP"}})
    with transaction(lti.state.session_factory) as session:
        platform = session.scalar(select(LtiPlatform).where(LtiPlatform.issuer == lti.platform.url))
        assert platform is not None
        add_deployment(session, platform, SECOND_INSTALL)  # as `ppo-grader lti add-deployment` does
    slugs = []
    for forge in ("", "bad_deployment"):
        for user in ("r6-prof", "r6-dana"):
            with lti.client() as browser:
                extra = {"forge": forge} if forge else {}
                page = lti_continue(
                    browser, lti.tool, launch(browser, lti.platform, user=user, context="R6DEP", **extra)
                )
                assert page.status_code == 200, page.text[-400:]
                if user == "r6-prof":
                    slugs.append(str(page.url.params["course"]))
    if slugs[0] == slugs[1]:
        return  # one LMS course, one course: nothing to confuse
    for slug, score, reason in ((slugs[0], 90, "first install's grade"), (slugs[1], 30, "second install's grade")):
        with transaction(lti.state.session_factory) as session:
            course = session.scalar(select(Course).where(Course.slug == slug))
            assert course is not None
            publish(session, course, EXERCISE)
            override(session, course, "r6dana", EXERCISE, score, reason, "r6prof")
        applied = lti.cli("lti", "grades", "apply", slug)
        assert applied.returncode == 0, applied.stdout + applied.stderr
    reasons: dict[str, set[str]] = {}
    for sent in lti.platform.state()["scores"]:
        if sent.get("userId") == "r6-sub-dana":
            reasons.setdefault(str(sent["lineitem"]), set()).add(
                "first" if "first install" in str(sent.get("comment")) else "second"
            )
    assert reasons and all(len(found) == 1 for found in reasons.values()), reasons

"""Second white-box red team of LTI 1.3 (issue 35): attacks that worked, each written as a
strict xfail that asserts what a safe tool does, and fixed since (branch lti-fix2: the markers
removed). The last section holds the fixers' own tests of the same fixes.

The attacker plays the parts of the first red team (``tests/lti/test_redteam``): an outsider,
the independent test platform's users, and the hostile LMS (:class:`Hostile`) whose launches
and service answers the attacker writes. Everything goes over real HTTP to the real tool.
The attempts that failed (the tool held) are listed in the red-team report, not here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape
from urllib.parse import urlencode

import pytest
from joserfc.jws import extract_compact
from sqlalchemy import select

from server.courses.corrections import override
from server.courses.sets import publish
from server.db import transaction
from server.lti import claims as c
from server.models import Course, LtiContext, LtiUser
from tests.lti.conftest import LEARNER, Lti, finished_request
from tests.lti.test_redteam import (  # noqa: F401  (module fixtures, used by name)
    Hostile,
    _deep_linking,
    _hostile_course,
    _hostile_learners,
    _member,
    _page,
    _Served,
    served_and_registered,
    evil,
    hostile,
    hostile_launch,
    people,
    roster_button,
    signed_in,
)


def _roster_of_course(lti: Lti, evil: Hostile, context: str, memberships_url: str | None = None) -> tuple[str, str]:
    """The hostile LMS's instructor opens ``context`` (its roster at ``memberships_url``) and
    presses the course LTI page's roster button; how the background job's sync went (the state
    and outcome the page's ``#lti-task-roster`` row shows)."""
    url = memberships_url or f"{evil.url}/nrps"
    with lti.client() as browser:
        answer = hostile_launch(
            browser, lti, evil, sub=f"h-prof-{context}", context=context,
            **{c.NRPS: {"context_memberships_url": url, "service_versions": ["2.0"]}},
        )
        assert answer.status_code == 200, answer.text[-400:]
        page = signed_in(browser, lti, answer)
        course = str(page.url.params["course"])
        assert roster_button(browser, lti, course).status_code == 303
        return finished_request(lti, course, "roster")


# --- roster (NRPS): a hostile LMS's URLs and members -------------------------------------------


def test_a_roster_url_that_is_not_https_gets_the_lms_error_page(lti: Lti, evil: Hostile) -> None:
    answer = _roster_of_course(lti, evil, "HC2-ftp", "ftp://127.0.0.1/roster")
    # the page's roster row: failed, "Nothing was changed", never an API error body
    assert answer[0] == "failed" and "Nothing was changed" in answer[1], answer


def test_a_roster_paging_link_that_is_not_https_gets_the_lms_error_page(lti: Lti, evil: Hostile) -> None:
    def roster(page: int) -> tuple[bytes, str]:
        return json.dumps({"members": [_member("h2-p", "P")]}).encode(), '<ftp://127.0.0.1/next>; rel="next"'

    evil.roster = roster
    answer = _roster_of_course(lti, evil, "HC2-link")
    assert answer[0] == "failed" and "Nothing was changed" in answer[1], answer


_LONE = "\ud800"  # valid JSON ("\\ud800"), not storable text


def test_a_roster_member_whose_id_is_not_text_is_skipped(lti: Lti, evil: Hostile) -> None:
    evil.roster = lambda _n: _page([_member("h2-ok", "Ok"), _member("s" + _LONE, "Bad")], None, evil)
    answer = _roster_of_course(lti, evil, "HC2-sub")
    assert answer[0] in ("done", "failed") and "inside ppo-grader" not in answer[1], answer  # never a 500


def test_a_roster_member_whose_role_is_not_text_is_skipped(lti: Lti, evil: Hostile) -> None:
    evil.roster = lambda _n: _page([_member("h2-role", "Role", [LEARNER, "R" + _LONE])], None, evil)
    answer = _roster_of_course(lti, evil, "HC2-role")
    assert answer[0] in ("done", "failed") and "inside ppo-grader" not in answer[1], answer  # never a 500


def test_a_roster_member_id_with_a_nul_is_not_stored(lti: Lti, evil: Hostile) -> None:
    evil.roster = lambda _n: _page([_member("h2-nul\x00x", "Nul")], None, evil)
    _roster_of_course(lti, evil, "HC2-nul")
    with lti.state.session_factory() as session:
        subs = list(session.scalars(select(LtiUser.sub)))
    assert [s for s in subs if "\x00" in s] == []


# --- grades (AGS): a hostile LMS's line item ids ----------------------------------------------------


def _grades_with_line_item(lti: Lti, evil: Hostile, context: str, login: str, item_id: str) -> tuple[str, LtiContext]:
    """A course of the hostile LMS with one hand-graded score to send, whose gradebook lists
    the exercise's column under ``item_id``; ``ppo-grader lti grades apply``'s output and the link."""
    slug = _hostile_learners(lti, evil, context, [login])
    evil.lineitems_body = json.dumps([{"id": item_id, "resourceId": "actor-loss", "tag": c.LINE_ITEM_TAG}]).encode()
    with transaction(lti.state.session_factory) as session:
        course = session.scalar(select(Course).where(Course.slug == slug))
        assert course is not None
        publish(session, course, "actor-loss")
        override(session, course, login, "actor-loss", 80, "by hand", "prof")
    done = lti.cli("lti", "grades", "apply", slug)
    with lti.state.session_factory() as session:
        link = session.scalar(select(LtiContext).where(LtiContext.context_id == context))
        assert link is not None
        session.expunge(link)
    return done.stdout + done.stderr, link


def test_a_line_item_id_that_is_not_https_is_a_recorded_lms_error(lti: Lti, evil: Hostile) -> None:
    said, link = _grades_with_line_item(lti, evil, "HC2-li-ftp", "li-ftp", "ftp://127.0.0.1/col")
    # as any other LMS failure: shown on the course's LTI page and retried with backoff
    assert link.sync_error is not None and link.next_sync_at is not None, (link.sync_error, said[-300:])


def test_a_line_item_id_that_is_not_text_is_an_lms_error(lti: Lti, evil: Hostile) -> None:
    said, link = _grades_with_line_item(lti, evil, "HC2-li-lone", "li-lone", "https://127.0.0.1/col" + _LONE)
    assert "UnicodeEncodeError" not in said and "Traceback" not in said, said[-400:]
    assert link.sync_error is not None, said[-300:]



def test_a_column_id_that_is_not_https_leaves_the_course_lti_page_working(lti: Lti, evil: Hostile) -> None:
    with lti.client() as browser:
        slug = _hostile_course(browser, lti, evil, "HC2-dl-col")
        evil.lineitems_body = json.dumps(
            [{"id": "ftp://127.0.0.1/col", "resourceId": "actor-loss", "tag": c.LINE_ITEM_TAG}]
        ).encode()
        picker = hostile_launch(
            browser, lti, evil, sub="h-prof-HC2-dl-col", context="HC2-dl-col",
            **_deep_linking(evil, f"{evil.url}/dl/return"),
        )
        found = re.search(r'<form id="lti-picker" method="post" action="([^"]+)"', picker.text)
        assert found, picker.text[-300:]
        sent = browser.post(
            lti.tool + unescape(found.group(1)),
            content=urlencode([("exercise", "actor-loss")]),
            headers={"Origin": lti.tool, "Content-Type": "application/x-www-form-urlencoded"},
        )
        assert sent.status_code == 200, sent.text[-300:]  # the column is remembered from the LMS's list
        page = browser.get(f"{lti.tool}/dashboard/lti", params={"course": slug})
        csrf = unescape(re.search(r'name="csrf" value="([^"]+)"', page.text).group(1))  # type: ignore[union-attr]
        pressed = browser.post(  # what the LMS has: asked on the page's button (its job), never at a view
            f"{lti.tool}/dashboard/lti/compare", data={"csrf": csrf, "course": slug}, headers={"Origin": lti.tool}
        )
        assert pressed.status_code == 200, pressed.text[-300:]
        finished_request(lti, slug, "compare")
        compared = browser.get(f"{lti.tool}/dashboard/lti", params={"course": slug})
    # the page still shows (the LMS's results as an LMS error on it), its buttons usable
    assert page.status_code == compared.status_code == 200, (page.status_code, compared.status_code)
    assert "InvalidRegistration" not in page.text + compared.text, compared.text[:300]


# --- deep linking: the return URL's "site" -----------------------------------------------------------


@dataclass
class _SchoolLms(Hostile):
    """A hostile LMS whose issuer is a school's bare domain under a public suffix (``co.uk``)."""

    @property
    def issuer(self) -> str:
        return "https://school.co.uk"


@pytest.fixture(scope="module")
def school(lti: Lti) -> Iterator[_SchoolLms]:
    yield from served_and_registered(lti, _SchoolLms)


def test_the_school_lms_opens_the_picker_for_its_own_return_url(lti: Lti, school: _SchoolLms) -> None:
    """Not an attack: the harness works, so the xfail below fails for the site rule."""
    with lti.client() as browser:
        answer = hostile_launch(
            browser, lti, school, sub="h2-dl", context="HC2-dl", **_deep_linking(school, "https://school.co.uk/dl/return")
        )
    assert answer.status_code == 200 and 'id="lti-picker"' in answer.text, answer.text[-300:]


def test_a_deep_linking_return_url_on_another_site_under_the_same_public_suffix_is_refused(
    lti: Lti, school: _SchoolLms
) -> None:
    with lti.client() as browser:
        answer = hostile_launch(
            browser, lti, school, sub="h2-dl", context="HC2-dl", **_deep_linking(school, "https://attacker.co.uk/steal")
        )
    assert 400 <= answer.status_code < 500 and 'id="lti-refused"' in answer.text, (answer.status_code, answer.text[:200])
    assert "attacker.co.uk" not in answer.headers.get("content-security-policy", "")


# --- noticed by the fixers (issue 35): no test of the red team's ----------------------------------


def test_the_roster_sync_counts_the_members_it_left_out(lti: Lti, evil: Hostile) -> None:
    with lti.client() as browser:
        slug = _hostile_course(browser, lti, evil, "HC2-count")
    mentor = "http://purl.imsglobal.org/vocab/lis/v2/membership#Mentor"
    evil.roster = lambda _n: _page(
        [
            _member("h2c-ok", "Ok"),
            _member("h2c-name", "N" + _LONE),  # kept: a name that is not text is left out, not the member
            _member("h2c" + _LONE, "Lone"),
            _member("h2c\x00nul", "Nul"),
            _member("h2c-role", "Role", [LEARNER, "R\x00"]),
            _member("h2c-mentor", "Mentor", [mentor]),
        ],
        None,
        evil,
    )
    done = lti.cli("lti", "sync-roster", slug)
    assert done.returncode == 0, done.stderr[-400:]
    assert "Added 2 " in done.stderr and "1 skipped" in done.stderr and "3 left out" in done.stderr, done.stderr[-400:]
    with lti.state.session_factory() as session:
        subs = set(session.scalars(select(LtiUser.sub).where(LtiUser.sub.like("h2c%"))))
    assert subs == {"h2c-ok", "h2c-name"}


def test_an_lms_answer_that_reads_as_console_markup_is_printed_as_text(lti: Lti, evil: Hostile) -> None:
    """The CLI's error line quotes the LMS's answer: "[/x]" in it is text, not a Rich closing tag."""
    said, link = _grades_with_line_item(lti, evil, "HC2-li-markup", "li-markup", "ftp://127.0.0.1/[/x]")
    assert "Traceback" not in said and "[/x]" in said, said[-400:]
    assert link.sync_error is not None and "[/x]" in link.sync_error


def test_a_column_listed_with_an_unusable_id_is_not_asked_for_again_at_deep_linking(lti: Lti, evil: Hostile) -> None:
    """No duplicate column: the LMS lists the exercise's column (resource id and tag), so the
    deep-linking answer asks for none, however unusable its id; the grades job reports the id."""
    with lti.client() as browser:
        _hostile_course(browser, lti, evil, "HC2-dl-dup")
        evil.lineitems_body = json.dumps(
            [{"id": "ftp://127.0.0.1/col", "resourceId": "actor-loss", "tag": c.LINE_ITEM_TAG}]
        ).encode()
        picker = hostile_launch(
            browser, lti, evil, sub="h-prof-HC2-dl-dup", context="HC2-dl-dup",
            **_deep_linking(evil, f"{evil.url}/dl/return"),
        )
        found = re.search(r'<form id="lti-picker" method="post" action="([^"]+)"', picker.text)
        assert found, picker.text[-300:]
        sent = browser.post(
            lti.tool + unescape(found.group(1)),
            content=urlencode([("exercise", "actor-loss")]),
            headers={"Origin": lti.tool, "Content-Type": "application/x-www-form-urlencoded"},
        )
    token = re.search(r'name="JWT" value="([^"]+)"', sent.text)
    assert sent.status_code == 200 and token, sent.text[-300:]
    items = json.loads(extract_compact(unescape(token.group(1)).encode()).payload)[c.CONTENT_ITEMS]
    assert [item["custom"][c.CUSTOM_EXERCISE] for item in items] == ["actor-loss"]
    assert all("lineItem" not in item for item in items), items

"""What closes the third red team's attacks (``tests/lti/test_redteam3``) beyond its own tests,
and the three holes it noted without one: a picker's form from another browser, the LMS page
calling the LMS at every view, and NAT64 addresses (``tests/lti/test_addresses``).

All over real HTTP to the real tool and a hostile LMS (:class:`~tests.lti.test_redteam.Hostile`),
as the red teams drive it; the CLI is the real ``ppo-grader`` process.
"""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from html import unescape
from urllib.parse import urlencode

import httpx
import pytest
from sqlalchemy import select

from server.lti import claims as c
from server.lti.errors import LmsUnreachable
from server.lti.http import AddressKind, call, lms_client
from server.models import Course, Enrollment, LtiContext, LtiLineItem, LtiUser, User
from server.terminal import out, plain
from server.text_guard import display_text, printable_text
from tests.lti.conftest import LEARNER, STAFF, TA, Lti, finished_request
from tests.lti.test_redteam import (  # noqa: F401  (module fixtures, used by name)
    Hostile,
    _deep_linking,
    _hostile_course,
    _member,
    _page,
    evil,
    hostile,
    hostile_launch,
    people,
    roster_button,
    signed_in,
)

ESCAPES = "\x1b]0;owned\x07\x1b[2J\u202eevil\u2066"


def _role(lti: Lti, sub: str, slug: str) -> str | None:
    with lti.state.session_factory() as session:
        return session.scalar(
            select(Enrollment.role)
            .join(Course, Course.id == Enrollment.course_id)
            .join(LtiUser, LtiUser.user_id == Enrollment.user_id)
            .where(Course.slug == slug, LtiUser.sub == sub)
        )


# --- a dropped member's staff powers ---------------------------------------------------------------


def test_a_dropped_teaching_assistant_listed_again_or_launching_again_teaches_again(lti: Lti, evil: Hostile) -> None:
    context = "HC3F-readd"
    prof_member = _member(f"h-prof-{context}", "Prof", [STAFF])
    with lti.client() as prof, lti.client() as ta:
        slug = _hostile_course(prof, lti, evil, context)
        assert signed_in(ta, lti, hostile_launch(ta, lti, evil, sub="h3f-ta", roles=[TA], context=context)).status_code == 200
        dashboard = f"{lti.tool}/dashboard"
        evil.roster = lambda _n: _page([prof_member], None, evil)  # no longer listed at all
        assert roster_button(prof, lti, slug).status_code == 303
        assert (_role(lti, "h3f-ta", slug), ta.get(dashboard, params={"course": slug}).status_code) == (None, 404)
        # a dropped TA is in no course at all: not the default course's learner either
        assert ta.get(dashboard).status_code == 404
        evil.roster = lambda _n: _page([prof_member, _member("h3f-ta", "Tess", [TA])], None, evil)
        assert roster_button(prof, lti, slug).status_code == 303  # the LMS lists them again
        assert _role(lti, "h3f-ta", slug) == "instructor"
        assert ta.get(dashboard, params={"course": slug}).status_code == 200  # the same session, staff again
        evil.roster = lambda _n: _page([prof_member], None, evil)
        assert roster_button(prof, lti, slug).status_code == 303
        assert ta.get(dashboard, params={"course": slug}).status_code == 404
    with lti.client() as again:  # a launch as TA restores it too
        assert signed_in(again, lti, hostile_launch(again, lti, evil, sub="h3f-ta", roles=[TA], context=context)).status_code == 200
        assert again.get(dashboard, params={"course": slug}).status_code == 200
    assert _role(lti, "h3f-ta", slug) == "instructor"


def test_a_dropped_learner_keeps_their_enrollment_and_work(lti: Lti, evil: Hostile) -> None:
    context = "HC3F-learner"
    with lti.client() as prof, lti.client() as learner:
        slug = _hostile_course(prof, lti, evil, context)
        assert hostile_launch(learner, lti, evil, sub="h3f-l", roles=[LEARNER], context=context).status_code == 200
        evil.roster = lambda _n: _page([_member(f"h-prof-{context}", "Prof", [STAFF])], None, evil)
        assert roster_button(prof, lti, slug).status_code == 303
    assert _role(lti, "h3f-l", slug) == "learner"


# --- LMS text: printable where it enters, escaped where the CLI prints it ---------------------------


def test_display_text_loses_its_control_characters_and_identifiers_holding_one_are_refused() -> None:
    assert display_text("Eve\x1b[2J\tthe\n\u202eGreat\u2069 ", 128) == "Eve[2J the Great"
    coder = "\U0001f469\u200d\U0001f4bb"  # woman technologist: two emoji and a zero-width joiner
    assert display_text(f"Zo\u00eb {coder} \u200f", 128) == f"Zo\u00eb {coder}"  # the joiner stays, the RLM goes
    assert display_text("a\ud800", 128) is None and display_text(7, 128) is None
    assert printable_text("h-sub-1", 255) == "h-sub-1"
    assert [printable_text(v, 255) for v in ("h\x1b", "a\nb", "\u202eid", "x" * 256, "\ud800")] == [None] * 5


def test_a_launch_whose_display_text_holds_escapes_is_stored_without_them(lti: Lti, evil: Hostile) -> None:
    context = "HC3F-esc"
    with lti.client() as prof:
        _hostile_course(prof, lti, evil, context)
    with lti.client() as learner:
        answer = hostile_launch(
            learner, lti, evil, sub="h3f-esc", roles=[LEARNER], context=context, name=f"Eve{ESCAPES}", email=f"e{ESCAPES}@x"
        )
        assert answer.status_code == 200, answer.text[-300:]
    with lti.state.session_factory() as session:
        user = session.scalar(select(User).join(LtiUser, LtiUser.user_id == User.id).where(LtiUser.sub == "h3f-esc"))
        email = session.scalar(select(LtiUser.email).where(LtiUser.sub == "h3f-esc"))
    assert user is not None and user.display_name == "Eve]0;owned[2Jevil" and email == "e]0;owned[2Jevil@x"


@pytest.mark.parametrize("where", ["sub", "context id", "role"])
def test_a_launch_whose_identifier_holds_a_control_character_is_refused(lti: Lti, evil: Hostile, where: str) -> None:
    claims: dict[str, object] = {"sub": "h3f-id", "context": "HC3F-id"}
    if where == "sub":
        claims["sub"] = "h3f\x1b[2Jid"
    elif where == "context id":
        claims[c.CONTEXT] = {"id": "HC3F\nid", "title": "T", "label": "hc3f-id"}
    else:
        claims["roles"] = [STAFF + "\x1b[2J"]
    with lti.client() as browser:
        answer = hostile_launch(browser, lti, evil, **claims)  # type: ignore[arg-type]
    assert answer.status_code == 400 and ("control character" in answer.text or "printable" in answer.text), answer.text[-300:]


def test_a_roster_member_whose_id_holds_a_control_character_is_left_out(lti: Lti, evil: Hostile) -> None:
    context = "HC3F-roster"
    with lti.client() as prof:
        slug = _hostile_course(prof, lti, evil, context)
    members = [
        _member(f"h-prof-{context}", "Prof", [STAFF]),
        _member("h3f\x1b]0;x\x07r", "Rogue"),
        _member("h3f-named", "Ned\x1b[31m Red\u202e"),
    ]
    evil.roster = lambda _n: _page(members, None, evil)
    done = lti.cli("lti", "sync-roster", slug)
    assert done.returncode == 0 and "1 left out" in done.stderr, done.stderr[-300:]
    with lti.state.session_factory() as session:
        names = set(session.scalars(select(User.display_name).join(LtiUser, LtiUser.user_id == User.id).where(LtiUser.sub.like("h3f%"))))
    assert "Ned[31m Red" in names and not any("\x1b" in n for n in names)


def test_plain_shows_stored_text_as_itself_in_a_rich_console() -> None:
    text = "[/x]Eve [bold]b[/bold] [link=https://evil.example]x[/link] :warning: \x1b[2J\u202e end\\"
    with out.capture() as seen:
        out.print(plain(text), highlight=False, soft_wrap=True)
    assert seen.get() == "[/x]Eve [bold]b[/bold] [link=https://evil.example]x[/link] :warning: \\x1b[2J\\u202e end\\\n"


def test_the_cli_escapes_stored_text_an_older_version_let_in(lti: Lti, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stored before the entry rule (or by any other path): the CLI still prints it as text."""
    monkeypatch.setenv("COLUMNS", "300")  # tables as wide as their text: no cell wrapped mid-escape
    with lti.state.session_factory() as session:
        session.add(User(name="h3f-old", display_name="O[/b]\x1b[2J", role="learner"))
        session.add(Course(slug="h3f-old", title="[red]\x1b[2J\u202e"))
        session.commit()
    users, courses = lti.cli("users", "list"), lti.cli("courses", "list")
    assert users.returncode == courses.returncode == 0, (users.stderr + courses.stderr)[-400:]
    assert "O[/b]\\x1b[2J" in users.stdout and "\x1b" not in users.stdout
    assert "[red]\\x1b[2J\\u202e" in courses.stdout and "\x1b" not in courses.stdout + courses.stderr


# --- the whole LMS exchange has a deadline, headers included ------------------------------------------


@pytest.fixture
def trickling_headers() -> Iterator[tuple[int, list[int]]]:
    """A server on 127.0.0.1 that sends its status line and headers one byte every 0.2 s."""
    listener = socket.create_server(("127.0.0.1", 0))
    sent: list[int] = []
    stop = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: " + b"x" * 40:
                if stop.wait(0.2):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
                sent.append(byte)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1], sent
    stop.set()
    listener.close()
    thread.join(5)


def test_an_lms_that_trickles_its_headers_is_cut_at_the_deadline(trickling_headers: tuple[int, list[int]]) -> None:
    port, sent = trickling_headers
    with lms_client(httpx.Timeout(1.0, connect=1.0)) as client, pytest.raises(LmsUnreachable, match="within 1 s"):
        call("GET", f"http://127.0.0.1:{port}/nrps", "the roster", client=client, allowed=frozenset({AddressKind.LOOPBACK}))
    # each byte came within the read timeout: without the deadline all 97 would have been read (20 s)
    assert len(sent) < 20, len(sent)


# --- the deep-linking picker is its instructor's ---------------------------------------------------


def _open_picker(browser: httpx.Client, lti: Lti, evil: Hostile, sub: str, context: str, roles: list[str]) -> str:
    picker = hostile_launch(
        browser, lti, evil, sub=sub, roles=roles, context=context, **_deep_linking(evil, f"{evil.url}/dl/return")
    )
    found = re.search(r'<form id="lti-picker" method="post" action="([^"]+)"', picker.text)
    assert found, picker.text[-300:]
    return lti.tool + unescape(found.group(1))


def _send(browser: httpx.Client, lti: Lti, action: str) -> httpx.Response:
    return browser.post(
        action,
        content=urlencode([("exercise", "actor-loss")]),
        headers={"Origin": lti.tool, "Content-Type": "application/x-www-form-urlencoded"},
    )


def test_a_picker_form_from_another_browser_is_refused_and_left_for_its_instructor(lti: Lti, evil: Hostile) -> None:
    with lti.client() as prof:
        _hostile_course(prof, lti, evil, "HC3F-dl")
        action = _open_picker(prof, lti, evil, "h-prof-HC3F-dl", "HC3F-dl", [STAFF])
        with lti.client() as other:  # the token alone (a copied address, a log line)
            stolen = _send(other, lti, action)
        assert stolen.status_code == 403 and "Picker not opened in this browser" in stolen.text, stolen.text[-300:]
        mine = _send(prof, lti, action)
    assert mine.status_code == 200 and 'id="lti-answer"' in mine.text, mine.text[-300:]


def test_a_picker_of_an_instructor_the_lms_dropped_since_is_refused(lti: Lti, evil: Hostile) -> None:
    context = "HC3F-dl-drop"
    with lti.client() as prof, lti.client() as ta:
        slug = _hostile_course(prof, lti, evil, context)
        action = _open_picker(ta, lti, evil, "h3f-dl-ta", context, [TA])
        evil.roster = lambda _n: _page([_member(f"h-prof-{context}", "Prof", [STAFF])], None, evil)
        assert roster_button(prof, lti, slug).status_code == 303
        sent = _send(ta, lti, action)
    assert sent.status_code == 403 and "No longer an instructor here" in sent.text, sent.text[-300:]


# --- the course's LMS page asks the LMS only when told ---------------------------------------------


def _compare(browser: httpx.Client, lti: Lti, slug: str, csrf: str) -> httpx.Response:
    return browser.post(
        f"{lti.tool}/dashboard/lti/compare", data={"csrf": csrf, "course": slug}, headers={"Origin": lti.tool}
    )


def test_the_lms_page_calls_the_lms_only_on_its_compare_button(lti: Lti, evil: Hostile) -> None:
    context = "HC3F-views"
    with lti.client() as prof:
        slug = _hostile_course(prof, lti, evil, context)
        with lti.state.session_factory() as session:  # a column the LMS has, so a comparison reads its results
            link = session.scalar(select(LtiContext).join(Course, Course.id == LtiContext.course_id).where(Course.slug == slug))
            assert link is not None
            session.add(LtiLineItem(context_id=link.id, exercise="actor-loss", url=f"{evil.url}/ags/lineitems/actor-loss"))
            session.commit()
        before = len(evil.hits)
        for _ in range(5):
            page = prof.get(f"{lti.tool}/dashboard/lti", params={"course": slug})
            assert page.status_code == 200 and 'id="lti-lms-unasked"' in page.text
        assert len(evil.hits) == before  # five views: no request to the LMS
        csrf = unescape(re.search(r'name="csrf" value="([^"]+)"', page.text).group(1))  # type: ignore[union-attr]
        pressed = _compare(prof, lti, slug, csrf)  # queued for the background job: back to the page
        assert pressed.status_code == 200 and 'id="lti-task-compare" data-state="queued"' in pressed.text, pressed.text[-300:]
        assert finished_request(lti, slug, "compare")[0] == "done"
        compared = prof.get(f"{lti.tool}/dashboard/lti", params={"course": slug})
        asked = len(evil.hits) - before
        assert compared.status_code == 200 and 'id="lti-lms-unasked"' not in compared.text, compared.text[-300:]
        assert 'id="lti-lms-read"' in compared.text
        assert asked == 2, evil.hits[before:]  # one job: a token, then the one column's results
        with lti.client() as outsider:  # the button is the course's instructors' (a form token, a session)
            refused = _compare(outsider, lti, slug, csrf)
        assert 'id="lti-grades"' not in refused.text and len(evil.hits) - before == asked

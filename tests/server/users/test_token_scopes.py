"""Token scopes over real HTTP (issue 36): a read-only token is refused every unsafe method of
every route, a course-limited token every other course, a revoked one is 401, no token mints a
wider one or opens a web session beyond its reach, and unlimited tokens behave as before."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.security import HTTPBearer
from sqlalchemy import select
from typer.testing import CliRunner

from server.cli import app as cli
from server.config import Settings
from server.db import transaction
from server.errors import OutsideTokenScope
from server.lti.accounts import session_token_id
from server.models import ApiToken, Role, TokenScope, User
from server.token_scope import ROUTES, SAFE_METHODS
from server.users.service import grant_for_token, issue_narrower
from server.web.session import COOKIE_NAME, sign
from tests.server.conftest import Api, StartApi

SAME_SITE = {"Origin": "http://testserver"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def mint(api: Api, headers: dict[str, str], **body: Any) -> dict[str, str]:
    """A token made through ``POST /me/tokens`` with ``headers``; its Authorization header."""
    answer = api.client.post("/api/v1/me/tokens", json=body, headers=headers)
    assert answer.status_code == 201, answer.text
    return bearer(answer.json()["token"])


def _calls(dependant: Dependant) -> set[Any]:
    return {dependant.call, *(call for sub in dependant.dependencies for call in _calls(sub))}


def bearer_routes(api: Api) -> list[tuple[str, APIRoute]]:
    """Every route of the app that reads a bearer token (through ``CurrentUser`` or its own
    ``authenticate``): (its path, the route)."""
    found = []
    for context in iter_route_contexts(api.client.app.routes):  # type: ignore[attr-defined]
        route = context.original_route
        if isinstance(route, APIRoute) and any(isinstance(call, HTTPBearer) for call in _calls(route.dependant)):
            found.append((str(context.path), route))
    return found


def filled(path: str) -> str:
    """A path with each parameter filled in ("1": an id, a slug or a name alike)."""
    while "{" in path:
        start = path.index("{")
        path = path[:start] + "1" + path[path.index("}", start) + 1 :]
    return path


def refused(answer: Any, *words: str) -> bool:
    body = answer.json()
    return (
        answer.status_code == 403 and body["error"] == "OutsideTokenScope" and all(w in body["detail"] for w in words)
    )


# --- read-only: every unsafe method of every route ---------------------------------------


def test_every_unsafe_method_of_every_route_refuses_a_read_only_token_before_the_body(api: Api) -> None:
    """An admin's read-only token (so no role refuses first) on every bearer route with a method
    other than GET/HEAD/OPTIONS, with a body no route accepts: 403 naming the scope, never
    401, 404 or 422 (scope runs before the path, the query and the body are validated)."""
    read = mint(api, api.user("root", Role.ADMIN), scope="read")
    tried = []
    for path, route in bearer_routes(api):
        for method in sorted(route.methods - SAFE_METHODS):
            answer = api.client.request(method, filled(path), json={"course": 12, "junk": []}, headers=read)
            assert refused(answer, "read-only", "'read'", method), (method, path, answer.status_code, answer.text)
            tried.append((method, path))
    assert len(tried) >= 24 and {("POST", "/api/v1/me/tokens"), ("DELETE", "/api/v1/me/tokens/{prefix}")} <= set(tried)
    # the same token reads: GET goes through
    assert api.client.get("/api/v1/me", headers=read).json()["name"] == "root"
    assert api.client.get("/api/v1/users", headers=read).status_code == 200


def test_every_api_route_that_changes_anything_authenticates_with_a_bearer_token(api: Api) -> None:
    """So the enumeration above misses no unsafe API route: one that took no token would escape it."""
    bearer_paths = {(path, method) for path, route in bearer_routes(api) for method in route.methods}
    for context in iter_route_contexts(api.client.app.routes):  # type: ignore[attr-defined]
        route = context.original_route
        if isinstance(route, APIRoute) and str(context.path).startswith("/api/v1"):
            for method in route.methods - SAFE_METHODS:
                assert (str(context.path), method) in bearer_paths, (method, context.path)


def test_every_bearer_route_says_where_its_course_is(api: Api) -> None:
    """``server.token_scope.ROUTES`` lists every bearer route (a missing one is refused to
    course-limited tokens) and nothing else."""
    keys = {f"{route.endpoint.__module__}.{route.endpoint.__name__}" for _path, route in bearer_routes(api)}
    assert keys == set(ROUTES)


# --- course-limited ----------------------------------------------------------------------


@pytest.fixture
def two_courses(api: Api) -> dict[str, Any]:
    """An instructor teaching c1 and c2 (actor-loss open in both), a submission of theirs in
    c2, and a full token of theirs limited to c1."""
    teacher = api.user("teach", Role.INSTRUCTOR)
    for slug in ("c1", "c2"):
        made = api.client.post(
            "/api/v1/courses", json={"slug": slug, "title": slug, "time_zone": "UTC"}, headers=teacher
        )
        assert made.status_code == 201, made.text
        assert (
            api.client.put(f"/api/v1/courses/{slug}/exercises/actor-loss", json={}, headers=teacher).status_code == 200
        )
    sent = api.submit(teacher, course="c2")
    assert sent.status_code == 202, sent.text
    return {
        "teacher": teacher,
        "c1": mint(api, teacher, course="c1", label="laptop"),
        "c2_submission": sent.json()["id"],
    }


def test_a_course_limited_token_reads_its_course_and_nothing_of_another(api: Api, two_courses: dict[str, Any]) -> None:
    c1, teacher, other = two_courses["c1"], two_courses["teacher"], two_courses["c2_submission"]
    mine = (
        "/api/v1/courses/c1/exercises",
        "/api/v1/courses/c1/scores",
        "/api/v1/leaderboard?course=c1",
        "/api/v1/gradebook.csv?course=c1",
        "/api/v1/exercises/actor-loss/stats?course=c1",
        "/api/v1/courses/c1/similarity",
        "/api/v1/submissions?course=c1",
        "/api/v1/me",
        "/api/v1/me/tokens",
    )
    for path in mine:
        assert api.client.get(path, headers=c1).status_code == 200, path
    elsewhere = (
        "/api/v1/courses/c2/exercises",  # the path names c2
        "/api/v1/courses/c2/scores",
        "/api/v1/leaderboard?course=c2",  # the query does
        "/api/v1/leaderboard?course=c1&course=c2",  # once of twice
        "/api/v1/gradebook.csv?course=c2",
        "/api/v1/leaderboard",  # none named: the default course
        "/api/v1/exercises/actor-loss/stats",
        "/api/v1/submissions",  # none named: every course of theirs
        f"/api/v1/submissions/{other}",  # a submission of c2
        "/api/v1/courses",  # every course (wide)
        "/api/v1/exercises",
        "/api/v1/users",
        "/api/v1/regrades",
        "/api/v1/lti/platforms",
    )
    for path in elsewhere:
        answer = api.client.get(path, headers=c1)
        assert refused(answer, "'c1'"), (path, answer.status_code, answer.text)
        assert "OutsideTokenScope" not in api.client.get(path, headers=teacher).text, path  # the unlimited token
    writes: list[tuple[str, str, dict[str, Any]]] = [
        ("POST", "/api/v1/submissions", {"exercise": "actor-loss", "source": "x = 1\n", "course": "c2"}),  # the body
        ("POST", "/api/v1/submissions", {"exercise": "actor-loss", "source": "x = 1\n"}),  # none: the default course
        ("POST", "/api/v1/regrades", {"exercise": "actor-loss", "course": "c2"}),
        ("PUT", "/api/v1/courses/c2/exercises/actor-loss", {}),
        ("POST", f"/api/v1/submissions/{other}/token", {}),
        ("POST", "/api/v1/users", {"name": "newbie"}),  # server-wide
        ("POST", "/api/v1/courses", {"slug": "c3", "title": "c3", "time_zone": "UTC"}),
    ]
    for method, path, body in writes:
        answer = api.client.request(method, path, json=body, headers=c1)
        assert refused(answer, "'c1'"), (method, path, answer.status_code, answer.text)


def test_a_body_cannot_name_the_course_twice_to_slip_past(api: Api, two_courses: dict[str, Any]) -> None:
    """The route's JSON parser keeps the last ``course``; the check reads every one (a null one
    as none named: for this instructor, the default course)."""
    c1 = two_courses["c1"]
    for raw in (
        b'{"exercise": "actor-loss", "source": "x = 1", "course": "c1", "course": "c2"}',
        b'{"exercise": "actor-loss", "source": "x = 1", "course": "c1", "course": null}',
    ):
        answer = api.client.post("/api/v1/submissions", content=raw, headers={**c1, "Content-Type": "application/json"})
        assert refused(answer, "'c1'"), answer.text
    ok = api.client.post(
        "/api/v1/submissions",
        content=b'{"exercise": "actor-loss", "source": "x = 1", "course": "c1"}',
        headers={**c1, "Content-Type": "application/json"},
    )
    assert ok.status_code == 202, ok.text
    assert api.wait_done(c1, ok.json()["id"])["course"] == "c1"


def test_a_course_limited_body_must_state_its_length(api: Api, two_courses: dict[str, Any]) -> None:
    chunks = iter([b'{"exercise": "actor-loss", ', b'"source": "x = 1", "course": "c2"}'])
    answer = api.client.post(
        "/api/v1/submissions", content=chunks, headers={**two_courses["c1"], "Content-Type": "application/json"}
    )
    assert answer.status_code == 411 and answer.json()["error"] == "LengthRequired"


# --- minting, revoking -------------------------------------------------------------------


def test_no_token_mints_a_wider_one(api: Api, two_courses: dict[str, Any]) -> None:
    c1, teacher = two_courses["c1"], two_courses["teacher"]
    assert refused(api.client.post("/api/v1/me/tokens", json={"course": "c2"}, headers=c1), "'c1'")
    inherited = api.client.post("/api/v1/me/tokens", json={"scope": "read"}, headers=c1).json()["details"]
    assert (inherited["scope"], inherited["course"]) == ("read", "c1")  # the course left out: the asker's
    assert refused(api.client.post("/api/v1/users/teach/tokens/rotate", headers=c1), "'c1'")  # it would be unlimited
    read = mint(api, teacher, scope="read")
    for body in ({"scope": "full"}, {}, {"scope": "read", "course": "c1"}):
        assert refused(api.client.post("/api/v1/me/tokens", json=body, headers=read), "read-only"), body
    # not even through the service (the HTTP path already stops at the method)
    with api.state.session_factory() as session:
        grant = grant_for_token(session, read["Authorization"].removeprefix("Bearer "), api.state.settings.secret_bytes)
        assert grant is not None
        with pytest.raises(OutsideTokenScope, match="'read'"):
            issue_narrower(session, grant, api.state.settings.secret_bytes, scope=TokenScope.FULL, course_id=None)
    # a course that is not the user's is no course at all
    assert api.client.post("/api/v1/me/tokens", json={"course": "nope"}, headers=teacher).status_code == 404


def test_listing_and_revoking_own_tokens_by_prefix(api: Api, two_courses: dict[str, Any]) -> None:
    teacher, c1 = two_courses["teacher"], two_courses["c1"]
    listed = api.client.get("/api/v1/me/tokens", headers=teacher).json()
    assert [(t["scope"], t["course"], t["label"], t["current"]) for t in listed] == [
        ("full", None, None, True),
        ("full", "c1", "laptop", False),
    ]
    # a course-limited token sees its course's tokens only, and revokes only those
    assert [t["course"] for t in api.client.get("/api/v1/me/tokens", headers=c1).json()] == ["c1"]
    assert api.client.delete(f"/api/v1/me/tokens/{listed[0]['prefix']}", headers=c1).json()["error"] == "TokenNotFound"
    gone = api.client.delete(f"/api/v1/me/tokens/{listed[1]['prefix']}", headers=teacher)
    assert gone.status_code == 200 and gone.json()["revoked_at"] is not None
    answer = api.client.get("/api/v1/courses/c1/exercises", headers=c1)
    assert answer.status_code == 401 and answer.json()["error"] == "NotAuthenticated"
    assert api.client.delete(f"/api/v1/me/tokens/{listed[1]['prefix']}", headers=teacher).status_code == 404
    assert api.client.get("/api/v1/me", headers=teacher).status_code == 200


# --- web sessions and LTI ----------------------------------------------------------------


def test_only_an_unlimited_token_opens_a_web_session(api: Api, two_courses: dict[str, Any]) -> None:
    teacher = two_courses["teacher"]
    read = mint(api, teacher, scope="read")
    for narrowed in (read, two_courses["c1"]):
        answer = api.client.post(
            "/login", data={"token": narrowed["Authorization"][7:]}, headers=SAME_SITE, follow_redirects=False
        )
        assert answer.status_code == 403 and COOKIE_NAME not in answer.cookies and "read-only or limited" in answer.text
    full = api.client.post(
        "/login", data={"token": teacher["Authorization"][7:]}, headers=SAME_SITE, follow_redirects=False
    )
    assert full.status_code == 303 and COOKIE_NAME in full.cookies
    api.client.cookies.clear()
    # a cookie signed for a narrowed token (it never gets one) is refused all the same
    with api.state.session_factory() as session:
        user = session.scalar(select(User).where(User.name == "teach"))
        assert user is not None
        narrowed_id = session.scalar(select(ApiToken.id).where(ApiToken.user_id == user.id, ApiToken.scope == "read"))
        assert narrowed_id is not None
        cookie = sign(user.id, narrowed_id, api.state.settings.secret_bytes)
    api.client.cookies.set(COOKIE_NAME, cookie)
    page = api.client.get("/dashboard", follow_redirects=False)
    assert 'name="token"' in page.text and "Your session has ended" in page.text  # the login form


def test_an_lms_session_is_bound_to_an_unlimited_token(api: Api) -> None:
    lea = api.user("lea")
    mint(api, lea, scope="read")  # newer than her full token
    with transaction(api.state.session_factory) as session:
        user = session.scalar(select(User).where(User.name == "lea"))
        assert user is not None
        chosen = session.get(ApiToken, session_token_id(session, user, api.state.settings.secret_bytes))
        assert chosen is not None and chosen.unlimited


# --- unlimited tokens as before, the CLI ----------------------------------------------------


def test_unlimited_tokens_behave_as_before(api: Api) -> None:
    lea = api.user("lea")  # made as before: full, every course
    sent = api.submit(lea)
    assert sent.status_code == 202, sent.text
    assert api.client.get(f"/api/v1/submissions/{sent.json()['id']}", headers=lea).status_code == 200
    assert api.client.get("/api/v1/leaderboard", headers=lea).status_code == 200
    rotated = api.client.post("/api/v1/users/lea/tokens/rotate", headers=lea)
    assert rotated.status_code == 200 and api.client.get("/api/v1/me", headers=lea).status_code == 401


def test_cli_issues_lists_and_revokes_by_prefix(env: Settings, start_api: StartApi) -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["users", "add", "ann", "--role", "instructor"]).exit_code == 0
    api = start_api(env)
    teacher = api.user("teach", Role.INSTRUCTOR)
    api.client.post("/api/v1/courses", json={"slug": "c1", "title": "c1", "time_zone": "UTC"}, headers=teacher)
    refused_course = runner.invoke(cli, ["users", "token", "ann", "--course", "c1"])
    assert refused_course.exit_code == 2 and "no course 'c1'" in refused_course.stderr
    made = runner.invoke(cli, ["users", "token", "teach", "--read-only", "--course", "c1", "--label", "laptop"])
    assert made.exit_code == 0, made.output
    token = made.stdout.strip()
    assert token.startswith("ppg_") and "read token of 'teach' for course 'c1' only" in made.stderr
    assert api.client.get("/api/v1/courses/c1/exercises", headers=bearer(token)).status_code == 200
    assert refused(api.client.put("/api/v1/courses/c1/exercises/actor-loss", json={}, headers=bearer(token)), "read")
    listed = runner.invoke(cli, ["users", "tokens", "teach"])
    assert listed.exit_code == 0 and token[:12] in listed.stdout and "laptop" in listed.stdout
    assert "(every course)" in listed.stdout and "read" in listed.stdout
    revoked = runner.invoke(cli, ["users", "revoke", "teach", "--prefix", token[:12]])
    assert revoked.exit_code == 0, revoked.output
    assert api.client.get("/api/v1/me", headers=bearer(token)).status_code == 401
    assert api.client.get("/api/v1/me", headers=teacher).status_code == 200  # only that one
    assert runner.invoke(cli, ["users", "revoke", "teach", "--prefix", token[:12]]).exit_code == 2

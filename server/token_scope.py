"""What an API token may reach: its scope and its course, held for every API route in one place.

``server.deps.authenticate`` (behind ``CurrentUser``, and the long poll's own sign-in: every
bearer route) calls :func:`check_method` and :func:`check_course` right after the token is found, before any
route's body is validated and before the route runs. Both answer 403 ``OutsideTokenScope``
with the token's scope and course in the detail.

- **Scope** (``api_tokens.scope``): a ``read`` token may use the safe methods only (GET, HEAD,
  OPTIONS); any other method is refused whatever the route. So it changes nothing, and it
  cannot mint a token (that is a POST) or open a web session (``/login`` refuses it).
- **Course** (``api_tokens.course_id``): a course-limited token reaches that course alone.
  Where a route's course lives is written down once, in :data:`ROUTES` (keyed by the route's
  function): in the path (``/courses/{course}/...``), in the query (``?course=``), in the JSON
  body (``"course"``), or behind an id (a submission's, a regrade set's course). Naming another
  course is refused; so is naming none where none means another course (the default course, or
  every course), and so is every route that reaches beyond one course (the catalogue, every
  user, creating users or courses, LTI platforms, rosters that create logins server-wide). A
  route missing from :data:`ROUTES` counts as one of those: a new route is refused to
  course-limited tokens until it says where its course is
  (``tests/server/users/test_token_scopes.py`` fails for it too).

Reading the body: only for a course-limited token on a route whose course is in its body, and
only a body that states its length (411 ``LengthRequired`` otherwise) within
:func:`peek_limit` (413 ``SourceTooLarge`` beyond); the route then reads the same bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.orm import Session
from starlette.requests import Request

from server.config import Settings
from server.courses.service import course_for_submission
from server.errors import GraderError, OutsideTokenScope, SourceTooLarge
from server.models import DEFAULT_COURSE_ID, Course, RegradeSet, Role, Submission, TokenScope
from server.users.service import Grant

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

#: What a route's missing course means: ``default`` the default course; ``refused`` every
#: course (or several), so a course-limited token must name its own; ``same`` the token's own
#: reach (minting a token: it inherits the course); ``submission`` the learner's only course
#: (``courses.service.course_for_submission``); ``regrade`` the default course, or every
#: course for an admin.
Absent = Literal["default", "refused", "same", "submission", "regrade"]


@dataclass(frozen=True)
class Named:
    """The route's course is named in the request: ``where`` (``path``, ``query`` or ``body``,
    always as ``course``), and what leaving it out means."""

    where: Literal["path", "query", "body"]
    absent: Absent = "refused"


@dataclass(frozen=True)
class Behind:
    """The route's course is that of the row an id in its path names (``submission_id``: the
    submission's; ``regrade_id``: the regrade set's, every course when it has none)."""

    param: Literal["submission_id", "regrade_id"]


class Whole(Enum):
    """A route about no one course: ``OWN``, the caller's own account and tokens (every token
    may; listing and revoking keep to a course-limited token's course: ``server.users.router``);
    ``WIDE``, beyond one course (every course, every user, the server): refused to a
    course-limited token."""

    OWN = "own"
    WIDE = "wide"


OWN, WIDE = Whole.OWN, Whole.WIDE

Reach = Named | Behind | Whole

_PATH, _QUERY = Named("path"), Named("query")
_DEFAULT = Named("query", "default")

#: Every bearer route's course, by its function (``module.name``). Missing: ``WIDE``.
ROUTES: dict[str, Reach] = {
    # users
    "server.users.router.read_me": OWN,
    "server.users.router.list_my_tokens": OWN,
    "server.users.router.issue_my_token": Named("body", "same"),
    "server.users.router.revoke_my_token": OWN,
    "server.users.router.list_users": WIDE,
    "server.users.router.create_user": WIDE,
    "server.users.router.import_roster": WIDE,
    "server.users.router.revoke_tokens": WIDE,  # every token of a user: wider than this one
    "server.users.router.rotate_token": WIDE,  # issues an unlimited token
    # the catalogue: what every course serves (a course's own list: /courses/{course}/exercises)
    "server.catalogue.router.list_exercises": WIDE,
    "server.catalogue.router.read_exercise": WIDE,
    # courses
    "server.courses.router.list_courses": WIDE,
    "server.courses.router.create_course": WIDE,
    "server.courses.router.course_exercises": _PATH,
    "server.courses.router.publish_exercise": _PATH,
    "server.courses.router.preview_publish": _PATH,
    "server.courses.router.course_set": _PATH,
    "server.courses.router.unpublish_exercise": _PATH,
    "server.courses.router.grant_extension": _PATH,
    "server.courses.router.add_course_staff": _PATH,  # a login made staff of this course only
    "server.courses.router.remove_course_staff": _PATH,
    "server.courses.router.release_scores": _PATH,
    "server.courses.router.hold_scores": _PATH,
    "server.courses.router.import_course_roster": WIDE,  # creates logins; a row may name any course
    "server.courses.score_router.list_scores": _PATH,
    "server.courses.score_router.set_override": _PATH,
    "server.courses.score_router.set_excuse": _PATH,
    "server.courses.score_router.take_back": _PATH,
    "server.courses.score_router.change_settings": _PATH,
    # submissions
    "server.submissions.router.create_submission": Named("body", "submission"),
    "server.submissions.router.read_submission": Behind("submission_id"),
    "server.submissions.router.list_submissions": _QUERY,  # none named: every course of the caller's
    "server.submissions.router.spend_token": Behind("submission_id"),
    # boards, statistics, gradebooks: none named is the default course
    "server.leaderboard.router.leaderboard": _DEFAULT,
    "server.leaderboard.router.speed_leaderboard": _DEFAULT,
    "server.stats.router.exercise_stats": _DEFAULT,
    "server.gradebook.router.gradebook": _DEFAULT,
    "server.gradebook.router.canvas_gradebook": _DEFAULT,  # canvas.csv and wide.csv
    "server.gradebook.router.moodle_gradebook": _DEFAULT,
    # similarity (the learners in its path are the course's)
    "server.similarity.router.request_run": _PATH,
    "server.similarity.router.report": _PATH,
    "server.similarity.router.pair_detail": _PATH,
    "server.similarity.router.review": _PATH,
    # regrades
    "server.regrades.router.preview": Named("body", "regrade"),
    "server.regrades.router.list_regrades": WIDE,
    "server.regrades.router.stale": WIDE,  # every course the caller teaches
    "server.regrades.router.show": Behind("regrade_id"),
    "server.regrades.router.apply": Behind("regrade_id"),
    "server.regrades.router.cancel": Behind("regrade_id"),
    # human review
    "server.review.router.read_review": Behind("submission_id"),
    "server.review.router.add_comment": Behind("submission_id"),
    "server.review.router.request_review": Behind("submission_id"),
    "server.review.router.list_requests": _PATH,
    "server.review.router.answer_request": _PATH,
    # LTI platforms: the server's, admins only
    "server.lti.router.list_registrations": WIDE,
    "server.lti.router.register": WIDE,
    "server.lti.router.register_deployment": WIDE,
}


def route_key(request: Request) -> str | None:
    """The :data:`ROUTES` key of the route serving ``request``: its function's ``module.name``."""
    endpoint = request.scope.get("endpoint")
    return None if endpoint is None else f"{endpoint.__module__}.{endpoint.__name__}"


def describe(grant: Grant, course_slug: str | None) -> str:
    """The token's scope and course, as every refusal names them."""
    reach = "every course its owner may reach" if course_slug is None else f"the course {course_slug!r} only"
    return f"This token's scope is {grant.token.scope!r}, for {reach}"


def check_method(grant: Grant, method: str) -> None:
    """Refuse a read-only token anything but GET, HEAD and OPTIONS."""
    if TokenScope(grant.token.scope) is TokenScope.READ and method.upper() not in SAFE_METHODS:
        raise OutsideTokenScope(
            f"This token is read-only (scope 'read'): it may GET, HEAD or OPTIONS, and {method.upper()} is refused. "
            "Use a token with scope 'full' to change anything."
        )


def reach_of(request: Request) -> Reach:
    """Where the course of the route serving ``request`` lives (``WIDE`` for a route not listed)."""
    key = route_key(request)
    return ROUTES.get(key, WIDE) if key is not None else WIDE


def needs_body(grant: Grant, reach: Reach) -> bool:
    """Whether :func:`check_course` needs the request's JSON body (a course-limited token on a
    route whose course is in its body)."""
    return grant.token.course_id is not None and isinstance(reach, Named) and reach.where == "body"


def peek_limit(settings: Settings) -> int:
    """The largest body read to find its course: above what any route accepts (a submission's
    source may take six bytes a character in JSON), so a body the route would take is read."""
    return settings.MAX_SOURCE_BYTES * 8 + 64 * 1024


async def read_body(request: Request, settings: Settings) -> bytes:
    """The request's body for :func:`check_course`, within :func:`peek_limit`; the route reads
    the same bytes afterwards (Starlette keeps them)."""
    declared = request.headers.get("content-length")
    if declared is None or not declared.isdigit():
        raise GraderError(
            "A course-limited token's request must state its body's length (Content-Length).",
            status_code=411,
            error_name="LengthRequired",
        )
    if int(declared) > peek_limit(settings):
        raise SourceTooLarge(f"The request body is over {peek_limit(settings)} bytes.")
    return await request.body()


def check_course(session: Session, grant: Grant, request: Request, reach: Reach, body: bytes | None) -> None:
    """Refuse a course-limited token a request about another course, or about more than one."""
    limit = grant.token.course_id
    if limit is None or reach is OWN:
        return
    mine = session.get(Course, limit)
    slug = mine.slug if mine is not None else None
    if isinstance(reach, Whole) or mine is None:
        raise OutsideTokenScope(
            f"{describe(grant, slug)}; {request.method} {request.url.path} reaches beyond one course. "
            "Use a token for every course."
        )
    if isinstance(reach, Behind):
        if _elsewhere(_course_behind(session, reach, request), limit):
            raise OutsideTokenScope(f"{describe(grant, slug)}; this {reach.param.split('_')[0]} is another course's.")
        return
    named = _named(reach, request, body)
    if named is None:
        return  # a body that is not a JSON object: the route refuses it (422) before it acts
    if len(named) > 1 and reach.where == "body":
        # The route's parser keeps one of the repeats (the last); which one is its business, so
        # a limited token may not give the key twice at all.
        raise OutsideTokenScope(f"{describe(grant, slug)}; name the course once in this request's body.")
    for value in named or [None]:
        if value is not None and not isinstance(value, str):
            # Never "let the route refuse it": a repeat beside it may be what the route reads.
            raise OutsideTokenScope(f"{describe(grant, slug)}; name the course by its slug, {slug!r}.")
        if value is None:
            if _elsewhere(_absent_course(session, grant, reach.absent), limit):
                raise OutsideTokenScope(f"{describe(grant, slug)}; name it in this request (course={slug}).")
        elif value != slug:
            raise OutsideTokenScope(f"{describe(grant, slug)}; this request names the course {value[:64]!r}.")


#: No such row, or a request the route refuses the same way (404, 422) whatever the token.
_UNKNOWN = -1


def _elsewhere(course_id: int | None, limit: int) -> bool:
    """Whether a request about ``course_id`` (None: every course) is outside ``limit``."""
    return course_id != limit and course_id != _UNKNOWN


def _course_behind(session: Session, reach: Behind, request: Request) -> int | None:
    raw = request.path_params.get(reach.param, "")
    if not isinstance(raw, str) or not raw.isdigit() or len(raw) > 10:
        return _UNKNOWN
    row: tuple[int | None] | None
    if reach.param == "submission_id":
        row = session.execute(select(Submission.course_id).where(Submission.id == int(raw))).tuples().first()
    else:
        row = session.execute(select(RegradeSet.course_id).where(RegradeSet.id == int(raw))).tuples().first()
    return _UNKNOWN if row is None else row[0]


def _named(reach: Named, request: Request, body: bytes | None) -> list[Any] | None:
    """Each course the request names where the route reads it, as given ([] for none; a query
    may repeat it, a JSON body may give its key twice, as null or as a non-string); None for a
    body that is not a JSON object."""
    if reach.where == "path":
        value = request.path_params.get("course")
        return [] if value is None else [value]
    if reach.where == "query":
        return list(request.query_params.getlist("course"))
    return _body_courses(body or b"")


def _body_courses(body: bytes) -> list[Any] | None:
    """Every value of the JSON body's top-level ``course`` key, a key given twice read twice
    ([] for a body without one); None for a body that is not a JSON object."""
    if not body:
        return []
    objects: list[list[Any]] = []  # each object's course values, innermost first, the top one last

    def hook(items: list[tuple[str, Any]]) -> dict[str, Any]:
        objects.append([value for key, value in items if key == "course"])
        return dict(items)

    try:
        parsed = json.loads(body, object_pairs_hook=hook)
    except (ValueError, RecursionError):
        return None
    return objects[-1] if isinstance(parsed, dict) else None


def _absent_course(session: Session, grant: Grant, absent: Absent) -> int | None:
    """The course a request that names none is about (None: every course, or several)."""
    if absent == "same":
        return grant.token.course_id
    if absent == "default":
        return DEFAULT_COURSE_ID
    if absent == "regrade":
        return None if Role(grant.user.role) is Role.ADMIN else DEFAULT_COURSE_ID
    if absent == "submission":
        try:
            return course_for_submission(session, grant.user, None).id
        except GraderError:
            return _UNKNOWN  # the route refuses it the same way (CourseRequired, CourseNotFound)
    return None

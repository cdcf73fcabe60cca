"""LTI's routes: the launch (from the LMS), the tool's key set and configuration, the course's
LTI page, and the admins' registration API. One ``router`` (``server.app`` includes it once).

From the LMS (no session; each step proves itself):

- ``GET|POST /lti/login``: OIDC third-party login (stores nothing: the state is signed,
  ``server.lti.launch``); sets the state cookie (SameSite=None;
  Secure over https, so it comes back on the platform's cross-site form post), 302 to the LMS.
  Arriving in the LMS's frame (``Sec-Fetch-Dest: iframe``), where that cookie would be a
  third-party cookie, it answers with a link that starts the same login in a tab of its own.
- ``POST /lti/launch``: the id_token; validated (``server.lti.launch``), then a resource-link
  launch signs the user in through ``/lti/continue/<ticket>`` and a deep-linking request shows
  the picker. A refused launch is a 4xx page that says why.
- ``GET /lti/continue/{ticket}``: a one-time pass from a launch to the signed-in page, good only
  in the browser the launch came to (a cookie the launch's answer set holds the ticket's MAC;
  without it the link is refused and left unspent: no login CSRF): sets the
  web session cookie (``server.web.session``, SameSite=Strict: it can be set here, at the
  top level on the site itself, but not on the LMS's cross-site post), 303 to the course's
  dashboard (staff) or the learner's page for the exercise.
- ``POST /lti/deep-link/{token}``: the picker's choice; answers with the signed content items,
  posted back to the LMS. Only from the browser the picker's launch came to (a cookie the
  picker's page set holds the token's MAC, as for ``/lti/continue``), and only while its
  instructor still teaches the course (``server.lti.deeplink.pending``).
- ``GET /lti/jwks``: the tool's public keys. ``GET /lti/config.json``: Canvas's tool
  configuration (every URL from ``PUBLIC_URL``; never the request's Host header).

For instructors (the web session): ``GET /dashboard/lti`` (the course's link, roster and
grades preview, from the database alone: a view never calls the LMS), ``POST
/dashboard/lti/compare`` and ``POST /dashboard/lti/roster`` (each queues a request for the
background job, ``server.lti.tasks``: the page shows its progress and outcome; a second press
while one is queued or running is refused), ``POST /dashboard/lti/grades|auto``. For admins (a bearer token):
``GET|POST /api/v1/lti/platforms``, ``POST /api/v1/lti/platforms/{id}/deployments``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Depends, Request, status
from fastapi.responses import JSONResponse, RedirectResponse, Response
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from server.catalogue.service import list_exercises
from server.config import Settings
from server.courses.page_course import DashboardCourse
from server.courses.service import taught_course_named
from server.courses.sets import course_exercises
from server.deps import AdminUser, Now, SessionDep, SettingsDep, StateDep
from server.lti import claims as c
from server.lti import deeplink, keys, pages, tasks
from server.lti.accounts import course_link, person, record_member, session_token_id
from server.lti.configuration import canvas_configuration
from server.lti.errors import LaunchRefused, PlatformNotFound
from server.lti.grades import plan
from server.lti.launch import (
    LOGIN_SECONDS,
    MAX_STATE_CHARS,
    Launch,
    begin_login,
    state_cookie_name,
    validate_launch,
)
from server.lti.platforms import Registration, add_deployment, add_platform, deployments, list_platforms
from server.lti.schemas import DeploymentCreate, PlatformCreate, PlatformPublic
from server.models import (
    ApiToken,
    Course,
    LtiContext,
    LtiLineItem,
    LtiMember,
    LtiPlatform,
    LtiTask,
    LtiTicket,
    User,
    utcnow,
)
from server.openapi import errors
from server.state import AppState
from server.web.deps import WebInstructor
from server.web.errors import PageBadRequest, PageError, PageNotFound
from server.web.responses import html_response, redirect, same_origin, viewer_of
from server.web.session import COOKIE_NAME, COOKIE_PATH, SESSION_SECONDS, form_token, form_token_matches, sign
from server.web.urls import DASHBOARD, LEARNERS, in_course

#: What ``server.app`` includes: the pages (out of the schema) and the API (below, at the end).
router = APIRouter()
html = APIRouter(include_in_schema=False)
api = APIRouter(prefix="/api/v1/lti", tags=["lti"])

#: A launch's form (the id_token of a big course's launch is a few KiB).
MAX_LAUNCH_FORM_BYTES = 128 * 1024
MAX_PICKER_FORM_BYTES = 16 * 1024
TICKET_SECONDS = 300
TICKET_COOKIE_PREFIX = "ppo_lti_ticket_"
PICKER_COOKIE_PREFIX = "ppo_lti_picker_"
_SCRIPT = (Path(__file__).parent / "static" / "launch.js").read_bytes()


def _form_reader(limit: int):  # type: ignore[no-untyped-def]
    async def read(request: Request) -> dict[str, list[str]] | None:
        """The url-encoded body, every value per field; None when too large or not a form."""
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/x-www-form-urlencoded":
            return None
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                return None
        try:
            return parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=200)
        except (UnicodeDecodeError, ValueError):
            return None

    return read


LaunchForm = Annotated[dict[str, list[str]] | None, Depends(_form_reader(MAX_LAUNCH_FORM_BYTES))]
PickerForm = Annotated[dict[str, list[str]] | None, Depends(_form_reader(MAX_PICKER_FORM_BYTES))]


def _first(form: dict[str, list[str]] | None, name: str) -> str:
    values = (form or {}).get(name) or [""]
    return values[0]


def _refused(exc: LaunchRefused) -> Response:
    response = pages.lti_response(pages.refused_page(exc.title, exc.detail), exc.status_code)
    response.headers.update(exc.headers or {})  # a 503's Retry-After
    return response


def _launch_url(request: Request, settings: Settings) -> str:
    """This tool's ``/lti/launch``: from the configured public address where there is one (what
    the LMS registered, whatever Host header a proxy passes on), else from the request."""
    if settings.PUBLIC_URL:
        return settings.PUBLIC_URL.rstrip("/") + "/lti/launch"
    return str(request.url_for("lti_launch"))


# --- from the LMS ---------------------------------------------------------------------------


@html.api_route("/lti/login", methods=["GET", "POST"], name="lti_login")
async def login(request: Request, session: SessionDep, settings: SettingsDep, now: Now) -> Response:
    """Step 1 of a launch: a signed state and a nonce (nothing stored), the state bound to this
    browser, then to the LMS."""
    params: dict[str, str] = {k: v for k, v in request.query_params.items()}
    if request.method == "POST":
        form = await _form_reader(MAX_LAUNCH_FORM_BYTES)(request)
        params.update({k: v[0] for k, v in (form or {}).items() if v})
    if request.headers.get("sec-fetch-dest") == "iframe":
        # In the LMS's frame the state cookie would be a third-party cookie, which browsers
        # block more and more: the login starts again in a tab of its own, where it is not.
        base = (
            settings.PUBLIC_URL.rstrip("/") + "/lti/login" if settings.PUBLIC_URL else str(request.url_for("lti_login"))
        )
        again = base + "?" + urlencode({k: v[:2000] for k, v in list(params.items())[:20]})
        return pages.lti_response(pages.framed_login_page(again))
    try:
        start = begin_login(session, settings.secret_bytes, params, _launch_url(request, settings), now)
    except LaunchRefused as exc:
        return _refused(exc)
    response = RedirectResponse(start.redirect_url, status_code=302, headers={"Cache-Control": "no-store"})
    secure = request.url.scheme == "https"
    response.set_cookie(
        state_cookie_name(start.state),
        start.state,
        max_age=LOGIN_SECONDS,
        path="/lti/launch",
        httponly=True,
        # The LMS's form post is cross-site: only a SameSite=None cookie comes back on it, and
        # browsers take those only with Secure. Over plain http (a laptop), Lax: works when the
        # LMS is on the same site (localhost), as in development.
        samesite="none" if secure else "lax",
        secure=secure,
    )
    return response


@html.post("/lti/launch", name="lti_launch")
def launch(request: Request, form: LaunchForm, session: SessionDep, settings: SettingsDep, now: Now) -> Response:
    """Step 2: validate the id_token; sign in (resource link) or open the picker (deep linking)."""
    state, id_token = _first(form, "state")[:MAX_STATE_CHARS], _first(form, "id_token")
    try:
        if form is None:
            raise LaunchRefused("Not a launch", "Launch ppo-grader from the LMS (a form post with id_token and state).")
        if not state or request.cookies.get(state_cookie_name(state)) != state:
            raise LaunchRefused(
                "Launch not started in this browser",
                "This launch did not begin in this browser (or the browser blocked the tool's cookie). "
                "Launch again from the LMS; if this persists, open the tool in a new window.",
                403,
            )
        try:
            checked = validate_launch(
                session,
                settings.secret_bytes,
                id_token,
                state,
                now,
                jwks_max_age=timedelta(seconds=settings.LTI_JWKS_MAX_AGE_SECONDS),
            )
        finally:
            session.commit()  # the nonce is spent, and the key-set cache kept, whatever the outcome
        answer = _accept(request, session, settings.secret_bytes, checked)
    except LaunchRefused as exc:
        session.rollback()
        response = _refused(exc)
    else:
        session.commit()
        response = answer
    if state:
        response.delete_cookie(state_cookie_name(state), path="/lti/launch")
    return response


def _accept(request: Request, session: Session, secret: bytes, checked: Launch) -> Response:
    where = c.standing(checked.roles)
    if where is c.Standing.NONE:
        raise LaunchRefused(
            "Not a member of this course",
            "The LMS does not list you as a learner or instructor of this course, so ppo-grader cannot open it.",
            403,
        )
    staff = where is c.Standing.STAFF
    if checked.message_type == c.DEEP_LINKING_REQUEST and not staff:
        raise LaunchRefused("Instructors only", "Only the course's instructors add ppo-grader exercises.", 403)
    link = course_link(session, checked, staff)
    user = person(
        session,
        checked.platform.id,
        checked.sub,
        name=checked.name,
        email=checked.email,
        username=checked.username,
    )
    record_member(session, link, user, checked.roles)
    course = session.get(Course, link.course_id)
    assert course is not None
    if checked.message_type == c.DEEP_LINKING_REQUEST:
        assert checked.deep_linking is not None
        opened = deeplink.open_request(session, checked, link, user)
        body = pages.picker_page(
            course.title,
            deeplink.offers(session, course),
            f"/lti/deep-link/{opened.token}",
            checked.deep_linking.accept_multiple,
        )
        # The picker's form works only in the browser this launch came to (its token, copied
        # from the page or a log, is no credential elsewhere): its proof is a cookie set here.
        picker = pages.lti_response(body)
        proof = picker_proof(opened.token, secret)
        _proof_cookie(
            request, picker, picker_cookie_name(opened.token), proof, "/lti/deep-link", deeplink.REQUEST_SECONDS
        )
        return picker
    exercise = _exercise(session, course, link, checked)
    if staff:
        destination = in_course(DASHBOARD, course.slug)
    else:
        destination = in_course(f"{LEARNERS}/{user.name}", course.slug, exercise=exercise)
    ticket = LtiTicket(
        token=secrets.token_urlsafe(32),
        user_id=user.id,
        api_token_id=session_token_id(session, user, secret),
        destination=destination,
        expires_at=utcnow() + timedelta(seconds=TICKET_SECONDS),
    )
    session.add(ticket)
    presentation = checked.claims.get(c.LTI + "launch_presentation")
    window = isinstance(presentation, dict) and presentation.get("document_target") == "window"
    response = pages.lti_response(pages.launch_page(user, course.title, f"/lti/continue/{ticket.token}", window))
    # The link signs in only the browser this launch came to (no login CSRF: a link passed on
    # to someone else signs nobody in): it carries its proof in a cookie set here.
    proof = ticket_proof(ticket.token, secret)
    _proof_cookie(request, response, ticket_cookie_name(ticket.token), proof, "/lti/continue", TICKET_SECONDS)
    return response


def _proof_cookie(request: Request, response: Response, name: str, proof: str, path: str, seconds: int) -> None:
    """Bind a launch's one-time link or form (at ``path``, living ``seconds``) to this browser:
    ``proof``, a MAC of its token, in a cookie only that browser holds."""
    secure = request.url.scheme == "https"
    response.set_cookie(
        name,
        proof,
        max_age=seconds,
        path=path,
        httponly=True,
        samesite="none" if secure else "lax",  # as the state cookie: set on the LMS's cross-site post
        secure=secure,
    )


def _cookie_name(prefix: str, token: str) -> str:
    return prefix + "".join(ch for ch in token[:16] if ch.isalnum() or ch in "-_")


def ticket_cookie_name(token: str) -> str:
    """The cookie that binds a sign-in ticket to the browser of its launch (one per ticket)."""
    return _cookie_name(TICKET_COOKIE_PREFIX, token)


def ticket_proof(token: str, secret: bytes) -> str:
    """The ticket cookie's value: a MAC of the ticket, so the link alone proves nothing."""
    return hmac.new(secret, b"lti-ticket\0" + token.encode(), hashlib.sha256).hexdigest()


def picker_cookie_name(token: str) -> str:
    """The cookie that binds a deep-linking picker to the browser of its launch (one per picker)."""
    return _cookie_name(PICKER_COOKIE_PREFIX, token)


def picker_proof(token: str, secret: bytes) -> str:
    """The picker cookie's value: a MAC of the picker's token (another domain than a ticket's)."""
    return hmac.new(secret, b"lti-picker\0" + token.encode(), hashlib.sha256).hexdigest()


def _exercise(session: Session, course: Course, link: LtiContext, checked: Launch) -> str | None:
    """The exercise a resource link opens: its custom parameter, else its line item's."""
    offered = set(course_exercises(session, course))
    named = checked.custom.get(c.CUSTOM_EXERCISE)
    if named in offered:
        return named
    if checked.ags is not None and checked.ags.lineitem:
        found = session.scalar(
            select(LtiLineItem.exercise).where(
                LtiLineItem.context_id == link.id, LtiLineItem.url == checked.ags.lineitem
            )
        )
        if found in offered:
            return found
    return None


@html.get("/lti/continue/{token}")
def continue_launch(token: str, request: Request, session: SessionDep, settings: SettingsDep, now: Now) -> Response:
    """Spend a launch's ticket: the web session cookie, then the page the launch was for.
    Only in the browser the launch came to (its ticket cookie): elsewhere the link is refused
    and left unspent."""
    token = token[:64]
    proof = request.cookies.get(ticket_cookie_name(token), "")
    if not hmac.compare_digest(proof.encode(), ticket_proof(token, settings.secret_bytes).encode()):
        return _refused(
            LaunchRefused(
                "Sign-in link not for this browser",
                "This sign-in link works only in the browser that launched ppo-grader from the LMS "
                "(a link sent by someone else signs nobody in). Launch ppo-grader from the LMS yourself.",
                403,
            )
        )
    ticket = session.scalar(select(LtiTicket).where(LtiTicket.token == token))
    spent = (
        session.execute(
            update(LtiTicket)
            .where(LtiTicket.id == ticket.id, LtiTicket.used_at.is_(None), LtiTicket.expires_at > now)
            .values(used_at=now)
            .execution_options(synchronize_session=False)
        ).rowcount  # type: ignore[attr-defined]
        if ticket is not None
        else 0
    )
    live = ticket is not None and session.scalar(
        select(ApiToken.id).where(ApiToken.id == ticket.api_token_id, ApiToken.revoked_at.is_(None))
    )
    session.commit()
    if ticket is None or not spent or not live:
        return _refused(
            LaunchRefused(
                "Sign-in link used or expired",
                "This sign-in link works once, for five minutes. Launch ppo-grader again from the LMS.",
                403,
            )
        )
    response = redirect(ticket.destination)
    response.delete_cookie(ticket_cookie_name(token), path="/lti/continue")
    response.set_cookie(
        COOKIE_NAME,
        sign(ticket.user_id, ticket.api_token_id, settings.secret_bytes),
        max_age=SESSION_SECONDS,
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@html.post("/lti/deep-link/{token}")
def deep_link_answer(
    token: str, request: Request, form: PickerForm, session: SessionDep, settings: SettingsDep, now: Now
) -> Response:
    """The picker's choice, signed and posted back to the LMS."""
    try:
        if not same_origin(request) or form is None:
            raise LaunchRefused("Not sent from the picker", "Choose the exercises on the picker the LMS opened.", 403)
        pending = deeplink.pending(session, token, now)
        proof = request.cookies.get(picker_cookie_name(pending.token), "")
        if not hmac.compare_digest(proof.encode(), picker_proof(pending.token, settings.secret_bytes).encode()):
            raise LaunchRefused(
                "Picker not opened in this browser",
                "This picker works only in the browser that opened it from the LMS (its address alone is no "
                "credential). Open the picker from the LMS yourself.",
                403,
            )
        chosen = [slug for slug in form.get("exercise", []) if len(slug) <= 64]
        if _first(form, "whole-set"):
            link = session.get(LtiContext, pending.context_id)
            course = session.get(Course, link.course_id) if link is not None else None
            chosen = course_exercises(session, course) if course is not None else []
        if not chosen:
            raise LaunchRefused("Nothing chosen", "Tick at least one exercise, then send again (go back).", 400)
        sent = deeplink.answer(session, settings.secret_bytes, pending, chosen, _launch_url(request, settings), now)
    except LaunchRefused as exc:
        session.rollback()
        return _refused(exc)
    session.commit()
    return pages.lti_response(
        pages.answer_page(sent.return_url, sent.jwt, sent.items, sent.note), answer_to=sent.return_url
    )


@html.get("/lti/jwks")
def jwks(session: SessionDep, settings: SettingsDep) -> Response:
    """The tool's public keys (the signing key and those retired in the last two days)."""
    body = keys.published_keys(session, settings.secret_bytes)
    session.commit()  # the first key, made on first use
    return JSONResponse(body, headers={"Cache-Control": "public, max-age=300"})


@html.get("/lti/static/launch.js")
def launch_script() -> Response:
    """The LTI pages' one script (``server.lti.pages``)."""
    return Response(
        _SCRIPT, media_type="text/javascript; charset=utf-8", headers={"Cache-Control": "public, max-age=300"}
    )


@html.get("/lti/config.json")
def canvas_config(settings: SettingsDep) -> Response:
    """The tool's configuration for Canvas's developer key ("Paste JSON"), for the configured
    public address (``PPO_GRADER_PUBLIC_URL``; never the request's Host header)."""
    if not settings.PUBLIC_URL:
        return JSONResponse(
            {
                "error": "NotConfigured",
                "detail": "Set PPO_GRADER_PUBLIC_URL to the server's public address (https://...), "
                "or print the configuration with `ppo-grader lti config --url https://...`.",
            },
            status_code=404,
        )
    return JSONResponse(canvas_configuration(settings.PUBLIC_URL.rstrip("/")))


# --- the course's LTI page ------------------------------------------------------------------


DashboardForm = Annotated[dict[str, list[str]] | None, Depends(_form_reader(4096))]


@html.get("/dashboard/lti")
def course_page(
    request: Request, session: SessionDep, settings: SettingsDep, user: WebInstructor, page_course: DashboardCourse
) -> Response:
    """The course's LMS link, its roster, what the grades sync would send, the LMS page's
    requests and how they went, and its platform's last service failure (never calling the
    LMS: what it has is the compare button's job's, :func:`compare_button`)."""
    return page_course.remember(_course_lti_page(request, session, settings, user, page_course.course), request)


@html.post("/dashboard/lti/compare")
def compare_button(
    request: Request,
    form: DashboardForm,
    session: SessionDep,
    settings: SettingsDep,
    state: StateDep,
    user: WebInstructor,
    now: Now,
) -> Response:
    """Ask the background job to read what the LMS's gradebook has (``server.lti.tasks``): the
    page shows it beside each score once read. Never the LMS inside this request."""
    return _queue(request, form, session, settings, state, user, now, tasks.COMPARE)


def _course_lti_page(request: Request, session: Session, settings: Any, user: User, course: Course) -> Response:
    link = session.scalar(select(LtiContext).where(LtiContext.course_id == course.id))
    platform = session.get(LtiPlatform, link.platform_id) if link is not None else None
    members: list[tuple[User, LtiMember]] = []
    preview = None
    requests: dict[str, LtiTask] = {}
    if link is not None and platform is not None:
        members = list(
            session.execute(
                select(User, LtiMember)
                .join(LtiMember, LtiMember.user_id == User.id)
                .where(LtiMember.context_id == link.id)
                .order_by(User.name)
            ).tuples()
        )
        requests = tasks.status(session, link)
        preview = plan(session, link, reading=tasks.reading_of(requests.get(tasks.COMPARE)))
    csrf = form_token(request.cookies.get(COOKIE_NAME) or "", settings.secret_bytes)
    titles = {x.slug: x.title for x in list_exercises()}
    body = pages.course_lti_page(
        viewer_of(user, course), link, platform, members, preview, csrf, titles, course.slug, requests
    )
    return html_response(body)


def _taught_link(
    request: Request, form: dict[str, list[str]] | None, session: Session, settings: Any, user: User
) -> tuple[LtiContext, str]:
    """The link of the course a dashboard form names, if the user teaches it (CSRF checked)."""
    cookie = request.cookies.get(COOKIE_NAME)
    if not same_origin(request) or not form_token_matches(_first(form, "csrf"), cookie, settings.secret_bytes):
        raise PageError(403, "Not sent from the LMS page", "Reload the course's LMS page and try again.", user)
    course = taught_course_named(session, user, _first(form, "course"))
    if course is None:
        raise PageNotFound(user)
    link = session.scalar(select(LtiContext).where(LtiContext.course_id == course.id))
    if link is None:
        raise PageBadRequest(user, "This course is not linked to an LMS course.")
    return link, course.slug


@html.post("/dashboard/lti/roster")
def roster_button(
    request: Request,
    form: DashboardForm,
    session: SessionDep,
    settings: SettingsDep,
    state: StateDep,
    user: WebInstructor,
    now: Now,
) -> Response:
    """Ask the background job to pull the roster from the LMS (``server.lti.tasks``); the page
    shows its progress and outcome."""
    return _queue(request, form, session, settings, state, user, now, tasks.ROSTER)


def _queue(
    request: Request,
    form: dict[str, list[str]] | None,
    session: Session,
    settings: Settings,
    state: AppState,
    user: User,
    now: Any,
    kind: str,
) -> Response:
    """Queue a request of the LMS page (refused while the same one is queued or running), then
    back to the page, which shows it. On procrastinate, its job is deferred at once."""
    link, slug = _taught_link(request, form, session, settings, user)
    back = ("Back", in_course("/dashboard/lti", slug))
    try:
        asked = tasks.request(session, link, kind, now)
    except tasks.TaskBusy as exc:
        session.rollback()
        session.refresh(user)  # loaded again now: the error page renders after the session closes
        raise PageError(409, "Already asked", exc.detail, user, link=back) from None
    task_id = asked.id
    session.commit()
    if settings.QUEUE == "procrastinate":
        tasks.defer_request(state.session_factory, task_id)  # (the periodic sweep defers it otherwise)
    return redirect(in_course("/dashboard/lti", slug))


@html.post("/dashboard/lti/grades")
def send_button(
    request: Request, form: DashboardForm, session: SessionDep, settings: SettingsDep, user: WebInstructor, now: Now
) -> Response:
    """Ask the background job to send what the preview shows (it runs within a poll)."""
    link, slug = _taught_link(request, form, session, settings, user)
    link.send_requested_at = now
    link.next_sync_at = None
    session.commit()
    return redirect(in_course("/dashboard/lti", slug))


@html.post("/dashboard/lti/auto")
def auto_button(
    request: Request, form: DashboardForm, session: SessionDep, settings: SettingsDep, user: WebInstructor
) -> Response:
    """Turn the automatic mode on or off."""
    link, slug = _taught_link(request, form, session, settings, user)
    link.auto_grades = _first(form, "auto") == "on"
    session.commit()
    return redirect(in_course("/dashboard/lti", slug))


# --- the registration API (admins) ----------------------------------------------------------


def _public(session: Session, platform: LtiPlatform) -> PlatformPublic:
    return PlatformPublic(
        id=platform.id,
        name=platform.name,
        issuer=platform.issuer,
        client_id=platform.client_id,
        auth_login_url=platform.auth_login_url,
        auth_token_url=platform.auth_token_url,
        jwks_url=platform.jwks_url,
        deployment_ids=deployments(session, platform),
    )


@api.get("/platforms", response_model=list[PlatformPublic], responses=errors(401, 403))
def list_registrations(_admin: AdminUser, session: SessionDep) -> list[PlatformPublic]:
    """Every registered LMS (admins)."""
    return [_public(session, p) for p in list_platforms(session)]


@api.post(
    "/platforms",
    status_code=status.HTTP_201_CREATED,
    response_model=PlatformPublic,
    responses=errors(401, 403, 409, 422),
)
def register(payload: PlatformCreate, _admin: AdminUser, session: SessionDep) -> PlatformPublic:
    """Register an LMS (what ``ppo-grader lti add-platform`` does)."""
    platform = add_platform(
        session,
        Registration(**payload.model_dump(exclude={"deployment_ids"}), deployment_ids=tuple(payload.deployment_ids)),
    )
    session.commit()
    return _public(session, platform)


@api.post("/platforms/{platform_id}/deployments", response_model=PlatformPublic, responses=errors(401, 403, 404, 422))
def register_deployment(
    platform_id: int, payload: DeploymentCreate, _admin: AdminUser, session: SessionDep
) -> PlatformPublic:
    """Accept launches from one more deployment of a registered LMS."""
    platform = session.get(LtiPlatform, platform_id) if 0 < platform_id < 2**31 else None
    if platform is None:
        raise PlatformNotFound(f"No LTI platform with id {platform_id}.")
    add_deployment(session, platform, payload.deployment_id)
    session.commit()
    return _public(session, platform)


router.include_router(html)
router.include_router(api)

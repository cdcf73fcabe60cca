"""``/submissions``: create (202), read one, list own."""

from __future__ import annotations

import asyncio
import math
import time
from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Header, Path, Query, Request, Response, status
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from server.courses.feedback_policy import spend_token as spend
from server.courses.service import readable_course
from server.deps import Credentials, CurrentUser, Now, SessionDep, SettingsDep, StateDep, SubmissionLimits, authenticate
from server.errors import InvalidSource, ShuttingDown, SourceTooLarge
from server.models import Status, User
from server.openapi import errors
from server.state import AppState
from server.submissions import service
from server.submissions.schemas import SubmissionCreate, SubmissionPublic, SubmissionSummary
from server.submissions.waiting import MAX_WAIT_SECONDS, OVER_CAP_PAUSE_SECONDS

#: Ids and offsets past a 32-bit integer cannot exist: refuse them before PostgreSQL overflows.
MAX_ID = 2**31 - 1

router = APIRouter(prefix="/submissions", tags=["submissions"])

# JSON may spell one source byte as up to six ("\u0000"), plus a little envelope.
_JSON_EXPANSION = 6
_ENVELOPE_BYTES = 16 * 1024


async def read_submission_body(request: Request, settings: SettingsDep) -> SubmissionCreate:
    """Read and parse the body ourselves, refusing oversized bodies before parsing.

    FastAPI would buffer and parse any body size; here a 50 MB body is refused from its
    Content-Length, or after at most the limit when it is streamed without one.
    """
    limit = settings.MAX_SOURCE_BYTES * _JSON_EXPANSION + _ENVELOPE_BYTES
    too_large = SourceTooLarge(
        f"The request body is over {limit} bytes; sources are limited to "
        f"{settings.MAX_SOURCE_BYTES} bytes ({settings.MAX_SOURCE_BYTES // 1024} KiB)."
    )
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large
    chunks: list[bytes] = []
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > limit:
            raise too_large
        chunks.append(chunk)
    body = b"".join(chunks)
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        # Said in the learner's terms, not as a JSON parser's code-point complaint.
        raise InvalidSource("The source is not valid UTF-8 text; save the file as UTF-8.") from None
    try:
        return SubmissionCreate.model_validate_json(body)
    except ValidationError as exc:
        # Same wire shape as FastAPI's own body validation (locations start with "body").
        raise RequestValidationError(
            [{**error, "loc": ("body", *error["loc"])} for error in exc.errors(include_url=False)]
        ) from None


SubmissionBody = Annotated[SubmissionCreate, Depends(read_submission_body)]
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key", max_length=255, description="Retries with the same key return the first submission."
    ),
]

_CREATE_BODY_DOC = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": SubmissionCreate.model_json_schema()}},
    }
}


#: ``POST /submissions?wait=``: as ``GET /submissions/{id}?wait=`` words it.
_WAIT_DOC = (
    "Long poll: wait up to this many seconds for the verdict and answer as soon as it is stored "
    "(0, the default, answers at once). A user keeps at most `MAX_LONG_POLLS_PER_USER` (4) long "
    "polls waiting at once; one beyond them answers at once with the submission as it is."
)


@router.post(
    "",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=SubmissionPublic,
    openapi_extra=_CREATE_BODY_DOC,
    responses={
        200: {"model": SubmissionPublic, "description": "Replay of an Idempotency-Key"},
        **errors(
            401,
            403,
            404,
            409,
            413,
            422,
            429,
            notes={
                403: "The course refuses it now: `SubmissionsClosed` (with the date) or `AttemptLimitReached`",
                404: "`ExerciseNotFound` (unknown, or not in the course) or `CourseNotFound`",
                409: "`IdempotencyKeyConflict`, `ExerciseNotVerified` (a pack exercise no verify has passed on), "
                "`LateNotConfirmed` (`late=ask` past the due date: nothing stored; the body has `course` and the "
                "exercise's `window`) or `CatalogueChanged` (`catalogue=` is not the caller's catalogue now)",
                422: "`ValidationError`, `EmptySource`, `InvalidSource`, or `CourseRequired` (in several courses, none named)",
            },
        ),
    },
    dependencies=[SubmissionLimits],  # 429 before the body is read (learners only)
)
async def create_submission(
    user: CurrentUser,  # first: an anonymous caller gets 401 before its body is read
    payload: SubmissionBody,
    session: SessionDep,
    state: StateDep,
    response: Response,
    now: Now,
    request: Request,
    credentials: Credentials,
    idempotency_key: IdempotencyKey = None,
    wait: Annotated[float, Query(ge=0, le=MAX_WAIT_SECONDS, description=_WAIT_DOC)] = 0,
    late: Annotated[
        Literal["ask", "send"],
        Query(
            description="`send` (the default) accepts a submission past its due date and flags it late; `ask` "
            "answers 409 `LateNotConfirmed` with the exercise's window instead, storing nothing."
        ),
    ] = "send",
    catalogue: Annotated[
        str | None,
        Query(
            max_length=64,
            description="The catalogue version (`GET /exercises`' `ETag`) the exercise was matched in; 409 "
            "`CatalogueChanged`, storing nothing, when the caller's catalogue is another now.",
        ),
    ] = None,
) -> SubmissionPublic:
    """Queue a submission for grading: 202 when created, 200 when replaying a key.

    In a course, learners are refused after the exercise's hard close (403
    ``SubmissionsClosed``) and past its attempt limit (403 ``AttemptLimitReached``), each with
    the date in the course's time zone; after the due date the submission is accepted and
    flagged late (``late``, ``penalty_percent``), or with ``late=ask`` refused with 409
    ``LateNotConfirmed`` and the window, so that a client can ask first. A learner in several
    courses names one (``course``; 422 ``CourseRequired`` otherwise); an exercise outside the
    course, or not released to the learner yet, is 404 ``ExerciseNotFound`` (the same answer:
    nothing says an unreleased exercise exists).

    With ``wait``, the answer is the verdict when it is stored within that many seconds (a
    long poll, as ``GET /submissions/{id}?wait=``): one request from the file to the verdict.
    A wait that ends first (time up, no free long-poll place, the server stopping) answers
    with the submission as it is; it is graded all the same (``GET /submissions/{id}``).
    """
    deadline = time.monotonic() + wait
    public, created, user_id = await run_in_threadpool(
        _create, session, state, user, payload, now, idempotency_key, late == "ask", catalogue
    )
    if not created:
        response.status_code = status.HTTP_200_OK
    if wait > 0 and public.status != Status.DONE:
        stored = public
        try:
            public = await _wait_for(
                session, user, user_id, stored.id, state, deadline, long_poll=True, pause_beyond_cap=False
            )
            # The token may have been revoked while the request waited (as a GET long poll checks).
            await run_in_threadpool(_sign_in, session, state, credentials, request)
        except ShuttingDown:
            return stored  # stored already: the client asks the wait endpoint after the restart
        except asyncio.CancelledError:
            if not state.announcer.closed:
                raise
            return stored  # the server's grace ran out while this waited (see read_submission)
    return public


def _create(
    session: Session,
    state: AppState,
    user: User,
    payload: SubmissionCreate,
    now: datetime,
    idempotency_key: str | None,
    ask_if_late: bool,
    catalogue: str | None,
) -> tuple[SubmissionPublic, bool, int]:
    """Store the submission (``service.create_submission``); the row as the caller sees it,
    whether it was created, and the caller's id, read here (after the commit the user's
    attributes are expired, and reading one on the event loop would take a connection there)."""
    submission, created = service.create_submission(
        session,
        state.queue,
        user,
        payload,
        max_source_bytes=state.settings.MAX_SOURCE_BYTES,
        idempotency_key=idempotency_key,
        now=now,
        max_queued=state.settings.MAX_QUEUED_PER_USER,
        retry_after=math.ceil(state.settings.WALL_SECONDS),
        ask_if_late=ask_if_late,
        catalogue=catalogue,
    )
    try:
        # a replayed key's row may be graded
        return service.visible_to(session, user, submission, now), created, user.id
    finally:
        session.rollback()  # no connection held while the request waits


def _sign_in(session: Session, state: AppState, credentials: Credentials, request: Request) -> tuple[User, int]:
    """The caller, and their id (read here: after the rollback the row's attributes are expired,
    and reading one on the event loop would take a connection there)."""
    # The connection goes back to the pool before the route awaits anything: a request that
    # held one while it waited for a thread (CurrentUser's way) starved the pool when a burst
    # of long polls arrived, every thread blocked on a connection that a waiting request held.
    # ``authenticate`` checks the token's scope and course as ``CurrentUser`` does.
    try:
        user = authenticate(session, state.settings, credentials, request).user
        return user, user.id
    finally:
        session.rollback()


def _read_fresh(
    session: Session, user: User, submission_id: int, state: AppState, *, long_poll: bool
) -> SubmissionPublic | None:
    """The row as the caller may see it; None, without reading, for a long poll once the server
    is stopping (the caller answers 503: under load a thousand reads wait for a thread, and
    each would hold the shutdown up)."""
    if long_poll and state.announcer.closed:
        return None
    session.rollback()  # end any earlier read's snapshot: see what workers committed since
    try:
        return service.visible_to(session, user, service.get_submission(session, user, submission_id), state.clock())
    finally:
        # Hand the connection back to the pool before waiting: a thousand waiting requests
        # must not hold a thousand connections (the pool would run dry long before).
        session.rollback()


@router.get(
    "/{submission_id}",
    response_model=SubmissionPublic,
    responses=errors(
        401,
        404,
        503,
        notes={503: "`ShuttingDown`: the server stopped during a long poll; the submission is kept: ask again"},
    ),
)
async def read_submission(
    submission_id: Annotated[int, Path(ge=1, le=MAX_ID)],
    request: Request,
    credentials: Credentials,
    state: StateDep,
    wait: Annotated[
        float,
        Query(
            ge=0,
            le=MAX_WAIT_SECONDS,
            description=(
                "Long poll: wait up to this many seconds for the verdict and answer as soon as it is stored "
                "(0, the default, answers at once). A user keeps at most `MAX_LONG_POLLS_PER_USER` (4) long "
                "polls waiting at once; one beyond them answers after a pause of at most "
                "`OVER_CAP_PAUSE_SECONDS` (5) with the submission as it is (at once when it is done)."
            ),
        ),
    ] = 0,
) -> SubmissionPublic:
    """One submission; 404 ``SubmissionNotFound`` if it is not the caller's (learners). A
    learner sees what the exercise set's feedback policy allows (``feedback_view``). A long
    poll still waiting when the server stops answers 503 ``ShuttingDown`` at once."""
    deadline = time.monotonic() + wait
    # The session is this route's own (no SessionDep, no CurrentUser): it holds a connection
    # only inside each thread call, never across an await (see _sign_in).
    try:
        with state.session_factory() as session:
            user, user_id = await run_in_threadpool(_sign_in, session, state, credentials, request)
            public = await _wait_for(
                session, user, user_id, submission_id, state, deadline, long_poll=wait > 0, pause_beyond_cap=True
            )
            if wait > 0:
                # The token may have been revoked (or narrowed away) while the poll waited: a
                # revoked token is refused at once, so it gets no verdict either.
                await run_in_threadpool(_sign_in, session, state, credentials, request)
            return public
    except asyncio.CancelledError:
        if not state.announcer.closed:
            raise
        # The server's grace ran out (uvicorn cancels what is left) while this request waited
        # for a thread on a machine too busy to answer every long poll in time: it still ends
        # with the retryable answer, not a 500 and a traceback in the log.
        raise ShuttingDown() from None


async def _wait_for(
    session: Session,
    user: User,
    user_id: int,
    submission_id: int,
    state: AppState,
    deadline: float,
    *,
    long_poll: bool,
    pause_beyond_cap: bool,
) -> SubmissionPublic:
    # Subscribed before the first read, so that a verdict stored right after it still wakes
    # us; woken by an announcement (in-process worker, or PostgreSQL's NOTIFY), and without a
    # listener re-read every POLL_SECONDS (server.submissions.waiting).
    # One user waits in at most MAX_LONG_POLLS_PER_USER requests at once: beyond them a GET
    # pauses once, costing no thread, before it answers with the row as it is (answered at once,
    # a hostile client's polls beyond the cap were a flood as fast as the API answered); a POST
    # answers at once (the submit rate limit bounds it).
    most = state.settings.MAX_LONG_POLLS_PER_USER
    with state.announcer.slot(user_id, most) as may_wait, state.announcer.subscribe(submission_id) as announced:
        paused = False
        while True:
            public = await run_in_threadpool(_read_fresh, session, user, submission_id, state, long_poll=long_poll)
            if public is None:
                raise ShuttingDown()
            left = deadline - time.monotonic()
            if public.status == Status.DONE or left <= 0:
                return public
            if not may_wait:
                if paused or not pause_beyond_cap:
                    return public
                paused = True
                await announced.pause(min(left, OVER_CAP_PAUSE_SECONDS))
                if state.announcer.closed:
                    raise ShuttingDown()
                continue
            await announced.wait(left)
            if state.announcer.closed:
                raise ShuttingDown()  # SIGTERM: answer now, without another read


@router.get("", response_model=list[SubmissionSummary], responses=errors(401, 403, 404))
def list_submissions(
    user: CurrentUser,
    session: SessionDep,
    now: Now,
    exercise: str | None = None,
    course: Annotated[str | None, Query(max_length=64, description="Only this course's submissions.")] = None,
    user_name: Annotated[str | None, Query(alias="user", description="Instructors: whose submissions.")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_ID)] = 0,
) -> list[SubmissionSummary]:
    """The caller's submissions, newest first (instructors: ``user=`` for someone else's, in
    the courses they teach; ``course=`` for one course, 404 ``CourseNotFound`` if not theirs)."""
    selected = readable_course(session, user, course) if course is not None else None
    return service.list_submissions(
        session, user, exercise=exercise, user_name=user_name, limit=limit, offset=offset, now=now, course=selected
    )


@router.post(
    "/{submission_id}/token",
    response_model=SubmissionPublic,
    responses=errors(
        401,
        403,
        404,
        409,
        notes={
            403: "`NoTokensLeft`: every token of today is spent on this exercise (the detail says when the next comes)",
            404: "`SubmissionNotFound`: not one of the caller's submissions",
            409: "`TokensNotInUse`: the exercise set's feedback policy is not tokens:N",
        },
    ),
)
def spend_token(
    submission_id: Annotated[int, Path(ge=1, le=MAX_ID)],
    user: CurrentUser,
    session: SessionDep,
    now: Now,
) -> SubmissionPublic:
    """Spend one of today's feedback tokens on one of your submissions (a ``tokens:N`` set): its
    report is shown from now on, here and on every route. Spending again on the same submission
    costs nothing; viewing never spends one."""
    submission = service.get_submission(session, user, submission_id)
    spend(session, user, submission, now)
    session.commit()
    return service.visible_to(session, user, submission, now)

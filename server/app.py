"""The app factory: lifespan (engine, migrations, judge, workers), routers, error handlers."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from exercises import registry
from server import __version__
from server.api_docs import install_docs
from server.catalogue.packs_config import packs_line
from server.catalogue.router import router as catalogue_router
from server.catalogue.versions import unverified_changes, version_source
from server.clock import Clock, system_clock
from server.config import Settings
from server.courses.router import router as courses_router
from server.courses.score_router import router as scores_router
from server.dashboard.assignments import router as assignments_router
from server.dashboard.corrections import router as corrections_router
from server.dashboard.extensions import router as extensions_router
from server.dashboard.regrades import router as regrades_page_router
from server.dashboard.router import router as dashboard_router
from server.dashboard.staff import router as staff_page_router
from server.db import make_engine, make_session_factory, transaction
from server.errors import GraderError
from server.gradebook.router import router as gradebook_router
from server.grading.grader import GradeFunction, build_judge, grade_submission
from server.grading.procrastinate_backend import ProcrastinateQueue, RemoteWorkers, conninfo
from server.grading.queue import InProcessQueue
from server.grading.worker import WorkerPool
from server.health.metrics import router as metrics_router
from server.health.router import router as health_router
from server.leaderboard.page_router import router as leaderboard_page_router
from server.leaderboard.router import router as leaderboard_router
from server.lti.jobs import LtiGradeSync
from server.lti.keys import signing_key
from server.lti.router import router as lti_router
from server.migrations import upgrade_to_head
from server.openapi import use_error_shape_for_validation
from server.regrades.router import router as regrades_router
from server.review.page_router import router as review_pages_router
from server.review.router import router as review_router
from server.similarity.jobs import ProcrastinateSimilarity, SimilarityWorker
from server.similarity.page_router import router as similarity_pages_router
from server.similarity.router import router as similarity_router
from server.state import AppState
from server.stats.router import router as stats_router
from server.submissions.router import router as submissions_router
from server.submissions.waiting import VerdictAnnouncer, VerdictListener
from server.text_guard import RefuseNulInUrl
from server.users.router import router as users_router
from server.users.service import ensure_first_instructor
from server.users.terminal import router as terminal_router
from server.web.errors import install_page_error_handlers
from server.web.router import router as web_router

log = logging.getLogger(__name__)

API_PREFIX = "/api/v1"

#: Builds the grading function and returns it with a close() for shutdown. Tests pass a
#: fake; the default starts the real judge.
GraderFactory = Callable[[Settings], tuple[GradeFunction, Callable[[], None]]]


def real_grader(settings: Settings) -> tuple[GradeFunction, Callable[[], None]]:
    """The production grader: one ``exercises.judge.Judge`` for the app's lifetime."""
    judge = build_judge(settings)
    return functools.partial(grade_submission, judge=judge), judge.close


def create_app(
    settings: Settings | None = None, grader_factory: GraderFactory | None = None, clock: Clock | None = None
) -> FastAPI:
    """Build the API. Nothing touches the database or starts threads until the lifespan.

    ``clock`` is what "now" means for course dates (release, due, close); tests pass their own.
    """
    settings = settings or Settings()
    make_grader = grader_factory or real_grader

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state, close_grader = await run_in_threadpool(_start, settings, make_grader)
        state.clock = clock or system_clock
        app.state.grader = state
        try:
            yield
        finally:
            await run_in_threadpool(_stop, state, close_grader)

    app = FastAPI(
        title="ppo-grader",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,  # served with local assets: server/api_docs.py
        redoc_url=None,
        openapi_url=f"{API_PREFIX}/openapi.json",
    )
    install_docs(app, API_PREFIX)
    for router in (
        health_router,
        users_router,
        catalogue_router,
        courses_router,
        scores_router,
        submissions_router,
        leaderboard_router,
        stats_router,
        gradebook_router,
        similarity_router,
        regrades_router,
        review_router,
    ):
        app.include_router(router, prefix=API_PREFIX)
    app.include_router(metrics_router)  # GET /metrics (Prometheus), at the root by convention
    # HTML pages (not in the schema): the kit's /login, /logout and script; each domain's pages
    app.include_router(web_router)
    app.include_router(leaderboard_page_router)  # /leaderboard
    app.include_router(dashboard_router)  # /dashboard/...: the class and each learner's work
    app.include_router(corrections_router)  # POST /dashboard/corrections: overrides, excuses, extensions
    app.include_router(assignments_router)  # /dashboard/assignments: a course's set, its instructors' forms
    app.include_router(extensions_router)  # /dashboard/extensions: extensions and corrections, bulk from a CSV
    app.include_router(similarity_pages_router)  # /dashboard/similarity: similar submissions, instructors only
    app.include_router(regrades_page_router)  # /dashboard/regrades: a course's regrade sets, diff, apply, cancel
    app.include_router(staff_page_router)  # POST /dashboard/staff: the course page's add or remove a TA
    app.include_router(review_pages_router)  # /dashboard/reviews: review requests; the submission page's review forms
    app.include_router(terminal_router)  # /dashboard/terminal: "Use from a terminal", a user's own token
    app.include_router(lti_router)  # /lti/...: LTI 1.3 launch, key set, deep linking; /dashboard/lti; /api/v1/lti
    _install_error_handlers(app)
    install_page_error_handlers(app)  # "login required" and the pages' 404/400 as HTML
    app.add_middleware(RefuseNulInUrl)
    default_openapi = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = use_error_shape_for_validation(default_openapi())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def _start(settings: Settings, make_grader: GraderFactory) -> tuple[AppState, Callable[[], None]]:
    engine = make_engine(settings.DATABASE_URL)
    try:
        upgrade_to_head(engine)
        session_factory = make_session_factory(engine)
        # Stored exercise versions come from this database (issue 32: a published version
        # reaches this process without a restart).
        registry.use_version_source(version_source(session_factory))
        with transaction(session_factory) as session:
            catalogue = registry.all_exercises()
            # What this process grades, in its log (serve's banner says it too, before the log starts).
            log.info(packs_line(catalogue))
            for change in unverified_changes(session, catalogue):
                log.warning(change)
            first = ensure_first_instructor(session, settings.secret_bytes)
            signing_key(session, settings.secret_bytes)  # published at /lti/jwks before anything is signed
        if first is not None:
            _print_first_token(first.user.name, first.token)
        if settings.QUEUE == "procrastinate":
            # Workers are other processes (`ppo-grader worker`); the API only defers jobs.
            return _start_procrastinate(settings, engine, session_factory)
        grade, close_grader = make_grader(settings)
    except BaseException:
        engine.dispose()
        raise
    # With two workers or more, regrades leave one free for live submissions.
    queue = InProcessQueue(regrade_slots=settings.WORKERS - 1)
    announcer = VerdictAnnouncer(local=True)  # this process's workers announce their verdicts
    workers = WorkerPool(
        session_factory,
        queue,
        grade,
        workers=settings.WORKERS,
        output_cap=settings.OUTPUT_BYTES,
        on_verdict=announcer.announce,
        regrade_poll_seconds=settings.REGRADE_POLL_SECONDS,
    )
    workers.recover()  # before start(): re-queued rows go first, in id order
    workers.recover_regrades()
    workers.start()
    state = AppState(settings, engine, session_factory, queue, workers, announcer)
    _listen(state)
    # Reads the app's clock at each sweep (the lifespan sets it after this returns).
    similarity = SimilarityWorker(
        session_factory, lambda: state.clock(), settings.SIMILARITY_POLL_SECONDS, settings.SIMILARITY_PROCESSES
    )
    similarity.start()
    state.similarity = similarity
    lti = LtiGradeSync(session_factory, settings.secret_bytes, settings.LTI_POLL_SECONDS)
    lti.start()
    state.lti = lti
    return state, close_grader


def _start_procrastinate(settings: Settings, engine: Any, session_factory: Any) -> tuple[AppState, Callable[[], None]]:
    conninfo(settings.DATABASE_URL)  # refuses a non-PostgreSQL database early
    workers = RemoteWorkers(session_factory, settings)
    state = AppState(settings, engine, session_factory, ProcrastinateQueue(settings), workers)
    _listen(state)
    state.similarity = ProcrastinateSimilarity()
    return state, lambda: None


def _listen(state: AppState) -> None:
    """On PostgreSQL (unless ``LISTEN_NOTIFY`` is off), wake long polls by LISTEN/NOTIFY."""
    if not state.settings.LISTEN_NOTIFY or state.engine.dialect.name != "postgresql":
        return
    listener = VerdictListener(conninfo(state.settings.DATABASE_URL), state.announcer)
    listener.start()
    state.listener = listener


def begin_shutdown(app: FastAPI) -> None:
    """The server was told to stop (``serve`` calls this on SIGTERM, before the server waits for
    its connections to close; the lifespan's end comes only after them): every long poll
    answers 503 ``ShuttingDown`` now, instead of holding the shutdown for up to 30 s."""
    state: AppState | None = getattr(app.state, "grader", None)
    if state is not None:
        state.shutdown_deadline = time.monotonic() + state.settings.SHUTDOWN_GRACE_SECONDS
        state.announcer.close()


def _stop(state: AppState, close_grader: Callable[[], None]) -> None:
    # One deadline for every thread, counted from the signal (begin_shutdown) while the
    # connections closed: the jobs in hand get until then to finish; a submission still
    # grading then goes back to the queue (graded at the next start).
    deadline = state.shutdown_deadline or time.monotonic() + state.settings.SHUTDOWN_GRACE_SECONDS
    state.announcer.close()  # a long poll still open (no SIGTERM: an embedding server) ends now

    def left() -> float:
        return max(0.0, deadline - time.monotonic())

    if state.listener is not None:
        state.listener.stop(left())
    # Workers first (they use the judge), then the judge, then the engine.
    if isinstance(state.similarity, SimilarityWorker):
        state.similarity.stop(left())
    if state.lti is not None:
        state.lti.stop(left())
    state.workers.stop(timeout=left())
    try:
        close_grader()
    finally:
        state.engine.dispose()


def _print_first_token(name: str, token: str) -> None:
    # stdout, not the log: the operator must see it once, and log shippers should not keep it.
    line = "=" * 72
    print(
        f"\n{line}\n"
        f"  First start: created the instructor account {name!r}.\n"
        f"  Instructor token (shown once): {token}\n"
        f"  Store it now (e.g. `ppo-submit login --token ...`); it is stored only hashed.\n"
        f"{line}\n",
        flush=True,
    )


def _install_error_handlers(app: FastAPI) -> None:
    """Every error leaves as ``{"error": Name, "detail": text}``."""

    @app.exception_handler(GraderError)
    async def grader_error(_request: Request, exc: GraderError) -> JSONResponse:
        return JSONResponse(exc.to_wire(), status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [_plain_error(e) for e in exc.errors()]
        detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors)
        return JSONResponse(
            {"error": "ValidationError", "detail": detail or "Invalid request.", "errors": errors},
            status_code=422,
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # Routing errors (unknown path, wrong method) get the same shape, e.g. "NotFound".
        name = "".join(word.capitalize() for word in _reason(exc.status_code).split())
        return JSONResponse(
            {"error": name or "HTTPError", "detail": str(exc.detail)},
            status_code=exc.status_code,
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> JSONResponse:
        # The traceback goes to the log only; the client learns nothing about internals.
        log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
        return JSONResponse(
            {"error": "InternalError", "detail": "The server failed to handle this request."},
            status_code=500,
        )


def _plain_error(error: Any) -> dict[str, Any]:
    # Pydantic's "ctx"/"input" may hold exceptions or the whole (large) source; keep it small.
    return {"loc": list(error.get("loc", ())), "msg": str(error.get("msg", "")), "type": str(error.get("type", ""))}


def _reason(status_code: int) -> str:
    try:
        return HTTPStatus(status_code).phrase
    except ValueError:
        return ""

"""HTTP access to the ppo-grader API (``/api/v1``) and the errors the client reports.

Every failure the client knows how to explain is a ``ClientError``. The CLI catches it once,
at its edge, prints ``message`` as one red line on stderr and exits with ``exit_code``::

    ClientError (message, exit_code=2)
    ├── UsageError            the command line, the file or the config cannot be used as given
    ├── NotLoggedIn           no server or no token configured
    ├── ConnectionFailed      the server could not be reached, even after retries
    ├── WaitTimedOut          gave up polling a submission that is still queued or running
    ├── Interrupted           Ctrl-C while waiting (exit 130; the submission goes on)
    └── ApiError              the server answered with an error (status, error, detail)
        ├── AuthError         401 or 403: the token is missing, unknown or lacks the role
        ├── LateNotConfirmed  409 ``late=ask`` past the due date: nothing stored (course, window)
        ├── CatalogueChanged  409 the exercise was matched in a catalogue the server has changed since
        ├── RateLimited       429, after honouring ``Retry-After`` once
        └── ServerError       5xx after retries, or a response that is not the API's

Responses are returned as the server's JSON, unchanged (``--json`` passes them through);
the ``TypedDict`` s below only document the fields the client reads.
"""

from __future__ import annotations

import ssl
import time
import uuid
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypedDict, cast
from urllib.parse import quote

from . import __version__
from .lazy import lazy_import

if TYPE_CHECKING:
    import httpx
else:  # httpx loads when the first request is built, not when the CLI starts
    httpx = lazy_import("httpx")

#: Retries after the first attempt, on connection errors and 5xx answers.
MAX_RETRIES = 3
#: Longest ``Retry-After`` (seconds) the client is willing to sleep through.
MAX_RETRY_AFTER = 60.0
#: Each long poll asks the server to hold the request this long for the verdict (the server
#: answers the moment it is stored; progress is shown between polls).
LONG_POLL_SECONDS = 5.0
#: Polling interval while a submission is queued or running, against a server that does not
#: hold requests (an older one): starts here...
POLL_FIRST = 0.2
#: ...grows by this factor...
POLL_GROWTH = 1.5
#: ...up to this.
POLL_MAX = 1.0
#: While waiting for a verdict, a server that cannot be reached or answers 502, 503 or 504 (a
#: restart: 503 ``ShuttingDown`` ends the long polls of one that stops) is asked again for up
#: to this long, never past the wait's ``timeout``: the submission is kept and graded after it.
SERVER_AWAY_SECONDS = 180.0
#: Pause between those attempts (each request also makes its own ``MAX_RETRIES``).
SERVER_AWAY_POLL = 1.0

Sleep = Callable[[float], None]
Clock = Callable[[], float]


# --------------------------------------------------------------------------- errors


class ClientError(Exception):
    """An error with a one-line message fit for the user, and the exit code it maps to."""

    exit_code: int = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UsageError(ClientError):
    """The command line, the file or the config cannot be used as given."""


class NotLoggedIn(ClientError):
    """No server URL or no token is configured."""


class ConnectionFailed(ClientError):
    """The server could not be reached (refused, DNS, timeout), even after retries."""


class WaitTimedOut(ClientError):
    """The submission was still queued or running when ``--timeout`` ran out."""


class Interrupted(ClientError):
    """The user pressed Ctrl-C while waiting; the submission is still graded server-side."""

    exit_code = 130


class ApiError(ClientError):
    """The server answered with an error in its wire shape ``{"error", "detail"}``."""

    def __init__(self, status: int, error: str, detail: str, message: str | None = None) -> None:
        super().__init__(message or f"{detail} ({error}, HTTP {status})")
        self.status = status
        self.error = error
        self.detail = detail


class AuthError(ApiError):
    """401 (no valid token) or 403 (the user lacks the role)."""


class LateNotConfirmed(ApiError):
    """409: a submission sent with ``late=ask`` is past its due date; nothing was stored. The
    answer carries the course and the exercise's window (as ``GET /courses/{course}/exercises``
    lists it), for the warning; sent again with ``late=send`` it is accepted, flagged late."""

    def __init__(self, status: int, error: str, detail: str, course: str, window: ExerciseWindow) -> None:
        super().__init__(status, error, detail)
        self.course = course
        self.window = window


class CatalogueChanged(ApiError):
    """409: the exercise was matched in a catalogue version that is not the caller's now;
    nothing was stored (read the catalogue again, match again, send again)."""


class RateLimited(ApiError):
    """429, still refused after honouring ``Retry-After`` once."""


class ServerError(ApiError):
    """5xx after retries, or an answer that is not the API's JSON."""


# --------------------------------------------------------------------------- wire types


class User(TypedDict, total=False):
    """``GET /me``."""

    id: int | str
    name: str
    display_name: str
    role: str


class ExerciseSummary(TypedDict, total=False):
    """An item of ``GET /exercises``."""

    slug: str
    title: str
    function: str
    summary: str
    order: int


class Exercise(ExerciseSummary, total=False):
    """``GET /exercises/{slug}``."""

    description: str
    starter: str
    checks: list[dict[str, Any]]


class CheckResult(TypedDict, total=False):
    """One check of a graded submission."""

    name: str
    weight: float
    passed: bool
    message: str
    mistake_title: str | None
    #: ``mistake_title``'s old name: all a server from before the rename (issue 33) sends.
    misconception: str | None


class Submission(TypedDict, total=False):
    """``GET /submissions/{id}``; the list endpoint has the same shape."""

    id: int | str
    exercise: str
    user: Any
    status: str  # queued | running | done
    verdict: str | None
    score: float | None
    message: str | None
    checks: list[CheckResult]
    stdout: str | None
    stderr: str | None
    timings: dict[str, float] | None
    peak_memory_bytes: int | None
    cpu_seconds: float | None
    created_at: str | None
    started_at: str | None
    finished_at: str | None
    queue_position: int | None
    estimated_seconds: int | None
    course: str
    late: bool
    late_seconds: int | None
    penalty_percent: float
    counted_score: float | None
    feedback_view: str  # full | report | score | hidden: what the exercise's feedback policy let through
    feedback_policy: str  # full | score | hidden-until-due | tokens:N
    released_at: str | None
    token_spent: bool
    tokens_left: int | None
    filename: str | None
    feedback: dict[str, Any] | None
    content_version: str
    grader_version: str
    regrades: list[dict[str, Any]]  # applied regrades that changed this verdict, oldest first


class Course(TypedDict, total=False):
    """An item of ``GET /courses``."""

    slug: str
    title: str
    time_zone: str
    role: str


class ExerciseWindow(TypedDict, total=False):
    """One exercise of ``GET /courses/{course}/exercises``; times in the course's zone."""

    exercise: str
    title: str
    function: str
    status: str  # not_released | open | late | closed
    release_at: str | None
    due_at: str | None
    close_at: str | None
    extended: bool
    seconds_to_due: int | None
    seconds_to_close: int | None
    penalty_percent: float
    penalty_unit: str
    max_attempts: int | None
    attempts_used: int
    feedback_policy: str  # full | score | hidden-until-due | tokens:N
    tokens_left: int | None  # tokens:N only
    excused: bool  # an instructor excused you from it: no late penalty applies


class CourseExercises(TypedDict, total=False):
    """``GET /courses/{course}/exercises``."""

    course: str
    title: str
    time_zone: str
    now: str
    exercises: list[ExerciseWindow]


class ScoreCounted(TypedDict, total=False):
    """One item of ``GET /courses/{course}/scores``: the score that counts and what it comes from."""

    learner: str
    exercise: str
    counted_score: float | None
    raw_best_score: float | None
    late: bool
    penalty_percent: float
    override: dict[str, Any] | None
    excused: dict[str, Any] | None
    attempts: int
    described: str
    #: ``described``'s old name: all a server from before the rename (issue 33) sends.
    shown: str


class CourseScores(TypedDict, total=False):
    """``GET /courses/{course}/scores``."""

    course: str
    time_zone: str
    scores: list[ScoreCounted]


class BoardEntry(TypedDict, total=False):
    """One row of ``GET /leaderboard``: ``learner`` is a pseudonym unless the course shows names."""

    rank: int
    learner: str
    is_you: bool
    board_score: float  # the score that counts of the checks the judge confirmed (what boards rank by)
    raw_best_score: float
    attempts: int
    solved: int
    best_reached_at: str | None


class Board(TypedDict, total=False):
    """``GET /leaderboard?course=``: one page of a course's board (overall, or one exercise's)."""

    course: str
    exercise: str | None
    total: int
    limit: int
    offset: int
    entries: list[BoardEntry]


# --------------------------------------------------------------------------- client


def normalise_server(url: str) -> str:
    """Return ``url`` without trailing slashes, with ``http://`` added when it has no scheme.

    Raises ``UsageError`` for a scheme other than http(s).
    """
    url = url.strip().rstrip("/")
    if not url:
        raise UsageError("the server URL is empty")
    if "://" not in url:
        url = f"http://{url}"
    scheme = url.split("://", 1)[0].lower()
    if scheme not in ("http", "https"):
        raise UsageError(f"the server URL must start with http:// or https://, not {scheme}://")
    return url


def _tls_context(server: str) -> ssl.SSLContext | bool:
    """What ``httpx.Client`` verifies TLS with: the system's CA bundle for an ``https`` server.

    httpx loads that bundle for every client, whether or not it speaks TLS, and the load is a
    large share of a command's start-up. A plain-HTTP server never uses it (redirects are not
    followed), so it gets a context that trusts no certificate: one that fails closed if a TLS
    connection were ever made with it.
    """
    if server.lower().startswith("http://"):
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return True


class Client:
    """A small synchronous client for the grader's API.

    ``transport`` is passed to ``httpx.Client`` (tests give an ``httpx.MockTransport``);
    ``sleep`` and ``clock`` are injectable so that retries and polling run instantly in tests.
    Use as a context manager, or call ``close()``.
    """

    def __init__(
        self,
        server: str,
        token: str | None,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Sleep = time.sleep,
        clock: Clock = time.monotonic,
        timeout: float = 30.0,
        retries: int = MAX_RETRIES,
    ) -> None:
        self.server = normalise_server(server)
        #: The token requests carry (None: none), which also names the kept catalogue's entry.
        self.token = token
        headers = {"User-Agent": f"ppo-submit/{__version__}", "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(
            base_url=f"{self.server}/api/v1",
            headers=headers,
            transport=transport,
            timeout=timeout,
            verify=_tls_context(self.server),
        )
        self._sleep = sleep
        self._clock = clock
        self._retries = retries

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the underlying connection pool."""
        self._http.close()

    def now(self) -> float:
        """The client's clock (injectable), that ``wait`` measures its ``timeout`` on."""
        return self._clock()

    # -- endpoints -------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        """``GET /health``."""
        return cast(dict[str, Any], self._request("GET", "/health"))

    def me(self) -> User:
        """``GET /me``: who the token belongs to."""
        return cast(User, self._request("GET", "/me"))

    def exercises(self) -> list[ExerciseSummary]:
        """``GET /exercises``."""
        return cast(list[ExerciseSummary], self._request("GET", "/exercises"))

    def exercise(self, slug: str) -> Exercise:
        """``GET /exercises/{slug}``, with the starter template."""
        return cast(Exercise, self._request("GET", f"/exercises/{quote(slug, safe='')}"))

    def submit(
        self,
        exercise: str,
        source: str,
        *,
        idempotency_key: str | None = None,
        filename: str | None = None,
        course: str | None = None,
        wait: float = 0.0,
        late: str | None = None,
        catalogue: str | None = None,
    ) -> Submission:
        """``POST /submissions`` (to ``course``, or the server's choice when None);
        ``filename`` (a base name) names the file in tracebacks.

        ``wait``: a long poll inside the request, answered with the verdict when it is stored
        within that many seconds (else with the submission as it is). ``late="ask"``: a
        submission past its due date raises ``LateNotConfirmed`` (nothing stored) instead of
        being sent late; ``"send"`` sends it. ``catalogue``: the catalogue version the exercise
        was matched in; ``CatalogueChanged`` (nothing stored) when the server's is another.

        One idempotency key (a fresh uuid4 unless given) is sent with every retry, so a
        retried request never creates a second submission.
        """
        key = idempotency_key or str(uuid.uuid4())
        body = {"exercise": exercise, "source": source}
        if filename:
            body["filename"] = filename
        if course is not None:
            body["course"] = course
        params = {
            name: value
            for name, value in (("wait", f"{wait:g}" if wait > 0 else None), ("late", late), ("catalogue", catalogue))
            if value is not None
        }
        answer = self._request(
            "POST", "/submissions", json=body, params=params or None, headers={"Idempotency-Key": key}
        )
        return self._submission(answer)

    def catalogue(self, etag: str | None = None) -> tuple[list[ExerciseSummary] | None, str | None]:
        """``GET /exercises`` with ``If-None-Match: etag``: (the exercises, their ``ETag``), or
        (None, ``etag``) when the server answers 304 (the caller's copy is current)."""
        response = self._send("GET", "/exercises", headers={"If-None-Match": etag} if etag else None)
        found = response.headers.get("ETag")
        if response.status_code == 304:
            return None, found or etag
        return cast(list[ExerciseSummary], self._json(response)), found

    def courses(self) -> list[Course] | None:
        """``GET /courses``: the caller's courses; None from a server without courses (404)."""
        try:
            return cast(list[Course], self._request("GET", "/courses"))
        except ApiError as exc:
            if exc.status == 404 and exc.error == "NotFound":
                return None
            raise

    def course_exercises(self, course: str) -> CourseExercises:
        """``GET /courses/{course}/exercises``: what is open, due dates, time left."""
        return cast(CourseExercises, self._request("GET", f"/courses/{quote(course, safe='')}/exercises"))

    def board(self, course: str, exercise: str | None = None, limit: int = 50) -> Board:
        """``GET /leaderboard``: the course's board, overall or of one exercise (403 ``ScoresHidden``
        while a ``hidden-until-due`` exercise's scores are not released)."""
        params: dict[str, str] = {"course": course, "limit": str(limit)}
        if exercise:
            params["exercise"] = exercise
        return cast(Board, self._request("GET", "/leaderboard", params=params))

    def course_scores(self, course: str, exercise: str | None = None) -> CourseScores | None:
        """``GET /courses/{course}/scores``: the caller's scores that count; None from a server without it."""
        try:
            params = {"exercise": exercise} if exercise else None
            return cast(CourseScores, self._request("GET", f"/courses/{quote(course, safe='')}/scores", params=params))
        except ApiError as exc:
            if exc.status == 404 and exc.error == "NotFound":
                return None
            raise

    def submission(self, submission_id: int | str, *, wait: float = 0.0) -> Submission:
        """``GET /submissions/{id}``; with ``wait``, a long poll that the server answers as soon
        as the verdict is stored, or after ``wait`` seconds."""
        params = {"wait": f"{wait:g}"} if wait > 0 else None
        path = f"/submissions/{quote(str(submission_id), safe='')}"
        return self._submission(self._request("GET", path, params=params))

    def review(self, submission_id: int | str) -> dict[str, Any] | None:
        """``GET /submissions/{id}/review``: the staff's comments on its lines and its review
        requests with their answers (as the feedback policy lets the caller see them); None from
        a server without human review (404 ``NotFound``, the route unknown)."""
        try:
            answer = self._request("GET", f"/submissions/{quote(str(submission_id), safe='')}/review")
        except ApiError as exc:
            if exc.status == 404 and exc.error == "NotFound":
                return None
            raise
        return answer if isinstance(answer, dict) else None

    def request_review(self, submission_id: int | str, message: str) -> dict[str, Any]:
        """``POST /submissions/{id}/review-requests``: ask the course's staff to review one of
        your graded submissions (409 ``ReviewAlreadyOpen`` while one is open)."""
        path = f"/submissions/{quote(str(submission_id), safe='')}/review-requests"
        answer = self._request("POST", path, json={"message": message})
        if not isinstance(answer, dict):
            raise ServerError(200, "InvalidResponse", "", f"the server at {self.server} sent no review request")
        return answer

    def spend_token(self, submission_id: int | str) -> Submission:
        """``POST /submissions/{id}/token``: spend one of today's feedback tokens on one of your
        submissions (a ``tokens:N`` exercise); the answer shows its report. Spending twice on one
        submission costs one token."""
        path = f"/submissions/{quote(str(submission_id), safe='')}/token"
        return self._submission(self._request("POST", path))

    def submissions(
        self, *, exercise: str | None = None, limit: int | None = None, offset: int | None = None
    ) -> list[Submission]:
        """``GET /submissions``: the caller's own submissions, newest first as the server orders them."""
        params = {
            key: value
            for key, value in (("exercise", exercise), ("limit", limit), ("offset", offset))
            if value is not None
        }
        return cast(list[Submission], self._request("GET", "/submissions", params=params))

    def wait(
        self,
        submission: Submission,
        *,
        timeout: float | None = None,
        on_update: Callable[[Submission, float], None] | None = None,
        start: float | None = None,
    ) -> Submission:
        """Wait for ``submission`` to be ``done`` and return the final state.

        ``start`` (a ``clock`` reading; default: now) is when the wait began, for ``timeout``
        and the elapsed time shown: a submit that already waited inside its POST passes when
        it was sent.

        Each request is a long poll of up to ``LONG_POLL_SECONDS``: the server answers as soon
        as the verdict is stored. A server that answers at once instead (one without long
        polling) is polled at an interval growing from ``POLL_FIRST`` to ``POLL_MAX``.
        A server away (restarting: unreachable, or 502/503/504) is waited for, up to
        ``SERVER_AWAY_SECONDS`` at a stretch. ``on_update(submission, elapsed_seconds)`` is
        called after every poll. Raises ``WaitTimedOut`` after ``timeout`` seconds.
        """
        start = self._clock() if start is None else start
        delay = POLL_FIRST
        current = submission
        away_since: float | None = None
        while current.get("status") != "done":
            elapsed = self._clock() - start
            if on_update is not None:
                on_update(current, elapsed)
            if timeout is not None and elapsed >= timeout:
                raise WaitTimedOut(
                    f"gave up after {timeout:g} s: submission {current.get('id')} is still "
                    f"{current.get('status', 'pending')}; see `ppo-submit show {current.get('id')}` later"
                )
            hold = LONG_POLL_SECONDS if timeout is None else max(0.0, min(LONG_POLL_SECONDS, timeout - elapsed))
            asked = self._clock()
            try:
                current = self.submission(submission["id"], wait=hold)
            except (ConnectionFailed, ServerError) as exc:
                if not _server_away(exc):
                    raise
                away_since = asked if away_since is None else away_since
                if self._clock() - away_since >= SERVER_AWAY_SECONDS:
                    raise
                self._sleep(SERVER_AWAY_POLL)  # restarting: the submission is graded after it
                continue
            away_since = None
            if current.get("status") != "done" and self._clock() - asked < hold / 2:
                self._sleep(delay)  # the server did not hold the request: poll politely
                delay = min(POLL_MAX, delay * POLL_GROWTH)
        return current

    def _submission(self, answer: Any) -> Submission:
        """``answer`` as a ``Submission``, if it looks like one (an object with an ``id``)."""
        if not isinstance(answer, dict) or "id" not in answer:
            raise ServerError(200, "InvalidResponse", "", f"the server at {self.server} sent no submission id")
        return cast(Submission, answer)

    # -- transport -------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        """Send one request (see ``_send``); the decoded JSON body of its 2xx answer."""
        return self._json(self._send(method, path, json=json, params=params, headers=headers))

    def _json(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError as exc:
            raise ServerError(
                response.status_code, "InvalidResponse", "", f"the server at {self.server} did not answer with JSON"
            ) from exc

    def _send(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        """Send one request, retrying connection errors and 5xx, honouring 429 once.

        Returns a 2xx (or 304) answer; raises a ``ClientError`` otherwise.
        """
        attempt = 0
        honoured_retry_after = False
        while True:
            try:
                response = self._http.request(method, path, json=json, params=params, headers=headers)
            except httpx.UnsupportedProtocol as exc:
                raise UsageError(f"cannot use the server URL {self.server}: {exc}") from exc
            except httpx.TransportError as exc:
                if attempt < self._retries:
                    self._sleep(_backoff(attempt))
                    attempt += 1
                    continue
                reason = _one_line(str(exc)) or type(exc).__name__
                raise ConnectionFailed(f"cannot reach the grader at {self.server}: {reason}") from exc

            status = response.status_code
            if status >= 500 and attempt < self._retries:
                self._sleep(_backoff(attempt))
                attempt += 1
                continue
            if status == 429 and not honoured_retry_after:
                wait = _retry_after(response)
                if wait is not None and wait <= MAX_RETRY_AFTER:
                    self._sleep(wait)
                    honoured_retry_after = True
                    continue
            if response.is_success or status == 304:
                return response
            raise _error_from(response, self.server)


def _server_away(exc: ClientError) -> bool:
    """True for what a restarting server looks like: unreachable, or 502/503/504."""
    return isinstance(exc, ConnectionFailed) or (isinstance(exc, ServerError) and exc.status in (502, 503, 504))


def _backoff(attempt: int) -> float:
    """Seconds to wait before retry number ``attempt + 1``: 0.25, 0.5, 1.0, ..."""
    return 0.25 * 2.0**attempt


def _retry_after(response: httpx.Response) -> float | None:
    """The ``Retry-After`` header in seconds, if it is a number (HTTP dates are ignored)."""
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _one_line(text: str) -> str:
    """Collapse ``text`` onto one line."""
    return " ".join(text.split())


def _error_from(response: httpx.Response, server: str) -> ApiError:
    """Turn a non-2xx answer into the matching ``ApiError``, with a message for the user."""
    status = response.status_code
    error, detail = f"HTTP{status}", ""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and "error" in body:
        error = str(body.get("error"))
        detail = _one_line(str(body.get("detail") or ""))
    else:
        detail = _one_line(response.text)[:200] or response.reason_phrase
    if status == 401:
        return AuthError(
            status,
            error,
            detail,
            f"the server rejected the token ({detail or error}); "
            "run `ppo-submit login --server URL --token TOKEN` or set PPO_GRADER_TOKEN",
        )
    if status == 403:
        return AuthError(status, error, detail, f"not allowed: {detail or error}")
    if status == 409 and error == "LateNotConfirmed" and isinstance(body, dict):
        window = body.get("window")
        if isinstance(window, dict):
            return LateNotConfirmed(status, error, detail, str(body.get("course") or ""), cast(ExerciseWindow, window))
    if status == 409 and error == "CatalogueChanged":
        return CatalogueChanged(status, error, detail)
    if status == 429:
        wait = _retry_after(response)
        hint = f"; try again in {wait:g} s" if wait is not None else "; try again in a little while"
        return RateLimited(status, error, detail, f"too many requests to the grader{hint}")
    if status >= 500:
        return ServerError(status, error, detail, f"the grader at {server} failed: {detail or error} (HTTP {status})")
    return ApiError(status, error, detail or response.reason_phrase)

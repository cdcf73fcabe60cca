"""The HTTP layer against ``httpx.MockTransport``: retries, idempotency, errors, polling."""

from __future__ import annotations

import socket

import httpx
import pytest

from ppo_submit.api import (
    AuthError,
    Client,
    ConnectionFailed,
    RateLimited,
    ServerError,
    UsageError,
    WaitTimedOut,
    normalise_server,
)

from .fakes import SERVER, TOKEN, FakeGrader


def make_client(handler: httpx.MockTransport | FakeGrader, slept: list[float] | None = None) -> Client:
    transport = httpx.MockTransport(handler.handle) if isinstance(handler, FakeGrader) else handler
    sink = slept if slept is not None else []
    return Client(SERVER, TOKEN, transport=transport, sleep=sink.append)


def test_retries_reuse_one_idempotency_key_and_create_one_submission() -> None:
    grader = FakeGrader()
    keys: list[str] = []
    failures = iter(["connect", "connect", "503"])

    def flaky(request: httpx.Request) -> httpx.Response:
        keys.append(request.headers["Idempotency-Key"])
        failure = next(failures, None)
        if failure == "connect":
            raise httpx.ConnectError("connection refused", request=request)
        if failure == "503":
            # The server stored it but the answer was lost: the retry must not make a second one.
            grader.handle(request)
            return httpx.Response(503, json={"error": "InternalError", "detail": "overloaded"})
        return grader.handle(request)

    slept: list[float] = []
    with make_client(httpx.MockTransport(flaky), slept) as client:
        created = client.submit("actor-loss", "def compute_actor_loss(): ...\n")
    assert len(keys) == 4 and len(set(keys)) == 1
    assert len(grader.submissions) == 1 and created["id"] == 1
    assert slept == [0.25, 0.5, 1.0]


def test_each_submit_gets_a_fresh_key() -> None:
    grader = FakeGrader()
    with make_client(grader) as client:
        client.submit("actor-loss", "a")
        client.submit("actor-loss", "a")
    assert len(grader.created_by_key) == 2


def test_persistent_5xx_becomes_a_server_error_after_three_retries() -> None:
    calls: list[httpx.Request] = []

    def broken(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(500, json={"error": "InternalError", "detail": "database is locked"})

    with make_client(httpx.MockTransport(broken)) as client, pytest.raises(ServerError, match="database is locked"):
        client.exercises()
    assert len(calls) == 4


def test_refused_connection_is_a_connection_error() -> None:
    with socket.socket() as sock:  # a port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with Client(f"http://127.0.0.1:{port}", TOKEN, sleep=lambda s: None) as client:
        with pytest.raises(ConnectionFailed, match=f"cannot reach the grader at http://127.0.0.1:{port}"):
            client.health()


def test_retry_after_is_honoured_once_then_fails_clearly() -> None:
    calls: list[httpx.Request] = []

    def limited(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(429, headers={"Retry-After": "3"}, json={"error": "RateLimited", "detail": "slow down"})

    slept: list[float] = []
    with make_client(httpx.MockTransport(limited), slept) as client, pytest.raises(RateLimited, match="try again in 3 s"):
        client.submit("actor-loss", "x")
    assert len(calls) == 2 and slept == [3.0]


def test_retry_after_then_success() -> None:
    grader = FakeGrader()
    answers = iter([httpx.Response(429, headers={"Retry-After": "1"}, json={"error": "RateLimited", "detail": ""})])

    def once_limited(request: httpx.Request) -> httpx.Response:
        return next(answers, None) or grader.handle(request)

    with make_client(httpx.MockTransport(once_limited)) as client:
        assert client.exercises()[0]["slug"] == "actor-loss"


def test_error_wire_shape_becomes_the_message() -> None:
    with make_client(FakeGrader()) as client, pytest.raises(Exception, match=r"No exercise 'nope'\. \(ExerciseNotFound, HTTP 404\)"):
        client.exercise("nope")


def test_source_too_large_is_reported() -> None:
    def too_big(request: httpx.Request) -> httpx.Response:
        return httpx.Response(413, json={"error": "SourceTooLarge", "detail": "The source is over 64 KiB."})

    with make_client(httpx.MockTransport(too_big)) as client, pytest.raises(Exception, match="over 64 KiB.*SourceTooLarge"):
        client.submit("actor-loss", "x" * 100)


def test_bad_token_is_an_auth_error_that_says_how_to_log_in() -> None:
    client = Client(SERVER, "wrong", transport=httpx.MockTransport(FakeGrader().handle))
    with client, pytest.raises(AuthError, match="ppo-submit login"):
        client.me()


def test_token_is_sent_as_bearer() -> None:
    grader = FakeGrader()
    with make_client(grader) as client:
        assert client.me()["name"] == "ada"
    assert grader.requests[0].headers["Authorization"] == f"Bearer {TOKEN}"
    assert str(grader.requests[0].url) == f"{SERVER}/api/v1/me"


def test_wait_polls_with_growing_interval_until_done() -> None:
    grader = FakeGrader(polls_before_done=5)
    slept: list[float] = []
    seen: list[str] = []
    with make_client(grader, slept) as client:
        created = client.submit("actor-loss", "x")
        final = client.wait(created, on_update=lambda sub, elapsed: seen.append(sub["status"]))
    assert final["status"] == "done" and final["score"] == 100.0
    assert seen == ["queued"] + ["running"] * 5
    assert slept[0] == pytest.approx(0.2) and max(slept) == 1.0
    assert slept == sorted(slept)


def test_wait_gives_up_after_timeout() -> None:
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    grader = FakeGrader(polls_before_done=10**6)
    client = Client(SERVER, TOKEN, transport=httpx.MockTransport(grader.handle), sleep=sleep, clock=lambda: now[0])
    with client, pytest.raises(WaitTimedOut, match="ppo-submit show 1"):
        client.wait(client.submit("actor-loss", "x"), timeout=5)
    assert 5 <= now[0] <= 6


@pytest.mark.parametrize(
    ("given", "expected"),
    [("localhost:8000", "http://localhost:8000"), ("https://g.example/", "https://g.example")],
)
def test_server_url_is_normalised(given: str, expected: str) -> None:
    assert normalise_server(given) == expected


def test_other_schemes_are_refused() -> None:
    with pytest.raises(UsageError):
        normalise_server("ftp://g.example")


def test_wait_long_polls_a_server_that_holds_the_request() -> None:
    """Each poll asks the server to hold it (``wait=``); a server that does never sees the
    client sleep between polls."""
    now = [0.0]
    waits: list[str | None] = []
    state = {"polls": 0}

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(202, json={"id": 7, "status": "queued", "exercise": "actor-loss"})
        waits.append(request.url.params.get("wait"))
        now[0] += 5.0  # the server held the request for its full wait
        state["polls"] += 1
        done = state["polls"] >= 3
        return httpx.Response(200, json={"id": 7, "status": "done" if done else "running", "score": 100.0})

    slept: list[float] = []
    client = Client(SERVER, TOKEN, transport=httpx.MockTransport(handler), sleep=slept.append, clock=lambda: now[0])
    with client:
        final = client.wait(client.submit("actor-loss", "x"))
    assert final["status"] == "done"
    assert waits == ["5", "5", "5"] and slept == []


def test_tls_is_verified_against_the_system_bundle_only_for_https() -> None:
    """An https server gets httpx's default verification; a plain-HTTP one a context that trusts
    no certificate at all (nothing loaded, certificates required), so it fails closed."""
    import ssl

    from ppo_submit.api import _tls_context

    assert _tls_context("https://grader.example") is True
    plain = _tls_context("HTTP://grader.example")
    assert isinstance(plain, ssl.SSLContext)
    assert plain.verify_mode == ssl.CERT_REQUIRED and plain.check_hostname
    assert plain.cert_store_stats()["x509_ca"] == 0


def test_wait_rides_out_a_server_restart_and_returns_the_verdict() -> None:
    """Issue 38: a server that stops answers the long poll 503 ``ShuttingDown``, then refuses
    connections until it is back; the wait goes on through both and ends with the verdict."""
    now = [0.0]
    answers = iter(["503"] + ["refused"] * 9 + ["done"])
    polls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(202, json={"id": 7, "status": "queued", "exercise": "actor-loss"})
        answer = next(answers)
        polls.append(answer)
        if answer == "503":
            return httpx.Response(
                503, json={"error": "ShuttingDown", "detail": "restarting"}, headers={"Retry-After": "1"}
            )
        if answer == "refused":
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(200, json={"id": 7, "status": "done", "verdict": "graded", "score": 100.0})

    def sleep(seconds: float) -> None:
        now[0] += seconds

    client = Client(SERVER, TOKEN, transport=httpx.MockTransport(handler), sleep=sleep, clock=lambda: now[0])
    with client:
        final = client.wait(client.submit("actor-loss", "x"), timeout=600)
    assert (final["status"], final["score"]) == ("done", 100.0)
    assert polls == ["503"] + ["refused"] * 9 + ["done"]  # every answer read, none skipped


def test_wait_gives_up_on_a_server_away_for_longer_than_its_bound() -> None:
    from ppo_submit.api import SERVER_AWAY_SECONDS

    now = [0.0]

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(202, json={"id": 7, "status": "queued", "exercise": "actor-loss"})
        raise httpx.ConnectError("connection refused", request=request)

    def sleep(seconds: float) -> None:
        now[0] += seconds

    client = Client(SERVER, TOKEN, transport=httpx.MockTransport(handler), sleep=sleep, clock=lambda: now[0])
    with client, pytest.raises(ConnectionFailed, match="connection refused"):
        client.wait(client.submit("actor-loss", "x"))
    assert SERVER_AWAY_SECONDS <= now[0] <= SERVER_AWAY_SECONDS + 10


def test_wait_does_not_wait_out_a_server_that_fails_with_500() -> None:
    """A 500 is a failure, not a restart: reported after the request's own retries."""
    polls = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(202, json={"id": 7, "status": "queued", "exercise": "actor-loss"})
        polls.append(request)
        return httpx.Response(500, json={"error": "InternalError", "detail": "boom"})

    with make_client(httpx.MockTransport(handler)) as client, pytest.raises(ServerError, match="boom"):
        client.wait(client.submit("actor-loss", "x"))
    assert len(polls) == 4  # the first try and MAX_RETRIES

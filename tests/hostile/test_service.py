"""Hostile and malformed uploads through the real app, its in-process worker and the real jail:
each ends in a clear 4xx or a named verdict while /health keeps answering."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.hostile import sources as S
from tests.hostile.conftest import CANARY

pytestmark = pytest.mark.slow
MAX_SOURCE = 16 * 1024


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, jail: Any) -> Iterator[tuple[Any, dict[str, str]]]:
    from fastapi.testclient import TestClient

    from server.app import create_app, real_grader
    from server.config import Settings
    from server.db import transaction
    from server.models import Role
    from server.users.service import create_user

    db = Path(tmp_path_factory.mktemp("service")) / "grader.db"
    settings = Settings(DATABASE_URL=f"sqlite:///{db}", WORKERS=1, SECRET_KEY="hostile-service-secret",
                        CPU_SECONDS=2, WALL_SECONDS=3, MEMORY_BYTES=512 << 20, MAX_SOURCE_BYTES=MAX_SOURCE)
    client = TestClient(create_app(settings, real_grader), raise_server_exceptions=False)
    client.__enter__()
    try:
        state = client.app.state.grader  # type: ignore[attr-defined]
        with transaction(state.session_factory) as session:
            token = create_user(session, "mallory", Role.LEARNER, settings.secret_bytes).token
        yield client, {"Authorization": f"Bearer {token}"}
    finally:
        client.__exit__(None, None, None)


def submit(service: Any, source: str) -> Any:
    client, headers = service
    return client.post("/api/v1/submissions", json={"exercise": "actor-loss", "source": source}, headers=headers)


def wait_done(service: Any, ids: list[int], timeout: float = 120) -> dict[int, dict[str, Any]]:
    client, headers = service
    done: dict[int, dict[str, Any]] = {}
    deadline = time.monotonic() + timeout
    while len(done) < len(ids) and time.monotonic() < deadline:
        health = client.get("/api/v1/health")
        assert health.status_code == 200 and health.json()["status"] == "ok"
        assert health.json()["workers"] >= 1
        for sid in set(ids) - set(done):
            body = client.get(f"/api/v1/submissions/{sid}", headers=headers).json()
            if body["status"] == "done":
                done[sid] = body
        time.sleep(0.1)
    assert len(done) == len(ids), f"not done in {timeout}s: {set(ids) - set(done)}"
    return done


def test_malformed_uploads_get_clear_client_errors(service: Any) -> None:
    client, headers = service
    assert submit(service, "").status_code == 422
    assert submit(service, "   \n\t").status_code == 422
    assert submit(service, "x = 1\x00\n").status_code == 422
    assert submit(service, "# " + "a" * (MAX_SOURCE + 10)).status_code == 413
    huge = b'{"exercise": "actor-loss", "source": "' + b"#" * (MAX_SOURCE * 7 + 20_000) + b'"}'
    assert client.post("/api/v1/submissions", content=huge, headers={**headers, "Content-Type": "application/json"}
                       ).status_code == 413
    # A lone surrogate smuggled in as a JSON escape, and raw bytes that are not UTF-8.
    lone = b'{"exercise": "actor-loss", "source": "x = \'\\ud800\'"}'
    binary = b'{"exercise": "actor-loss", "source": "\xff\xfe\x00\x81"}'
    for body in (lone, binary):
        response = client.post("/api/v1/submissions", content=body,
                               headers={**headers, "Content-Type": "application/json"})
        assert response.status_code in (400, 422), response.text
        assert response.json()["detail"]


def test_hostile_submissions_end_in_named_verdicts_and_the_service_keeps_answering(service: Any) -> None:
    cases = {
        "syntax": (S.SYNTAX_ERROR, "syntax_error"),
        "missing": (S.NO_FUNCTION, "missing_function"),
        "loop": (S.LOOP_IN_CALL, "time_limit"),
        "fork": (S.FORK_BOMB, "runtime_error"),
        "memory": (S.MEMORY_TENSOR, "memory_limit"),
        "stdout": (S.HUGE_STDOUT, "output_limit"),
        "segfault": (S.SEGFAULT, "crashed"),
        # an "ok" written at import, before any input was given, is a forgery: refused
        "forged": (S.FORGE_EMPTY_RESULT_AND_EXIT, "crashed"),
        "honest": (S.HONEST, "graded"),
    }
    ids: dict[str, int] = {}
    done: dict[int, dict[str, Any]] = {}
    names = list(cases)
    for batch in (names[:4], names[4:8], names[8:]):  # a learner may have 5 waiting at most
        for name in batch:
            response = submit(service, cases[name][0])
            assert response.status_code == 202, response.text
            ids[name] = response.json()["id"]
        done.update(wait_done(service, [ids[n] for n in batch]))
    for name, (_, verdict) in cases.items():
        body = done[ids[name]]
        assert body["verdict"] == verdict, (name, body["message"])
        assert body["message"], name
        assert CANARY not in str(body)
        assert len(body["stdout"]) <= 1 << 20 and len(body["stderr"]) <= 1 << 20
    assert done[ids["syntax"]]["message"].startswith("Syntax error on line 3")
    assert done[ids["honest"]]["score"] == 100
    assert done[ids["forged"]]["score"] < 100
    assert all(done[ids[n]]["score"] == 0 for n in ("loop", "fork", "memory", "stdout", "segfault"))
    assert "cut]" in done[ids["stdout"]]["stdout"] and len(done[ids["stdout"]]["stdout"]) < 16 << 10

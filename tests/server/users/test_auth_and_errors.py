"""Authentication and the one error wire shape."""

from __future__ import annotations

from fastapi import FastAPI

from server.models import Role
from tests.server.conftest import Api


def test_health_needs_no_token(api: Api) -> None:
    response = api.client.get("/api/v1/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "version": "0.1.0", "queue": {"queued": 0, "running": 0}, "workers": 1}


def test_missing_token_is_401_not_authenticated(api: Api) -> None:
    for path in ("/api/v1/me", "/api/v1/exercises", "/api/v1/submissions", "/api/v1/submissions/1"):
        response = api.client.get(path)
        assert response.status_code == 401, path
        assert response.json()["error"] == "NotAuthenticated"
        assert response.headers["www-authenticate"] == "Bearer"


def test_bad_or_malformed_token_is_401(api: Api) -> None:
    api.user("alice")
    for header in ("Bearer ppg_not-a-real-token", "Basic YWxpY2U6c2VjcmV0", "Bearer"):
        response = api.client.get("/api/v1/me", headers={"Authorization": header})
        assert response.status_code == 401, header
        assert response.json()["error"] == "NotAuthenticated"


def test_anonymous_post_is_401_before_the_body_is_read(api: Api) -> None:
    response = api.client.post("/api/v1/submissions", content=b"{not json")
    assert response.status_code == 401


def test_me_returns_the_token_owner(api: Api) -> None:
    headers = api.user("alice", Role.LEARNER)
    body = api.client.get("/api/v1/me", headers=headers).json()
    assert body == {"id": body["id"], "name": "alice", "display_name": "alice", "role": "learner"}


def test_tokens_are_stored_hashed(api: Api) -> None:
    headers = api.user("alice")
    token = headers["Authorization"].removeprefix("Bearer ")
    with api.state.engine.connect() as connection:
        rows = connection.exec_driver_sql("SELECT token_hash, prefix FROM api_tokens").all()
    assert len(rows) == 2  # the first-start instructor and alice
    assert all(token not in row.token_hash for row in rows)
    assert any(token.startswith(row.prefix) for row in rows)


def test_validation_error_has_the_common_shape(api: Api) -> None:
    headers = api.user("alice")
    response = api.client.post("/api/v1/submissions", json={"exercise": "actor-loss"}, headers=headers)
    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "ValidationError"
    assert "body.source" in body["detail"]
    assert body["errors"][0]["loc"] == ["body", "source"]

    response = api.client.post("/api/v1/submissions", content=b"{not json", headers=headers)
    assert response.status_code == 422
    assert response.json()["error"] == "ValidationError"

    response = api.client.get("/api/v1/submissions?limit=0", headers=headers)
    assert response.status_code == 422
    assert response.json()["error"] == "ValidationError"


def test_unknown_route_has_the_common_shape(api: Api) -> None:
    response = api.client.get("/api/v1/nope")
    assert response.status_code == 404
    assert response.json() == {"error": "NotFound", "detail": "Not Found"}
    response = api.client.delete("/api/v1/health")
    assert response.status_code == 405
    assert response.json()["error"] == "MethodNotAllowed"


def test_unexpected_exception_is_500_without_traceback(api: Api) -> None:
    app: FastAPI = api.client.app  # type: ignore[assignment]

    @app.get("/api/v1/boom")
    def boom() -> None:
        raise RuntimeError("secret internals /etc/passwd")

    response = api.client.get("/api/v1/boom")
    assert response.status_code == 500
    assert response.json() == {"error": "InternalError", "detail": "The server failed to handle this request."}
    assert "secret internals" not in response.text

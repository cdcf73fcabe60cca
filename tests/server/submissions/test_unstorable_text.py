"""Text no database can hold (a NUL byte, a lone surrogate) is refused with a named 422
before it reaches a query, on every route, on SQLite and PostgreSQL. Before, on
PostgreSQL, ``GET /submissions?user=%00`` and ``POST /users/%00/tokens/revoke`` were 500s
(found by the schemathesis fuzz run)."""

from __future__ import annotations

from server.models import Role
from tests.server.conftest import Api

URLS_WITH_NUL = [
    ("GET", "/api/v1/submissions?user=%00"),
    ("GET", "/api/v1/submissions?exercise=actor-loss%00"),
    ("GET", "/api/v1/leaderboard?exercise=%00"),
    ("GET", "/api/v1/exercises/%00/stats"),
    ("POST", "/api/v1/users/bob%00/tokens/revoke"),
    ("POST", "/api/v1/users/%00/tokens/rotate"),
]


def test_a_nul_in_a_path_or_query_is_a_422_on_every_route(api: Api) -> None:
    headers = api.user("admin", Role.ADMIN)
    for method, url in URLS_WITH_NUL:
        response = api.client.request(method, url, headers=headers)
        assert response.status_code == 422, (method, url, response.text)
        assert response.json()["error"] == "InvalidText"
        assert "NUL" in response.json()["detail"]
    # The guard does not get in the way of ordinary filters.
    assert api.client.get("/api/v1/submissions?exercise=actor-loss", headers=headers).status_code == 200


def test_display_names_with_nul_or_lone_surrogates_are_refused(api: Api) -> None:
    headers = {**api.user("teacher", Role.INSTRUCTOR), "Content-Type": "application/json"}
    nul = api.client.post("/api/v1/users", content=rb'{"name": "bob", "display_name": "Bob\u0000"}', headers=headers)
    assert nul.status_code == 422 and nul.json()["error"] == "InvalidDisplayName", nul.text
    # The JSON parser itself refuses a lone surrogate escape.
    lone = api.client.post("/api/v1/users", content=rb'{"name": "bob", "display_name": "Bob \ud800"}', headers=headers)
    assert lone.status_code == 422, lone.text
    roster = "name,display_name\ncarol,Carol\x00C.\ndave,Dave\n".encode()
    response = api.client.post("/api/v1/users/import", content=roster, headers={**headers, "Content-Type": "text/csv"})
    assert response.status_code == 200, response.text
    rows = {row["name"]: row for row in response.json()["rows"]}
    assert rows["carol"]["created"] is False and "NUL" in rows["carol"]["error"]
    assert rows["dave"]["created"] is True

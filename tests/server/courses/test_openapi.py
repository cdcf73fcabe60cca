"""The OpenAPI schema documents every course route and the errors each can answer."""

from __future__ import annotations

from server.app import create_app


def test_course_routes_and_their_errors_are_documented() -> None:
    paths = create_app().openapi()["paths"]
    expected = {
        ("/api/v1/courses", "get"): {"401"},
        ("/api/v1/courses", "post"): {"401", "403", "409", "422"},
        ("/api/v1/courses/{course}/exercises", "get"): {"401", "404"},
        ("/api/v1/courses/{course}/exercises/{exercise}", "put"): {"401", "403", "404", "422"},
        ("/api/v1/courses/{course}/exercises/{exercise}", "delete"): {"401", "403", "404"},
        ("/api/v1/courses/{course}/extensions/{user}/{exercise}", "put"): {"401", "403", "404", "422"},
        ("/api/v1/courses/{course}/roster", "post"): {"401", "403", "404", "413", "422"},
    }
    for (path, method), codes in expected.items():
        responses = paths[path][method]["responses"]
        assert codes <= set(responses), (path, method, set(responses))
        assert paths[path][method].get("description"), (path, method)
    submit = paths["/api/v1/submissions"]["post"]["responses"]
    for name in ("SubmissionsClosed", "AttemptLimitReached"):
        assert name in submit["403"]["description"]
    assert "CourseRequired" in submit["422"]["description"]
    for path in ("/api/v1/leaderboard", "/api/v1/exercises/{slug}/stats", "/api/v1/gradebook.csv", "/api/v1/submissions"):
        assert any(p["name"] == "course" for p in paths[path]["get"]["parameters"]), path

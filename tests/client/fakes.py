"""A tiny in-memory grader, served to the client through ``httpx.MockTransport``."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import httpx

TOKEN = "learner-token"
SERVER = "http://grader.test"

EXERCISES = [
    {"slug": "actor-loss", "title": "PPO actor loss", "function": "compute_actor_loss", "summary": "", "order": 1},
    {"slug": "value-loss", "title": "Clipped value loss", "function": "compute_value_loss", "summary": "", "order": 2},
]
STARTER = "def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):\n    # YOUR CODE\n    raise NotImplementedError\n"

CHECKS = [
    {"name": "value", "weight": 60.0, "passed": True, "message": "matches the reference", "mistake_title": None},
    {"name": "clip_range", "weight": 40.0, "passed": False, "message": "wrong for clip_range=0.1",
     "mistake_title": "clip range fixed at 0.2"},
]


def graded(score: float) -> dict[str, Any]:
    """The final fields of a graded submission with ``score``."""
    return {"verdict": "graded", "score": score, "message": f"{score:g} / 100", "checks": CHECKS}


@dataclass
class FakeGrader:
    """Implements the endpoints the client uses, with the server's wire shapes.

    A submission answers ``queued`` then ``running`` for ``polls_before_done`` reads, then
    ``done`` with the fields in ``final``; a ``POST /submissions?wait=`` counts as one read.
    ``GET /exercises`` has an ``ETag`` (``catalogue_version``) and answers 304 to it;
    ``late=ask`` past the due date (the course's window says ``late``) is 409
    ``LateNotConfirmed``, ``catalogue=`` another version 409 ``CatalogueChanged``, as the server.
    """

    final: dict[str, Any] = field(default_factory=lambda: graded(100.0))
    polls_before_done: int = 2
    requests: list[httpx.Request] = field(default_factory=list)
    submissions: dict[int, dict[str, Any]] = field(default_factory=dict)
    created_by_key: dict[str, int] = field(default_factory=dict)
    polls: dict[int, int] = field(default_factory=dict)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))
    #: ``GET /courses`` answers; None plays a server from before courses (404).
    courses: list[dict[str, Any]] | None = None
    #: ``GET /courses/{slug}/exercises`` answers, by slug.
    windows: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: ``GET /courses/{slug}/scores`` answers, by slug.
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: ``GET /exercises``' answer and its ``ETag``.
    exercises: list[dict[str, Any]] = field(default_factory=lambda: list(EXERCISES))
    catalogue_version: str = '"v1"'

    def posted(self) -> list[httpx.Request]:
        """The ``POST /submissions`` requests, in order."""
        return [r for r in self.requests if r.method == "POST" and r.url.path.endswith("/submissions")]

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return _error(401, "NotAuthenticated", "A valid API token is required.")
        path = request.url.path.removeprefix("/api/v1")
        if request.method == "GET" and path == "/me":
            return httpx.Response(200, json={"id": 7, "name": "ada", "display_name": "Ada L.", "role": "learner"})
        if request.method == "GET" and path == "/exercises":
            etag = {"ETag": self.catalogue_version}
            if request.headers.get("If-None-Match") == self.catalogue_version:
                return httpx.Response(304, headers=etag)
            return httpx.Response(200, json=self.exercises, headers=etag)
        if request.method == "GET" and path.startswith("/exercises/"):
            slug = path.rsplit("/", 1)[1]
            if slug != "actor-loss":
                return _error(404, "ExerciseNotFound", f"No exercise '{slug}'.")
            return httpx.Response(200, json={**EXERCISES[0], "description": "", "starter": STARTER, "checks": []})
        if request.method == "GET" and path == "/courses" and self.courses is not None:
            return httpx.Response(200, json=self.courses)
        if request.method == "GET" and path.endswith("/scores") and path.split("/")[2] in self.scores:
            return httpx.Response(200, json=self.scores[path.split("/")[2]])
        if request.method == "GET" and path.startswith("/courses/") and self.courses is not None:
            slug = path.split("/")[2]
            if slug not in self.windows:
                return _error(404, "CourseNotFound", f"No course called '{slug}' that you belong to.")
            return httpx.Response(200, json=self.windows[slug])
        if request.method == "POST" and path == "/submissions":
            return self._create(request)
        if request.method == "GET" and path == "/submissions":
            return httpx.Response(200, json=list(self.submissions.values()))
        if request.method == "GET" and path.startswith("/submissions/") and path.endswith("/review"):
            return _error(404, "NotFound", "no route")  # a server from before human review (issue 36)
        if request.method == "GET" and path.startswith("/submissions/"):
            return self._read(int(path.rsplit("/", 1)[1]))
        return _error(404, "NotFound", "no route")

    def _create(self, request: httpx.Request) -> httpx.Response:
        key = request.headers["Idempotency-Key"]
        if key in self.created_by_key:
            return httpx.Response(200, json=self.submissions[self.created_by_key[key]])
        body = json.loads(request.content)
        asked = request.url.params.get("catalogue")
        if asked is not None and asked != self.catalogue_version:
            return _error(409, "CatalogueChanged", "The catalogue has changed.")
        late = self._late_window(body.get("course"), body["exercise"])
        if request.url.params.get("late") == "ask" and late is not None:
            return httpx.Response(409, json={"error": "LateNotConfirmed", "detail": "past its due date",
                                             "course": late[0], "window": late[1]})
        sub_id = next(self._ids)
        self.created_by_key[key] = sub_id
        self.submissions[sub_id] = {
            "id": sub_id, "exercise": body["exercise"], "user": "ada", "status": "queued", "verdict": None,
            "score": None, "message": None, "checks": [], "stdout": "", "stderr": "", "timings": {},
            "peak_memory_bytes": None, "cpu_seconds": None, "created_at": "2025-01-01T00:00:00Z",
            "started_at": None, "finished_at": None, "queue_position": 2, "source": body["source"],
            **({"course": body["course"]} if "course" in body else {}),
        }
        if float(request.url.params.get("wait", "0")) > 0:
            answer = self._read(sub_id)
            return httpx.Response(202, json=answer.json())
        return httpx.Response(202, json=self.submissions[sub_id])

    def _late_window(self, course: str | None, exercise: str) -> tuple[str, dict[str, Any]] | None:
        """(course, window) when the submission would be late there, as the server tells it."""
        if course is None and self.courses is not None and len(self.courses) == 1:
            course = self.courses[0]["slug"]
        listing = self.windows.get(course or "")
        found = [w for w in (listing or {}).get("exercises", []) if w.get("exercise") == exercise]
        return (course, found[0]) if found and found[0].get("status") == "late" and course else None

    def _read(self, sub_id: int) -> httpx.Response:
        if sub_id not in self.submissions:
            return _error(404, "SubmissionNotFound", f"No submission {sub_id}.")
        sub = self.submissions[sub_id]
        self.polls[sub_id] = self.polls.get(sub_id, 0) + 1
        if self.polls[sub_id] > self.polls_before_done:
            sub.update(status="done", queue_position=None, timings={"queue": 0.1, "checks": 1.25},
                       peak_memory_bytes=50 * 2**20, cpu_seconds=1.5, stdout="hello from the learner\n",
                       **self.final)
        else:
            sub.update(status="running", queue_position=None)
        return httpx.Response(200, json=sub)


def _error(status: int, error: str, detail: str) -> httpx.Response:
    return httpx.Response(status, json={"error": error, "detail": detail})



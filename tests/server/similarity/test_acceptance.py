"""Issue 27's acceptance: a course of 30 learners graded through the real queue and the real
jail (27 independent hand-written kl-penalty solutions in different styles, and 3 planted
copies: verbatim, names and comments changed, lines reordered where order does not matter).
The planted pairs rank in the top 3 and no independent pair ranks above any of them."""

from __future__ import annotations

import re
import time

import pytest
from fastapi.testclient import TestClient

from server.app import create_app, real_grader
from server.config import Settings
from server.db import transaction
from server.models import Role
from server.users.service import create_user
from tests.server.similarity.conftest import PLANTED, corpus

pytestmark = pytest.mark.slow


def test_planted_pairs_rank_first_in_a_course_graded_by_the_real_judge(tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = Settings(
        DATABASE_URL=f"sqlite:///{tmp_path / 'grader.db'}", WORKERS=2, RATE_LIMIT="1000/minute", MAX_QUEUED_PER_USER=10,
    )
    files = corpus()
    with TestClient(create_app(settings, real_grader)) as client:
        state = client.app.state.grader  # type: ignore[attr-defined]
        with transaction(state.session_factory) as session:
            prof = {"Authorization": f"Bearer {create_user(session, 'prof', Role.INSTRUCTOR, settings.secret_bytes).token}"}
        assert client.post("/api/v1/courses", json={"slug": "rlhf-a"}, headers=prof).status_code == 201
        assert client.put("/api/v1/courses/rlhf-a/exercises/kl-penalty", json={}, headers=prof).status_code == 200
        roster = "name,display_name\n" + "".join(f"{name},Learner {name}\n" for name in files)
        rows = client.post("/api/v1/courses/rlhf-a/roster", content=roster.encode(),
                           headers={**prof, "Content-Type": "text/csv"}).json()["rows"]
        tokens = {row["name"]: {"Authorization": f"Bearer {row['token']}"} for row in rows}
        ids = {}
        for name, source in files.items():
            answer = client.post("/api/v1/submissions", headers=tokens[name],
                                 json={"exercise": "kl-penalty", "source": source, "course": "rlhf-a", "filename": f"{name}.py"})
            assert answer.status_code == 202, answer.text
            ids[name] = answer.json()["id"]
        deadline = time.monotonic() + 900
        scores = {}
        for name, submission in ids.items():
            while True:
                body = client.get(f"/api/v1/submissions/{submission}", headers=tokens[name]).json()
                if body["status"] == "done":
                    scores[name] = (body["verdict"], body["score"])
                    break
                assert time.monotonic() < deadline, "grading took over 15 minutes"
                time.sleep(0.2)
        assert all(verdict == "graded" and score == 100 for verdict, score in scores.values()), scores

        assert client.post("/api/v1/courses/rlhf-a/similarity", headers=prof).status_code == 202
        while True:
            report = client.get("/api/v1/courses/rlhf-a/similarity?limit=10", headers=prof).json()
            if report["latest"]["status"] in ("done", "failed"):
                break
            time.sleep(0.1)
        assert report["latest"]["status"] == "done", report["latest"]["message"]
        assert report["pairs_run"]["learners"] == 30
        ranked = [(p["learner_a"], p["learner_b"], p["score"]) for p in report["pairs"]]
        assert {(a, b) for a, b, _ in ranked[:3]} == PLANTED, ranked[:6]
        assert ranked[3][2] < min(score for _, _, score in ranked[:3]), ranked[:6]

        # The course page shows the same order.
        token = prof["Authorization"].split()[1]
        assert client.post("/login", data={"token": token}, follow_redirects=False).status_code == 303
        page = client.get("/dashboard/similarity?course=rlhf-a").text
        shown = re.findall(r'<a href="/dashboard/similarity/(l\d\d)/(l\d\d)\?course=rlhf-a">', page)
        assert set(shown[:3]) == PLANTED and len(shown) > 3, shown[:6]

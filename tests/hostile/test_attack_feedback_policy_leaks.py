"""What the feedback policies leaked (review 4, findings 5-11, 14 and 15), through the running
service (the real app, its in-process worker, the real jail, SQLite; pages over HTTP with a
session cookie). Each test fails on the code before the fix; each asserts what a learner's JSON
or HTML holds, never how long anything took."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from server.courses.feedback_cut import CUT_NOTE
from server.courses.feedback_policy import ALLOWED, View
from tests.hostile import sources as H

pytestmark = pytest.mark.slow

NOW = datetime.now(UTC)
#: Course -> the policy its actor-loss set has. "later" releases gae next week only.
POLICIES = {"p-full": "full", "p-score": "score", "p-hidden": "hidden-until-due", "p-tokens": "tokens:5"}
LEARNERS = ("ann", "bea", "cal", "dan", "eve", "fay", "gus", "hal")


@dataclass
class Service:
    client: TestClient
    headers: dict[str, dict[str, str]]
    secret: bytes
    state: Any
    cookies: dict[str, str] = field(default_factory=dict)

    def grade(self, user: str, course: str, source: str, exercise: str = "actor-loss") -> dict[str, Any]:
        """Submit and wait for the verdict, as the learner sees it."""
        answer = self.client.post("/api/v1/submissions", json={"exercise": exercise, "source": source,
                                                               "course": course}, headers=self.headers[user])
        assert answer.status_code == 202, answer.text
        sid = answer.json()["id"]
        for _ in range(2400):
            body = self.client.get(f"/api/v1/submissions/{sid}?wait=1", headers=self.headers[user]).json()
            if body["status"] == "done":
                return body
        raise AssertionError(f"submission {sid} not done")

    def as_(self, user: str, sid: int) -> dict[str, Any]:
        answer = self.client.get(f"/api/v1/submissions/{sid}", headers=self.headers[user])
        assert answer.status_code == 200, answer.text
        return answer.json()

    def spend(self, user: str, sid: int) -> dict[str, Any]:
        answer = self.client.post(f"/api/v1/submissions/{sid}/token", headers=self.headers[user])
        assert answer.status_code == 200, answer.text
        return self.as_(user, sid)

    def page(self, user: str, path: str) -> str:
        """A dashboard page as ``user``, logged in with their token (a fresh session each time)."""
        self.client.cookies.clear()
        login = self.client.post("/login", data={"token": self.headers[user]["Authorization"].split()[1]},
                                 follow_redirects=False)
        assert login.status_code == 303, login.text
        answer = self.client.get(path)
        self.client.cookies.clear()
        assert answer.status_code == 200, (path, answer.status_code, answer.text[:500])
        return answer.text


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    from server.app import create_app, real_grader
    from server.config import Settings
    from server.db import transaction
    from server.models import Role
    from server.users.service import create_user

    db = Path(tmp_path_factory.mktemp("review4-policies")) / "grader.db"
    settings = Settings(DATABASE_URL=f"sqlite:///{db}", WORKERS=1, SECRET_KEY="review4-policies-secret",
                        CPU_SECONDS=2, WALL_SECONDS=3, MEMORY_BYTES=512 << 20, RATE_LIMIT="1000/minute",
                        MAX_QUEUED_PER_USER=50)
    client = TestClient(create_app(settings, real_grader), raise_server_exceptions=False)
    client.__enter__()
    try:
        state = client.app.state.grader  # type: ignore[attr-defined]
        with transaction(state.session_factory) as session:
            prof = {"Authorization": f"Bearer {create_user(session, 'prof', Role.INSTRUCTOR, settings.secret_bytes).token}"}
        headers = {"prof": prof}
        for course in [*POLICIES, "later"]:
            answer = client.post("/api/v1/courses", json={"slug": course, "title": course.upper(), "time_zone": "UTC"},
                                 headers=prof)
            assert answer.status_code == 201, answer.text
            roster = "name,display_name\n" + "".join(f"{n},{n.title()}\n" for n in LEARNERS)
            answer = client.post(f"/api/v1/courses/{course}/roster", content=roster.encode(),
                                 headers={**prof, "Content-Type": "text/csv"})
            assert answer.status_code == 200, answer.text
            for row in answer.json()["rows"]:
                if row["token"]:
                    headers[row["name"]] = {"Authorization": f"Bearer {row['token']}"}
        for course, policy in POLICIES.items():
            answer = client.put(f"/api/v1/courses/{course}/exercises/actor-loss", headers=prof, json={
                "release_at": (NOW - timedelta(days=1)).isoformat(), "due_at": (NOW + timedelta(days=7)).isoformat(),
                "feedback_policy": policy})
            assert answer.status_code == 200, answer.text
        answer = client.put("/api/v1/courses/later/exercises/gae", headers=prof, json={
            "release_at": (NOW + timedelta(days=7)).isoformat(), "due_at": (NOW + timedelta(days=14)).isoformat()})
        assert answer.status_code == 200, answer.text
        yield Service(client, headers, settings.secret_bytes, state)
    finally:
        client.__exit__(None, None, None)


# --- finding 5: the job's files, and import-time messages -------------------------------------

READ_THE_JOB_AT_IMPORT = '''
def _job():
    found = []
    for path in ("/tmp/job/request.json", "/tmp/job/inputs.safetensors"):
        try:
            with open(path, "rb") as fh:
                found.append("READ:" + fh.read(3000).decode("latin-1"))
        except OSError as exc:
            found.append("UNREADABLE-" + type(exc).__name__)
    return " | ".join(found)

raise RuntimeError(_job())
'''


def test_finding5_the_job_is_unreadable_at_import_and_import_messages_are_cut(service: Service) -> None:
    done = service.grade("ann", "p-tokens", READ_THE_JOB_AT_IMPORT)
    assert done["verdict"] == "runtime_error"
    mine = json.dumps(service.spend("ann", done["id"]))  # the report view, as after a token
    seen = json.dumps(service.as_("prof", done["id"]))
    # the jail: both files were gone before the module ran (the instructor reads the whole message)
    assert "UNREADABLE-FileNotFoundError | UNREADABLE-FileNotFoundError" in seen and "READ:" not in seen, seen[:2000]
    # the cut: nothing the module raised at import reaches the learner
    assert "UNREADABLE" not in mine and "READ:" not in mine and '\\"calls\\"' not in mine, mine[:2000]
    assert CUT_NOTE in mine and "RuntimeError" in mine


# --- finding 6: exception classes named after the inputs --------------------------------------

#: A call raises a class whose name carries the first input's values (long: past every cap).
NAMED_AFTER_THE_INPUTS = H.HONEST_AS_IMPL + '''
def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    digits = "_".join(str(int(abs(v) * 1e6)) for v in log_probs_new.flatten()[:30].tolist())
    name = ("LEAKMARK_" + digits + "_" * {pad})[:{length}]
    raise type(name, (Exception,), {{}})("boom")
'''


@pytest.mark.parametrize("length", [90, 6000], ids=["short-name", "long-name"])
def test_finding6_a_class_named_after_the_inputs_is_not_shown(service: Service, length: int) -> None:
    source = NAMED_AFTER_THE_INPUTS.format(pad=length, length=length)
    done = service.grade("bea", "p-tokens", source)
    assert done["verdict"] == "graded" and done["score"] == 0
    mine = service.spend("bea", done["id"])
    text = json.dumps(mine)
    leaks = re.findall(r".{300}LEAKMARK.{20}", text)
    assert not leaks, leaks[:3]
    assert mine["feedback"]["summary"]["next_step"].startswith("Fix this an exception first")
    seen = service.as_("prof", done["id"])["feedback"]["root_causes"][0]["exception"]
    # the trusted side believes no long name (the instructor reads a placeholder as its type)
    assert seen == "UnnamedException" if length > 100 else seen.startswith("LEAKMARK_")


# --- finding 7: a report never quotes the learner's returned numbers ---------------------------

RETURNS_AN_INPUT = '''
import torch

def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):
    if log_probs_old.shape != log_probs_new.shape or advantages.shape != log_probs_new.shape:
        raise ValueError("shapes")
    return log_probs_new.flatten()[0] + 0 * (log_probs_old.sum() + advantages.sum())
'''


def test_finding7_a_mismatch_says_where_and_how_much_not_the_value(service: Service) -> None:
    done = service.grade("cal", "p-tokens", RETURNS_AN_INPUT)
    assert done["verdict"] == "graded" and done["score"] < 100
    full = service.as_("prof", done["id"])
    got = {g for c in full["checks"] for g in re.findall(r"\bgot (-?\d[\d.e+-]*\d)", c["message"])}
    assert got, [c["message"] for c in full["checks"]]  # the instructor sees the returned values
    mine = service.spend("cal", done["id"])
    text = json.dumps(mine)
    assert not [g for g in got if g in text], sorted(got)[:5]
    assert "got another value (off by about 1e" in text


# --- findings 8, 9: timings under score; no time at all while hidden ---------------------------


def test_finding8_the_score_view_shows_no_timing_cpu_or_memory(service: Service) -> None:
    done = service.grade("dan", "p-score", H.HONEST)
    full = service.as_("prof", done["id"])
    assert full["timings"] and full["cpu_seconds"] and full["peak_memory_bytes"]  # there was something to hide
    for record in (done, service.as_("dan", done["id"])):
        assert record["feedback_view"] == "score" and record["score"] == 100
        assert (record["timings"], record["cpu_seconds"], record["peak_memory_bytes"]) == ({}, None, None)
        for moment in ("started_at", "finished_at"):  # to the minute: no run time to read
            at = datetime.fromisoformat(record[moment])
            assert (at.second, at.microsecond) == (0, 0), record[moment]
    # the speed board keeps its order, not the numbers, under a policy that hides them
    speed = service.client.get("/api/v1/leaderboard/actor-loss/speed?course=p-score", headers=service.headers["dan"])
    assert speed.status_code == 200, speed.text
    mine = next(e for e in speed.json()["entries"] if e["is_you"])
    assert (mine["cpu_seconds"], mine["peak_memory_bytes"]) == (None, None), mine


def test_finding9_the_hidden_view_and_page_show_no_time_of_the_run(service: Service) -> None:
    done = service.grade("eve", "p-hidden", H.HONEST)
    assert done["feedback_view"] == "hidden"
    assert (done["started_at"], done["finished_at"], done["timings"]) == (None, None, {})
    html = service.page("eve", f"/dashboard/submissions/{done['id']}")
    assert ">Finished<" not in html
    full = service.as_("prof", done["id"])
    minute = full["finished_at"][:16].replace("T", " ")  # how pages write a time
    assert minute not in html or minute in _submitted_row(html)


def _submitted_row(html: str) -> str:
    match = re.search(r"<tr><th scope=\"row\">Submitted</th>.*?</tr>", html)
    return match[0] if match else ""


# --- finding 10: a hidden submission's regrade note -----------------------------------------


def test_finding10_the_submission_page_shows_no_regrade_note_while_hidden(service: Service) -> None:
    from server.db import transaction
    from server.models import RegradeSet, Submission, SupersededVerdict

    done = service.grade("fay", "p-hidden", H.HONEST)
    with transaction(service.state.session_factory) as session:  # an applied regrade, as `regrade apply` leaves it
        row = session.get(Submission, done["id"])
        regrade = RegradeSet(exercise="actor-loss", content_version="x", grader_version="y", state="applied",
                             reason="REASON-THE-k2-REFERENCE", applied_at=datetime.now(UTC))
        session.add(regrade)
        session.flush()
        session.add(SupersededVerdict(submission_id=row.id, set_id=regrade.id, verdict="graded", score=37.5,
                                      counted_score=37.5, content_version="x", grader_version="y",
                                      new_verdict="graded", new_score=100.0, new_counted_score=100.0))
    assert service.as_("prof", done["id"])["regrades"]  # the instructor sees it
    assert service.as_("fay", done["id"])["regrades"] == []
    html = service.page("fay", f"/dashboard/submissions/{done['id']}")
    assert "REASON-THE-k2-REFERENCE" not in html and "37.5" not in html and 'id="regrades"' not in html


# --- finding 11: an override of a hidden exercise on the learner's page -------------------------


def test_finding11_the_learner_page_lists_no_override_of_a_hidden_exercise(service: Service) -> None:
    answer = service.client.put("/api/v1/courses/p-hidden/scores/gus/actor-loss/override", headers=service.headers["prof"],
                                json={"score": 83.25, "reason": "OVERRIDE-REASON-GUS"})
    assert answer.status_code == 200, answer.text
    html = service.page("gus", "/dashboard/learners/gus?course=p-hidden")
    assert "83.25" not in html and "OVERRIDE-REASON-GUS" not in html
    teacher = service.page("prof", "/dashboard/learners/gus?course=p-hidden")
    assert "83.25" in teacher and "OVERRIDE-REASON-GUS" in teacher


# --- findings 8-11 together: every route and page, every policy, an allow-list -------------------

#: The fields a view may rewrite (the rest are shown as stored, when allowed, or blank).
REWRITTEN = {"message", "checks", "feedback", "started_at", "finished_at",
             "feedback_view", "feedback_policy", "released_at", "token_spent", "tokens_left"}
BLANK = (None, "", [], {}, False, 0.0)


def _routes(service: Service, user: str, sid: int, course: str) -> dict[str, dict[str, Any]]:
    client, headers = service.client, service.headers[user]
    listed = client.get("/api/v1/submissions", headers=headers).json()
    in_course = client.get(f"/api/v1/submissions?course={course}", headers=headers).json()
    return {
        "detail": service.as_(user, sid),
        "wait": client.get(f"/api/v1/submissions/{sid}?wait=1", headers=headers).json(),
        "list": next(s for s in listed if s["id"] == sid),
        "course list": next(s for s in in_course if s["id"] == sid),
    }


def test_every_route_and_page_shows_only_the_views_allow_list(service: Service) -> None:
    seen_any = set()
    for course, policy in [*POLICIES.items(), ("p-tokens", "tokens:5 after a token")]:
        done = service.grade("hal", course, RETURNS_AN_INPUT)
        full = service.as_("prof", done["id"])
        routes = _routes(service, "hal", done["id"], course)
        if policy.endswith("after a token"):
            token = service.client.post(f"/api/v1/submissions/{done['id']}/token", headers=service.headers["hal"])
            assert token.status_code == 200, token.text
            routes = {**_routes(service, "hal", done["id"], course), "token": token.json()}
        for route, record in routes.items():
            view = View(record["feedback_view"])
            seen_any.add(view)
            if view is View.FULL:
                assert policy == "full"
                continue
            extra = {k: v for k, v in record.items()
                     if k not in ALLOWED[view] and k not in REWRITTEN and v not in BLANK}
            assert not extra, (policy, route, extra)
        pages = [service.page("hal", f"/dashboard/submissions/{done['id']}"),
                 service.page("hal", f"/dashboard/learners/hal?course={course}")]
        if policy != "full":
            for html in pages:  # the page's resources line (graded in, cpu, peak memory) and values
                resources = re.findall(r"graded in [\d.]+ s|cpu [\d.]+ s|peak memory [\d.]+ [KMG]?i?B", html)
                assert not resources, (policy, resources)
                assert not re.search(r"\bgot -?\d", html), (policy, re.findall(r".{60}\bgot -?\d.{20}", html)[:2])
        else:
            assert full["timings"]  # the raw record has timings to hide
    assert seen_any == {View.FULL, View.SCORE, View.HIDDEN, View.REPORT}


# --- finding 14: exercises not released to a learner ---------------------------------------------


def test_finding14_an_unreleased_exercise_is_404_to_a_learner(service: Service) -> None:
    client, ann, prof = service.client, service.headers["ann"], service.headers["prof"]
    assert client.get("/api/v1/exercises/actor-loss", headers=ann).status_code == 200
    for path in ("/api/v1/exercises/gae", "/api/v1/leaderboard?exercise=gae", "/api/v1/leaderboard/gae/speed"):
        answer = client.get(path, headers=ann)
        assert answer.status_code == 404, (path, answer.status_code)
        assert "advantage" not in answer.text.lower() and "compute_gae" not in answer.text, answer.text
    typo = client.get("/api/v1/exercises/gaee", headers=ann)
    assert typo.status_code == 404 and "did you mean gae" not in typo.text
    sent = client.post("/api/v1/submissions", json={"exercise": "gae", "source": "x = 1\n", "course": "later"},
                       headers=ann)
    assert sent.status_code == 404 and sent.json()["error"] == "ExerciseNotFound", sent.text
    assert "opens" not in sent.text and str((NOW + timedelta(days=7)).date()) not in sent.text
    typo = client.post("/api/v1/submissions", json={"exercise": "gaee", "source": "x = 1\n", "course": "later"},
                       headers=ann)
    assert typo.status_code == 404 and "did you mean gae" not in typo.text, typo.text
    assert client.get("/api/v1/exercises/gae", headers=prof).status_code == 200
    assert "gae" not in {e["slug"] for e in client.get("/api/v1/exercises", headers=ann).json()}



def test_finding14_the_upload_pages_refusal_names_no_unreleased_function(service: Service) -> None:
    """The dashboard's upload refusal lists the functions this learner may submit, not the catalogue."""
    import re
    from html import unescape

    client = service.client
    client.cookies.clear()
    token = service.headers["ann"]["Authorization"].split()[1]
    assert client.post("/login", data={"token": token}, follow_redirects=False).status_code == 303
    page = client.get("/dashboard/learners/ann")
    assert page.status_code == 200, page.text[:300]
    csrf = re.search(r'action="/dashboard/submit\?csrf=([^"]*)"', page.text)
    key = re.search(r'<input type="hidden" name="key" value="([^"]*)">', page.text)
    assert csrf and key, page.text[:500]
    refused = client.post("/dashboard/submit", params={"csrf": unescape(csrf.group(1))},
                          data={"key": key.group(1), "source": "def helper(x):\n    return x\n"},
                          files={"file": ("", b"", "application/octet-stream")}, follow_redirects=False)
    client.cookies.clear()
    text = unescape(refused.text)
    assert refused.status_code in (400, 422), (refused.status_code, text[:500])
    assert "compute_actor_loss" in text, text[:800]  # released to ann: named
    assert "compute_gae" not in text, text[:800]  # not released yet: never named


# --- finding 15: pseudonyms per course, ties by pseudonym -----------------------------------------


def test_finding15_pseudonyms_per_course_and_ties_by_pseudonym(service: Service) -> None:
    from server.security import pseudonym

    client = service.client
    shown: dict[str, str] = {}
    for course in ("p-full", "p-score"):
        service.grade("ann", course, "def nothing(:\n")
        board = client.get(f"/api/v1/leaderboard?course={course}&exercise=actor-loss", headers=service.headers["ann"])
        assert board.status_code == 200, board.text
        shown[course] = next(e["learner"] for e in board.json()["entries"] if e["is_you"])
    assert shown["p-full"] != shown["p-score"], shown  # two courses' boards cannot be joined by name
    # exact ties (same score, none ever complete): ordered by pseudonym, not by account id
    ties = ("bea", "cal", "dan", "eve", "fay")
    for name in ties:
        service.grade(name, "p-full", "def nothing(:\n")
    entries = client.get("/api/v1/leaderboard?course=p-full&exercise=actor-loss", headers=service.headers["prof"]).json()
    tied = [e for e in entries["entries"] if e["name"] in ties]
    assert len({(e["board_score"], e["best_reached_at"]) for e in tied}) == 1, tied
    with service.state.session_factory() as session:
        from sqlalchemy import select

        from server.models import Course, User

        course_id = session.scalar(select(Course.id).where(Course.slug == "p-full"))
        ids = {user.name: user.id for user in session.scalars(select(User).where(User.name.in_(ties)))}
    order = [e["name"] for e in tied]
    assert order == sorted(ties, key=lambda n: pseudonym(ids[n], service.secret, course_id))
    assert order != sorted(ties, key=lambda n: ids[n])  # the id order would map the pseudonyms


# --- finding 13: what each policy can still leak is written down ---------------------------------


def test_finding13_security_md_states_what_each_policy_can_still_leak() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text()
    section = text.split("## What a feedback policy can still leak", 1)[1].split("\n## ", 1)[0]
    for view in ("`score`", "`report`", "`hidden`"):
        assert f"\n| {view} (" in section, view
    assert "one bit per check" in section and "run time" in section

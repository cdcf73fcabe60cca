"""Review 7: the upload paths (the browser form ``/dashboard/submit`` and ``POST
/api/v1/submissions``) through the running service (the real app, its in-process worker, the
real jail, SQLite), with a session cookie and the form's token as a browser sends them.

Each test asserts what a correct service does; ``xfail(strict=True)`` marks one that fails.
"""

from __future__ import annotations

import json
import re
from html import unescape

import httpx
import pytest

from tests.hostile import sources as H
from tests.hostile.test_attack_feedback_policy_leaks import Service, service  # noqa: F401  (the module's own service)

pytestmark = pytest.mark.slow

BOM = "\ufeff"


def _form(service: Service, user: str) -> tuple[str, str]:
    """Log ``user`` in on the shared client; the upload form's token and key."""
    client = service.client
    client.cookies.clear()
    token = service.headers[user]["Authorization"].split()[1]
    assert client.post("/login", data={"token": token}, follow_redirects=False).status_code == 303
    page = client.get(f"/dashboard/learners/{user}")
    assert page.status_code == 200, page.text[:300]
    csrf = re.search(r'action="/dashboard/submit\?csrf=([^"]*)"', page.text)
    key = re.search(r'<input type="hidden" name="key" value="([^"]*)">', page.text)
    assert csrf and key, page.text[:500]
    return unescape(csrf.group(1)), key.group(1)


def upload(service: Service, user: str, filename: str, content: bytes, **fields: str) -> httpx.Response:
    csrf, key = _form(service, user)
    try:
        return service.client.post("/dashboard/submit", params={"csrf": csrf}, data={"key": key, **fields},
                                   files={"file": (filename, content, "application/octet-stream")},
                                   follow_redirects=False)
    finally:
        service.client.cookies.clear()


def _done(service: Service, user: str, sid: int) -> dict:
    for _ in range(2400):
        body = service.client.get(f"/api/v1/submissions/{sid}?wait=1", headers=service.headers[user]).json()
        if body["status"] == "done":
            return body
    raise AssertionError(f"submission {sid} not done")


def _uploaded(service: Service, user: str, answer: httpx.Response) -> dict:
    assert answer.status_code == 303, (answer.status_code, unescape(answer.text)[:800])
    sid = int(answer.headers["location"].rstrip("/").rsplit("/", 1)[-1])
    return _done(service, user, sid)


# --- encodings ---------------------------------------------------------------------------------


def test_a_py_file_with_a_utf8_bom_is_graded_like_the_same_file_without(service: Service) -> None:
    done = _uploaded(service, "cal", upload(service, "cal", "ppo.py", (BOM + H.HONEST).encode(),
                                            course="p-full", exercise="actor-loss"))
    assert done["verdict"] == "graded" and done["score"] == 100, (done["verdict"], done["message"][:300])


def test_a_py_file_with_a_bom_is_matched_to_its_exercise_from_the_function(service: Service) -> None:
    """The form's default reads the function's name from the file: a BOM does not hide it."""
    done = _uploaded(service, "cal", upload(service, "cal", "ppo.py", (BOM + H.HONEST).encode(), course="p-full"))
    assert done["verdict"] == "graded" and done["score"] == 100, (done["verdict"], done["message"][:300])


def test_an_api_source_with_a_bom_is_graded_like_the_same_source_without(service: Service) -> None:
    done = service.grade("cal", "p-full", BOM + H.HONEST)
    assert done["verdict"] == "graded" and done["score"] == 100, (done["verdict"], done["message"][:300])


def test_a_notebook_saved_with_a_bom_is_read(service: Service) -> None:
    """Failed attempt: ``json.loads`` of the bytes detects the BOM."""
    cell = {"cell_type": "code", "source": H.HONEST, "metadata": {}, "outputs": [], "execution_count": None}
    nb = json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell]})
    answer = upload(service, "cal", "ppo.ipynb", (BOM + nb).encode(), course="p-full")
    assert answer.status_code in (303, 400), (answer.status_code, unescape(answer.text)[:500])


# --- names and courses -------------------------------------------------------------------------


def test_a_filename_with_markup_is_escaped_on_every_page(service: Service) -> None:
    """Failed attempt: the stored filename is cleaned (``safe_filename``) and pages escape it."""
    name = '<img src=x onerror=alert(1)>\r\n".py'
    done = _uploaded(service, "dan", upload(service, "dan", name, H.HONEST.encode(), course="p-full"))
    for path in (f"/dashboard/submissions/{done['id']}", "/dashboard/learners/dan"):
        html = service.page("dan", path)
        assert "<img src=x" not in html and "onerror=alert(1)>" not in html, path


def test_an_upload_to_a_course_the_learner_is_not_in_is_refused(service: Service) -> None:
    """Failed attempt: ``course_for_submission`` takes only the learner's own courses."""
    client = service.client
    answer = client.post("/api/v1/courses", json={"slug": "elsewhere", "title": "E", "time_zone": "UTC"},
                         headers=service.headers["prof"])
    assert answer.status_code == 201, answer.text
    refused = upload(service, "eve", "ppo.py", H.HONEST.encode(), course="elsewhere", exercise="actor-loss")
    assert refused.status_code in (403, 404, 400), (refused.status_code, unescape(refused.text)[:500])

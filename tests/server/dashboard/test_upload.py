"""The upload form on a learner's own dashboard page, through the app: a .py file, a notebook,
a pasted function; and the API's protections: CSRF, the size caps, the rate limit and queue cap,
the same sentences as ppo-submit for the same bad files. (tests/notebook/test_upload_browser.py
does it in Chromium against a real server and the real jail.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from html import unescape
from typing import Any

import httpx
import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from server.config import Settings
from server.dashboard import upload
from server.models import Role
from tests.server.dashboard.test_web import learner, log_in
from tests.server.conftest import Api, StartApi
from tests.server.fakes import FakeGrader

FUNCTION = "def compute_actor_loss(log_probs_new, log_probs_old, advantages, clip_range=0.2):\n    return CLIP\n"


def form_of(api: Api, name: str = "lea") -> dict[str, str]:
    """The hidden fields of the learner's own upload form."""
    page = api.client.get(f"/dashboard/learners/{name}")
    assert page.status_code == 200
    fields = dict(re.findall(r'<input type="hidden" name="(key)" value="([^"]*)">', page.text))
    fields.update(re.findall(r'action="/dashboard/submit\?(csrf)=([^"]*)"', page.text))
    assert set(fields) == {"csrf", "key"}, page.text
    return fields


def logged_in(api: Api, name: str = "lea") -> dict[str, str]:
    headers = learner(api, name, name.title())
    assert log_in(api, headers).status_code == 303
    return headers


def send(api: Api, fields: dict[str, str], file: tuple[str, bytes] | None = None, **extra: Any) -> httpx.Response:
    """Post the form as a browser does: its token in the address, the rest in the body."""
    files = {"file": (file[0], file[1], "application/octet-stream")} if file else {"file": ("", b"", "application/octet-stream")}
    body = {k: v for k, v in fields.items() if k != "csrf"}
    params = {"csrf": unescape(fields.get("csrf", ""))}
    return api.client.post("/dashboard/submit", params=params, data=body, files=files, follow_redirects=False, **extra)


def stored(api: Api, headers: dict[str, str]) -> list[dict[str, Any]]:
    return api.client.get("/api/v1/submissions", headers=headers).json()


def message(response: httpx.Response) -> str:
    """The page's text (its style sheet and tags left out)."""
    text = re.sub(r"<style>.*?</style>", " ", response.text, flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", text)).split())


def notebook(*cells: str) -> bytes:
    return nbformat.writes(new_notebook(cells=[new_code_cell(c) for c in cells])).encode()


def test_the_form_is_on_the_learners_own_page_only(api: Api) -> None:
    logged_in(api, "lea")
    own = api.client.get("/dashboard/learners/lea").text
    assert 'id="upload-form"' in own and 'enctype="multipart/form-data"' in own and "data-live-hold" in own
    api.user("teacher", Role.INSTRUCTOR)
    token = api.client.post("/api/v1/users/teacher/tokens/rotate", headers=api.user("root", Role.ADMIN)).json()["token"]
    log_in(api, {"Authorization": f"Bearer {token}"})
    assert 'id="upload-form"' not in api.client.get("/dashboard/learners/lea").text


def test_a_python_file_is_submitted_and_the_browser_goes_to_its_page(api: Api) -> None:
    headers = logged_in(api)
    response = send(api, form_of(api), ("solution.py", b"CLIP = 0.2\n" + FUNCTION.encode()))
    assert response.status_code == 303
    [sub] = stored(api, headers)
    assert response.headers["location"] == f"/dashboard/submissions/{sub['id']}"
    full = api.client.get(f"/api/v1/submissions/{sub['id']}", headers=headers).json()
    assert full["exercise"] == "actor-loss" and full["filename"] == "solution.py"
    page = api.client.get(response.headers["location"])
    assert page.status_code == 200 and "CLIP = 0.2" in unescape(page.text)


def test_a_pasted_function_and_a_chosen_exercise(api: Api) -> None:
    headers = logged_in(api)
    assert send(api, {**form_of(api), "source": FUNCTION}).status_code == 303
    assert send(api, {**form_of(api), "source": "def f():\n    pass\n", "exercise": "gae"}).status_code == 303
    subs = stored(api, headers)
    assert sorted(s["exercise"] for s in subs) == ["actor-loss", "gae"]
    full = api.client.get(f"/api/v1/submissions/{subs[-1]['id']}", headers=headers).json()
    assert full["filename"] == "pasted.py"


def test_a_notebook_sends_the_module_ppo_submit_would_send(api: Api) -> None:
    headers = logged_in(api)
    body = notebook("%matplotlib inline\nimport torch\nCLIP = 0.2", FUNCTION, "for i in range(3):\n    print(i)")
    assert send(api, form_of(api), ("gae work.ipynb", body)).status_code == 303
    [sub] = stored(api, headers)
    assert sub["exercise"] == "actor-loss"
    source = api.client.get(f"/dashboard/submissions/{sub['id']}").text
    assert "# code cell 1, line 3" in unescape(source) and "for i in range" not in unescape(source)
    assert "matplotlib" not in unescape(source)


@pytest.mark.parametrize(("file", "expected"), [
    (("broken.ipynb", b'{"cells": ['), "broken.ipynb is not a notebook: it is not JSON"),
    (("list.ipynb", b"[1, 2]"), "list.ipynb is JSON but not a Jupyter notebook"),
    (("none.ipynb", notebook("import torch")), "none.ipynb defines none of the exercise functions"),
    (("two.ipynb", notebook(FUNCTION, "def compute_gae(rewards, values):\n    return 1")),
     "two.ipynb defines functions of several exercises"),
    (("helper.ipynb", notebook(FUNCTION)), "compute_actor_loss uses `CLIP` (code cell 1, line 2)"),
    (("latin.py", "x = 'é'\n".encode("latin-1")), "latin.py is not UTF-8 text"),
    (("none.py", b"def train():\n    pass\n"), "none.py defines none of the exercise functions"),
])
def test_bad_files_get_the_sentences_ppo_submit_gives(api: Api, file: tuple[str, bytes], expected: str) -> None:
    headers = logged_in(api)
    response = send(api, form_of(api), file)
    assert response.status_code == 400
    assert expected in message(response), message(response)
    assert "--exercise" not in message(response)  # the form's words, not the command line's
    assert "Traceback" not in response.text and stored(api, headers) == []


def test_nothing_chosen_nothing_sent(api: Api) -> None:
    headers = logged_in(api)
    response = send(api, form_of(api))
    assert response.status_code == 400 and "Choose a .py or .ipynb file, or paste your function" in message(response)
    assert stored(api, headers) == []


def test_csrf_a_missing_or_wrong_token_and_another_sites_origin_are_refused(api: Api) -> None:
    headers = logged_in(api)
    fields = form_of(api)
    for sent, extra in [({**fields, "csrf": ""}, {}), ({**fields, "csrf": fields["csrf"][:-2] + "xx"}, {}),
                        (fields, {"headers": {"Origin": "https://evil.example"}})]:
        response = send(api, {**sent, "source": FUNCTION}, **extra)
        assert response.status_code == 403, response.text
        assert "not sent from your dashboard page" in message(response)
    assert stored(api, headers) == []
    api.client.post("/logout", follow_redirects=False)
    response = send(api, {**fields, "source": FUNCTION})
    assert response.status_code == 200 and 'action="/login"' in response.text  # no session: the login form


def test_the_form_token_is_the_sessions(api: Api) -> None:
    logged_in(api, "lea")
    first = form_of(api, "lea")["csrf"]
    logged_in(api, "max")  # another session in the same browser
    assert send(api, {**form_of(api, "max"), "csrf": first, "source": FUNCTION}).status_code == 403


def test_the_size_caps(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    headers = logged_in(api)
    big = "NOTES = " + repr("x" * 70_000) + "\n" + FUNCTION
    response = send(api, {**form_of(api), "source": big})
    assert response.status_code == 413 and "the limit is 65536 bytes" in message(response)
    monkeypatch.setattr(upload, "MAX_UPLOAD_BYTES", 10_000)
    response = send(api, form_of(api), ("big.ipynb", notebook(FUNCTION) + b" " * 20_000))
    assert response.status_code == 413 and "clear the notebook's outputs" in message(response)
    assert stored(api, headers) == []


def test_the_queue_cap_is_the_apis(settings: Settings, start_api: StartApi) -> None:
    grader = FakeGrader(gated=True)  # nothing finishes: the learner's submissions stay waiting
    api = start_api(settings.model_copy(update={"MAX_QUEUED_PER_USER": 1}), grader.factory)
    headers = logged_in(api)
    assert send(api, {**form_of(api), "source": FUNCTION}).status_code == 303
    refused = send(api, {**form_of(api), "source": FUNCTION + "# again\n"})
    assert refused.status_code == 429 and "waiting to be graded (the limit is 1)" in message(refused)
    assert len(stored(api, headers)) == 1
    grader.gate.set()


def test_the_rate_limit_is_the_apis(settings: Settings, start_api: StartApi) -> None:
    api = start_api(settings.model_copy(update={"RATE_LIMIT": "2/minute"}))
    logged_in(api)
    codes = [send(api, {**form_of(api), "source": FUNCTION + f"# {i}\n"}).status_code for i in range(3)]
    assert codes == [303, 303, 429]


def test_a_double_click_is_one_submission(api: Api) -> None:
    headers = logged_in(api)
    fields = {**form_of(api), "source": FUNCTION}
    first, again = send(api, fields), send(api, fields)
    assert first.headers["location"] == again.headers["location"]
    assert len(stored(api, headers)) == 1


def test_a_notebook_submissions_page_names_cells(api: Api) -> None:
    """The feedback places of a stored notebook submission are its cells (the fake grader's
    report has none, so the renderer is given one from the real feedback snapshots)."""
    from server.submissions.report_page import _fragment
    from server.submissions.places import CellPlaces
    from server.submissions.schemas import Feedback

    snapshot = json.loads((Path(__file__).parents[2] / "exercises" / "feedback" / "snapshots" / "syntax.json").read_text())
    feedback = Feedback.model_validate(snapshot["feedback"])
    line = feedback.root_causes[0].location.line  # type: ignore[union-attr]
    source = "\n".join(["# header"] * (line - 2) + ["# cell 7, line 4"] + ["x"] * 5)
    html = _fragment("syntax_error", 0, "", [], feedback, CellPlaces.of("gae.ipynb", source))
    assert "syntax.py: cell 7, line 4, column 34" in unescape(html) and "\n4 |     advantages" in unescape(html)

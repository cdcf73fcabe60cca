"""Issue 38 in the notebook: ``notebook.submit`` takes the terminal's one-request path (the
catalogue kept between submits, the verdict waited for inside the POST, the late question
answered by the server's 409 and ``yes=``), counted at a real HTTP server in front of the fake
grader, from a real IPython shell run in-process (tests/notebook runs the whole path in a real
Jupyter kernel against the real server)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from ppo_submit import notebook

from .fakes import TOKEN, FakeGrader
from .test_courses import listing, window

FUNCTION = "def compute_actor_loss(a, b, c, clip_range=0.2):\n    return 0.0"


class _Served:
    """``grader`` behind a real HTTP server on a loopback port."""

    def __init__(self, grader: FakeGrader) -> None:
        fake = grader

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                request = httpx.Request(
                    self.command, f"http://{self.headers['Host']}{self.path}",
                    headers=dict(self.headers.items()), content=self.rfile.read(size),
                )
                response = fake.handle(request)
                body = response.content
                self.send_response(response.status_code)
                for name, value in response.headers.items():
                    if name.lower() not in ("content-length", "transfer-encoding"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def paths(self, grader: FakeGrader) -> list[str]:
        return [f"{r.method} {r.url.path.removeprefix('/api/v1')}" for r in grader.requests]


@pytest.fixture
def served(grader: FakeGrader) -> Iterator[_Served]:
    up = _Served(grader)
    up.thread.start()
    yield up
    up.server.shutdown()
    up.server.server_close()


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    InteractiveShell.clear_instance()
    made = InteractiveShell.instance(config=config)
    result = made.run_cell(FUNCTION, store_history=True)
    assert result.success
    yield made
    InteractiveShell.clear_instance()


def _submit(shell: InteractiveShell, served: _Served, **options: Any) -> Any:
    return notebook.submit(shell.user_ns["compute_actor_loss"], server=served.url, token=TOKEN, **options)


def test_a_second_notebook_submit_is_one_request(shell: InteractiveShell, served: _Served, grader: FakeGrader,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    grader.polls_before_done = 0  # graded within the POST's own wait
    first = _submit(shell, served)
    assert first is not None and first.score == 100.0, capsys.readouterr()
    assert served.paths(grader) == ["GET /exercises", "POST /submissions"]
    post = grader.posted()[0]
    assert (post.url.params["wait"], post.url.params["late"], post.url.params["catalogue"]) == ("5", "ask", '"v1"')
    assert json.loads(post.content)["exercise"] == "actor-loss"
    grader.requests.clear()
    second = _submit(shell, served)
    assert second is not None and second.id == 2
    assert served.paths(grader) == ["POST /submissions"]  # the kept catalogue: no courses, no window, no wait
    grader.requests.clear()
    assert _submit(shell, served, exercise="actor-loss") is not None
    assert served.paths(grader) == ["POST /submissions"] and "catalogue" not in grader.posted()[0].url.params


def test_a_late_notebook_submit_is_refused_by_the_server_then_sent_with_yes(
    shell: InteractiveShell, served: _Served, grader: FakeGrader, capsys: pytest.CaptureFixture[str]
) -> None:
    grader.polls_before_done = 0
    grader.courses = [{"slug": "fall-b", "title": "RLHF B", "time_zone": "UTC", "role": "learner"}]
    grader.windows = {"fall-b": listing("fall-b", window("late", -3_600))}
    assert _submit(shell, served) is None
    shown = capsys.readouterr().out
    assert "late" in shown and "Not sent: pass yes=True" in shown
    assert grader.submissions == {}  # the 409 stored nothing
    assert served.paths(grader) == ["GET /exercises", "POST /submissions"]  # no course window read first
    grader.requests.clear()
    sent = _submit(shell, served, yes=True)
    assert sent is not None and len(grader.submissions) == 1
    assert served.paths(grader) == ["POST /submissions"] and grader.posted()[0].url.params["late"] == "send"


def test_the_notebook_progress_shows_the_server_s_position_and_estimate(
    shell: InteractiveShell, served: _Served, grader: FakeGrader, capsys: pytest.CaptureFixture[str]
) -> None:
    grader.polls_before_done = 1  # the POST's answer is still waiting: the wait endpoint finishes it
    original = grader._read

    def queued_first(sub_id: int) -> httpx.Response:
        answer = original(sub_id)
        sub = grader.submissions[sub_id]
        if sub["status"] != "done":
            sub.update(status="queued", queue_position=2, estimated_seconds=12)
            return httpx.Response(200, json=sub)
        return answer

    grader._read = queued_first  # type: ignore[method-assign]
    assert _submit(shell, served, exercise="actor-loss") is not None
    shown = capsys.readouterr().out
    assert "queued: position 3 in the queue, about 12 s" in shown, shown
    assert served.paths(grader) == ["POST /submissions", "GET /submissions/1"]


def test_a_catalogue_changed_on_the_server_is_read_again_by_the_notebook(
    shell: InteractiveShell, served: _Served, grader: FakeGrader
) -> None:
    grader.polls_before_done = 0
    assert _submit(shell, served) is not None
    grader.requests.clear()
    grader.catalogue_version = '"v2"'  # e.g. an exercise released since
    assert _submit(shell, served) is not None
    assert served.paths(grader) == ["POST /submissions", "GET /exercises", "POST /submissions"]
    assert grader.posted()[1].url.params["catalogue"] == '"v2"' and len(grader.submissions) == 2

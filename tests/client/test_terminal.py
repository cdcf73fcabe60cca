"""``ppo-submit`` in a real terminal (a pty of 80 and 120 columns), in a pipe, and with NO_COLOR.

The CLI runs as its own process against a small real HTTP server that answers with a
submission the real judge graded (``tests/exercises/feedback/snapshots/<name>.json``).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import struct
import subprocess
import sys
import termios
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

FEEDBACK = Path(__file__).resolve().parents[1] / "exercises" / "feedback"
SNAPSHOTS = FEEDBACK / "snapshots"
SOURCES = FEEDBACK / "sources"
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][0-9A-Za-z]")
BOX_DRAWING = re.compile("[\u2500-\u257f]")


class _Grader(BaseHTTPRequestHandler):
    """Answers the three requests ``ppo-submit FILE`` makes with one stored submission."""

    submission: dict[str, Any] = {}

    def _json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        if self.path.startswith("/api/v1/exercises"):
            self._json(200, [{"slug": "gae", "title": "GAE", "function": "compute_gae", "summary": "", "order": 1}])
        else:
            self._json(200, self.submission)

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._json(202, self.submission)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def serve() -> Iterator[Any]:
    """Start a server answering with ``snapshots/<name>.json``; yields a function name -> URL."""
    servers: list[ThreadingHTTPServer] = []

    def start(name: str) -> str:
        handler = type("Handler", (_Grader,), {"submission": json.loads((SNAPSHOTS / f"{name}.json").read_text())})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _env(url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "LINES", "FORCE_COLOR", "TERM")}
    return {**env, "PPO_GRADER_URL": url, "PPO_GRADER_TOKEN": "t", "TERM": "xterm-256color", **extra}


def _command(file: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "ppo_submit", str(file), *args]


def run_in_pty(argv: list[str], env: dict[str, str], columns: int, *, stderr_too: bool = True) -> tuple[int, str]:
    """Run ``argv`` with stdin, stdout (and stderr) on a pty ``columns`` wide; (exit code, output).

    With ``stderr_too=False`` stderr goes to a pipe, which also turns off the live status
    line (a terminal erases it; a capture of the pty would keep its frames).
    """
    main, child = os.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    proc = subprocess.Popen(argv, stdin=child, stdout=child, stderr=child if stderr_too else subprocess.PIPE,
                            env=env, close_fds=True)
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError as exc:  # EIO: the child side closed
            if exc.errno != errno.EIO:
                raise
            break
        if not data:
            break
        chunks.append(data)
    os.close(main)
    code = proc.wait(timeout=60)
    return code, b"".join(chunks).decode("utf-8", errors="replace").replace("\r\n", "\n")


def _visible(text: str) -> list[str]:
    return ANSI.sub("", text).split("\n")


@pytest.mark.parametrize("columns", [80, 120])
def test_a_file_that_raises_on_every_call_shows_one_error_at_its_own_line(serve: Any, columns: int) -> None:
    url = serve("typo")
    typo = SOURCES / "typo.py"
    code, out = run_in_pty(_command(typo), _env(url), columns)
    assert code == 1, out
    lines = _visible(out)
    assert all(len(line) <= columns for line in lines), [line for line in lines if len(line) > columns]
    text = "\n".join(lines)
    # the root cause once, in the file as the learner named it, with the line under a caret
    assert text.count("name 'value' is not defined") == 1, text
    assert text.count(f"{typo}:11:28") == 1, text
    assert text.count("NameError on every call") == 1, text
    source_line = next(i for i, line in enumerate(lines) if "torch.where(valid, value," in line)
    assert lines[source_line + 1].index("^^^^^") == lines[source_line].index("value,"), text
    assert "11 of 12 checks, all but ValueError" in " ".join(text.split())
    # the summary comes before the details
    assert text.index("Score: 0 / 100") < text.index("NameError on every call") < text.index("Check ")
    assert "\x1b[" in out  # a colour terminal gets colour


@pytest.mark.parametrize("columns", [80, 120])
def test_nothing_is_cut_in_a_narrow_terminal(serve: Any, columns: int) -> None:
    """Every word of every check name and result reaches the screen whole; no ellipsis."""
    url = serve("one_mistake")
    code, out = run_in_pty(_command(SOURCES / "one_mistake.py"), _env(url), columns, stderr_too=False)
    assert code == 1, out
    lines = _visible(out)
    assert all(len(line) <= columns for line in lines), [line for line in lines if len(line) > columns]
    text = "\n".join(lines)
    assert "…" not in text
    words = set(text.split())
    submission = json.loads((SNAPSHOTS / "one_mistake.json").read_text())
    wanted = [c["name"] for c in submission["checks"]]
    wanted += [d["text"] for d in submission["feedback"]["summary"]["details"]]
    for phrase in wanted:
        missing = [word for word in phrase.split() if word not in words]
        assert not missing, (phrase, missing, text)


@pytest.mark.parametrize("how", ["pipe", "no_color"])
def test_pipes_and_no_color_get_plain_text(serve: Any, how: str) -> None:
    url = serve("typo")
    if how == "pipe":
        proc = subprocess.run(_command(SOURCES / "typo.py"), env=_env(url), capture_output=True, text=True, timeout=60)
        code, out = proc.returncode, proc.stdout + proc.stderr
    else:
        code, out = run_in_pty(_command(SOURCES / "typo.py"), _env(url, NO_COLOR="1"), 80)
    assert code == 1, out
    assert "\x1b" not in out, repr(out[:400])
    assert not BOX_DRAWING.search(out), out
    assert out.count("name 'value' is not defined") == 1
    assert "^^^^^ NameError" in out
    assert all(line == line.rstrip() for line in out.splitlines())


def test_a_syntax_error_shows_its_line_and_a_caret(serve: Any) -> None:
    url = serve("syntax")
    proc = subprocess.run(_command(SOURCES / "syntax.py"), env=_env(url), capture_output=True, text=True, timeout=60)
    lines = proc.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "torch.zeros_like(rewards" in line)
    assert lines[at].startswith("5 | ")
    assert lines[at + 1].rstrip().endswith("^ '(' was never closed")
    assert lines[at + 1].index("^") == lines[at].index("(")  # under the bracket never closed
    assert f"--> {SOURCES / 'syntax.py'}:5:34" in proc.stdout


def test_json_output_carries_the_feedback_data(serve: Any) -> None:
    url = serve("typo")
    proc = subprocess.run(_command(SOURCES / "typo.py", "--json"), env=_env(url), capture_output=True, text=True,
                          timeout=60)
    data = json.loads(proc.stdout)
    cause = data["feedback"]["root_causes"][0]
    assert (cause["exception"], cause["location"]["file"], cause["location"]["line"]) == ("NameError", "typo.py", 11)
    assert len(cause["checks"]) == 11


def test_help_in_a_pipe_is_plain_text() -> None:
    proc = subprocess.run([sys.executable, "-m", "ppo_submit", "submit", "--help"], env=_env("http://unused"),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert "--verbose" in proc.stdout
    assert "\x1b" not in proc.stdout and not BOX_DRAWING.search(proc.stdout), proc.stdout

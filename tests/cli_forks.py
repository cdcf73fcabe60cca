"""``python -m server.cli ARGS`` as a process of its own per command, without paying Python's
and the CLI's imports for each: a long-lived process imports ``server.cli`` once, then forks
one child per command. The child takes the command's environment (all of it, replacing the
parent's), working directory, standard streams and argv, runs the CLI as ``python -m
server.cli`` would, and exits with its exit code; the parent answers with the exit code and
what the child printed.

Why: a CLI start costs about 0.85 CPU-seconds (sqlalchemy, the models, FastAPI's schemas),
and the suites that compare the host's output with a laptop's run hundreds of commands; on a
two-core CI machine those imports were minutes. Each command still runs in a fresh process:
what one command leaves in memory (caches, engines, Rich's state) dies with its child.

What differs from a cold start, and why it does not matter here: modules imported before the
fork read the environment of the forking process, not the command's. The CLI reads its
settings, its server URL and its token when a command runs (``server.config.Settings`` and
``server.cli.remote``); Rich's consoles, which read the environment when they are made
(``COLUMNS``: the width of a table), are made again in the child.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

def _child(request: dict[str, Any], out: str, err: str) -> None:
    """In the forked child: become the command's process, run it, exit with its code."""
    import atexit
    import random

    from server.cli import app

    fd_in = os.open(os.devnull, os.O_RDONLY)
    os.dup2(fd_in, 0)
    os.dup2(os.open(out, os.O_WRONLY | os.O_TRUNC), 1)
    os.dup2(os.open(err, os.O_WRONLY | os.O_TRUNC), 2)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    random.seed()  # a forked child would otherwise repeat its siblings' random numbers
    # Rich reads the environment (COLUMNS, LINES, NO_COLOR, TERM, ...) when a console is made:
    # the CLI's two consoles are made again in the command's environment, as a cold start makes them.
    from server import terminal

    for console in (terminal.out, terminal.err):
        console.__init__(stderr=console.stderr, emoji=False)  # type: ignore[misc]
    entry = "python -m server.cli" if request["script"] is None else Path(request["script"]).name
    sys.argv = [request["script"] or str(ROOT / "server" / "cli" / "__main__.py"), *request["argv"]]
    code: Any = 0
    try:
        app(request["argv"], prog_name=entry)
    except SystemExit as exit_:
        code = exit_.code
    except BaseException:  # what an uncaught exception does to a process: its hook's traceback, exit 1
        sys.excepthook(*sys.exc_info())
        code = 1
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        if code is None:
            code = 0
        elif not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
        os._exit(code)


def _preload() -> None:
    """Every module of ``server`` (the CLI's commands import theirs when they run): what each
    child would import is imported once. None of them imports torch (tests/server/test_admin_work.py
    holds the CLI to that), and none reads the environment at import."""
    import importlib
    import pkgutil

    import server

    for module in pkgutil.walk_packages(server.__path__, "server."):
        if not module.name.endswith("__main__") and not module.name.startswith("server.migrations"):
            importlib.import_module(module.name)


def serve() -> None:
    """The forking process's loop (``python -c 'from tests.cli_forks import serve; serve()'``):
    one JSON request per line on stdin, one JSON answer (the exit code) per line on stdout."""
    _preload()
    requests, answers = sys.stdin, sys.stdout
    for line in requests:
        request = json.loads(line)
        out = request["out"]
        err = request["err"]
        answers.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(request, out, err)
        _, status = os.waitpid(pid, 0)
        answers.write(json.dumps({"code": os.waitstatus_to_exitcode(status)}) + "\n")
        answers.flush()


@dataclass
class _Forker:
    proc: subprocess.Popen[str]
    lock: threading.Lock


_FORKERS: dict[str, _Forker] = {}
_FORKERS_LOCK = threading.Lock()


def _forker(pythonpath: str) -> _Forker:
    with _FORKERS_LOCK:
        forker = _FORKERS.get(pythonpath)
        if forker is None or forker.proc.poll() is not None:
            env = {k: v for k, v in os.environ.items() if not k.startswith("PPO_GRADER_")}
            proc = subprocess.Popen([sys.executable, "-c", "from tests.cli_forks import serve; serve()"],
                                    env={**env, "PYTHONPATH": pythonpath}, cwd=ROOT, text=True,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            forker = _FORKERS[pythonpath] = _Forker(proc, threading.Lock())
        return forker


def run_cli(argv: list[str], env: dict[str, str], cwd: Path | None = None, timeout: float = 180,
            script: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m server.cli *argv`` (or the ``ppo-grader`` entry point ``script``) in ``env``
    (complete, as for ``subprocess.run``) and ``cwd``, as a forked process of its own; what
    ``subprocess.run(capture_output=True, text=True)`` would return."""
    forker = _forker(env.get("PYTHONPATH", ""))
    command = ["python", "-m", "server.cli", *argv] if script is None else [str(script), *argv]
    with tempfile.TemporaryDirectory() as tmp, forker.lock:
        out, err = Path(tmp) / "out", Path(tmp) / "err"
        out.touch()
        err.touch()
        request = {"argv": list(argv), "env": env, "cwd": str(cwd or Path.cwd()), "out": str(out), "err": str(err),
                   "script": None if script is None else str(script)}
        assert forker.proc.stdin is not None and forker.proc.stdout is not None
        forker.proc.stdin.write(json.dumps(request) + "\n")
        forker.proc.stdin.flush()
        answer: list[str] = []
        reader = threading.Thread(target=lambda: answer.append(forker.proc.stdout.readline()))  # type: ignore[union-attr]
        reader.start()
        reader.join(timeout)
        if not answer or not answer[0]:
            forker.proc.kill()
            raise subprocess.TimeoutExpired(command, timeout)
        code = json.loads(answer[0])["code"]
        return subprocess.CompletedProcess(command, code, out.read_text(), err.read_text())

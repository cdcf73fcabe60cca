"""A command run against a server (``ppo-grader --server URL ...``) reads wire types and calls
HTTP: it loads no table, no SQLAlchemy and no torch, which were about half of its start-up
(``server/vocabulary.py`` says why the closed lists live apart from the tables).

Each command runs in a fresh interpreter, against a port nothing listens on: the command gets
as far as its request (and fails there, exit 2), and what it imported on the way is counted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from server.cli.remote import REMOTE_COMMANDS

ROOT = Path(__file__).resolve().parents[2]
#: Arguments that take each remote command as far as its request.
ARGS = {
    "courses gradebook": ["c1"],
    "courses staff add": ["c1", "tara"],
    "courses staff remove": ["c1", "tara"],
    "extensions grant": ["c1", "ana", "gae", "--due", "2030-01-01T00:00"],
    "regrade apply": ["7", "--reason", "fixed"],
    "regrade cancel": ["7"],
    "regrade list": [],
    "regrade preview": ["--exercise", "gae", "--course", "c1"],
    "regrade show": ["7"],
    "regrade status": ["--exercise", "gae"],
    "scores excuse": ["c1", "ana", "gae", "--reason", "ill"],
    "scores override": ["c1", "ana", "gae", "90", "--reason", "typo"],
    "scores undo": ["c1", "ana", "gae", "override"],
    "scores list": ["c1"],
    "sets hold": ["c1", "gae"],
    "sets list": ["c1"],
    "sets publish": ["c1", "gae"],
    "sets release": ["c1", "gae"],
    "sets remove": ["c1", "gae"],
    "similarity": ["c1", "--exercise", "gae"],
}
_PROBE = """
import json, sys
from server.cli import app
try:
    app(sys.argv[1:])
except SystemExit as done:
    code = done.code
heavy = sorted(m for m in ("sqlalchemy", "server.models", "torch", "fastapi") if m in sys.modules)
print(json.dumps({"code": code, "heavy": heavy}))
"""


def test_every_remote_command_has_arguments_here() -> None:
    assert set(ARGS) == set(REMOTE_COMMANDS)


@pytest.mark.parametrize("command", REMOTE_COMMANDS)
def test_a_command_run_against_a_server_loads_no_table(command: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PPO_GRADER_")}
    env.update(
        {"PPO_GRADER_TOKEN": "ppo_not_a_real_token", "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "client")])}
    )
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, "--server", "http://127.0.0.1:9", *command.split(), *ARGS[command]],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=ROOT,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert "cannot reach the server" in done.stderr, done.stderr[-2000:]
    assert result == {"code": 2, "heavy": []}, (result, done.stderr[-2000:])

"""Snapshots of what a learner reads, from files graded by the real judge.

``snapshots/<name>.json`` is the submission as the API serves it (the client's pty tests
serve these files); ``snapshots/<name>.txt`` is ``ppo-submit``'s plain output at 80 columns,
``<name>.verbose.txt`` the same with ``--verbose``, and ``<name>.html`` the web fragment.
They were read by eye once; after an intended change, regenerate them with
``UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest -q tests/exercises/feedback/test_snapshots.py`` and
read the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ppo_submit.render import plain_text, submission_result
from server.submissions.report_page import feedback_html

from .conftest import SNAPSHOT_FILES

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("UPDATE_SNAPSHOTS") == "1"


def _match(path: Path, text: str) -> None:
    if UPDATE or not path.exists():
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), (
        f"{path.name} changed; if intended, regenerate with UPDATE_SNAPSHOTS=1 and read the diff")


@pytest.mark.slow
@pytest.mark.parametrize("name", SNAPSHOT_FILES)
def test_rendered_feedback_matches_its_snapshot(graded: dict[str, dict[str, Any]], name: str) -> None:
    sub = graded[name]
    SNAPSHOTS.mkdir(exist_ok=True)
    _match(SNAPSHOTS / f"{name}.json", json.dumps(sub, indent=1, sort_keys=True) + "\n")
    local = f"src/{name.removesuffix('_diagnosed')}.py"
    _match(SNAPSHOTS / f"{name}.txt", plain_text(submission_result(sub, local_path=local), 80))
    _match(SNAPSHOTS / f"{name}.verbose.txt", plain_text(submission_result(sub, verbose=True, local_path=local), 80))
    _match(SNAPSHOTS / f"{name}.html", feedback_html(sub) + "\n")

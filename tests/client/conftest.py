"""Fixtures for the client's tests: an isolated config dir, a fake grader, a CLI runner."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner, Result

from ppo_submit.cli import Runtime, app, route

from .fakes import SERVER, TOKEN, FakeGrader


@pytest.fixture(autouse=True)
def isolated_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point platformdirs at a temporary config home; drop the caller's grader env vars."""
    home = tmp_path / "config-home"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    monkeypatch.delenv("PPO_GRADER_URL", raising=False)
    monkeypatch.delenv("PPO_GRADER_TOKEN", raising=False)
    return home / "ppo-submit" / "config.json"


@pytest.fixture
def grader() -> FakeGrader:
    return FakeGrader()


LOGGED_IN = {"PPO_GRADER_URL": SERVER, "PPO_GRADER_TOKEN": TOKEN}

Invoke = Callable[..., Result]


@pytest.fixture
def invoke(grader: FakeGrader) -> Invoke:
    """Run the CLI as ``main()`` would (with the default-command routing) against ``grader``.

    ``env`` defaults to a logged-in environment; pass ``transport=None`` for a real network.
    """

    def run(*args: str, env: dict[str, str] | None = None, transport: Any = "fake", input: str | None = None) -> Result:
        runtime = Runtime(
            transport=httpx.MockTransport(grader.handle) if transport == "fake" else transport,
            sleep=lambda seconds: None,
        )
        return CliRunner().invoke(
            app, route(list(args)), env=LOGGED_IN if env is None else env, obj=runtime, prog_name="ppo-submit",
            input=input,
        )

    return run


@pytest.fixture
def solution(tmp_path: Path) -> Path:
    path = tmp_path / "solution.py"
    path.write_text("import math\n\ndef compute_actor_loss(a, b, c, clip_range=0.2):\n    return 0.0\n")
    return path

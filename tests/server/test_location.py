"""Where the server's admin commands find the database (server/location.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.location import remember


def test_remember_writes_the_url_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PPO_GRADER_CONFIG", str(tmp_path / "ppo-grader" / "server.json"))
    url = f"sqlite:///{tmp_path}/db.sqlite"
    assert remember(url) == tmp_path / "ppo-grader" / "server.json"
    assert remember(url) is None  # already there: nothing written


def test_an_unwritable_config_path_does_not_stop_the_service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    # the config's folder would have to be made inside a file: OSError, as on a read-only home
    monkeypatch.setenv("PPO_GRADER_CONFIG", str(blocker / "ppo-grader" / "server.json"))
    assert remember(f"sqlite:///{tmp_path}/db.sqlite") is None

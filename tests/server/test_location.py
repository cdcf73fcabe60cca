"""Where the server's commands find the database (server/location.py): per installation."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.location import data_dir, installation_root, locate, remember


@pytest.fixture(autouse=True)
def _installation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PPO_GRADER_DATABASE_URL", "PPO_GRADER_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PPO_GRADER_DATA_DIR", str(tmp_path / "data"))


def test_the_default_is_the_installations_data_folder_wherever_the_command_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert locate().url == f"sqlite:///{tmp_path / 'data' / 'ppo-grader.db'}"
    monkeypatch.delenv("PPO_GRADER_DATA_DIR")
    assert data_dir() == installation_root() / "data"  # a checkout: its own data/, not the current folder


def test_a_per_user_record_is_never_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 32: ~/.config/ppo-grader/server.json, rewritten by any server on the machine,
    attached a fresh clone to another installation's database."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (tmp_path / "config" / "ppo-grader").mkdir(parents=True)
    (tmp_path / "config" / "ppo-grader" / "server.json").write_text('{"database_url": "sqlite:////other/x.db"}')
    assert "other" not in locate().url


def test_remember_writes_the_url_once_and_the_environment_is_never_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path}/db.sqlite"
    assert remember(url) == tmp_path / "data" / "server.json"
    assert remember(url) is None  # already there: nothing written
    assert locate().url == url and locate().recorded
    monkeypatch.setenv("PPO_GRADER_DATABASE_URL", f"sqlite:///{tmp_path}/test.sqlite")
    assert locate().url == f"sqlite:///{tmp_path}/test.sqlite" and not locate().recorded
    monkeypatch.delenv("PPO_GRADER_DATABASE_URL")
    assert locate().url == url  # the one-off changed nothing


def test_an_unwritable_record_does_not_stop_the_service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    # the record's folder would have to be made inside a file: OSError, as on a read-only volume
    monkeypatch.setenv("PPO_GRADER_CONFIG", str(blocker / "ppo-grader" / "server.json"))
    assert remember(f"sqlite:///{tmp_path}/db.sqlite") is None

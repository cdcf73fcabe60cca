"""Stored credentials: file mode, round trip, precedence."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from ppo_submit import config
from ppo_submit.api import NotLoggedIn, UsageError


def test_config_lives_in_the_user_config_dir(isolated_config: Path) -> None:
    assert config.config_path() == isolated_config


def test_saved_file_is_private_and_round_trips(isolated_config: Path) -> None:
    path = config.save(config.Credentials(server="http://a", token="secret"))
    assert path == isolated_config
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert config.load() == config.Credentials(server="http://a", token="secret")


def test_saving_over_a_world_readable_file_tightens_it(isolated_config: Path) -> None:
    isolated_config.parent.mkdir(parents=True)
    isolated_config.write_text("{}")
    isolated_config.chmod(0o644)
    config.save(config.Credentials(server="http://a", token="t"))
    assert stat.S_IMODE(isolated_config.stat().st_mode) == 0o600


def test_missing_file_is_empty() -> None:
    assert config.load() == config.Credentials()


def test_corrupt_file_is_a_usage_error(isolated_config: Path) -> None:
    isolated_config.parent.mkdir(parents=True)
    isolated_config.write_text("{not json")
    with pytest.raises(UsageError, match="not valid JSON"):
        config.load()


def test_given_values_override_stored_ones_field_by_field() -> None:
    stored = config.Credentials(server="http://stored", token="stored-token")
    assert config.resolve("http://env", None, stored) == config.Credentials("http://env", "stored-token")
    assert config.resolve(None, "env-token", stored) == config.Credentials("http://stored", "env-token")


def test_nothing_configured_says_how_to_log_in() -> None:
    with pytest.raises(NotLoggedIn, match="ppo-submit login"):
        config.resolve(None, None, config.Credentials())

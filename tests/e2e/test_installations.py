"""Issue 32: one database per installation. Two checkouts on one machine, each started with its
own ``scripts/serve`` (and administered with its own ``.venv/bin/ppo-grader``, as the README
says), use their own database and print their own instructor token; a server started with
PPO_GRADER_DATABASE_URL changes nothing the others use; a per-user record left by another server
is never adopted. The checkouts' venvs are made without the network (``install_venv``), so
``scripts/bootstrap`` finds them installed and installs nothing."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.e2e.installations import STAMP, clean_env, cli, copy_checkout, install_venv, serve

pytestmark = pytest.mark.slow


def _me(url: str, token: str) -> str:
    return httpx.get(f"{url}/api/v1/me", headers={"Authorization": f"Bearer {token}"}, timeout=10).json()["name"]


def test_two_checkouts_each_serve_their_own_database(tmp_path: Path) -> None:
    home = tmp_path / "home"
    # What the old per-user file held after some other server ran on this machine.
    (home / ".config" / "ppo-grader").mkdir(parents=True)
    stranger = tmp_path / "stranger.db"
    (home / ".config" / "ppo-grader" / "server.json").write_text(json.dumps({"database_url": f"sqlite:///{stranger}"}))
    a, b = copy_checkout(tmp_path / "a"), copy_checkout(tmp_path / "b")
    stamps = {}
    for checkout in (a, b):
        install_venv(checkout)
        stamps[checkout] = (checkout / STAMP).stat().st_mtime_ns
    shell = tmp_path / "shell"  # commands run from a folder that is neither checkout
    shell.mkdir()

    with serve(a, clean_env(home), shell, script=True) as first:
        assert first.token, first.stderr
        assert _me(first.url, first.token) == "instructor"
        banner = first.stderr.splitlines()[0]
        assert banner == f"database: sqlite:///{a / 'data' / 'ppo-grader.db'} (from this installation's data folder {a / 'data'})"
    with serve(b, clean_env(home), shell, script=True) as second:
        assert second.token and second.token != first.token  # its own database, its own first start
        assert f"sqlite:///{b / 'data' / 'ppo-grader.db'}" in second.stderr.splitlines()[0]
    assert not stranger.exists()

    # A test server from checkout a, on a database of its own given for this process only.
    test_db = tmp_path / "test.db"
    with serve(a, clean_env(home, PPO_GRADER_DATABASE_URL=f"sqlite:///{test_db}"), shell, script=True) as test:
        assert test.token and f"sqlite:///{test_db} (from PPO_GRADER_DATABASE_URL)" in test.stderr.splitlines()[0]
        added = cli(a, clean_env(home, PPO_GRADER_DATABASE_URL=f"sqlite:///{test_db}"), "users", "add", "t1", cwd=shell)
        assert added.returncode == 0, added.stderr

    # Neither checkout saw any of that: a restart prints no new token, admin commands find the same users.
    for checkout, token in ((a, first.token), (b, second.token)):
        with serve(checkout, clean_env(home), shell, script=True) as again:
            assert again.token is None
            assert _me(again.url, token) == "instructor"
        listed = cli(checkout, clean_env(home), "users", "list", cwd=shell)
        assert listed.returncode == 0, listed.stderr
        assert "instructor" in listed.stdout and "t1" not in listed.stdout
        assert f"database: sqlite:///{checkout / 'data' / 'ppo-grader.db'}" in listed.stderr
    assert not (shell / "data").exists() and not (a / "data" / "server.json").exists()
    # scripts/serve ran bootstrap each time, which found its venv installed and changed nothing.
    assert all((c / STAMP).stat().st_mtime_ns == stamps[c] for c in (a, b))
    assert not (a / ".venv" / "bootstrap.log").exists() and not (b / ".venv" / "bootstrap.log").exists()

"""Registering platforms (the admins' API and ``ppo-grader lti``), the tool's key set (made,
encrypted at rest, rotated, old keys published a while), and the migration, on SQLite and on
PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet
from sqlalchemy import select

from server.config import Settings
from server.lti import keys
from server.lti.errors import ToolKeyUnreadable
from server.models import LtiToolKey, Role, utcnow
from tests.pg import pg_database, pg_url  # noqa: F401  (fixtures)
from tests.server.conftest import (  # noqa: F401  (fixtures)
    Api,
    api,
    db_backend,
    grader,
    pytest_generate_tests,
    served_database,
    settings,
    start_api,
)

PLATFORM = {
    "name": "Canvas at Example U",
    "issuer": "https://canvas.instructure.com",
    "client_id": "10000000000042",
    "auth_login_url": "https://sso.canvaslms.com/api/lti/authorize_redirect",
    "auth_token_url": "https://sso.canvaslms.com/login/oauth2/token",
    "jwks_url": "https://sso.canvaslms.com/api/lti/security/jwks",
    "deployment_ids": ["1:abc"],
}


def test_admins_register_platforms_through_the_api(api: Api) -> None:  # noqa: F811
    admin, instructor = api.user("root", Role.ADMIN), api.user("teacher", Role.INSTRUCTOR)
    assert api.client.post("/api/v1/lti/platforms", json=PLATFORM, headers=instructor).status_code == 403
    made = api.client.post("/api/v1/lti/platforms", json=PLATFORM, headers=admin)
    assert made.status_code == 201, made.text
    assert made.json()["deployment_ids"] == ["1:abc"]
    again = api.client.post("/api/v1/lti/platforms", json=PLATFORM, headers=admin)
    assert (again.status_code, again.json()["error"]) == (409, "PlatformAlreadyExists")
    plain = api.client.post("/api/v1/lti/platforms", json={**PLATFORM, "client_id": "2", "jwks_url": "http://lms.example/jwks"}, headers=admin)
    assert plain.status_code == 422 and "https://" in plain.json()["detail"]
    added = api.client.post(f"/api/v1/lti/platforms/{made.json()['id']}/deployments", json={"deployment_id": "2:def"}, headers=admin)
    assert added.json()["deployment_ids"] == ["1:abc", "2:def"]
    assert api.client.post("/api/v1/lti/platforms/999/deployments", json={"deployment_id": "x"}, headers=admin).status_code == 404
    listed = api.client.get("/api/v1/lti/platforms", headers=admin).json()
    assert [p["issuer"] for p in listed] == [PLATFORM["issuer"]]


def test_the_key_set_is_made_once_encrypted_and_verifies_what_the_tool_signs(api: Api) -> None:  # noqa: F811
    published = api.client.get("/lti/jwks").json()
    assert api.client.get("/lti/jwks").json() == published
    [public] = published["keys"]
    assert (public["kty"], public["alg"], public["use"]) == ("RSA", "RS256", "sig") and "d" not in public
    secret = api.state.settings.secret_bytes
    with api.state.session_factory() as session:
        [row] = session.scalars(select(LtiToolKey)).all()
        assert row.kid == public["kid"] and '"d"' not in row.private_key and row.private_key.count(".") == 4  # a JWE
        token = keys.sign(session, secret, {"iss": "me", "aud": "you"})
        session.commit()
        with pytest.raises(ToolKeyUnreadable):
            keys.signing_key(session, b"another-secret-entirely-" * 2)
    claims = jwt.decode(token, KeySet.import_key_set(published)).claims
    assert claims["iss"] == "me" and claims["exp"] - claims["iat"] == keys.SIGNED_SECONDS


def test_signing_opens_the_private_key_once_per_process(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """Each client assertion is signed: the private key is imported (a full RSA check, ~40-100 ms
    of CPU) once, not per signature; a rotated key is opened anew, and another secret still fails."""
    from joserfc.jwk import RSAKey

    imported: list[int] = []
    real = RSAKey.import_key

    def counted(value: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(value, dict) and "d" in value:  # a private key (a public JWK is derived apart)
            imported.append(1)
        return real(value, *args, **kwargs)

    monkeypatch.setattr(keys, "_OPENED", {})
    monkeypatch.setattr(keys.RSAKey, "import_key", counted)
    secret = api.state.settings.secret_bytes
    with api.state.session_factory() as session:
        tokens = [keys.sign(session, secret, {"n": n}) for n in range(5)]
        session.commit()
        assert len(imported) == 1
        new, _ = keys.rotate(session, secret)
        session.commit()
        assert jwt.decode(keys.sign(session, secret, {}), KeySet.import_key_set(keys.published_keys(session, secret))).header["kid"] == new
        with pytest.raises(ToolKeyUnreadable):
            keys.signing_key(session, b"another-secret-entirely-" * 2)
    assert len(imported) == 2  # the new key opened once
    assert len(set(tokens)) == 5


def test_rotating_keeps_the_old_key_published_for_a_while(api: Api) -> None:  # noqa: F811
    old = api.client.get("/lti/jwks").json()["keys"][0]["kid"]
    secret = api.state.settings.secret_bytes
    with api.state.session_factory() as session:
        new, retired = keys.rotate(session, secret)
        session.commit()
        assert retired == [old]
        header = jwt.decode(keys.sign(session, secret, {}), KeySet.import_key_set(keys.published_keys(session, secret))).header
        assert header["kid"] == new
        later = keys.published_keys(session, secret, now=utcnow() + keys.RETIRED_KEYS_PUBLISHED_FOR + timedelta(minutes=1))
    assert [k["kid"] for k in api.client.get("/lti/jwks").json()["keys"]] == [new, old]
    assert [k["kid"] for k in later["keys"]] == [new]


def _cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:  # noqa: F811
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PPO_GRADER_")},
        "PPO_GRADER_DATABASE_URL": settings.DATABASE_URL,
    }
    return subprocess.run([str(Path(sys.executable).parent / "ppo-grader"), *args], env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.slow  # nine CLI processes
def test_the_cli_registers_lists_rotates_and_prints_the_configuration(tmp_path: Path) -> None:
    settings = Settings(DATABASE_URL=f"sqlite:///{tmp_path / 'grader.db'}")  # type: ignore[call-arg]
    served_database(settings)
    options = [f"--{k.replace('_', '-')}={v}" for k, v in PLATFORM.items() if k not in ("deployment_ids",)]
    added = _cli(settings, "lti", "add-platform", *options, "--deployment-id", "1:abc")
    assert added.returncode == 0, added.stderr
    assert "Registered 'Canvas at Example U'" in added.stderr
    again = _cli(settings, "lti", "add-platform", *options)
    assert again.returncode == 2 and again.stderr.count("\n") <= 2 and "registered already" in again.stderr
    plain = _cli(settings, "lti", "add-platform", *options[:-1], "--jwks-url=http://lms.example/jwks", "--client-id=3")
    assert plain.returncode == 2 and "must use https://" in plain.stderr
    assert "added" in _cli(settings, "lti", "add-deployment", "Canvas at Example U", "2:def").stderr
    listed = _cli(settings, "lti", "platforms")
    assert "1:abc, 2:def" in listed.stdout
    first = _cli(settings, "lti", "rotate-key")
    second = _cli(settings, "lti", "rotate-key")
    assert first.returncode == second.returncode == 0 and "retired none" in first.stderr
    assert first.stderr.split("New signing key ")[1].split(";")[0] in second.stderr  # the first key, now retired
    config = _cli(settings, "lti", "config", "--url", "https://grader.example.edu/")
    body = json.loads(config.stdout)
    assert body["oidc_initiation_url"] == "https://grader.example.edu/lti/login"
    assert body["public_jwk_url"] == "https://grader.example.edu/lti/jwks"
    assert {p["message_type"] for p in body["extensions"][0]["settings"]["placements"]} == {
        "LtiDeepLinkingRequest",
        "LtiResourceLinkRequest",
    }
    assert "Login (OIDC initiation) URL: https://grader.example.edu/lti/login" in config.stderr

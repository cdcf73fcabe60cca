"""The compose-v1 shim rewrites exactly what compose v2 rewrites, and nothing else (its
forwarding is exercised against the real engine by the compose check)."""

from __future__ import annotations

import json

from tests.compose.compose_v1_shim import translate_create_body


def test_systempaths_unconfined_becomes_empty_masks_like_compose_v2() -> None:
    body = {
        "Image": "ppo-grader:latest",
        "HostConfig": {"SecurityOpt": ["no-new-privileges:true", "seccomp={}", "systempaths=unconfined"],
                       "CapDrop": ["ALL"], "ReadonlyRootfs": True},
    }
    host = json.loads(translate_create_body(json.dumps(body).encode()))["HostConfig"]
    assert host["SecurityOpt"] == ["no-new-privileges:true", "seccomp={}"]
    assert host["MaskedPaths"] == [] and host["ReadonlyPaths"] == []
    assert host["CapDrop"] == ["ALL"] and host["ReadonlyRootfs"] is True


def test_other_containers_pass_byte_for_byte() -> None:
    for body in (b'{"Image": "postgres:15", "HostConfig": {"SecurityOpt": ["no-new-privileges:true"]}}',
                 b'{"Image": "postgres:15", "HostConfig": {}}', b'{"Image": "x"}'):
        assert translate_create_body(body) is body

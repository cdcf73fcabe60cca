"""Lets Debian's docker-compose 1.29 honour ``security_opt: systempaths=unconfined``.

Compose v2 and the docker CLI translate that option on the client side: they drop it from
``SecurityOpt`` and send ``MaskedPaths: []`` and ``ReadonlyPaths: []`` instead (compose's
``parseSecurityOpts`` in pkg/compose/create.go, after docker/cli's container opts). The
engine's API does not know the option itself, and compose v1, the only compose this
machine's packages offer, passes it through unchanged, so the engine refuses the worker
("invalid --security-opt 2"). This shim does what compose v2 does: a Docker API socket on
loopback (a Unix socket in a private folder) that forwards every byte to the real engine,
rewriting only that option in ``POST /containers/create`` bodies. Test tooling only;
``docker compose`` (v2) needs nothing of the kind.
"""

from __future__ import annotations

import json
import os
import re
import socket
import tempfile
import threading
from pathlib import Path

_CREATE = re.compile(rb"^POST /(v[0-9.]+/)?containers/create[ ?]")
UNCONFINED = "systempaths=unconfined"


def translate_create_body(body: bytes) -> bytes:
    """The container-create JSON with ``systempaths=unconfined`` turned into empty masks."""
    config = json.loads(body)
    host = config.get("HostConfig") or {}
    options = host.get("SecurityOpt") or []
    if UNCONFINED not in options:
        return body
    host["SecurityOpt"] = [o for o in options if o != UNCONFINED]
    host["MaskedPaths"] = []
    host["ReadonlyPaths"] = []
    return json.dumps(config).encode()


def _splice(reader, dst: socket.socket) -> None:  # type: ignore[no-untyped-def]
    try:
        while chunk := reader.read1(65536) if hasattr(reader, "read1") else reader.recv(65536):
            dst.sendall(chunk)
    except OSError:
        pass
    try:
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


class ComposeV1Shim:
    """A private Docker API socket in front of ``upstream``; use ``DOCKER_HOST=shim.url``."""

    def __init__(self, upstream: str = "/var/run/docker.sock") -> None:
        self.upstream = upstream
        self._dir = Path(tempfile.mkdtemp(prefix="ppo-compose-shim-"))
        os.chmod(self._dir, 0o700)
        self.path = self._dir / "docker.sock"
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.path))
        self._server.listen(64)
        self.rewrites = 0
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"unix://{self.path}"

    def close(self) -> None:
        self._server.close()
        self.path.unlink(missing_ok=True)
        self._dir.rmdir()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(self.upstream)
        except OSError:
            client.close()
            return
        threading.Thread(target=_splice, args=(upstream, client), daemon=True).start()
        reader = client.makefile("rb")
        try:
            self._requests(reader, upstream)
        finally:
            reader.close()

    def _requests(self, reader, upstream: socket.socket) -> None:  # type: ignore[no-untyped-def]
        """Forward requests one by one; anything but a plain sized body ends inspection."""
        while True:
            lines = []
            while True:
                line = reader.readline(65536)
                if not line:
                    upstream.shutdown(socket.SHUT_WR)
                    return
                lines.append(line)
                if line in (b"\r\n", b"\n"):
                    break
            head = b"".join(lines)
            fields = {}
            for line in lines[1:-1]:
                name, _, value = line.decode("latin-1").partition(":")
                fields[name.strip().lower()] = value.strip()
            if "chunked" in fields.get("transfer-encoding", "").lower() or "upgrade" in fields:
                upstream.sendall(head)
                _splice(reader, upstream)  # streamed body or hijacked stream: raw bytes from here on
                return
            body = reader.read(int(fields.get("content-length", "0") or 0))
            if _CREATE.match(lines[0]) and body:
                new = translate_create_body(body)
                if new != body:
                    self.rewrites += 1
                    kept = [l for l in lines[1:-1] if not l.lower().startswith(b"content-length:")]
                    head = b"".join([lines[0], *kept, f"Content-Length: {len(new)}\r\n".encode(), b"\r\n"])
                    body = new
            upstream.sendall(head + body)

"""The two sides of an LTI test, each a real HTTP server: the tool (ppo-grader, over https on
``localhost``) and the platform (``tests/lti/platform``, its own process on ``127.0.0.1``).

Two host names make the platform's form post to the tool cross-site, as an LMS's is, so the
tool's cookies are tested for what a browser really does with them; https (a certificate made
here for ``localhost``) because the tool's state cookie must be ``SameSite=None; Secure``.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from fastapi import FastAPI

ROOT = Path(__file__).resolve().parents[2]
CLIENT_ID = "ppo-grader-client-1"
DEPLOYMENT_ID = "deployment-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_certificate(
    folder: Path, *, ips: Sequence[str] = ("127.0.0.1",), common_name: str = "localhost", stem: str = "tool"
) -> tuple[Path, Path]:
    """A self-signed CA certificate for ``localhost`` and ``ips``: (cert file, key file), named
    ``<stem>-cert.pem`` and ``<stem>-key.pem`` in ``folder``."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    sans: list[x509.GeneralName] = [x509.DNSName("localhost")] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / f"{stem}-cert.pem", folder / f"{stem}-key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_file, key_file


@contextmanager
def tls_server(app: FastAPI, port: int, cert: Path, key: Path, timeout: float = 60) -> Iterator[str]:
    """Serve ``app`` (lifespan included) over https in a thread; yield ``https://localhost:<port>``."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    config = uvicorn.Config(app, log_level="warning", log_config=None, ssl_certfile=str(cert), ssl_keyfile=str(key))
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the tool did not start")
        time.sleep(0.02)
    try:
        yield f"https://localhost:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout)
        sock.close()


@dataclass
class Platform:
    """The running test platform: its URL and its test controls."""

    url: str
    proc: subprocess.Popen[bytes]

    def post(self, path: str, body: Any = None) -> Any:
        response = httpx.post(f"{self.url}{path}", json=body, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()

    def state(self) -> dict[str, Any]:
        response = httpx.get(f"{self.url}/test/state", timeout=30)
        assert response.status_code == 200, response.text
        return response.json()  # type: ignore[no-any-return]

    def people(self, users: dict[str, dict[str, Any]], contexts: dict[str, dict[str, str]] | None = None) -> None:
        self.post("/test/users", {"users": users, "contexts": contexts or {}})

    def launch_url(self, **params: str) -> str:
        return f"{self.url}/launch?" + httpx.QueryParams(params).__str__()

    def registration(self) -> dict[str, Any]:
        """What an administrator copies from this LMS into ``ppo-grader lti add-platform``."""
        return {
            "name": "Test LMS",
            "issuer": self.url,
            "client_id": CLIENT_ID,
            "auth_login_url": f"{self.url}/auth",
            "auth_token_url": f"{self.url}/token",
            "jwks_url": f"{self.url}/jwks",
            "deployment_ids": [DEPLOYMENT_ID],
        }


@contextmanager
def platform_process(tool_url: str, cert: Path, log: Path, timeout: float = 60) -> Iterator[Platform]:
    """Start the platform (``python -m tests.lti.platform``) as its own process."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "PLATFORM_PORT": str(port),
        "PLATFORM_URL": url,
        "TOOL_URL": tool_url,
        "CLIENT_ID": CLIENT_ID,
        "DEPLOYMENT_ID": DEPLOYMENT_ID,
        "REQUESTS_CA_BUNDLE": str(cert),  # the platform fetches the tool's JWKS over https
        "PYTHONPATH": str(ROOT),
    }
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "tests.lti.platform"], env=env, cwd=ROOT, stdout=out, stderr=out)
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{url}/test/state", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the platform did not start: {log.read_text()[-3000:]}")
        time.sleep(0.1)
    try:
        yield Platform(url, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@dataclass
class Launched:
    """What a launch without a browser gave: the tool's answer and the form that was posted."""

    response: httpx.Response
    form: dict[str, str]
    action: str
    #: The browser's cookies as they were when it posted the form (the state cookie among them).
    cookies: list[Any]


def _form(html: str) -> tuple[str, dict[str, str]]:
    action = re.search(r"action='([^']+)'", html) or re.search(r'action="([^"]+)"', html)
    assert action, html[:500]
    fields = dict(re.findall(r"name='([^']+)' value='([^']*)'", html)) or dict(
        re.findall(r'name="([^"]+)" value="([^"]*)"', html)
    )
    return unescape(action.group(1)), {k: unescape(v) for k, v in fields.items()}


def launch(client: httpx.Client, platform: Platform, **params: str) -> Launched:
    """A launch as a browser makes it, step by step: the platform's login start, the tool's
    login (its state cookie kept by ``client``), the platform's form, posted to the tool."""
    start = client.get(platform.launch_url(**params))
    assert start.status_code == 200, (start.status_code, start.text[:500])
    action, form = _form(start.text)
    cookies = list(client.cookies.jar)
    return Launched(client.post(action, data=form), form, action, cookies)


def lti_continue(client: httpx.Client, tool_url: str, launched: Launched) -> httpx.Response:
    """Follow an accepted launch's one-time link (what launch.js does in a browser)."""
    found = re.search(r'href="(/lti/continue/[^"]+)"', launched.response.text)
    assert found, launched.response.text[-800:]
    return client.get(tool_url + unescape(found.group(1)))

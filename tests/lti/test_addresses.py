"""Where the tool may send a request for an LMS (issue 35, SSRF): every resolved address is
sorted by ``server.lti.http.address_kind`` and the request goes to the checked address; a URL
the LMS names that the tool cannot call is an LMS failure; and where the browser may post a
deep-linking answer (the return URL's site)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
from fastapi import FastAPI, Request

from server.lti.errors import InvalidRegistration, LaunchRefused, LmsUnreachable
from server.lti.http import AddressKind, address_kind, call, checked_url, lms_url, pinned, resolve
from server.lti.launch import registrable_site, return_url_on_site
from server.models import LtiPlatform
from server.text_guard import is_storable_text
from tests.lti.servers import free_port, make_certificate, tls_server

PUBLIC_ONLY = frozenset({AddressKind.PUBLIC})


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("0.0.0.0", AddressKind.REFUSED),
        ("::", AddressKind.REFUSED),
        ("::ffff:127.0.0.1", AddressKind.REFUSED),  # IPv4-mapped: loopback in disguise
        ("::ffff:8.8.8.8", AddressKind.REFUSED),
        ("2002:7f00:1::1", AddressKind.REFUSED),  # 6to4 of 127.0.0.1
        ("169.254.169.254", AddressKind.REFUSED),  # the cloud metadata service
        ("fe80::1", AddressKind.REFUSED),
        ("224.0.0.1", AddressKind.REFUSED),
        ("240.0.0.1", AddressKind.REFUSED),
        ("127.0.0.1", AddressKind.LOOPBACK),
        ("127.255.0.9", AddressKind.LOOPBACK),
        ("::1", AddressKind.LOOPBACK),
        ("10.1.2.3", AddressKind.PRIVATE),
        ("192.168.0.1", AddressKind.PRIVATE),
        ("fd00::1", AddressKind.PRIVATE),
        ("100.64.0.1", AddressKind.PRIVATE),  # carrier-grade NAT: not global
        ("8.8.8.8", AddressKind.PUBLIC),
        ("2001:4860:4860::8888", AddressKind.PUBLIC),
    ],
)
def test_every_address_has_its_kind(address: str, kind: AddressKind) -> None:
    assert address_kind(ipaddress.ip_address(address)) is kind


@pytest.mark.parametrize("host", ["127.1", "0x7f.1", "2130706433", "localhost"])
def test_shortened_and_named_loopback_forms_are_resolved_then_refused(host: str) -> None:
    assert all(address_kind(a) is AddressKind.LOOPBACK for a in resolve(host, "the roster"))
    with pytest.raises(LmsUnreachable, match="refused"):
        pinned(f"https://{host}:8443/nrps", "the roster", PUBLIC_ONLY)


def test_a_request_goes_to_the_checked_address_with_its_host_name_kept() -> None:
    place = pinned("https://localhost:8443/a/b?page=2", "the roster", frozenset({AddressKind.LOOPBACK}))
    assert set(place.targets) <= {"https://127.0.0.1:8443/a/b?page=2", "https://[::1]:8443/a/b?page=2"}
    assert (place.host_header, place.server_name) == ("localhost:8443", "localhost")


def test_an_https_service_named_by_host_is_reached_at_its_address_and_its_certificate_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the pinned address, TLS still checks the certificate for the host *name*, and
    the service sees its own ``Host``; another name's certificate is refused."""
    cert, key = make_certificate(tmp_path, ips=(), stem="name")  # for the name localhost, not for 127.0.0.1
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    seen: list[str] = []
    app = FastAPI()

    @app.get("/nrps")
    def nrps(request: Request) -> dict[str, object]:
        seen.append(request.headers["host"])
        return {"members": []}

    port = free_port()
    loopback = frozenset({AddressKind.LOOPBACK})
    with tls_server(app, port, cert, key):
        answer = call("GET", f"https://localhost:{port}/nrps", "the roster", allowed=loopback)
        assert answer.body == {"members": []} and seen == [f"localhost:{port}"]
        with pytest.raises(LmsUnreachable, match="could not reach"):  # the address is not on the certificate
            call("GET", f"https://127.0.0.1:{port}/nrps", "the roster", allowed=loopback)
    assert seen == [f"localhost:{port}"]


def test_an_always_refused_address_is_refused_whatever_is_allowed() -> None:
    everything = frozenset(AddressKind)
    for host in ("0.0.0.0", "[::ffff:127.0.0.1]", "169.254.169.254"):
        with pytest.raises(LmsUnreachable, match="refused"):
            pinned(f"https://{host}/x", "the roster", everything)


# --- the URLs an LMS names: an LMS failure, never an error of the caller's request ----------------


@pytest.mark.parametrize(
    "url",
    ["ftp://127.0.0.1/roster", "http://lms.example.edu/nrps", "https://lms.example.edu/col\ud800", "https://[::1/x", "", 42],
)
def test_a_url_the_lms_names_that_the_tool_cannot_call_is_an_lms_failure(url: object) -> None:
    with pytest.raises(LmsUnreachable) as refused:
        lms_url(url, "the roster")
    assert refused.value.detail.isascii() and is_storable_text(refused.value.detail)  # stored as the sync error
    with pytest.raises(InvalidRegistration):  # the same URL entered by an administrator: their mistake
        checked_url(url, "token URL")


def test_the_same_rule_accepts_https_and_loopback_http() -> None:
    for url in ("https://lms.example.edu/nrps?x=1", "http://127.0.0.1:8000/nrps", "http://localhost/x"):
        assert lms_url(url, "the roster") == checked_url(url, "token URL") == url


# --- the deep-linking return URL: the LMS's site, by the Public Suffix List -----------------------


def _platform(host: str) -> LtiPlatform:
    base = f"https://{host}"
    return LtiPlatform(
        name="LMS", issuer=base, client_id="c", auth_login_url=f"{base}/auth", auth_token_url=f"{base}/token",
        jwks_url=f"{base}/jwks",
    )


@pytest.mark.parametrize(
    ("registered", "return_to", "allowed"),
    [
        ("lms.school.co.uk", "https://lms.school.co.uk/dl", True),
        ("lms.school.co.uk", "https://dl.school.co.uk/dl", True),  # the school's own other host
        ("lms.school.co.uk", "https://evil.co.uk/steal", False),  # another site under the same public suffix
        ("lms.school.co.uk", "https://school.evil.co.uk/steal", False),
        ("lms.school.co.uk", "https://co.uk/steal", False),
        ("school.co.uk", "https://attacker.co.uk/steal", False),
        ("canvas.school.edu", "https://lms.school.edu/dl", True),  # a .edu site: still one site
        ("canvas.school.edu", "https://other.edu/dl", False),
        ("canvas.instructure.com", "https://myschool.instructure.com/courses/1/deep_linking_response", True),
        ("lms.school.github.io", "https://evil.github.io/x", False),  # a private suffix (PSL's private section)
        ("127.0.0.1", "https://127.0.0.2/x", False),  # an address is its own site
    ],
)
def test_the_return_url_must_be_on_the_registered_lms_site(registered: str, return_to: str, allowed: bool) -> None:
    platform = _platform(registered)
    if allowed:
        assert return_url_on_site(return_to, platform) == return_to
    else:
        with pytest.raises(LaunchRefused, match="not on LMS's site"):
            return_url_on_site(return_to, platform)


def test_the_site_is_the_registrable_domain() -> None:
    assert registrable_site("lms.school.co.uk") == "school.co.uk"
    assert registrable_site("canvas.instructure.com") == registrable_site("x.instructure.com") == "instructure.com"
    assert registrable_site("co.uk") == "co.uk" and registrable_site("localhost") == "localhost"
    assert registrable_site("LMS.School.EDU.") == "school.edu"

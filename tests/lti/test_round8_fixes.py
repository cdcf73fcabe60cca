"""What the round 8 fixes keep working besides refusing the attacks (``test_attack_round8``):
an LMS that compresses its answer anyway (one gzip layer) is still read, every cap and coding
rule of :class:`server.lti.http._Inflater` names the LMS's fault, and a stored comparison with
a score no float holds reads as unusable, never a crash. Over real HTTP (a loopback server
answering as each test sets it)."""

from __future__ import annotations

import gzip
import json
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from server.lti.errors import LmsUnreachable
from server.lti.grades import finite_number
from server.lti.http import MAX_RESPONSE_BYTES, call
from server.lti.tasks import reading_of
from server.models import LtiTask


class _Lms(ThreadingHTTPServer):
    """Answers every GET with ``body`` and ``headers``; keeps the request headers it saw."""

    body: bytes
    headers: dict[str, str]
    seen: list[dict[str, str]]


class _Handler(BaseHTTPRequestHandler):
    server: _Lms

    def do_GET(self) -> None:
        self.server.seen.append({k.lower(): v for k, v in self.headers.items()})
        self.send_response(200)
        for name, value in {"Content-Type": "application/json", **self.server.headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(self.server.body)))
        self.end_headers()
        self.wfile.write(self.server.body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def lms() -> Iterator[_Lms]:
    server = _Lms(("127.0.0.1", 0), _Handler)
    server.body, server.headers, server.seen = b"", {}, []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _get(lms: _Lms) -> object:
    return call("GET", f"http://127.0.0.1:{lms.server_address[1]}/jwks", "the key set of Test").body


def test_an_lms_that_gzips_anyway_is_read_and_was_asked_for_no_compression(lms: _Lms) -> None:
    lms.body, lms.headers = (
        gzip.compress(json.dumps({"keys": [], "pad": "x" * 10_000}).encode()),
        {"Content-Encoding": "gzip"},
    )
    assert _get(lms) == {"keys": [], "pad": "x" * 10_000}
    assert lms.seen[-1]["accept-encoding"] == "identity"
    lms.body, lms.headers = zlib.compress(b'{"keys": [1]}'), {"Content-Encoding": "deflate"}
    assert _get(lms) == {"keys": [1]}


@pytest.mark.parametrize(
    ("body", "encoding", "said"),
    [
        (b'{"keys": []}', "br", "content encoding the tool does not read"),
        (
            gzip.compress(gzip.compress(gzip.compress(b"{}"))),
            "gzip, gzip, gzip",
            "content encoding the tool does not read",
        ),
        (gzip.compress(b'{"keys": []}')[:-6], "gzip", "could not be decompressed"),  # cut short
        (gzip.compress(b'{"keys": []}') + b"more", "gzip", "could not be decompressed"),  # data after its end
        (b'{"keys": []}', "gzip", "could not be decompressed"),  # not gzip at all
        (gzip.compress(b" " * (MAX_RESPONSE_BYTES + 1)), "gzip", "MiB (decompressed)"),
    ],
    # named, not by the bodies: a gzip header holds its time, and parallel workers must collect
    # the same test ids (pytest-xdist refuses to run otherwise)
    ids=["brotli", "three-gzip-layers", "cut-short", "data-after-end", "not-gzip", "over-the-cap"],
)
def test_a_compressed_answer_the_tool_cannot_read_whole_is_the_lms_failing(
    lms: _Lms, body: bytes, encoding: str, said: str
) -> None:
    lms.body, lms.headers = body, {"Content-Encoding": encoding}
    with pytest.raises(LmsUnreachable) as refused:
        _get(lms)
    assert said in refused.value.detail and "127.0.0.1" in refused.value.detail


def test_a_number_no_float_holds_is_no_score() -> None:
    assert [finite_number(v) for v in (10**400, float("nan"), float("inf"), True, "5", None)] == [None] * 6
    assert (finite_number(5), finite_number(2.5)) == (5.0, 2.5)


def test_a_stored_comparison_with_a_score_no_float_holds_reads_it_as_unusable() -> None:
    stored = (
        '{"read_at": null, "error": null, "results": [["a", "e", 1'
        + "0" * 400
        + '], ["b", "e", 50.0], ["c", "e", NaN]]}'
    )
    reading = reading_of(LtiTask(lms_results=stored))
    assert reading is not None and reading.results == {("a", "e"): None, ("b", "e"): 50.0, ("c", "e"): None}

"""sandbox.protocol: frames over real pipes (round trips, caps checked before reading, garbled
frames refused), the deadline reader, and the request's JSON round trip."""

from __future__ import annotations

import json
import os
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from sandbox.protocol import (
    MAX_JSON_BYTES,
    Arg,
    Backward,
    Call,
    CallResult,
    JobRequest,
    JobResult,
    JobStatus,
    ReadExactly,
    SandboxLimits,
    encode_frame,
    read_frame_fd,
    write_frame_fd,
)


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    r, w = os.pipe()
    yield r, w
    for fd in (r, w):
        try:
            os.close(fd)
        except OSError:
            pass


def _writer(fd: int, data: bytes) -> threading.Thread:
    """Write ``data`` to ``fd`` from a thread (a frame larger than the pipe's buffer)."""
    def run() -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_encode_frame_is_two_big_endian_lengths_then_json_then_blob() -> None:
    frame = encode_frame({"op": "go"}, b"BLOB")
    data = json.dumps({"op": "go"}).encode()
    assert frame[:8] == struct.pack(">II", len(data), 4)
    assert frame[8:8 + len(data)] == data and frame[8 + len(data):] == b"BLOB"
    assert encode_frame({}) == struct.pack(">II", 2, 0) + b"{}"


@pytest.mark.parametrize("header, blob", [
    ({"event": "ready", "pid": 7}, b""),
    ({"event": "exited", "files": {"result.json": 3}, "text": "é€😀\u0000"}, b"abc"),
    ({"nested": [[1, 2], {"a": None}]}, bytes(range(256)) * 1000),
])
def test_a_frame_written_to_a_pipe_reads_back_the_same(pipe: tuple[int, int], header: dict, blob: bytes) -> None:
    r, w = pipe
    writer = _writer(w, encode_frame(header, blob))
    got = read_frame_fd(r, ReadExactly(), max_blob=len(blob))
    writer.join()
    assert got == (header, blob)


def test_write_frame_fd_writes_a_frame_larger_than_the_pipe_buffer_whole(pipe: tuple[int, int]) -> None:
    r, w = pipe
    blob = os.urandom(3 << 20)  # far over a pipe's 64 KiB buffer: os.write returns short writes
    thread = threading.Thread(target=write_frame_fd, args=(w, {"event": "exited"}, blob))
    thread.start()
    header, got = read_frame_fd(r, ReadExactly(), max_blob=len(blob))
    thread.join()
    assert header == {"event": "exited"} and got == blob


def test_two_frames_in_a_row_are_read_one_at_a_time(pipe: tuple[int, int]) -> None:
    r, w = pipe
    os.write(w, encode_frame({"n": 1}, b"x") + encode_frame({"n": 2}))
    assert read_frame_fd(r, ReadExactly(), max_blob=1) == ({"n": 1}, b"x")
    assert read_frame_fd(r, ReadExactly(), max_blob=0) == ({"n": 2}, b"")


@pytest.mark.parametrize("json_len, blob_len, max_blob, max_json, match", [
    (MAX_JSON_BYTES + 1, 0, 0, MAX_JSON_BYTES, "frame header of"),
    (100, 0, 0, 99, "frame header of 100 bytes"),
    (2, 1, 0, MAX_JSON_BYTES, "frame blob of 1 bytes is over the limit of 0"),
    (2, 0xFFFFFFFF, 1 << 20, MAX_JSON_BYTES, "over the limit"),
])
def test_oversized_lengths_are_refused_before_a_byte_of_the_body_is_read(
    pipe: tuple[int, int], json_len: int, blob_len: int, max_blob: int, max_json: int, match: str
) -> None:
    r, w = pipe
    os.write(w, struct.pack(">II", json_len, blob_len) + b"{}" + b"NEXT")
    with pytest.raises(ValueError, match=match):
        read_frame_fd(r, ReadExactly(), max_blob=max_blob, max_json=max_json)
    # nothing past the 8-byte header was consumed
    assert os.read(r, 100) == b"{}NEXT"


@pytest.mark.parametrize("body", [b"[1, 2]", b'"text"', b"null", b"7"])
def test_a_json_part_that_is_not_an_object_is_refused(pipe: tuple[int, int], body: bytes) -> None:
    r, w = pipe
    os.write(w, struct.pack(">II", len(body), 0) + body)
    with pytest.raises(ValueError, match="not a JSON object"):
        read_frame_fd(r, ReadExactly(), max_blob=0)


@pytest.mark.parametrize("body", [b"{not json}", b"\xff\xfe{}", b'{"a": 1', b"{}}"])
def test_garbled_json_is_refused(pipe: tuple[int, int], body: bytes) -> None:
    r, w = pipe
    os.write(w, struct.pack(">II", len(body), 0) + body)
    with pytest.raises(ValueError):
        read_frame_fd(r, ReadExactly(), max_blob=0)


@pytest.mark.parametrize("cut", [0, 3, 8, 10, 17])
def test_a_frame_cut_short_by_a_closed_stream_is_eof(pipe: tuple[int, int], cut: int) -> None:
    r, w = pipe
    frame = encode_frame({"a": 1}, b"blob")  # 8 + 8 + 4 bytes
    os.write(w, frame[:cut])
    os.close(w)
    with pytest.raises(EOFError):
        read_frame_fd(r, ReadExactly(), max_blob=4)


def test_a_deadline_that_has_passed_times_out_on_a_silent_pipe(pipe: tuple[int, int]) -> None:
    r, _ = pipe
    reader = ReadExactly(time.monotonic())
    with pytest.raises(TimeoutError):
        reader(r, 1)
    assert not reader.started


def test_then_extends_the_deadline_only_once_a_frame_has_begun(pipe: tuple[int, int]) -> None:
    r, w = pipe
    os.write(w, b"ab")
    reader = ReadExactly(time.monotonic() + 60, then=1000.0)
    before = reader.deadline
    assert reader(r, 1) == b"a" and reader.started
    assert reader.deadline is not None and before is not None and reader.deadline > before
    extended = reader.deadline
    assert reader(r, 1) == b"b" and reader.deadline == extended  # extended once, not per read


def test_reading_without_a_deadline_waits_for_every_byte(pipe: tuple[int, int]) -> None:
    r, w = pipe
    writer = _writer(w, b"x" * 10)
    assert ReadExactly()(r, 10) == b"x" * 10
    writer.join()


def _full_request() -> JobRequest:
    return JobRequest(
        source="def f(x, *, k=1):\n    return x\n",
        function="f",
        calls=[
            Call(
                id="c1",
                args=[Arg.of_tensor("x", requires_grad=True), Arg.of_value([1, "two", None])],
                kwargs={"k": Arg.of_value(3.5), "g": Arg(generate={"shape": [2, 3], "dtype": "float64", "seed": 4})},
                backward=Backward(output=[0, "loss"], weights="w"),
                return_inputs=True,
                device="cuda",
                keep_outputs=False,
                digest_seed=99,
                probes=[Backward(output=[1], seeded_weights=5), Backward()],
            ),
            Call(id="c2"),
        ],
        warmup_calls=[Call(id="w", args=[Arg.of_tensor("x")])],
        filename="learner.py",
    )


def test_a_request_survives_json_text_both_ways() -> None:
    request = _full_request()
    wire = json.loads(json.dumps(request.to_json()))
    assert JobRequest.from_json(wire) == request


def test_a_minimal_request_gets_the_defaults() -> None:
    request = JobRequest.from_json({"source": "x = 1", "function": "f", "calls": [{"id": 5}]})
    assert request.filename == "submission.py" and request.warmup_calls == []
    (call,) = request.calls
    assert call.id == "5" and call.args == [] and call.kwargs == {} and call.backward is None
    assert call.device == "cpu" and call.keep_outputs and not call.return_inputs and call.digest_seed is None


@pytest.mark.parametrize("data, error", [
    ({"function": "f", "calls": []}, KeyError),
    ({"source": "", "function": "f"}, KeyError),
    ({"source": "", "function": "f", "calls": [{}]}, KeyError),
    ({"source": "", "function": "f", "calls": [{"id": "a", "args": [{"evil": 1}]}]}, TypeError),
    ({"source": "", "function": "f", "calls": [{"id": "a", "backward": {"output": [], "run": "x"}}]}, TypeError),
    ({"source": "", "function": "f", "calls": [{"id": "a", "digest_seed": "nine"}]}, ValueError),
])
def test_a_request_off_its_schema_is_an_exception_not_a_guess(data: dict, error: type) -> None:
    with pytest.raises(error):
        JobRequest.from_json(data)


def test_job_result_call_finds_a_call_by_id_or_none() -> None:
    res = JobResult(status=JobStatus.OK, calls=[CallResult(id="a"), CallResult(id="b", seconds=1.0)])
    assert res.call("b") is res.calls[1] and res.call("c") is None


def test_statuses_and_limits_are_what_both_sides_read() -> None:
    assert {s.value for s in JobStatus} == {
        "ok", "syntax_error", "missing_function", "runtime_error", "time_limit", "memory_limit",
        "output_limit", "crashed", "internal_error",
    }
    limits = SandboxLimits()
    assert limits.captured_output_bytes < limits.output_bytes < limits.tmp_bytes < limits.memory_bytes
    assert limits.cpu_seconds <= limits.wall_seconds
    with pytest.raises(AttributeError):
        limits.cpu_seconds = 1  # type: ignore[misc]  # frozen: shared between threads

"""Unit tests of the trusted side's handling of what comes out of the jail (no jail started)."""

from __future__ import annotations

import json
import signal

import pytest

from sandbox import harness, host, jailfs
from sandbox.protocol import JobStatus, SandboxLimits
from sandbox.verdicts import interpret as interpret_report

LIMITS = SandboxLimits(output_bytes=1 << 20, captured_output_bytes=1024)


def exited(result: object, code: int = 0, **extra: object) -> tuple[dict, bytes]:
    raw = result if isinstance(result, bytes) else json.dumps(result).encode()
    return {"exit_code": code, "signal": None, "files": {"result.json": len(raw)},
            "sizes": {"result.json": len(raw)}, **extra}, raw


def interpret(result: object, code: int = 0, **extra: object):
    head, blob = exited(result, code, **extra)
    return interpret_report(head, blob, LIMITS, killed_for_time=False, oom=False)


@pytest.mark.parametrize("result", [
    b"[" * 100_000 + b"]" * 100_000,
    {"status": "ok", "calls": "nope"},
    {"status": "ok", "calls": [{"id": "a", "output": {"type": "dict", "items": [1]}}]},
    {"status": "ok", "calls": [{"id": "a", "output": {"type": "tensor", "shape": "big"}}]},
    {"status": "ok", "calls": [{"id": "a", "output": {"type": "evil"}}]},
    {"status": "ok", "calls": [{"id": 1, "output": None}]},
    {"status": "ok", "calls": [{"id": "a", "grads": {"0": 7}}]},
    {"status": "ok", "calls": [{"id": "a", "error": {"type": "E", "classes": "ValueError", "message": "",
                                                      "traceback": ""}}]},
    {"status": "runtime_error", "error": {"type": 1}},
    {"status": "graded", "score": 100},
])
def test_malformed_results_are_the_childs_crash_never_an_exception(result: object) -> None:
    res = interpret(result)
    assert res.status == JobStatus.CRASHED and "malformed" in res.message and not res.calls


def test_a_well_formed_result_is_accepted() -> None:
    call = {"id": "a", "output": {"type": "tuple", "items": [{"type": "float", "value": "nan"},
                                                             {"type": "tensor", "shape": [2], "name": "x"}]},
            "grads": {"0": None}, "seconds": 0.1}
    res = interpret({"status": "ok", "calls": [call]})
    assert res.status == JobStatus.OK and res.calls[0].id == "a"


def test_a_full_tmp_is_reported_as_the_output_limit() -> None:
    head = {"exit_code": host.EXIT_HARNESS_FAILED, "signal": None, "files": {}, "sizes": {},
            "tmp_free_bytes": 0, "tmp_total_bytes": 64 << 20}
    res = interpret_report(head, b"", LIMITS, killed_for_time=False, oom=False)
    assert res.status == JobStatus.OUTPUT_LIMIT and "temporary folder (64 MiB)" in res.message


def test_killed_by_the_clock_while_at_the_memory_limit_is_the_memory_limit() -> None:
    head = {"exit_code": None, "signal": signal.SIGKILL, "files": {}, "sizes": {}}
    assert interpret_report(head, b"", LIMITS, killed_for_time=True, oom=True).status == JobStatus.MEMORY_LIMIT
    assert interpret_report(head, b"", LIMITS, killed_for_time=True, oom=False).status == JobStatus.TIME_LIMIT


def test_truncated_output_fits_the_capture_with_its_note(tmp_path) -> None:
    path = tmp_path / "stdout.txt"
    path.write_bytes(b"HEAD" + b"x" * 100_000 + b"TAIL")
    data, size = host._output_excerpt(str(path), LIMITS.captured_output_bytes)
    head = {"exit_code": 0, "signal": None, "files": {"stdout.txt": len(data)}, "sizes": {"stdout.txt": size}}
    res = interpret_report(head, data, LIMITS, killed_for_time=False, oom=False)
    assert res.stdout.startswith("HEAD") and "TAIL" in res.stdout and res.stdout.endswith("bytes cut]")
    assert len(res.stdout) <= LIMITS.captured_output_bytes


def test_pretend_tensors_are_described_as_objects() -> None:
    import torch

    class Liar:
        __class__ = property(lambda self: torch.Tensor)  # type: ignore[assignment]

    out = harness._Outputs()
    assert isinstance(Liar(), torch.Tensor)
    assert out.describe(Liar(), "p")["type"] == "object" and not out.tensors


def test_only_tmp_is_writable_in_the_jail() -> None:
    args = jailfs.bwrap_command(1 << 20)
    text = " ".join(args)
    assert "--remount-ro / --chdir /tmp --" in text
    assert "--dev /dev --remount-ro /dev" in text
    assert text.index("--tmpfs /tmp") < text.index("--remount-ro / ")

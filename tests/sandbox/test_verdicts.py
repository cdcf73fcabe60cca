"""sandbox.verdicts: how an ending is named (limits, signals, exit codes), the closed lists the
judge quotes from, and the caps on everything a result file can hold. tests/sandbox/test_boundary.py
covers the report schema and forged results; this file covers the rest of the public surface."""

from __future__ import annotations

import json
import signal

import pytest

from sandbox.exit_codes import ExitCode
from sandbox.harness import DIGEST_SAMPLES
from sandbox.protocol import MAX_DIGESTS, JobStatus, SandboxLimits
from sandbox.tensors import encode
from sandbox.verdicts import (
    DEVICE_TYPES,
    ENDED_EARLY,
    MALFORMED,
    MAX_TYPE_NAME,
    SIGNALLED,
    TENSOR_DTYPES,
    TENSOR_LAYOUTS,
    TOO_MANY_TENSORS,
    UNNAMED_TYPE,
    interpret,
    type_name,
    validate_exited,
)

LIMITS = SandboxLimits(cpu_seconds=2, wall_seconds=3, memory_bytes=256 << 20, output_bytes=4 << 20,
                       captured_output_bytes=1024)


def report(**fields: object) -> dict:
    base = {"event": "exited", "setup_ok": True, "exit_code": 0, "signal": None, "cpu_seconds": 0.1,
            "maxrss_bytes": 1 << 20, "host_rss_bytes": 0, "tmp_free_bytes": 32 << 20,
            "tmp_total_bytes": 64 << 20, "files": {}, "sizes": {}}
    return {**base, **fields}


def run(result: object | None = None, *, code: int | None = 0, sig: int | None = None, tensors: bytes = b"",
        killed: bool = False, oom: bool | None = False, call_ids: list[str] | None = None,
        inputs_given: bool | None = None, **fields: object):
    """interpret() of a report whose result.json (and outputs) are given, validated first."""
    files: dict[str, bytes] = {}
    if result is not None:
        files["result.json"] = result if isinstance(result, bytes) else json.dumps(result).encode()
    if tensors:
        files["outputs.safetensors"] = tensors
    extra_files = fields.pop("files", {})
    files.update(extra_files)  # type: ignore[arg-type]
    sizes = {name: len(data) for name, data in files.items()}
    sizes.update(fields.pop("sizes", {}))  # type: ignore[arg-type]
    code, sig = (None if v is None else int(v) for v in (code, sig))  # as JSON carries them: never an IntEnum
    head = report(exit_code=code, signal=sig, files={n: len(d) for n, d in files.items()}, sizes=sizes, **fields)
    blob = b"".join(files.values())
    validate_exited(head, len(blob), LIMITS)
    return interpret(head, blob, LIMITS, killed, oom, call_ids=call_ids, inputs_given=inputs_given)


def ok(*calls: dict) -> dict:
    return {"status": "ok", "calls": list(calls)}


# --- how an ending is named ---------------------------------------------------------------------

@pytest.mark.parametrize("sig, cpu, oom, status", [
    (signal.SIGXCPU, 0.5, False, JobStatus.TIME_LIMIT),
    (signal.SIGKILL, 2.0, False, JobStatus.TIME_LIMIT),     # the hard CPU limit: SIGKILL at the cap
    (signal.SIGKILL, 1.9, False, JobStatus.CRASHED),        # under the cap, no OOM: a crash
    (signal.SIGKILL, 0.1, True, JobStatus.MEMORY_LIMIT),    # the cgroup saw the OOM kill
    (signal.SIGKILL, 0.1, None, JobStatus.CRASHED),         # no cgroup to ask
    (signal.SIGXFSZ, 0.1, False, JobStatus.OUTPUT_LIMIT),
    (signal.SIGSEGV, 0.1, True, JobStatus.CRASHED),         # an OOM seen, but not the signal of one
])
def test_signals_are_named_by_what_the_trusted_side_knows(sig: int, cpu: float, oom: bool | None,
                                                          status: JobStatus) -> None:
    res = run(code=None, sig=int(sig), oom=oom, cpu_seconds=cpu)
    assert res.status == status
    assert (res.message == SIGNALLED) == (status == JobStatus.CRASHED)


def test_messages_quote_the_limits_not_the_childs_numbers() -> None:
    assert "2 s CPU-time limit" in run(code=None, sig=signal.SIGXCPU).message
    assert "3 s wall-clock limit" in run(code=None, sig=signal.SIGKILL, killed=True).message
    assert "256 MiB memory limit" in run(code=ExitCode.OUT_OF_MEMORY).message
    assert "4 MiB output limit" in run(code=None, sig=signal.SIGXFSZ).message


def test_exit_code_out_of_memory_is_the_memory_limit_whatever_the_result_says() -> None:
    res = run(ok(), code=ExitCode.OUT_OF_MEMORY)
    assert res.status == JobStatus.MEMORY_LIMIT and not res.calls


def test_a_file_at_the_output_cap_is_the_output_limit() -> None:
    res = run(ok(), files={"stderr.txt": b"x"}, sizes={"stderr.txt": LIMITS.output_bytes})
    assert res.status == JobStatus.OUTPUT_LIMIT


@pytest.mark.parametrize("code, expect", [
    (ExitCode.OK, ENDED_EARLY), (ExitCode.ABORTED, ENDED_EARLY), (3, ENDED_EARLY),
    (ExitCode.HARNESS_FAILED, "harness could not finish"),
])
def test_no_result_file_is_the_learners_crash(code: int, expect: str) -> None:
    res = run(None, code=code)
    assert res.status == JobStatus.CRASHED and expect in res.message


def test_ok_results_with_a_non_zero_exit_are_refused() -> None:
    assert run(ok(), code=ExitCode.IMPORT).message == MALFORMED


def test_captured_output_is_kept_with_a_note_of_how_much_was_cut() -> None:
    head_and_tail = b"H" * 500 + b"\n...\n" + b"T" * 500
    res = run(ok(), files={"stdout.txt": head_and_tail, "stderr.txt": b"err"},
              sizes={"stdout.txt": 5000, "stderr.txt": 3})
    assert res.status == JobStatus.OK and res.stderr == "err"
    assert res.stdout.startswith("H" * 500) and res.stdout.endswith(f" [... {5000 - 1024} bytes cut]")


def test_undecodable_output_is_replaced_not_raised() -> None:
    res = run(ok(), files={"stdout.txt": b"\xff\xfeok"})
    assert res.status == JobStatus.OK and res.stdout == "\ufffd\ufffdok"


# --- import errors, missing functions ---------------------------------------------------------

def _import_error(**error: object) -> dict:
    base = {"type": "ValueError", "classes": ["ValueError", "Exception"], "message": "m", "traceback": "tb",
            "phase": "import"}
    return {"status": "runtime_error", "error": {**base, **error}}


def test_an_import_error_is_kept_field_by_field() -> None:
    res = run(_import_error(), code=ExitCode.IMPORT)
    assert res.status == JobStatus.RUNTIME_ERROR and res.import_error is not None
    assert (res.import_error.type, res.import_error.classes, res.import_error.phase) == \
        ("ValueError", ["ValueError", "Exception"], "import")
    assert res.message.startswith("Your module raised ValueError while being imported: m\ntb")


def test_a_permission_error_at_import_gets_the_sandbox_hint() -> None:
    res = run(_import_error(type="PermissionError", classes=["PermissionError", "OSError"]), code=ExitCode.IMPORT)
    assert "does not let code start processes" in res.message
    assert "does not let" not in run(_import_error(), code=ExitCode.IMPORT).message


def test_an_error_lists_at_most_sixteen_classes_each_named_plainly() -> None:
    classes = [f"C{i}" for i in range(40)] + ["bad name!"]
    res = run(_import_error(classes=classes[:15] + ["bad name!"] + classes[15:]), code=ExitCode.IMPORT)
    assert res.import_error is not None and len(res.import_error.classes) == 16
    assert res.import_error.classes[15] == UNNAMED_TYPE


@pytest.mark.parametrize("error", [
    {"phase": "later"}, {"type": 3}, {"message": None}, {"traceback": ["x"]}, {"classes": "ValueError"},
    {"classes": [1]},
])
def test_an_error_field_of_the_wrong_kind_is_malformed(error: dict) -> None:
    assert run(_import_error(**error), code=ExitCode.IMPORT).message == MALFORMED


def test_missing_function_lists_twenty_plain_names_at_most() -> None:
    defined = [f"f{i}" for i in range(30)]
    defined[1] = "not an identifier"
    res = run({"status": "missing_function", "defined": defined + [7]}, code=ExitCode.MISSING)
    assert res.status == JobStatus.MISSING_FUNCTION
    names = res.message.removeprefix("functions defined: ").split(", ")
    assert len(names) == 19 and "f0" in names and "f19" in names and "f20" not in names
    assert run({"status": "missing_function"}, code=ExitCode.MISSING).message == "functions defined: none"


#: Each outcome of the import phase, as the harness writes it, with its exit code.
IMPORT_PHASE = [
    ({"status": "syntax_error", "message": "invalid syntax", "line": 2, "text": "def f(:"}, ExitCode.SYNTAX),
    (_import_error(), ExitCode.IMPORT),
    ({"status": "missing_function", "defined": ["g"], "found_type": None}, ExitCode.MISSING),
]


@pytest.mark.parametrize("result, code", IMPORT_PHASE)
def test_an_import_phase_outcome_is_believed_only_of_a_job_never_sent_its_inputs(result: dict, code: int) -> None:
    """The runner's record decides, never the child's words: written after a call had the
    inputs (review 7), the same result is forged, whatever it claims."""
    assert run(result, code=code, inputs_given=False).status != JobStatus.CRASHED
    forged = run(result, code=code, inputs_given=True)
    assert forged.status == JobStatus.CRASHED and forged.message == MALFORMED
    assert forged.import_error is None and forged.line is None


def test_results_of_calls_are_believed_only_of_a_job_sent_its_inputs() -> None:
    assert run(ok(), inputs_given=True).status == JobStatus.OK
    assert run(ok(), inputs_given=False).message == MALFORMED


# --- type names and the closed lists ------------------------------------------------------------

@pytest.mark.parametrize("name, kept", [
    ("ValueError", True), ("torch.OutOfMemoryError", True), ("_Private2", True), ("x" * MAX_TYPE_NAME, True),
    ("x" * (MAX_TYPE_NAME + 1), False), ("", False), ("1abc", False), ("a b", False), ("Érreur", False),
    ("a-b", False), ("LEAK 0.123", False),
])
def test_type_name_keeps_only_short_ascii_identifiers(name: str, kept: bool) -> None:
    assert type_name(name) == (name if kept else UNNAMED_TYPE)


def test_the_closed_lists_hold_what_the_harness_writes_and_nothing_made_up() -> None:
    import torch

    assert {"cpu", "cuda", "meta", "privateuseone"} <= DEVICE_TYPES and "LEAK" not in DEVICE_TYPES
    assert {str(t.dtype).removeprefix("torch.") for t in (torch.zeros(1), torch.zeros(1, dtype=torch.int64))} \
        <= TENSOR_DTYPES
    assert {"float32", "bfloat16", "bool", "complex64"} <= TENSOR_DTYPES
    assert all(not d.startswith("torch.") for d in TENSOR_DTYPES)
    assert {"strided", "sparse_coo"} <= TENSOR_LAYOUTS
    assert str(torch.zeros(1).to_sparse().layout).removeprefix("torch.") in TENSOR_LAYOUTS


# --- caps on call records -----------------------------------------------------------------------

def _nested(depth: int) -> dict:
    node: dict = {"type": "none"}
    for _ in range(depth):
        node = {"type": "list", "items": [node]}
    return node


@pytest.mark.parametrize("depth, accepted", [(8, True), (9, False)])
def test_an_output_tree_is_at_most_eight_levels_deep(depth: int, accepted: bool) -> None:
    res = run(ok({"id": "a", "output": _nested(depth)}))
    assert (res.status == JobStatus.OK) == accepted


@pytest.mark.parametrize("items, accepted", [(19_999, True), (20_000, False)])
def test_one_output_tree_holds_at_most_twenty_thousand_nodes(items: int, accepted: bool) -> None:
    tree = {"type": "list", "items": [{"type": "none"}] * items}  # + the list itself
    assert (run(ok({"id": "a", "output": tree})).status == JobStatus.OK) == accepted


def test_all_calls_together_hold_at_most_fifty_thousand_nodes() -> None:
    tree = {"type": "list", "items": [{"type": "none"}] * 12_499}  # 12,500 nodes a call
    four = [{"id": str(i), "output": tree} for i in range(4)]
    assert run(ok(*four)).status == JobStatus.OK
    assert run(ok(*four, {"id": "4", "output": {"type": "none"}})).message == MALFORMED


def test_call_records_must_be_the_requests_calls_each_once() -> None:
    ids = ["a", "b"]
    assert run(ok({"id": "a"}, {"id": "b"}), call_ids=ids).status == JobStatus.OK
    assert run(ok({"id": "b"}), call_ids=ids).status == JobStatus.OK  # a call may go unreported
    for calls in ([{"id": "a"}, {"id": "a"}], [{"id": "c"}], [{"id": "a"}, {"id": "b"}, {"id": "a"}], [7]):
        assert run(ok(*calls), call_ids=ids).message == MALFORMED, calls


@pytest.mark.parametrize("length, accepted", [(1, False), (2, True), (2 + DIGEST_SAMPLES, True),
                                              (3 + DIGEST_SAMPLES, False)])
def test_a_digest_holds_two_sums_and_at_most_the_samples(length: int, accepted: bool) -> None:
    res = run(ok({"id": "a", "digests": {"ca.out": [1.0] * length}}))
    assert (res.status == JobStatus.OK) == accepted


def test_at_most_sixty_four_digests_and_sixteen_probes_a_call() -> None:
    digests = {f"d{i}": [0.0, 0.0] for i in range(MAX_DIGESTS + 1)}
    assert run(ok({"id": "a", "digests": dict(list(digests.items())[:MAX_DIGESTS])})).status == JobStatus.OK
    assert run(ok({"id": "a", "digests": digests})).message == MALFORMED  # the harness never writes more
    probe = {"requires_grad": True, "grads": {"0": None}}
    assert run(ok({"id": "a", "probes": [probe] * 16})).status == JobStatus.OK
    assert run(ok({"id": "a", "probes": [probe] * 17})).message == MALFORMED
    assert run(ok({"id": "a", "probes": [{"requires_grad": 1, "grads": {}}]})).message == MALFORMED


def test_a_call_the_harness_marked_as_too_many_tensors_is_the_learners_output_limit() -> None:
    digests = {f"d{i}": [0.0, 0.0] for i in range(MAX_DIGESTS)}
    res = run(ok({"id": "a", "digests": digests, "too_many_tensors": True}))
    assert res.status == JobStatus.OUTPUT_LIMIT and res.message == TOO_MANY_TENSORS and res.calls == []
    assert "grader's failure" not in res.message and str(MAX_DIGESTS) in res.message
    assert run(ok({"id": "a", "digests": digests, "too_many_tensors": False})).status == JobStatus.OK


@pytest.mark.parametrize("seconds, kept", [(0.25, 0.25), (0, 0.0), (-1.0, None), (1e400, None)])
def test_call_seconds_are_kept_only_when_finite_and_not_negative(seconds: float, kept: float | None) -> None:
    raw = json.dumps(ok({"id": "a", "seconds": seconds})).replace("Infinity", "1e400").encode()
    res = run(raw)
    assert res.status == JobStatus.OK and res.calls[0].seconds == kept


@pytest.mark.parametrize("peak, accepted", [(0, True), (1 << 30, True), (-1, False), (True, False), (1.5, False)])
def test_cuda_peak_bytes_is_a_count(peak: object, accepted: bool) -> None:
    res = run(ok({"id": "a", "cuda_peak_bytes": peak}))
    assert (res.status == JobStatus.OK) == accepted


def test_tensors_come_back_decoded_with_their_records() -> None:
    import torch

    blob = encode({"ca.out": torch.arange(3.0), "ca.grad.0": torch.ones(3)})
    call = {"id": "a", "output": {"type": "tensor", "shape": [3], "name": "ca.out"}, "grads": {"0": "ca.grad.0"}}
    res = run(ok(call), tensors=blob)
    assert res.status == JobStatus.OK and res.calls[0].grads == {"0": "ca.grad.0"}
    assert torch.equal(res.tensors["ca.out"], torch.arange(3.0))


def test_a_result_json_over_four_mib_is_not_read() -> None:
    big = json.dumps(ok({"id": "a", "output": {"type": "str", "value": "x" * (4 << 20)}})).encode()
    limits = SandboxLimits(output_bytes=8 << 20, captured_output_bytes=1024)
    head = report(files={"result.json": len(big)}, sizes={"result.json": len(big)})
    validate_exited(head, len(big), limits)
    res = interpret(head, big, limits, False, False)
    assert res.status == JobStatus.CRASHED and res.message == ENDED_EARLY

"""sandbox.harness: what it writes for odd learner modules (each run in a forked child of one
driver process, as the jail host runs them, so ``seal()`` never touches this process), and its
pure parts (compile, describe, digest, generated tensors, calls) called directly."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from sandbox import harness
from sandbox.exit_codes import ExitCode
from sandbox.protocol import MAX_DIGESTS, Arg, Backward, Call, JobRequest
from sandbox.tensors import decode, encode

REPO = Path(__file__).resolve().parents[2]
X = torch.tensor([1.0, -2.0, 3.0])

#: Forks one child per job folder (the fork-server's way), runs the harness there, and prints
#: each folder's exit code; a MemoryError escaping the harness is reported as the host maps it.
DRIVER = """
import json, os, sys
import torch
torch.set_num_threads(1)
from sandbox import harness
codes = {}
for d in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        code = 99
        try:
            out = os.open(os.path.join(d, "stdout.txt"), os.O_WRONLY | os.O_CREAT, 0o600)
            os.dup2(out, 1)
            os.chdir(os.path.join(d, "tmp"))
            request, inputs = harness.load_job(d)
            def fetch(d=d, request=request, inputs=inputs):
                open(os.path.join(d, "fetched"), "w").close()  # the test's record of when it was asked
                return request.calls, request.warmup_calls, inputs
            code = harness.run_loaded_job(d, request, fetch)
        except MemoryError:
            code = 21
        except BaseException:
            code = 98
        try:
            sys.stdout.flush()
        except BaseException:
            pass
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    codes[d] = os.waitstatus_to_exitcode(status)
print(json.dumps(codes))
"""

TRAP_MODE = """
import torch
from torch.overrides import TorchFunctionMode
class Trap(TorchFunctionMode):
    armed = False
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if Trap.armed:
            raise RuntimeError("trapped")
        return func(*args, **(kwargs or {}))
Trap().__enter__()
def f(x):
    y = x * 2
    Trap.armed = True  # every torch call from here on raises, unless the harness popped the mode
    return y
"""

CALLS = [Call(id="a", args=[Arg.of_tensor("x", requires_grad=True)], backward=Backward(seeded_weights=3))]
#: name -> (source, function name, calls)
MODULES: dict[str, tuple[str, str, list[Call]]] = {
    "syntax": ("x = 1\ndef f(:\n    pass\n", "f", CALLS),
    "nul_byte": ("x = 1\0\n", "f", CALLS),
    "raises_at_import": ("def helper():\n    raise KeyError('k')\nhelper()\n", "f", CALLS),
    "unprintable": ("class E(Exception):\n    def __str__(self):\n        raise RuntimeError\nraise E()\n", "f", CALLS),
    "long_class_name": ("raise type('X' * 500, (Exception,), {})('m')\n", "f", CALLS),
    "system_exit": ("raise SystemExit(3)\n", "f", CALLS),
    "missing": ("def g():\n    pass\nclass H:\n    pass\n", "f", CALLS),
    "not_callable": ("f = 3\ndef g():\n    pass\n", "f", CALLS),
    "imports_sandbox": ("import sys\nprint('SEEN', sorted(n for n in sys.modules if n.startswith('sandbox')))\n"
                        "import sandbox.harness\n", "f", CALLS),
    "lists_job_folder": ("import os\nprint('FILES', sorted(os.listdir('..')))\ndef f(x):\n    return x * 2\n", "f",
                         CALLS),
    "calls": (
        "def f(x, k=1.0):\n    if k < 0:\n        raise ValueError('negative k')\n    return (x * k).sum(), 'tag'\n",
        "f",
        [
            Call(id="a", args=[Arg.of_tensor("x", requires_grad=True)], backward=Backward(output=[0])),
            Call(id="b", args=[Arg.of_tensor("x")], kwargs={"k": Arg.of_value(-1.0)}),
            Call(id="c", args=[Arg.of_tensor("x")], kwargs={"k": Arg.of_value(3.0)}),
        ],
    ),
    "memory_error": ("def f(x):\n    raise MemoryError\n", "f", CALLS),
    "leaves_a_mode_active": (TRAP_MODE, "f", [Call(id="a", args=[Arg.of_tensor("x")])]),
}


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every module of MODULES run once: name -> {"code", "result", "stdout", "folder"}."""
    root = tmp_path_factory.mktemp("harness")
    folders = {}
    for name, (source, function, calls) in MODULES.items():
        d = root / name
        (d / "tmp").mkdir(parents=True)
        request = JobRequest(source=source, function=function, calls=calls)
        (d / "request.json").write_text(json.dumps(request.to_json()))
        (d / "inputs.safetensors").write_bytes(encode({"x": X}))
        folders[name] = d
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-c", DRIVER, *map(str, folders.values())], capture_output=True,
                         text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    codes = json.loads(run.stdout)
    out = {}
    for name, d in folders.items():
        result = d / "result.json"
        out[name] = {"code": codes[str(d)], "folder": d, "stdout": (d / "stdout.txt").read_text(),
                     "fetched": (d / "fetched").exists(),
                     "result": json.loads(result.read_text()) if result.exists() else None}
    return out


def test_a_syntax_error_is_reported_with_its_line(ran: dict) -> None:
    r = ran["syntax"]
    assert r["code"] == ExitCode.SYNTAX and r["result"]["status"] == "syntax_error"
    assert r["result"]["line"] == 2 and r["result"]["text"] == "def f(:"


def test_a_nul_byte_is_a_syntax_error_without_a_line(ran: dict) -> None:
    r = ran["nul_byte"]
    assert r["code"] == ExitCode.SYNTAX and r["result"]["status"] == "syntax_error" and r["result"]["line"] is None


def test_an_exception_at_import_is_reported_with_the_learners_frames_only(ran: dict) -> None:
    r = ran["raises_at_import"]
    assert r["code"] == ExitCode.IMPORT and r["result"]["status"] == "runtime_error"
    err = r["result"]["error"]
    assert err["type"] == "KeyError" and err["phase"] == "import"
    assert err["classes"] == ["KeyError", "LookupError", "Exception", "BaseException", "object"]
    assert "in helper" in err["traceback"] and "harness" not in err["traceback"]


def test_an_exception_whose_str_raises_is_still_reported(ran: dict) -> None:
    r = ran["unprintable"]
    assert r["code"] == ExitCode.IMPORT and r["result"]["error"]["message"] == "<unprintable message>"


def test_a_class_name_made_at_run_time_is_capped(ran: dict) -> None:
    err = ran["long_class_name"]["result"]["error"]
    assert len(err["type"]) <= 100 and err["type"].startswith("X" * 50) and len(err["classes"][0]) <= 100


def test_system_exit_at_import_is_an_import_error_not_an_exit_code(ran: dict) -> None:
    r = ran["system_exit"]
    assert r["code"] == ExitCode.IMPORT and r["result"]["error"]["type"] == "SystemExit"


def test_a_missing_function_lists_the_functions_defined(ran: dict) -> None:
    r = ran["missing"]
    assert r["code"] == ExitCode.MISSING and r["result"] == {"status": "missing_function", "defined": ["g"],
                                                             "found_type": None}
    r = ran["not_callable"]
    assert r["code"] == ExitCode.MISSING and r["result"]["found_type"] == "int"


def test_the_sandbox_package_is_sealed_from_the_learners_module(ran: dict) -> None:
    r = ran["imports_sandbox"]
    assert "SEEN []" in r["stdout"]
    assert r["code"] == ExitCode.IMPORT and r["result"]["error"]["type"] == "ModuleNotFoundError"


def test_the_request_and_inputs_are_gone_before_the_learners_module_runs(ran: dict) -> None:
    r = ran["lists_job_folder"]
    assert r["code"] == ExitCode.OK, r
    listed = r["stdout"].split("FILES ", 1)[1]
    assert "request.json" not in listed and "inputs.safetensors" not in listed and "'tmp'" in listed


def test_calls_are_recorded_one_by_one_and_one_failing_call_stops_none_other(ran: dict) -> None:
    r = ran["calls"]
    assert r["code"] == ExitCode.OK and r["result"]["status"] == "ok"
    a, b, c = r["result"]["calls"]
    assert [a["id"], b["id"], c["id"]] == ["a", "b", "c"]
    assert b["error"]["type"] == "ValueError" and b["error"]["message"] == "negative k" and "output" not in b
    assert a["output"]["type"] == "tuple" and a["output"]["items"][1] == {"type": "str", "value": "tag"}
    tensors = decode((r["folder"] / "outputs.safetensors").read_bytes(), max_bytes=1 << 20)
    assert tensors[a["grads"]["0"]].tolist() == [1.0, 1.0, 1.0]  # d(sum x)/dx
    assert tensors[c["output"]["items"][0]["name"]].item() == pytest.approx(6.0)


def test_the_calls_and_inputs_are_asked_for_only_once_the_module_is_imported_and_its_function_found(
    ran: dict,
) -> None:
    """A syntax error, an exception at import and a missing function are decided before the
    process holds any input (the trusted side believes them only then, ``sandbox.verdicts``)."""
    for name in ("syntax", "nul_byte", "raises_at_import", "system_exit", "missing", "not_callable"):
        assert not ran[name]["fetched"], name
    assert ran["calls"]["fetched"] and ran["calls"]["code"] == ExitCode.OK


def test_a_memory_error_in_a_call_escapes_the_harness_for_the_host_to_name(ran: dict) -> None:
    r = ran["memory_error"]
    assert r["code"] == ExitCode.OUT_OF_MEMORY and r["result"] is None


def test_a_torch_function_mode_left_active_is_popped_before_the_harness_reads_outputs(ran: dict) -> None:
    r = ran["leaves_a_mode_active"]
    assert r["code"] == ExitCode.OK, r
    (call,) = r["result"]["calls"]
    assert "error" not in call, call
    tensors = decode((r["folder"] / "outputs.safetensors").read_bytes(), max_bytes=1 << 20)
    assert tensors[call["output"]["name"]].tolist() == [2.0, -4.0, 6.0]


# --- the pure parts, called directly --------------------------------------------------------------

@pytest.mark.parametrize("source, line, message", [
    ("def f(:\n", 1, "invalid syntax"),
    ("x = 1\n  y = 2\n", 2, "unexpected indent"),
    ("x = '\ud800'\n", None, "surrogates not allowed"),
    ("x = " + "-" * 200_000 + "1\n", None, "nested too deeply"),
])
def test_compile_source_turns_every_refusal_into_fields(source: str, line: int | None, message: str) -> None:
    code, error = harness.compile_source(source, "submission.py")
    assert code is None and error is not None
    assert error["line"] == line and message in error["message"]


def test_compile_source_compiles_without_running() -> None:
    code, error = harness.compile_source("raise SystemExit('ran')\n", "submission.py")
    assert error is None and code.co_filename == "submission.py"


def test_load_job_reads_then_unlinks_both_files(tmp_path: Path) -> None:
    request = JobRequest(source="x", function="f", calls=[Call(id="a")])
    (tmp_path / "request.json").write_text(json.dumps(request.to_json()))
    (tmp_path / "inputs.safetensors").write_bytes(encode({"x": X}))
    got, inputs = harness.load_job(str(tmp_path))
    assert got == request and torch.equal(inputs["x"], X) and list(tmp_path.iterdir()) == []


def test_describe_caps_what_it_walks() -> None:
    out = harness._Outputs()
    assert out.describe(list(range(100)), "p")["length"] == 100
    assert len(out.describe(list(range(100)), "p")["items"]) == 64
    deep: list = [1]
    for _ in range(10):
        deep = [deep]
    node = out.describe(deep, "d")
    depth = 0
    while node["type"] == "list":
        node, depth = node["items"][0], depth + 1
    assert depth == 4 and node == {"type": "object", "class": "list"}
    assert out.describe(2**70, "i") == {"type": "int", "value": str(2**70)}
    assert out.describe(float("-inf"), "f") == {"type": "float", "value": "-inf"}
    text = out.describe("x" * 1000, "s")["value"]
    assert len(text) <= 200 and text.endswith(" characters cut]")
    assert list(out.describe({1: 2, "k": 3}, "m")["items"]) == ["'int'", "k"]


def test_describe_stores_strided_real_tensors_only() -> None:
    out = harness._Outputs()
    dense = out.describe(torch.ones(2, requires_grad=True) * 2, "a")
    sparse = out.describe(torch.ones(2).to_sparse(), "b")
    complex_ = out.describe(torch.ones(2, dtype=torch.complex64), "c")
    assert dense["name"] == "a" and dense["requires_grad"] and not out.tensors["a"].requires_grad
    assert "name" not in sparse and sparse["layout"] == "sparse_coo" and "name" not in complex_
    assert list(out.tensors) == ["a"]

    class Sub(torch.Tensor):
        pass

    assert out.describe(torch.ones(2).as_subclass(Sub), "s")["type"] == "object" and "s" not in out.tensors


def test_a_digest_is_two_sums_and_samples_and_tells_a_permutation_apart() -> None:
    t = torch.arange(1000, dtype=torch.float32)
    d = harness.digest(t, seed=7)
    assert len(d) == 2 + harness.DIGEST_SAMPLES
    assert d == harness.digest(t.clone(), seed=7)  # deterministic
    assert d[:2] != harness.digest(t.flip(0), seed=7)[:2]
    positions = harness.digest_positions(1000, 7)
    assert d[2:] == [float(t[p]) for p in positions]
    assert len(set(positions)) == harness.DIGEST_SAMPLES and all(0 <= p < 1000 for p in positions)
    assert harness.digest_positions(5, 7) == sorted(set(harness.digest_positions(5, 7))) and \
        len(harness.digest_positions(5, 7)) == 5
    assert harness.digest_positions(0, 7) == [] and harness.digest(torch.zeros(0), 1) == [0.0, 0.0]
    # chunked: a tensor over one chunk sums the same as the float64 formula
    big = torch.randn(3 * (1 << 16) + 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    weights = harness._weights(0, 1 << 16, 9).repeat(4)[: big.numel()]
    assert math.isclose(harness.digest(big, 9)[0], float((big * weights).sum()), rel_tol=1e-9)


@pytest.mark.parametrize("x, wire", [(1.5, 1.5), (float("nan"), "nan"), (float("inf"), "inf"),
                                     (float("-inf"), "-inf")])
def test_wire_float_names_non_finite_values(x: float, wire: float | str) -> None:
    assert harness.wire_float(x) == wire


def test_generated_tensors_are_seeded_and_bounded() -> None:
    spec = {"shape": [3, 4], "seed": 11, "scale": 2.0, "shift": 1.0, "dtype": "float64"}
    a, b = harness.generate_tensor(spec), harness.generate_tensor(spec)
    assert a.dtype == torch.float64 and a.shape == (3, 4) and torch.equal(a, b)
    assert not torch.equal(a, harness.generate_tensor({**spec, "seed": 12}))
    for shape in ([1 << 15, 1 << 14], [1] * 9, [-1]):
        with pytest.raises(ValueError):
            harness.generate_tensor({"shape": shape, "seed": 0})
    with pytest.raises(KeyError):
        harness.generate_tensor({"shape": [1], "seed": 0, "dtype": "int64"})


def test_execute_calls_runs_warmups_unrecorded_and_reports_in_place_edits() -> None:
    seen: list[int] = []

    def f(x: torch.Tensor) -> torch.Tensor:
        seen.append(1)
        x.mul_(2)
        return x

    warm = Call(id="w", args=[Arg.of_tensor("x")])
    call = Call(id="a", args=[Arg.of_tensor("x")], return_inputs=True)
    records, tensors = harness.execute_calls(f, [call], {"x": X}, "submission.py", [warm])
    assert len(seen) == 2 and [r["id"] for r in records] == ["a"]
    assert torch.equal(tensors[records[0]["inputs_after"]["0"]], X * 2) and torch.equal(X, torch.tensor([1.0, -2, 3]))


def test_execute_calls_digests_instead_of_copies_when_outputs_are_not_kept() -> None:
    call = Call(id="m", args=[Arg(generate={"shape": [5000], "seed": 1})], keep_outputs=False, digest_seed=4)
    records, tensors = harness.execute_calls(lambda x: x + 1, [call], {}, "submission.py")
    assert tensors == {} and list(records[0]["digests"]) == ["cm.out"]
    expected = harness.digest(harness.generate_tensor({"shape": [5000], "seed": 1}) + 1, 4)
    assert records[0]["digests"]["cm.out"] == expected


@pytest.mark.parametrize("copies, marked", [(63, False), (64, True)])
def test_a_measured_call_digests_at_most_the_cap_and_marks_the_rest(copies: int, marked: bool) -> None:
    """The loss and ``copies`` copies of it: 64 tensors are digested whole, 65 are cut at the cap
    (review 10: the trusted side reads no more, and names the mark as the learner's output)."""
    call = Call(id="m", args=[Arg(generate={"shape": [8], "seed": 1})], keep_outputs=False, digest_seed=4)
    records, _ = harness.execute_calls(lambda x: {"loss": x, "copies": [x] * copies}, [call], {}, "submission.py")
    assert len(records[0]["digests"]) == min(copies + 1, MAX_DIGESTS)
    assert records[0].get("too_many_tensors", False) is marked


def test_probes_ask_the_engine_which_inputs_an_output_reaches() -> None:
    def f(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return (a * 2).sum(), (b * 3).detach().sum()

    call = Call(id="p", args=[Arg.of_tensor("x", True), Arg.of_tensor("x", True)],
                probes=[Backward(output=[0]), Backward(output=[1])])
    records, tensors = harness.execute_calls(f, [call], {"x": X}, "submission.py")
    first, second = records[0]["probes"]
    assert first["requires_grad"] and first["grads"]["1"] is None
    assert tensors[first["grads"]["0"]].tolist() == [2.0, 2.0, 2.0]
    assert second == {"requires_grad": False, "grads": {"0": None, "1": None}}


def test_a_non_scalar_output_needs_weights_to_back_propagate() -> None:
    call = Call(id="n", args=[Arg.of_tensor("x", True)], backward=Backward())
    records, _ = harness.execute_calls(lambda x: x * 2, [call], {"x": X}, "submission.py")
    assert records[0]["error"]["phase"] == "backward" and "scalar" in records[0]["error"]["message"]
    weighted = Call(id="w", args=[Arg.of_tensor("x", True)], backward=Backward(weights="x"))
    records, tensors = harness.execute_calls(lambda x: x * 2, [weighted], {"x": X}, "submission.py")
    assert tensors[records[0]["grads"]["0"]].tolist() == (2 * X).tolist()

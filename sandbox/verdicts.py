"""How a visit ended, read by the trusted side: the child's exit, its files, its limits.

:func:`interpret` maps the host's report (exit code or signal, file sizes, whether the
runner killed the child for time, whether the cgroup saw an OOM kill) and the files the
child left to a :class:`~sandbox.protocol.JobResult` with a named status and a message for
the learner. Everything the child wrote is validated field by field: a malformed result is
the child's doing and ends as ``crashed``, never as an error of the grader.
"""

from __future__ import annotations

import json
import math
import signal
from collections.abc import Sequence
from typing import Any

import torch

from sandbox import host
from sandbox.exit_codes import ExitCode
from sandbox.harness import DIGEST_SAMPLES, compile_source
from sandbox.protocol import MAX_DIGESTS, CallError, CallResult, JobResult, JobStatus, SandboxLimits
from sandbox.tensors import decode
from sandbox.text import cut_note

_MAX_RESULT_JSON = 4 << 20

#: How a crash is named. The learner's code chose how its process ended (``os._exit(n)``,
#: ``os.kill(os.getpid(), s)``: seccomp lets it signal itself), so the exit code and the signal
#: are its values, not facts the trusted side found: quoted, they would carry bits of the
#: hidden inputs out of any feedback policy (review 5, attack 11). The message names only what
#: the trusted side knows: the process ended by a signal, or exited before leaving results.
SIGNALLED = (
    "The process running your code was ended by a signal before the grader received results "
    "(the usual causes: a segmentation fault, an abort or a bus error in native code such as ctypes, "
    "or a forbidden system call)."
)
ENDED_EARLY = (
    "Your code's process exited before the grader received results. "
    "Do not call exit(), os._exit() or close the process's files."
)
#: Results that came back but not in the form the grader's harness writes them. The process did
#: not end early, so it is not told to stop calling exit(): either the learner's code wrote or
#: patched what the harness writes, or the harness failed to write its own results.
MALFORMED = (
    "The grader could not read the results of your code's run: they are not in the form its "
    "harness writes. If your code does not patch the harness or write its result files, this is "
    "the grader's failure, not yours: submit again, or tell your instructor if it happens again."
)

#: A measured case's call returned more tensors than the grader digests (the harness marks it).
TOO_MANY_TENSORS = (
    f"Your function returned more than {MAX_DIGESTS} tensors (results, gradients and inputs together) "
    "on a measured case, more than the grader checks. Return only what the exercise asks for."
)


class BadReport(ValueError):
    """The host's report does not fit the schema: the host is not to be believed again."""


_INT_FIELDS = ("tmp_free_bytes", "tmp_total_bytes", "maxrss_bytes", "host_rss_bytes")
_MAX_COUNTER = 1 << 50


def _count(value: Any, what: str, upper: int = _MAX_COUNTER) -> int:
    if type(value) is not int or not 0 <= value <= upper:
        raise BadReport(f"{what} is not a count in range")
    return value


def validate_exited(exited: dict[str, Any], blob_len: int, limits: SandboxLimits) -> dict[str, Any]:
    """Check the host's "exited" report field by field; raise :class:`BadReport` if it is off."""
    if exited.get("event") != "exited":
        raise BadReport("not an exited event")
    if type(exited.get("setup_ok")) is not bool:
        raise BadReport("setup_ok is not a boolean")
    code, sig = exited.get("exit_code"), exited.get("signal")
    if (code is None) == (sig is None):
        raise BadReport("exactly one of exit_code and signal must be set")
    if code is not None:
        _count(code, "exit_code", 255)
    if sig is not None and _count(sig, "signal", 64) < 1:
        raise BadReport("signal out of range")
    cpu = exited.get("cpu_seconds")
    if not isinstance(cpu, (int, float)) or isinstance(cpu, bool) or not math.isfinite(cpu) or not 0 <= cpu < 1e6:
        raise BadReport("cpu_seconds is not a finite non-negative number")
    for name in _INT_FIELDS:
        _count(exited.get(name), name)
    if exited["tmp_free_bytes"] > exited["tmp_total_bytes"]:
        raise BadReport("more free tmp than tmp")
    files, sizes = exited.get("files"), exited.get("sizes")
    if type(files) is not dict or type(sizes) is not dict or files.keys() != sizes.keys():
        raise BadReport("files and sizes do not match")
    total = 0
    for name, length in files.items():
        if name not in host.RESULT_FILES:
            raise BadReport(f"unknown result file {name!r}")
        cap = limits.captured_output_bytes + 8 if name.endswith(".txt") else limits.output_bytes
        total += _count(length, "file length", cap)
        if _count(sizes[name], "file size") < length:
            raise BadReport("a file is shorter than what was read of it")
    if total != blob_len:
        raise BadReport("file lengths do not add up to the blob")
    return exited


def _split_files(exited: dict[str, Any], blob: bytes) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    offset = 0
    for name, size in exited.get("files", {}).items():
        files[name] = blob[offset : offset + int(size)]
        offset += int(size)
    return files


def interpret(
    exited: dict[str, Any],
    blob: bytes,
    limits: SandboxLimits,
    killed_for_time: bool,
    oom: bool | None,
    call_ids: Sequence[str] | None = None,
    source: tuple[str, str] | None = None,
    inputs_given: bool | None = None,
) -> JobResult:
    """Map how the child ended, and what it left, to a :class:`JobResult`.

    ``oom`` is the memory cgroup's word (None where there is no cgroup to ask). ``call_ids``
    are the request's calls: a result naming any other call, or one twice, is refused before
    any record is read (a forged result file must not cost the trusted side more than an honest
    one). ``source`` is the request's (source, file name): a syntax error is believed only of a
    file that fails to compile here, and told from this compile, never from the child's words.
    ``inputs_given`` is whether the runner sent the job's calls and inputs (the child asks for
    them once its module is imported and its function found): an outcome of the import phase
    (a syntax error, an exception at import, a missing function) is believed only of a job
    that never had them, and results of calls only of one that did; anything else was written
    by code that ran, and is :data:`MALFORMED`. None (any of these): not checked (direct callers
    in tests).
    """
    files = _split_files(exited, blob)
    sizes = {k: int(v) for k, v in exited.get("sizes", {}).items()}
    stdout = files.get("stdout.txt", b"").decode("utf-8", "replace")
    stderr = files.get("stderr.txt", b"").decode("utf-8", "replace")
    for name in ("stdout.txt", "stderr.txt"):
        cut = sizes.get(name, 0) - limits.captured_output_bytes
        if cut > 0:
            note = cut_note(cut, "bytes")
            if name == "stdout.txt":
                stdout += note
            else:
                stderr += note
    res = JobResult(status=JobStatus.INTERNAL_ERROR, stdout=stdout, stderr=stderr)
    if not exited["setup_ok"]:
        # No learner code ran: whatever ended the child is the grader's doing. Nothing it
        # printed is the learner's either, so nothing of it is kept.
        res.stdout = res.stderr = ""
        res.message = "The grader's sandbox failed to set up this run. This is not your fault and does not count."
        return res
    sig = exited.get("signal")
    code = exited.get("exit_code")
    over_output = any(size >= limits.output_bytes for size in sizes.values())
    tmp_total = int(exited.get("tmp_total_bytes") or 0)
    tmp_full = tmp_total > 0 and int(exited.get("tmp_free_bytes") or 0) < min(1 << 20, tmp_total // 50)
    cpu = float(exited.get("cpu_seconds") or 0.0)
    if killed_for_time and oom:
        # Stopped by the clock while pressing on its memory limit: near the limit the kernel
        # reclaims (and re-reads) pages over and over, so the run crawls instead of failing.
        res.status = JobStatus.MEMORY_LIMIT
        res.message = (
            f"Your code reached the {limits.memory_bytes >> 20} MiB memory limit and slowed to a "
            f"crawl until the {limits.wall_seconds:g} s wall-clock limit stopped it."
        )
    elif killed_for_time:
        res.status = JobStatus.TIME_LIMIT
        res.message = f"Your code ran longer than the {limits.wall_seconds:g} s wall-clock limit and was stopped."
    elif sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu >= limits.cpu_seconds):
        res.status = JobStatus.TIME_LIMIT
        res.message = f"Your code used more than the {limits.cpu_seconds:g} s CPU-time limit and was stopped."
    elif sig == signal.SIGXFSZ or over_output:
        res.status = JobStatus.OUTPUT_LIMIT
        res.message = (
            f"Your code wrote more than the {limits.output_bytes >> 20} MiB output limit "
            "(printed output, files, or returned tensors) and was stopped."
        )
    elif code == ExitCode.OUT_OF_MEMORY or (sig == signal.SIGKILL and oom):
        # Exit 21 (a MemoryError, also torch refusing an absurd allocation) is the child's word:
        # it can claim no more than a score of 0 that counts as an attempt.
        res.status = JobStatus.MEMORY_LIMIT
        res.message = f"Your code used more than the {limits.memory_bytes >> 20} MiB memory limit and was stopped."
    elif sig is not None:
        res.status = JobStatus.CRASHED
        res.message = SIGNALLED
    else:
        _read_result(res, files, code, limits, call_ids, source, inputs_given)
        if tmp_full and res.status in (JobStatus.CRASHED, JobStatus.RUNTIME_ERROR):
            # The harness could not write its results, or the learner's own write failed.
            res.status = JobStatus.OUTPUT_LIMIT
            res.message = (
                f"Your code filled the sandbox's private temporary folder "
                f"({tmp_total >> 20} MiB) and could not finish. Write less to files, "
                f"or delete what you no longer need."
            )
    return res


def _read_result(
    res: JobResult,
    files: dict[str, bytes],
    code: int | None,
    limits: SandboxLimits,
    call_ids: Sequence[str] | None = None,
    source: tuple[str, str] | None = None,
    inputs_given: bool | None = None,
) -> None:
    """Fill ``res`` from the child's result files; anything malformed is the child's doing."""
    raw = files.get("result.json")
    if raw is None or len(raw) > _MAX_RESULT_JSON:
        res.status = JobStatus.CRASHED
        res.message = (
            ENDED_EARLY
            if code != ExitCode.HARNESS_FAILED
            else (
                "The grader's harness could not finish after your code ran (did your code patch builtins, "
                "torch or the harness, or delete its working folder?)."
            )
        )
        return
    try:
        data = json.loads(raw)
        status = data["status"]
        if inputs_given is not None and inputs_given != (status == "ok"):
            # The harness writes an import-phase outcome before it asks for the inputs, and "ok"
            # only after: the trusted side's own record of whether it sent them decides. An
            # import error written after a call had read the inputs would otherwise carry what
            # it chose from them (its type, its line) under every feedback policy.
            raise ValueError("an outcome that does not fit whether the inputs were sent")
        if status == "syntax_error":
            if source is not None:
                # Code that ran can write this file itself (the harness's frames name its path),
                # and the message would quote its text whole, under every policy: so the error is
                # the trusted side's own compile of the file it sent, or the result is forged.
                data = compile_source(*source)[1]
                if data is None:
                    raise ValueError("a syntax error reported for a file that compiles")
            res.status = JobStatus.SYNTAX_ERROR
            res.line = int(data["line"]) if data.get("line") is not None else None
            where = f" on line {res.line}" if res.line else ""
            text = f": {data.get('text')}" if data.get("text") else ""
            res.message = f"Syntax error{where}: {data.get('message', '')}{text}"
        elif status == "runtime_error":
            err = _call_error(data["error"])
            res.status = JobStatus.RUNTIME_ERROR
            res.import_error = err
            res.message = f"Your module raised {err.type} while being imported: {err.message}\n{err.traceback}"
            if "PermissionError" in err.classes:
                res.message += _PERMISSION_HINT
        elif status == "missing_function":
            res.status = JobStatus.MISSING_FUNCTION
            names = [d for d in data.get("defined", [])[:20] if isinstance(d, str)]
            defined = ", ".join(n for n in names if type_name(n) == n) or "none"
            res.message = f"functions defined: {defined}"
        elif status == "ok" and code == ExitCode.OK:
            res.status = JobStatus.OK
            if not isinstance(data["calls"], list):
                raise TypeError("calls is not a list")
            if call_ids is not None:
                _only_requested_calls(data["calls"], call_ids)
            nodes = [0]  # output-tree nodes over every call, not only per call
            res.calls = [_call_result(c, nodes) for c in data["calls"]]
            twice = _named_twice(res.calls)
            if twice is not None:
                res.status = JobStatus.CRASHED
                res.calls = []
                # not the name itself: a forged record's names are the learner's text
                res.message = (
                    "The results your code's process left name one tensor more than once; "
                    "the grader's harness never does that, so the results were refused. "
                    "Do not patch the harness or write its result files."
                )
                return
            if any(c.get("too_many_tensors") is True for c in data["calls"]):
                # The harness digested the first MAX_DIGESTS and stopped: the learner's output.
                res.status = JobStatus.OUTPUT_LIMIT
                res.calls = []
                res.message = TOO_MANY_TENSORS
                return
            res.tensors = decode(files.get("outputs.safetensors", b""), max_bytes=limits.output_bytes)
        else:
            raise ValueError("inconsistent status")
    except Exception:  # RecursionError from deeply nested JSON, too: it is all untrusted
        res.status = JobStatus.CRASHED
        res.calls, res.tensors = [], {}
        # not the parser's exception type either: which one is raised is the learner's choice too
        res.message = MALFORMED


_PERMISSION_HINT = (
    "\nThe sandbox does not let code start processes, open network connections, or write "
    "outside its temporary folder; the exercise needs none of these."
)
_TREE_KINDS = frozenset({"tensor", "none", "bool", "int", "float", "str", "tuple", "list", "dict", "object"})

#: The closed lists of the words a tensor's record holds, as the harness writes them
#: (``sandbox.harness.Outputs.describe``: ``t.device.type``, ``str(t.dtype)`` and ``str(t.layout)``
#: less "torch."). The judge's messages quote these words ("got cuda", "got a sparse_coo
#: tensor"), so a record is believed only when each is one of them: any other text was written
#: by the learner's code (which can reach the harness's globals, review 6, attack 1) and could
#: carry the inputs into a report. Device types are c10's (torch names them when it refuses
#: another); dtypes and layouts are those of the torch the trusted side runs, which is the
#: jail's. A renamed private backend (``torch.utils.rename_privateuse1_backend``) is refused too.
DEVICE_TYPES = frozenset(
    {
        "cpu",
        "cuda",
        "ipu",
        "xpu",
        "mkldnn",
        "opengl",
        "opencl",
        "ideep",
        "hip",
        "ve",
        "fpga",
        "maia",
        "xla",
        "lazy",
        "vulkan",
        "mps",
        "meta",
        "hpu",
        "mtia",
        "privateuseone",
    }
)
TENSOR_DTYPES = frozenset(str(v).removeprefix("torch.") for v in vars(torch).values() if isinstance(v, torch.dtype))
TENSOR_LAYOUTS = frozenset(str(v).removeprefix("torch.") for v in vars(torch).values() if isinstance(v, torch.layout))
_TENSOR_WORDS = {"device": DEVICE_TYPES, "dtype": TENSOR_DTYPES, "layout": TENSOR_LAYOUTS}
_MAX_TREE_DEPTH = 8
_MAX_TREE_NODES = 20_000
#: All calls' output trees together (honest results hold a few nodes per call).
_MAX_RESULT_TREE_NODES = 50_000


def _str(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} is not a string")
    return value


#: Longest exception type name believed (the harness caps at 100 too; Python's own are short).
MAX_TYPE_NAME = 100
_MAX_CLASSES = 16
#: What stands for a type name that is too long or not an identifier.
UNNAMED_TYPE = "UnnamedException"


def type_name(name: str) -> str:
    """An exception class name from the child, as the trusted side keeps it: an ASCII
    identifier (dots allowed) of at most :data:`MAX_TYPE_NAME` characters, else
    :data:`UNNAMED_TYPE`. A learner's class named at run time can carry anything in its
    name; what the cut views match and quote is then always short and plain."""
    if 0 < len(name) <= MAX_TYPE_NAME and name.isascii() and name.replace(".", "_").isidentifier():
        return name
    return UNNAMED_TYPE


def _call_error(err: Any) -> CallError:
    """A :class:`CallError` from the child's JSON, with every field of the promised type."""
    if not isinstance(err, dict):
        raise TypeError("error is not an object")
    classes = err.get("classes")
    if not isinstance(classes, list) or not all(isinstance(c, str) for c in classes):
        raise TypeError("error classes are not a list of names")
    phase = err.get("phase", "call")
    if phase not in ("call", "backward", "import"):
        raise ValueError("unknown error phase")
    return CallError(
        type=type_name(_str(err.get("type"), "error type")),
        classes=[type_name(c) for c in classes[:_MAX_CLASSES]],
        message=_str(err.get("message"), "error message"),
        traceback=_str(err.get("traceback"), "traceback"),
        phase=phase,
    )


def _check_tree(node: Any, depth: int = 0, count: list[int] | None = None) -> int:
    """Reject an output tree the harness could not have written (the judge walks it blindly);
    return its node count."""
    count = count if count is not None else [0]
    count[0] += 1
    if depth > _MAX_TREE_DEPTH or count[0] > _MAX_TREE_NODES:
        raise ValueError("output tree too deep or too large")
    if not isinstance(node, dict) or node.get("type") not in _TREE_KINDS:
        raise TypeError("bad output node")
    kind = node["type"]
    if kind == "tensor":
        shape = node.get("shape")
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
            raise TypeError("bad tensor shape")
        if "name" in node and not isinstance(node["name"], str):
            raise TypeError("bad tensor name")
        for key, closed in _TENSOR_WORDS.items():
            if key in node and not (isinstance(node[key], str) and node[key] in closed):
                raise ValueError(f"tensor {key} not in its closed list")
        if "requires_grad" in node and type(node["requires_grad"]) is not bool:
            raise TypeError("bad tensor requires_grad")
    elif kind in ("tuple", "list"):
        items = node.get("items")
        if not isinstance(items, list):
            raise TypeError("bad sequence items")
        for item in items:
            _check_tree(item, depth + 1, count)
    elif kind == "dict":
        items = node.get("items")
        if not isinstance(items, dict):
            raise TypeError("bad dict items")
        for item in items.values():
            _check_tree(item, depth + 1, count)
    elif kind == "bool" and not isinstance(node.get("value"), bool):
        raise TypeError("bad bool")
    elif kind == "int" and not (isinstance(node.get("value"), (int, str)) and not isinstance(node.get("value"), bool)):
        raise TypeError("bad int")
    elif kind == "int" and isinstance(node["value"], str):
        int(node["value"])
    elif kind == "float":
        value = node.get("value")
        if isinstance(value, str):
            float(value)
        elif not isinstance(value, (int, float)) or isinstance(value, bool):
            raise TypeError("bad float")
    elif kind == "str" and not isinstance(node.get("value"), str):
        raise TypeError("bad str")
    elif kind == "object" and not isinstance(node.get("class", ""), str):
        raise TypeError("bad object class")
    return count[0]


def _tensor_names(node: Any) -> list[str]:
    """The tensor names an (already checked) output tree refers to."""
    kind = node["type"]
    if kind == "tensor":
        return [node["name"]] if "name" in node else []
    if kind in ("tuple", "list"):
        return [n for item in node["items"] for n in _tensor_names(item)]
    if kind == "dict":
        return [n for item in node["items"].values() for n in _tensor_names(item)]
    return []


def _named_twice(calls: list[CallResult]) -> str | None:
    """A tensor name that the results refer to more than once, or None.

    The harness writes each tensor it reports under a name of its own (a call's output, a
    gradient, an input after the call, a probe's gradient), so a name used twice comes from
    forged results: refusing it keeps what the judge holds to what the output cap counted once
    (one big tensor named thousands of times would otherwise cost the judge that many times).
    """
    seen: set[str] = set()
    for c in calls:
        names = _tensor_names(c.output) if c.output is not None else []
        names += [v for v in c.grads.values() if v is not None]
        names += list(c.inputs_after.values())
        names += [v for p in c.probes or [] for v in p["grads"].values() if v is not None]
        for name in names:
            if name in seen:
                return name
            seen.add(name)
    return None


def _only_requested_calls(calls: list[Any], call_ids: Sequence[str]) -> None:
    """Refuse records of calls the request never made, or of one call twice: cheap checks, so a
    flood of forged records ends here, before any of them is validated."""
    if len(calls) > len(call_ids):
        raise ValueError("more call records than calls")
    wanted, seen = set(call_ids), set()
    for c in calls:
        cid = c.get("id") if isinstance(c, dict) else None
        if not isinstance(cid, str) or cid not in wanted or cid in seen:
            raise ValueError("a call record names a call the request did not make, or one twice")
        seen.add(cid)


def _call_result(c: Any, nodes: list[int] | None = None) -> CallResult:
    """One call's record from the child's JSON, validated field by field; ``nodes`` counts the
    output-tree nodes of every call so far (one cap for the whole result)."""
    if not isinstance(c, dict):
        raise TypeError("call record is not an object")
    err = c.get("error")
    output = c.get("output")
    if output is not None:
        size = _check_tree(output)
        if nodes is not None:
            nodes[0] += size
            if nodes[0] > _MAX_RESULT_TREE_NODES:
                raise ValueError("the output trees of all calls together are too large")
    grads = c.get("grads") or {}
    after = c.get("inputs_after") or {}
    if not isinstance(grads, dict) or not all(v is None or isinstance(v, str) for v in grads.values()):
        raise TypeError("bad grads")
    if not isinstance(after, dict) or not all(isinstance(v, str) for v in after.values()):
        raise TypeError("bad inputs_after")
    seconds = c.get("seconds")
    if seconds is not None and (not isinstance(seconds, (int, float)) or isinstance(seconds, bool)):
        raise TypeError("bad seconds")
    probes = c.get("probes")
    if probes is not None:
        if (
            not isinstance(probes, list)
            or len(probes) > 16
            or not all(
                isinstance(p, dict)
                and type(p.get("requires_grad")) is bool
                and isinstance(p.get("grads"), dict)
                and all(isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in p["grads"].items())
                for p in probes
            )
        ):
            raise TypeError("bad probes")
    digests = c.get("digests") or {}
    if (
        not isinstance(digests, dict)
        or len(digests) > MAX_DIGESTS
        or not all(
            isinstance(k, str)
            and isinstance(v, list)
            and 2 <= len(v) <= 2 + DIGEST_SAMPLES
            and all(_digest_value(x) is not None for x in v)
            for k, v in digests.items()
        )
    ):
        raise TypeError("bad digests")
    cuda_peak = c.get("cuda_peak_bytes")
    if cuda_peak is not None and (not isinstance(cuda_peak, int) or isinstance(cuda_peak, bool) or cuda_peak < 0):
        raise TypeError("bad cuda_peak_bytes")
    return CallResult(
        id=_str(c.get("id"), "call id"),
        output=output,
        error=_call_error(err) if err else None,
        grads={str(k): v for k, v in grads.items()},
        inputs_after={str(k): v for k, v in after.items()},
        seconds=float(seconds) if seconds is not None and math.isfinite(seconds) and seconds >= 0 else None,
        cuda_peak_bytes=cuda_peak,
        probes=probes,
        digests={k: [float(x) for x in v] for k, v in digests.items()},  # validated above
    )


#: How the harness names a non-finite digest value (``sandbox.harness.wire_float``).
_NON_FINITE = frozenset({"nan", "inf", "-inf"})


def _digest_value(x: Any) -> float | None:
    """One digest value as the harness writes it (a finite number, or a non-finite one by
    name), as a float; None for anything else (a bare NaN included: the harness never writes one)."""
    if type(x) in (int, float) and math.isfinite(x):
        return float(x)
    if type(x) is str and x in _NON_FINITE:
        return float(x)
    return None

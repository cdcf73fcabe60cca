"""Runs inside the jail, in the learner's child process: load the module, call, write results.

The harness trusts nothing it calls. It reports raw outputs, gradients and exceptions as
data (JSON plus safetensors) in the job directory; the trusted runner decides how the visit
ended and the judge decides what the outputs are worth. Nothing here knows the expected
values: there are none in this process.

The learner's code shares this process, so it could patch anything written in Python. What the
harness relies on after learner code has run is therefore captured *before* it runs: builtin
(C) functions such as the autograd engine's ``run_backward``, which Python code cannot alter.
Outputs count as tensors only when their type is exactly ``torch.Tensor``; gradients come from
the autograd engine on the output's graph, never from methods or attributes of learner objects
(``.backward()``, ``.grad``); torch function and dispatch modes the learner left active are
popped before the harness touches a tensor. While the learner's module runs and is called,
the ``sandbox`` package is out of ``sys.modules`` and cannot be imported again, and the functions
that write the results were captured before; the graph state of each returned tensor is read
again just before the record is written (a change in between fails the call). This raises the
bar; it does not seal the process (frames and the garbage collector still reach everything), so
what remains self-reported is listed in docs/security.md and earns no board place: values are
what earn points, and values are compared by the judge.

The job comes in two parts. What the import needs (the source, its file name, the function's
name) is in the job folder before any learner code runs; the calls to make and their input
tensors, the hidden part, are asked for (``fetch``) only once the module has been imported and
its function found. So a syntax error, an exception at import or a missing function is decided
before the process holds any input, and the trusted side, which knows whether it sent them,
believes those outcomes only of a process it never sent them to (``sandbox.verdicts``).

Exit codes (read by the host, mapped to statuses by the runner):
0 results written; 10 syntax error; 11 exception at import; 12 function missing;
13 the harness could not read its job (before the learner's code ran: the jail's fault).
"""

from __future__ import annotations

import io
import json
import linecache
import os
import signal
import sys
import time
import traceback
import types
from collections.abc import Callable
from typing import Any

import torch
from safetensors.torch import load, load_file, save_file

from sandbox.exit_codes import ExitCode
from sandbox.protocol import (
    MAX_DIGESTS,
    MAX_REQUEST_BLOB_BYTES,
    Arg,
    Backward,
    Call,
    JobRequest,
    ReadExactly,
    read_frame_fd,
)
from sandbox.text import cap

# Captured before any learner code runs (see the module docstring). Builtins cannot be patched.
_TENSOR = torch.Tensor
_VF = torch._C._VariableFunctions
_MUL = _VF.mul
_SUM = _VF.sum
_ONES_LIKE = _VF.ones_like
_RUN_BACKWARD = torch.autograd.Variable._execution_engine.run_backward
_SET_GRAD_ENABLED = torch._C._set_grad_enabled
_TB = torch._C.TensorBase
_DETACH, _TO, _CONTIGUOUS, _CLONE = _TB.detach, _TB.to, _TB.contiguous, _TB.clone
_REQUIRES_GRAD = _TB.requires_grad.__get__  # type: ignore[attr-defined]  # the C getset descriptor
_NUMEL, _IS_CONTIGUOUS, _RESHAPE, _NARROW = _TB.numel, _TB.is_contiguous, _TB.reshape, _TB.narrow
_ARANGE, _FRAC, _ABS, _ADD = _VF.arange, _VF.frac, _VF.abs, _VF.add
_ITEM = _TB.item
_DEVICE, _DTYPE, _SHAPE = _TB.device.__get__, _TB.dtype.__get__, _TB.shape.__get__  # type: ignore[attr-defined]
_GRAD_FN, _IS_LEAF, _VERSION = _TB.grad_fn.__get__, _TB.is_leaf.__get__, _TB._version.__get__  # type: ignore[attr-defined, union-attr]
_JSON_DUMPS = json.dumps
_OPEN = io.open
_SAVE_FILE = save_file
_FLOAT64 = torch.float64
_FLOAT32 = torch.float32
_LEN_FUNCTION_MODES = torch._C._len_torch_function_stack
_POP_FUNCTION_MODE = torch._C._pop_torch_function_stack
_LEN_DISPATCH_MODES = torch._C._len_torch_dispatch_stack
_POP_DISPATCH_MODE = torch._C._pop_torch_dispatch_stack
# A tuple subclass (a NamedTuple) is read through tuple's own C slots, never its methods: the
# true MRO comes from type's C getter, the items from tuple's C getitem and length.
_MRO = type.__dict__["__mro__"].__get__
#: A class's name by type's C getter (a metaclass cannot answer for it).
_TYPE_NAME = type.__dict__["__name__"].__get__
_TUPLE_LEN = tuple.__len__
_TUPLE_GETITEM = tuple.__getitem__


_MAX_ITEMS = 64
_MAX_DEPTH = 4
_MAX_TEXT = 2000
#: Longest exception type name reported (Python's own are under 40 characters).
_MAX_TYPE_NAME = 100


def _short(text: str, limit: int = _MAX_TEXT) -> str:
    return cap(text, limit)


def _learner_traceback(exc: BaseException, filename: str) -> str:
    """The traceback restricted to frames of the learner's own file."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    lines = traceback.format_list(frames[-8:])
    lines += traceback.format_exception_only(type(exc), exc)
    return _short("".join(lines))


def _error(exc: BaseException, filename: str, phase: str) -> dict[str, Any]:
    try:
        message = str(exc)
    except Exception:  # an exception whose __str__ raises is still an exception
        message = "<unprintable message>"
    # Type names are the learner's to choose (a class made at run time can carry the inputs in
    # its name): capped here, and checked again (length, charset) on the trusted side.
    return {
        "type": _short(_TYPE_NAME(type(exc)), _MAX_TYPE_NAME),
        "classes": [_short(_TYPE_NAME(c), _MAX_TYPE_NAME) for c in _MRO(type(exc))[:16]],
        "message": _short(message),
        "traceback": _learner_traceback(exc, filename),
        "phase": phase,
    }


class _Outputs:
    """Collects returned tensors under flat names for the safetensors file.

    With ``keep=False`` (measured cases) nothing large travels back: each tensor is reduced to
    a :func:`digest` instead, which the judge compares with the reference's.
    """

    def __init__(self, keep: bool = True, digest_seed: int | None = None) -> None:
        self.tensors: dict[str, torch.Tensor] = {}
        self.digests: dict[str, list[float]] = {}
        self.keep = keep
        self.digest_seed = digest_seed
        #: A tensor past :data:`~sandbox.protocol.MAX_DIGESTS` was left undigested.
        self.too_many = False
        #: Each returned tensor described, with its graph state as first read (see :func:`graph_state`).
        self.watched: list[tuple[torch.Tensor, tuple[bool, bool, bool, int]]] = []

    def add(self, name: str, t: torch.Tensor) -> str:
        if self.keep:
            self.tensors[name] = _CLONE(_CONTIGUOUS(_TO(_DETACH(t), "cpu")))
        elif self.digest_seed is not None:
            if len(self.digests) < MAX_DIGESTS:
                self.digests[name] = digest(t, self.digest_seed)
            else:  # the trusted side reads no more: the call is marked, the learner told so
                self.too_many = True
        return name

    def describe(self, value: Any, prefix: str, depth: int = 0) -> dict[str, Any]:
        """Turn a returned object into a JSON tree, storing tensors aside.

        Kinds are decided by exact ``type()``, which an object cannot fake (``isinstance``
        believes a ``__class__`` property): a tensor subclass, or a subclass of a container or
        number whose methods could answer anything, is reported as an object. The exception is
        a tuple subclass (a NamedTuple is a tuple, docs/contract.md): it is described as a tuple
        from the items tuple's C storage holds (:func:`_tuple_items`), whatever its methods say.
        """
        kind = type(value)
        if kind is _TENSOR:
            self.watched.append((value, graph_state(value)))
            info = {
                "type": "tensor",
                "dtype": str(value.dtype).removeprefix("torch."),
                "shape": list(value.shape),
                "device": value.device.type,
                "requires_grad": bool(value.requires_grad),
                "layout": str(value.layout).removeprefix("torch."),
            }
            if value.layout == torch.strided and not value.is_complex() and not value.is_quantized:
                info["name"] = self.add(prefix, value)
            return info
        if value is None:
            return {"type": "none"}
        if kind is bool:
            return {"type": "bool", "value": value}
        if kind is int:
            return {"type": "int", "value": value if abs(value) < 2**63 else str(value)}
        if kind is float:
            return {
                "type": "float",
                "value": value if value == value and abs(value) != float("inf") else float.__repr__(value),
            }
        if kind is str:
            return {"type": "str", "value": _short(value, 200)}
        if depth < _MAX_DEPTH and kind is list:
            items = [self.describe(v, f"{prefix}.{i}", depth + 1) for i, v in enumerate(value[:_MAX_ITEMS])]
            return {"type": "list", "items": items, "length": len(value)}
        if depth < _MAX_DEPTH and _is_tuple(kind):
            items = [self.describe(v, f"{prefix}.{i}", depth + 1) for i, v in enumerate(_tuple_items(value))]
            return {"type": "tuple", "items": items, "length": _TUPLE_LEN(value)}
        if depth < _MAX_DEPTH and kind is dict:
            entries: dict[str, Any] = {}
            for i, (k, v) in enumerate(list(value.items())[:_MAX_ITEMS]):
                entries[_short(str(k) if type(k) is str else repr(type(k).__qualname__), 100)] = self.describe(
                    v, f"{prefix}.k{i}", depth + 1
                )
            return {"type": "dict", "items": entries, "length": len(value)}
        return {"type": "object", "class": _short(str(type.__getattribute__(kind, "__qualname__")), 100)}


def graph_state(t: torch.Tensor) -> tuple[bool, bool, bool, int]:
    """(requires_grad, has a grad_fn, is a leaf, version counter), read by the C getters of an
    exact torch.Tensor, which learner code cannot override."""
    return bool(_REQUIRES_GRAD(t)), _GRAD_FN(t) is not None, bool(_IS_LEAF(t)), int(_VERSION(t))


def _graph_changed(watched: list[tuple[torch.Tensor, tuple[bool, bool, bool, int]]]) -> bool:
    """Whether any described output's graph state differs now from when it was described."""
    return any(graph_state(t) != state for t, state in watched)


_GRAPH_CHANGED = (
    "The returned tensor's graph changed while the grader read it (requires_grad, grad_fn or its "
    "version counter): a hook or an in-place edit ran after your function returned."
)


def _reraise_out_of_memory(exc: BaseException) -> None:
    """Out-of-memory is the jail's limit speaking, not a learner exception to report per call."""
    try:
        text = str(exc)[:500]
    except Exception:
        text = ""
    if isinstance(exc, (MemoryError, torch.OutOfMemoryError)) or "can't allocate memory" in text:
        raise MemoryError(text[:200]) from None


def _is_tuple(kind: type) -> bool:
    """Whether ``kind`` is tuple or a subclass, by its true MRO (a metaclass cannot fake it)."""
    return tuple in _MRO(kind)


def _tuple_items(value: tuple[Any, ...]) -> list[Any]:
    """The first items of a tuple or tuple subclass, read by tuple's own C methods."""
    return [_TUPLE_GETITEM(value, i) for i in range(min(_TUPLE_LEN(value), _MAX_ITEMS))]


def _pick(value: Any, path: list[int | str]) -> Any:
    """Follow ``path`` into tuples (subclasses read as tuples), lists and dicts only (no
    learner ``__getitem__``)."""
    for key in path:
        kind = type(value)
        if _is_tuple(kind) and type(key) is int:
            value = _TUPLE_GETITEM(value, key)
        elif kind is list and type(key) is int:
            value = value[key]
        elif kind is dict:
            value = value[key]
        else:
            raise TypeError(f"cannot index a {kind.__qualname__} with {key!r}")
    return value


_DIGEST_CHUNK = 1 << 16
#: The fractional part of the golden ratio: k * phi mod 1 spreads weights evenly over [0, 1).
_PHI = 0.6180339887498949
#: Elements a digest also carries as they are, spread over the tensor by the seed: a sum can
#: hide element-wise errors that cancel, these cannot (the judge compares each one).
DIGEST_SAMPLES = 32


def _weights(start: int, size: int, seed: int) -> torch.Tensor:
    """Weights ``start .. start + size`` of the sequence ``frac((k + seed') * phi) - 0.5`` (float64)."""
    k = _ARANGE(start, start + size, dtype=_FLOAT64)
    return _ADD(_FRAC(_MUL(_ADD(k, float(seed % 1_000_003)), _PHI)), -0.5)


def digest(t: torch.Tensor, seed: int) -> list[float]:
    """``[sum(w * t), sum(|w * t|), t[p_0], ..., t[p_k]]``: the sums accumulated in float64, with
    weights in [-0.5, 0.5) fixed by ``seed`` (one chunk's worth, repeated over the chunks), then
    :data:`DIGEST_SAMPLES` elements at positions the seed spreads over the tensor.

    A measured case's output is far too large to send back; this pair is enough to tell a right
    answer from a wrong one (a permuted or partly wrong tensor changes the weighted sum), costs
    two passes in small chunks (so it adds almost nothing to the peak being measured), and the
    judge computes it the same way on the reference's output.
    """
    flat = _DETACH(t)
    if not _IS_CONTIGUOUS(flat):
        flat = _CONTIGUOUS(flat)
    flat = _RESHAPE(flat, (-1,))
    n = _NUMEL(flat)
    # float32 products summed in float64 keep a float32 result's digest to about 1e-7 relative;
    # half-precision results are widened first, float64 ones kept.
    work = _FLOAT64 if _DTYPE(flat) == _FLOAT64 else _FLOAT32
    weights = _TO(_weights(0, min(n, _DIGEST_CHUNK), seed), work)
    total = 0.0
    total_abs = 0.0
    for start in range(0, n, _DIGEST_CHUNK):
        size = min(_DIGEST_CHUNK, n - start)
        chunk = _TO(_TO(_NARROW(flat, 0, start, size), "cpu"), work)
        prod = _MUL(chunk, weights if size == _DIGEST_CHUNK or size == n else _NARROW(weights, 0, 0, size))
        total += _ITEM(_SUM(prod, dtype=_FLOAT64))
        total_abs += _ITEM(_SUM(_ABS(prod), dtype=_FLOAT64))
    return [total, total_abs, *(float(_ITEM(_NARROW(flat, 0, p, 1))) for p in digest_positions(n, seed))]


def wire_float(x: float) -> float | str:
    """``x`` as a result file carries it: a finite float as it is, a NaN or an infinity by name
    (``"nan"``, ``"inf"``, ``"-inf"``, as an output tree's float node carries them). A digest of
    an output that went non-finite is the learner's wrong answer, and it must reach the judge
    as one: the trusted side refuses a bare NaN, which would make it read as forged results."""
    return x if x == x and abs(x) != float("inf") else float.__repr__(x)


def digest_positions(n: int, seed: int) -> list[int]:
    """Where a digest samples a tensor of ``n`` elements: one position in each of
    :data:`DIGEST_SAMPLES` equal stretches, offset by the seed."""
    if n <= 0:
        return []
    count = min(n, DIGEST_SAMPLES)
    offset = (seed % 1_000_003) * _PHI % 1.0
    return [min(n - 1, int((j + offset) * n / count)) for j in range(count)]


def _clear_modes() -> None:
    """Pop torch function and dispatch modes and re-enable autograd: the harness's own tensor
    work must not run through anything the learner's code left installed."""
    while _LEN_FUNCTION_MODES():
        _POP_FUNCTION_MODE()
    while _LEN_DISPATCH_MODES():
        _POP_DISPATCH_MODE()
    _SET_GRAD_ENABLED(True)


def _gradients(
    value: Any,
    backward: Backward,
    inputs: dict[str, torch.Tensor],
    leaves: list[tuple[str, torch.Tensor]],
    keep_graph: bool,
) -> dict[str, torch.Tensor | None]:
    """Gradients reaching ``leaves`` from the output at ``backward.output``, from the autograd
    engine itself. An output that is not on a graph (detached) gives no gradient at all."""
    target = _pick(value, backward.output)
    if type(target) is not _TENSOR:
        raise TypeError("the value to back-propagate from is not a torch.Tensor")
    if backward.weights is not None:
        weights = _TO(inputs[backward.weights], _DEVICE(target), _DTYPE(target))
        target = _SUM(_MUL(target, weights))
    elif backward.seeded_weights is not None:
        weights = _TO(
            _RESHAPE(_weights(0, _NUMEL(target), backward.seeded_weights), _SHAPE(target)),
            _DEVICE(target),
            _DTYPE(target),
        )
        target = _SUM(_MUL(target, weights))
    elif _NUMEL(target) != 1:
        raise RuntimeError("grad can be implicitly created only for scalar outputs")
    if not _REQUIRES_GRAD(target) or not leaves:
        return {key: None for key, _ in leaves}
    grads = _RUN_BACKWARD((target,), (_ONES_LIKE(target),), keep_graph, False, tuple(t for _, t in leaves), True, False)
    return {key: g for (key, _), g in zip(leaves, grads)}


_DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}


def generate_tensor(spec: dict[str, Any]) -> torch.Tensor:
    """The tensor an :class:`~sandbox.protocol.Arg` ``generate`` spec describes (CPU)."""
    shape = [int(n) for n in spec["shape"]]
    if len(shape) > 8 or any(n < 0 for n in shape) or torch.Size(shape).numel() > (1 << 28):
        raise ValueError("generated tensor is too large")
    gen = torch.Generator().manual_seed(int(spec["seed"]))
    t = torch.randn(shape, generator=gen) * float(spec.get("scale", 1.0)) + float(spec.get("shift", 0.0))
    return t.to(_DTYPES[str(spec.get("dtype", "float32"))])


def _build_arg(arg: Arg, inputs: dict[str, torch.Tensor], device: str) -> Any:
    if arg.generate is not None:
        t = generate_tensor(arg.generate).to(device)
        return t.requires_grad_(True) if arg.requires_grad else t
    if arg.tensor is None:
        return arg.value
    t = inputs[arg.tensor].to(device).clone()
    if arg.requires_grad:
        t.requires_grad_(True)
    return t


def _run_call(
    fn: Any, call: Call, inputs: dict[str, torch.Tensor], out: _Outputs, filename: str, record: bool
) -> dict[str, Any]:
    args = [_build_arg(a, inputs, call.device) for a in call.args]
    kwargs = {k: _build_arg(a, inputs, call.device) for k, a in call.kwargs.items()}
    named = [(str(i), a, v) for i, (a, v) in enumerate(zip(call.args, args))]
    named += [(k, call.kwargs[k], v) for k, v in kwargs.items()]
    result: dict[str, Any] = {"id": call.id}
    prefix = f"c{call.id}"
    on_gpu = call.device == "cuda"
    if on_gpu:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    start = time.perf_counter()
    try:
        value = fn(*args, **kwargs)
        if on_gpu:
            torch.cuda.synchronize()
    except BaseException as exc:  # SystemExit and KeyboardInterrupt are the learner's too
        _reraise_out_of_memory(exc)
        result["error"] = _error(exc, filename, "call")
        return result
    result["seconds"] = time.perf_counter() - start
    if not record:
        return result
    _clear_modes()
    if not call.keep_outputs:
        out = _Outputs(keep=False, digest_seed=call.digest_seed)  # digests, not copies
    first_watched = len(out.watched)
    try:
        result["output"] = out.describe(value, f"{prefix}.out")
    except BaseException as exc:  # a returned object that breaks when looked at
        _reraise_out_of_memory(exc)
        result["error"] = _error(exc, filename, "call")
        return result
    leaves = [(key, v) for key, a, v in named if a.requires_grad and type(v) is _TENSOR]
    if call.backward is not None:
        try:
            grads = _gradients(value, call.backward, inputs, leaves, keep_graph=bool(call.probes))
            result["grads"] = {
                key: (out.add(f"{prefix}.grad.{key}", g) if g is not None else None) for key, g in grads.items()
            }
        except BaseException as exc:
            _reraise_out_of_memory(exc)
            result["error"] = _error(exc, filename, "backward")
    if call.probes and "error" not in result:
        # Does any gradient flow from these outputs to the inputs? Answered by the engine, as
        # values (an output off the graph gives none), never by a flag the output carries.
        probes: list[dict[str, Any]] = []
        for i, probe in enumerate(call.probes):
            try:
                target = _pick(value, probe.output)
                on_graph = type(target) is _TENSOR and bool(_REQUIRES_GRAD(target))
                grads = _gradients(value, probe, inputs, leaves, keep_graph=i + 1 < len(call.probes))
            except BaseException as exc:
                _reraise_out_of_memory(exc)
                result["error"] = _error(exc, filename, "backward")
                break
            # Both answers: whether the output is on a graph at all (read by the C getter of an
            # exact torch.Tensor: hooks cannot change it), and what reaches the inputs.
            probes.append(
                {
                    "requires_grad": on_graph,
                    "grads": {
                        key: (out.add(f"{prefix}.probe{i}.{key}", g) if g is not None else None)
                        for key, g in grads.items()
                    },
                }
            )
        else:
            result["probes"] = probes
    if on_gpu:  # forward and backward, above what the inputs already held
        torch.cuda.synchronize()
        result["cuda_peak_bytes"] = int(torch.cuda.max_memory_allocated() - base)
    if call.return_inputs:
        result["inputs_after"] = {key: out.add(f"{prefix}.in.{key}", v) for key, _, v in named if type(v) is _TENSOR}
    if not call.keep_outputs:
        result["digests"] = {name: [wire_float(x) for x in values] for name, values in out.digests.items()}
        if out.too_many:
            result["too_many_tensors"] = True
    # Read again just before the record is written: backward passes and probes ran the learner's
    # hooks, which could have changed what was described (detached it, edited it in place).
    if _graph_changed(out.watched[first_watched:]) and "error" not in result:
        result["error"] = {
            "type": "RuntimeError",
            "classes": ["RuntimeError", "Exception", "BaseException", "object"],
            "message": _GRAPH_CHANGED,
            "traceback": "",
            "phase": "call",
        }
    return result


def load_job(job_dir: str) -> tuple[JobRequest, dict[str, torch.Tensor]]:
    """Read the request and the input tensors (before any learner code runs), then unlink both
    files: the learner's module, once imported, must not read the whole hidden test set (every
    call's arguments, every input) from the job folder and print it at import time, before any
    call of its own has run (review 4, finding 5). ``load_file`` keeps no descriptor open.

    In the jail the folder's request holds no calls and there is no inputs file: both come
    later, through :func:`inputs_from_stdin`."""
    request_path = os.path.join(job_dir, "request.json")
    with open(request_path, encoding="utf-8") as fh:
        request = JobRequest.from_json(json.load(fh))
    os.unlink(request_path)
    inputs_path = os.path.join(job_dir, "inputs.safetensors")
    inputs: dict[str, torch.Tensor] = {}
    if os.path.exists(inputs_path):
        inputs = load_file(inputs_path)
        os.unlink(inputs_path)
    return request, inputs


#: What :func:`run_loaded_job` calls once the module is imported and its function found: the
#: calls to make, the untimed warm-up calls, and their input tensors.
Fetch = Callable[[], tuple[list[Call], list[Call], dict[str, torch.Tensor]]]

#: The byte the job's init writes to the manager when the learner's process asks.
ASK_INPUTS = b"I"


def inputs_from_stdin() -> tuple[list[Call], list[Call], dict[str, torch.Tensor]]:
    """The jail's :data:`Fetch`: stop this process (``SIGSTOP``; the job's init, its parent,
    sees the stop, has the trusted side send the calls and inputs, and continues it), then read
    one frame from stdin (``{"calls", "warmup_calls"}`` + the safetensors blob). The trusted side
    records that it sent them; whoever stopped the process (the harness, or learner code), no
    outcome of the import phase is believed after that. Stdin holds nothing until then."""
    os.kill(os.getpid(), signal.SIGSTOP)
    header, blob = read_frame_fd(0, ReadExactly(), max_blob=MAX_REQUEST_BLOB_BYTES)
    hidden = JobRequest.from_json(
        {"source": "", "function": "", "calls": header["calls"], "warmup_calls": header.get("warmup_calls", [])}
    )
    inputs = load(blob) if blob else {}
    del blob
    return hidden.calls, hidden.warmup_calls, inputs


def compile_source(source: str, filename: str) -> tuple[Any, dict[str, Any] | None]:
    """(code, None), or (None, the syntax error's fields) for anything that does not compile.

    The trusted side calls it too, on the source it sent, to believe a syntax error only of a
    file that fails to compile (``sandbox.verdicts``): compiling executes nothing.

    Text that is not valid UTF-8 (a lone surrogate) or holds NUL bytes is a ValueError; deeply
    nested expressions exhaust the compiler's recursion (RecursionError) or memory
    (MemoryError). All of them are the learner's syntax error, never a crash of the harness.
    """
    try:
        return compile(source, filename, "exec", dont_inherit=True), None
    except SyntaxError as exc:
        return None, {
            "message": _short(str(exc.msg)),
            "line": exc.lineno,
            "col": exc.offset,
            "text": _short((exc.text or "").rstrip(), 200),
        }
    except ValueError as exc:
        return None, {"message": _short(str(exc)), "line": None, "text": ""}
    except (RecursionError, MemoryError):
        return None, {
            "message": "the code is nested too deeply to compile (simplify the expression "
            "or split it into several statements)",
            "line": None,
            "text": "",
        }


def run_loaded_job(job_dir: str, request: JobRequest, fetch: Fetch) -> int:
    """Compile and load the learner's module, then (only then) ``fetch`` the calls and their
    inputs, call the function as they say, and write the results."""
    result_path = os.path.join(job_dir, "result.json")

    def finish(status: str, code: int, **fields: Any) -> int:
        with _OPEN(result_path, "w", encoding="utf-8") as fh:
            fh.write(_JSON_DUMPS({"status": status, **fields}))
        return code

    filename = request.filename
    work_dir = os.path.join(job_dir, "tmp")
    learner_path = os.path.join(work_dir, filename)
    code, syntax = compile_source(request.source, filename)
    if syntax is not None:
        return finish("syntax_error", ExitCode.SYNTAX, **syntax)
    with open(learner_path, "w", encoding="utf-8", errors="replace") as fh:
        fh.write(request.source)
    # tracebacks of the learner's frames show their source lines
    linecache.cache[filename] = (len(request.source), None, request.source.splitlines(True), filename)
    module = types.ModuleType(filename.removesuffix(".py"))
    module.__file__ = filename
    sys.modules[module.__name__] = module
    run_calls, save = execute_calls, _SAVE_FILE  # bound before the learner's code can rebind them
    seal()
    try:
        exec(code, module.__dict__)
    except BaseException as exc:
        _reraise_out_of_memory(exc)
        return finish("runtime_error", ExitCode.IMPORT, error=_error(exc, filename, "import"))
    fn = module.__dict__.get(request.function)
    if not callable(fn):
        defined = sorted(k for k, v in module.__dict__.items() if isinstance(v, types.FunctionType))
        return finish(
            "missing_function",
            ExitCode.MISSING,
            defined=defined[:20],
            found_type=None if fn is None else type(fn).__name__,
        )
    # Only now, with the module imported and its function found, do the calls and inputs come.
    calls_to_make, warmup, inputs = fetch()
    calls, tensors = run_calls(fn, calls_to_make, inputs, filename, warmup)
    _clear_modes()
    save(tensors, os.path.join(job_dir, "outputs.safetensors"))
    return finish("ok", ExitCode.OK, calls=calls)


class _Sealed:
    """A meta-path finder that refuses the ``sandbox`` package to the learner's code."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> None:
        if name == "sandbox" or name.startswith("sandbox."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


def seal() -> None:
    """Take the ``sandbox`` package out of ``sys.modules`` and refuse to import it again (in the
    learner's process, just before its code runs): ``import sandbox.harness`` to rewrite how
    calls are recorded then fails like any missing module."""
    for name in [n for n in sys.modules if n == "sandbox" or n.startswith("sandbox.")]:
        del sys.modules[name]
    sys.meta_path.insert(0, _Sealed())


def execute_calls(
    fn: Any, calls: list[Call], inputs: dict[str, torch.Tensor], filename: str, warmup_calls: list[Call] | None = None
) -> tuple[list[dict[str, Any]], dict[str, torch.Tensor]]:
    """Call ``fn`` once per :class:`Call`; return the per-call records and the tensors they name.

    The jail runs learner code through this; the judge runs its reference and mutants through
    the very same function in its own process, so all three produce identical structures.
    """
    out = _Outputs()
    for call in warmup_calls or []:
        _run_call(fn, call, inputs, out, filename, record=False)
    records = [_run_call(fn, call, inputs, out, filename, record=True) for call in calls]
    return records, out.tensors

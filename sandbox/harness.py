"""Runs inside the jail, in the learner's child process: load the module, call, write results.

The harness trusts nothing it calls. It reports raw outputs, gradients and exceptions as
data (JSON plus safetensors) in the job directory; the trusted runner decides how the visit
ended and the judge decides what the outputs are worth. Nothing here knows the expected
values: there are none in this process.

Exit codes (read by the host, mapped to statuses by the runner):
0 results written; 10 syntax error; 11 exception at import; 12 function missing;
13 the harness could not read its job (the jail's fault).
"""

from __future__ import annotations

import json
import linecache
import os
import sys
import time
import traceback
import types
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from sandbox.protocol import Arg, Call, JobRequest

EXIT_OK = 0
EXIT_SYNTAX = 10
EXIT_IMPORT = 11
EXIT_MISSING = 12
EXIT_BAD_JOB = 13

_MAX_ITEMS = 64
_MAX_DEPTH = 4
_MAX_TEXT = 2000


def _short(text: str, limit: int = _MAX_TEXT) -> str:
    return text if len(text) <= limit else text[:limit] + f"... ({len(text) - limit} characters cut)"


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
    return {
        "type": type(exc).__name__,
        "classes": [c.__name__ for c in type(exc).__mro__],
        "message": _short(message),
        "traceback": _learner_traceback(exc, filename),
        "phase": phase,
    }


class _Outputs:
    """Collects returned tensors under flat names for the safetensors file."""

    def __init__(self, keep: bool = True) -> None:
        self.tensors: dict[str, torch.Tensor] = {}
        self.keep = keep

    def add(self, name: str, t: torch.Tensor) -> str:
        if self.keep:
            self.tensors[name] = torch.Tensor.as_subclass(t, torch.Tensor).detach().to("cpu").contiguous().clone()
        return name

    def describe(self, value: Any, prefix: str, depth: int = 0) -> dict[str, Any]:
        """Turn a returned object into a JSON tree, storing tensors aside.

        Kinds are decided by ``type()``, which an object cannot fake (``isinstance`` believes
        a ``__class__`` property): a pretend tensor is reported as an object.
        """
        if issubclass(type(value), torch.Tensor):
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
        if isinstance(value, bool):
            return {"type": "bool", "value": value}
        if isinstance(value, int):
            return {"type": "int", "value": value if abs(value) < 2**63 else str(value)}
        if isinstance(value, float):
            return {"type": "float", "value": float(value) if value == value and abs(value) != float("inf") else float.__repr__(value)}
        if isinstance(value, str):
            return {"type": "str", "value": _short(value, 200)}
        if depth < _MAX_DEPTH and isinstance(value, (tuple, list)):
            items = [self.describe(v, f"{prefix}.{i}", depth + 1) for i, v in enumerate(list(value)[:_MAX_ITEMS])]
            return {"type": type(value).__name__ if type(value) in (tuple, list) else "tuple", "items": items,
                    "length": len(value)}
        if depth < _MAX_DEPTH and isinstance(value, dict):
            items = {}
            for i, (k, v) in enumerate(list(value.items())[:_MAX_ITEMS]):
                items[_short(str(k), 100)] = self.describe(v, f"{prefix}.k{i}", depth + 1)
            return {"type": "dict", "items": items, "length": len(value)}
        return {"type": "object", "class": _short(type(value).__qualname__, 100)}


def _reraise_out_of_memory(exc: BaseException) -> None:
    """Out-of-memory is the jail's limit speaking, not a learner exception to report per call."""
    try:
        text = str(exc)[:500]
    except Exception:
        text = ""
    if isinstance(exc, (MemoryError, torch.OutOfMemoryError)) or "can't allocate memory" in text:
        raise MemoryError(text[:200]) from None


def _pick(value: Any, path: list[int | str]) -> Any:
    for key in path:
        value = value[key]
    return value


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


def _run_call(fn: Any, call: Call, inputs: dict[str, torch.Tensor], out: _Outputs, filename: str,
              record: bool) -> dict[str, Any]:
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
    if not call.keep_outputs:
        out = _Outputs(keep=False)  # described, not copied: nothing large travels back
    try:
        result["output"] = out.describe(value, f"{prefix}.out")
    except BaseException as exc:  # a returned object that breaks when looked at
        _reraise_out_of_memory(exc)
        result["error"] = _error(exc, filename, "call")
        return result
    if call.backward is not None:
        try:
            target = _pick(value, call.backward.output)
            if call.backward.weights is not None:
                target = (target * inputs[call.backward.weights].to(target.device, target.dtype)).sum()
            target.backward()
            result["grads"] = {
                key: (out.add(f"{prefix}.grad.{key}", v.grad) if isinstance(v, torch.Tensor) and v.grad is not None else None)
                for key, a, v in named
                if a.requires_grad
            }
        except BaseException as exc:
            _reraise_out_of_memory(exc)
            result["error"] = _error(exc, filename, "backward")
    if on_gpu:  # forward and backward, above what the inputs already held
        torch.cuda.synchronize()
        result["cuda_peak_bytes"] = int(torch.cuda.max_memory_allocated() - base)
    if call.return_inputs:
        result["inputs_after"] = {
            key: out.add(f"{prefix}.in.{key}", v) for key, a, v in named if isinstance(v, torch.Tensor)
        }
    return result


def run_job(job_dir: str) -> int:
    """Execute the job in ``job_dir``; write ``result.json`` and ``outputs.safetensors``."""
    try:
        with open(os.path.join(job_dir, "request.json"), encoding="utf-8") as fh:
            request = JobRequest.from_json(json.load(fh))
        inputs_path = os.path.join(job_dir, "inputs.safetensors")
        inputs = load_file(inputs_path) if os.path.exists(inputs_path) else {}
    except Exception:
        return EXIT_BAD_JOB
    result_path = os.path.join(job_dir, "result.json")

    def finish(status: str, code: int, **fields: Any) -> int:
        with open(result_path, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"status": status, **fields}))
        return code

    filename = request.filename
    work_dir = os.path.join(job_dir, "tmp")
    learner_path = os.path.join(work_dir, filename)
    try:
        # Before anything else touches the source: text that is not valid UTF-8 (a lone
        # surrogate) or holds NUL bytes is the learner's syntax error, not a harness failure.
        code = compile(request.source, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        text = (getattr(exc, "text", None) or "").rstrip()
        msg = getattr(exc, "msg", str(exc))
        return finish("syntax_error", EXIT_SYNTAX, message=_short(msg), line=line, text=_short(text, 200))
    with open(learner_path, "w", encoding="utf-8", errors="replace") as fh:
        fh.write(request.source)
    # tracebacks of the learner's frames show their source lines
    linecache.cache[filename] = (len(request.source), None, request.source.splitlines(True), filename)
    module = types.ModuleType(filename.removesuffix(".py"))
    module.__file__ = filename
    sys.modules[module.__name__] = module
    try:
        exec(code, module.__dict__)
    except BaseException as exc:
        _reraise_out_of_memory(exc)
        return finish("runtime_error", EXIT_IMPORT, error=_error(exc, filename, "import"))
    fn = module.__dict__.get(request.function)
    if not callable(fn):
        defined = sorted(k for k, v in module.__dict__.items() if isinstance(v, types.FunctionType))
        return finish("missing_function", EXIT_MISSING, defined=defined[:20],
                      found_type=None if fn is None else type(fn).__name__)
    calls, tensors = execute_calls(fn, request.calls, inputs, filename, request.warmup_calls)
    save_file(tensors, os.path.join(job_dir, "outputs.safetensors"))
    return finish("ok", EXIT_OK, calls=calls)


def execute_calls(fn: Any, calls: list[Call], inputs: dict[str, torch.Tensor], filename: str,
                  warmup_calls: list[Call] | None = None) -> tuple[list[dict[str, Any]], dict[str, torch.Tensor]]:
    """Call ``fn`` once per :class:`Call`; return the per-call records and the tensors they name.

    The jail runs learner code through this; the judge runs its reference and mutants through
    the very same function in its own process, so all three produce identical structures.
    """
    out = _Outputs()
    for call in warmup_calls or []:
        _run_call(fn, call, inputs, out, filename, record=False)
    records = [_run_call(fn, call, inputs, out, filename, record=True) for call in calls]
    return records, out.tensors

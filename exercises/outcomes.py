"""Between cases and the jail's protocol: calls out, outcomes back.

:func:`to_call` turns a :class:`~exercises.framework.Case` into a protocol call (its tensors
into the input blob); :func:`outcomes_from` decodes per-call records into
:class:`~exercises.framework.Outcome` objects; :func:`run_in_process` runs trusted code (the
reference, a mutant) through the harness's own call logic, so every side produces the same
structure.
"""

from __future__ import annotations

from typing import Any

import torch

from exercises.framework import Case, GeneratedTensor, Outcome
from sandbox.harness import execute_calls
from sandbox.protocol import Arg, Backward, Call, CallError


def _arg(value: Any, name: str, tensors: dict[str, torch.Tensor], grad: bool) -> Arg:
    if isinstance(value, GeneratedTensor):
        return Arg(generate=value.spec(), requires_grad=grad)
    if isinstance(value, torch.Tensor):
        tensors[name] = value
        return Arg.of_tensor(name, requires_grad=grad)
    return Arg.of_value(value)


def to_call(case: Case, tensors: dict[str, torch.Tensor], device: str) -> Call:
    """The protocol form of a case; its tensors are added to ``tensors``."""
    args = [_arg(v, f"{case.id}.a{i}", tensors, str(i) in case.grad) for i, v in enumerate(case.args)]
    kwargs = {k: _arg(v, f"{case.id}.k.{k}", tensors, k in case.grad) for k, v in case.kwargs.items()}
    backward = None
    if case.backward is not None:
        weights = None
        if case.weights is not None:
            weights = f"{case.id}.w"
            tensors[weights] = case.weights
        backward = Backward(output=list(case.backward), weights=weights)
    probes = [Backward(output=list(path), seeded_weights=case.digest_seed()) for path in case.probes]
    return Call(
        id=case.id,
        args=args,
        kwargs=kwargs,
        backward=backward,
        return_inputs=case.return_inputs,
        device=device,
        keep_outputs=not case.memory,
        digest_seed=case.digest_seed() if case.memory else None,
        probes=probes,
    )


class Opaque:
    """A returned object the harness could not describe as data (shown by its class name)."""

    def __init__(self, cls: str) -> None:
        self.cls = cls

    def __repr__(self) -> str:
        return f"<{self.cls} object>"


def _decode_tree(node: Any, tensors: dict[str, torch.Tensor], meta: dict[str, dict[str, Any]], path: str) -> Any:
    if not isinstance(node, dict):
        return Opaque(type(node).__name__)
    kind = node.get("type")
    if kind == "tensor":
        meta[path] = node
        t = tensors.get(str(node.get("name")))
        if t is None or list(t.shape) != list(node.get("shape", [])):
            return Opaque("tensor (not transferable)") if t is None else t
        return t
    if kind in ("int", "float", "bool", "str"):
        value = node.get("value")
        if kind == "float" and isinstance(value, str):
            return float(value)  # 'nan', 'inf'
        if kind == "int" and isinstance(value, str):
            return int(value)
        return value
    if kind == "none":
        return None
    if kind in ("tuple", "list"):
        items = [_decode_tree(v, tensors, meta, f"{path}.{i}".lstrip(".")) for i, v in enumerate(node.get("items", []))]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict":
        return {k: _decode_tree(v, tensors, meta, f"{path}.{k}".lstrip(".")) for k, v in node.get("items", {}).items()}
    return Opaque(str(node.get("class", "object")))


def outcomes_from(records: list[Any], tensors: dict[str, torch.Tensor]) -> dict[str, Outcome]:
    """Decode per-call records (from the jail or from an in-process run) into outcomes."""
    result: dict[str, Outcome] = {}
    for rec in records:
        rec = rec if isinstance(rec, dict) else rec.__dict__
        err = rec.get("error")
        if isinstance(err, dict):
            err = CallError(**err)
        meta: dict[str, dict[str, Any]] = {}
        output = _decode_tree(rec["output"], tensors, meta, "") if rec.get("output") is not None else None
        grads = {k: (tensors.get(v) if v else None) for k, v in (rec.get("grads") or {}).items()}
        after = {k: tensors[v] for k, v in (rec.get("inputs_after") or {}).items() if v in tensors}
        probes = rec.get("probes")
        if probes is not None:
            probes = [
                {
                    "requires_grad": p["requires_grad"],
                    "grads": {k: (tensors.get(v) if v else None) for k, v in p["grads"].items()},
                }
                for p in probes
            ]
        result[str(rec["id"])] = Outcome(
            output=output,
            meta=meta,
            error=err,
            grads=grads,
            inputs_after=after,
            seconds=rec.get("seconds"),
            probes=probes,
            digests=dict(rec.get("digests") or {}),
        )
    return result


def run_in_process(fn: Any, cases: list[Case], filename: str) -> dict[str, Outcome]:
    """Run trusted code (the reference or a mutant) through the harness's own call logic."""
    tensors: dict[str, torch.Tensor] = {}
    calls = [to_call(c, tensors, "cpu") for c in cases]
    records, out = execute_calls(fn, calls, tensors, filename)
    return outcomes_from(records, out)

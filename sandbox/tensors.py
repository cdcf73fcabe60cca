"""Tensors across the jail boundary: safetensors only, validated before anyone looks at them.

safetensors has no code path that runs embedded code (unlike pickle, ``torch.load`` or
``np.load(allow_pickle=True)``), but it still accepts any names, dtypes and shapes; the
decoder here rejects anything a grader has no use for before a comparison sees it.
"""

from __future__ import annotations

import re

import torch
from safetensors.torch import load as _st_load
from safetensors.torch import save as _st_save

#: Dtypes that may come back from the jail.
ALLOWED_DTYPES = frozenset(
    {
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.uint8,
        torch.bool,
    }
)
_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")


class TensorBlobError(ValueError):
    """A blob from the jail is malformed or breaks a limit."""


def encode(tensors: dict[str, torch.Tensor]) -> bytes:
    """Serialise tensors to safetensors bytes (CPU, contiguous, no shared storage)."""
    flat = {name: t.detach().to("cpu").contiguous().clone() for name, t in tensors.items()}
    return _st_save(flat) if flat else b""


def decode(blob: bytes, *, max_bytes: int, max_tensors: int = 4096) -> dict[str, torch.Tensor]:
    """Parse and validate a safetensors blob.

    Raises :class:`TensorBlobError` when the blob is too large, malformed, or holds a tensor
    with an unexpected name or dtype.
    """
    if not blob:
        return {}
    if len(blob) > max_bytes:
        raise TensorBlobError(f"{len(blob)} bytes of tensors, over the {max_bytes}-byte limit")
    try:
        tensors = _st_load(blob)
    except Exception as exc:  # safetensors raises its own error types for bad headers
        raise TensorBlobError(f"malformed tensor data: {exc}") from None
    if len(tensors) > max_tensors:
        raise TensorBlobError(f"{len(tensors)} tensors, over the limit of {max_tensors}")
    for name, t in tensors.items():
        if not _NAME.match(name):
            raise TensorBlobError(f"bad tensor name {name[:40]!r}")
        if t.dtype not in ALLOWED_DTYPES:
            raise TensorBlobError(f"tensor {name} has unsupported dtype {t.dtype}")
    return tensors

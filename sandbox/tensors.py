"""Tensors across the jail boundary: safetensors only, validated before anyone looks at them.

safetensors has no code path that runs embedded code (unlike pickle, ``torch.load`` or
``np.load(allow_pickle=True)``), but it still accepts any names, dtypes and shapes; the
decoder here rejects anything a grader has no use for before a comparison sees it.
"""

from __future__ import annotations

import json
import math
import re
import struct

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
#: safetensors' dtype names for :data:`ALLOWED_DTYPES`, with their sizes in bytes.
_HEADER_DTYPES = {"F16": 2, "BF16": 2, "F32": 4, "F64": 8, "I8": 1, "I16": 2, "I32": 4, "I64": 8, "U8": 1, "BOOL": 1}
#: Largest header accepted (a few hundred bytes per tensor: far above what 4096 tensors need).
_MAX_HEADER_BYTES = 1 << 20
_MAX_DIMS = 8


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
    _check_header(blob, max_tensors)
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


def _check_header(blob: bytes, max_tensors: int) -> None:
    """Validate the safetensors header before the library builds a single tensor.

    The library would build every tensor a header lists before anything could count them: a
    header of a million empty tensors costs minutes of CPU. So the header is read here first:
    its length, the number of entries, every name, dtype, shape and byte range.
    """
    if len(blob) < 8:
        raise TensorBlobError("tensor data shorter than its header length")
    (length,) = struct.unpack("<Q", blob[:8])
    if length > min(_MAX_HEADER_BYTES, len(blob) - 8):
        raise TensorBlobError(f"tensor header of {length} bytes is over the limit or past the data")
    try:
        header = json.loads(blob[8 : 8 + length])
    except (ValueError, RecursionError):
        raise TensorBlobError("tensor header is not JSON") from None
    if not isinstance(header, dict):
        raise TensorBlobError("tensor header is not an object")
    entries = {k: v for k, v in header.items() if k != "__metadata__"}
    if len(entries) > max_tensors:
        raise TensorBlobError(f"{len(entries)} tensors, over the limit of {max_tensors}")
    data = len(blob) - 8 - length
    for name, entry in entries.items():
        if not _NAME.match(name):
            raise TensorBlobError(f"bad tensor name {name[:40]!r}")
        if not isinstance(entry, dict) or entry.get("dtype") not in _HEADER_DTYPES:
            raise TensorBlobError(f"tensor {name} has an unsupported dtype")
        shape, offsets = entry.get("shape"), entry.get("data_offsets")
        if (
            not isinstance(shape, list)
            or len(shape) > _MAX_DIMS
            or not all(type(d) is int and 0 <= d <= data for d in shape)
        ):
            raise TensorBlobError(f"tensor {name} has a bad shape")
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(type(o) is int for o in offsets)
            or not 0 <= offsets[0] <= offsets[1] <= data
            or offsets[1] - offsets[0] != math.prod(shape) * _HEADER_DTYPES[entry["dtype"]]
        ):
            raise TensorBlobError(f"tensor {name} has bad byte offsets")

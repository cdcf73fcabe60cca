"""The only contract between the trusted side and the jail.

The judge describes *what to call* (a :class:`JobRequest`: the learner's source, the function
name, and a list of :class:`Call` s whose tensor arguments travel as one safetensors blob);
the jail answers with *what came back* (a :class:`JobResult`: per-call outputs, gradients and
errors, plus how the process ended). Everything here is JSON plus safetensors: nothing that
crosses the boundary is ever unpickled or executed.

Framing on the host's control pipe: an 8-byte header (two big-endian uint32: JSON length,
blob length), the UTF-8 JSON, then the blob.
"""

from __future__ import annotations

import enum
import json
import os
import select
import struct
import time
from dataclasses import asdict, dataclass, field
from typing import Any

_HEADER = struct.Struct(">II")
#: Hard cap on one frame's JSON part; a result's metadata is far smaller.
MAX_JSON_BYTES = 8 << 20
#: Hard cap on a request's input blob (the judge's check-sized tensors are far smaller).
MAX_REQUEST_BLOB_BYTES = 256 << 20
#: Most tensors one call of a measured case carries back, as digests (its results, gradients,
#: probes' gradients and inputs after, together). The harness digests no more and marks the call
#: (``too_many_tensors``), which the trusted side names as the learner's output limit; a record
#: with more digests was not written by the harness (review 10: one cap, read by both sides).
MAX_DIGESTS = 64


class JobStatus(str, enum.Enum):
    """How one visit to the jail ended, as read from the outside (never self-reported)."""

    OK = "ok"
    SYNTAX_ERROR = "syntax_error"
    MISSING_FUNCTION = "missing_function"
    RUNTIME_ERROR = "runtime_error"
    TIME_LIMIT = "time_limit"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    CRASHED = "crashed"
    INTERNAL_ERROR = "internal_error"


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits for one child. Defaults suit check-sized tensors on a laptop."""

    cpu_seconds: float = 10.0
    wall_seconds: float = 20.0
    memory_bytes: int = 2 << 30
    #: Largest file the child may write (stdout, stderr, results, its own tmp files).
    output_bytes: int = 64 << 20
    #: Size of the jail's private writable tmpfs.
    tmp_bytes: int = 256 << 20
    #: Threads the child may run (it may not create processes at all).
    max_threads: int = 64
    #: Bytes of stdout/stderr kept for the learner to read (head and tail).
    captured_output_bytes: int = 8 << 10


@dataclass
class Arg:
    """One argument of a call: a tensor from the input blob or a JSON value."""

    tensor: str | None = None
    value: Any = None
    requires_grad: bool = False
    #: A tensor the child generates itself from a public seed, so large inputs whose values
    #: do not matter (memory cases) never cross the boundary: {"shape", "dtype", "seed",
    #: "scale", "shift"}, drawn as ``randn * scale + shift``.
    generate: dict[str, Any] | None = None

    @staticmethod
    def of_tensor(name: str, requires_grad: bool = False) -> Arg:
        return Arg(tensor=name, requires_grad=requires_grad)

    @staticmethod
    def of_value(value: Any) -> Arg:
        return Arg(value=value)


@dataclass
class Backward:
    """Ask the child to back-propagate from one output.

    ``output`` is a path into the returned structure (``[]`` for the object itself, ``[0]``
    for the first item of a tuple). A 0-dim output is back-propagated as is; any other is
    first reduced as ``(output * weights).sum()`` with ``weights`` a tensor from the blob (or
    weights drawn from ``seeded_weights``).
    """

    output: list[int | str] = field(default_factory=list)
    weights: str | None = None
    #: Reduce a non-scalar output with fixed pseudo-random weights drawn from this seed (the
    #: weights of :func:`sandbox.harness.digest`), when no ``weights`` tensor is given.
    seeded_weights: int | None = None


@dataclass
class Call:
    """One call of the learner's function."""

    id: str
    args: list[Arg] = field(default_factory=list)
    kwargs: dict[str, Arg] = field(default_factory=dict)
    backward: Backward | None = None
    #: Send the argument tensors back after the call, so the judge can spot in-place edits.
    return_inputs: bool = False
    #: "cpu" or "cuda"; tensors are moved there in the child before the call.
    device: str = "cpu"
    #: Send output and gradient tensors back (False: describe them and send only a
    #: :func:`sandbox.harness.digest` of each, e.g. memory cases).
    keep_outputs: bool = True
    #: Seed of the digest weights (with ``keep_outputs=False``).
    digest_seed: int | None = None
    #: Outputs to back-propagate from, each on its own, to learn which inputs they reach
    #: (a detached output reaches none).
    probes: list[Backward] = field(default_factory=list)


@dataclass
class JobRequest:
    """Everything the child needs; it holds no expected value and no reference code."""

    source: str
    function: str
    calls: list[Call]
    #: Untimed calls run first so allocator warm-up does not count against the learner.
    warmup_calls: list[Call] = field(default_factory=list)
    filename: str = "submission.py"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(data: dict[str, Any]) -> JobRequest:
        def call(c: dict[str, Any]) -> Call:
            return Call(
                id=str(c["id"]),
                args=[Arg(**a) for a in c.get("args", [])],
                kwargs={k: Arg(**a) for k, a in c.get("kwargs", {}).items()},
                backward=Backward(**c["backward"]) if c.get("backward") else None,
                return_inputs=bool(c.get("return_inputs", False)),
                device=str(c.get("device", "cpu")),
                keep_outputs=bool(c.get("keep_outputs", True)),
                digest_seed=int(c["digest_seed"]) if c.get("digest_seed") is not None else None,
                probes=[Backward(**p) for p in c.get("probes", [])],
            )

        return JobRequest(
            source=str(data["source"]),
            function=str(data["function"]),
            calls=[call(c) for c in data["calls"]],
            warmup_calls=[call(c) for c in data.get("warmup_calls", [])],
            filename=str(data.get("filename", "submission.py")),
        )


@dataclass
class CallError:
    """An exception the learner's code raised in one call."""

    type: str
    #: Names of the exception's classes, most derived first, so the judge can test isinstance.
    classes: list[str]
    message: str
    traceback: str
    phase: str = "call"  # "call" or "backward"


@dataclass
class CallResult:
    """What one call returned, as data. Tensors live in :attr:`JobResult.tensors`."""

    id: str
    output: dict[str, Any] | None = None
    error: CallError | None = None
    grads: dict[str, str | None] = field(default_factory=dict)
    inputs_after: dict[str, str] = field(default_factory=dict)
    seconds: float | None = None
    #: Peak CUDA memory allocated during the call (GPU calls only; reported by the child).
    cuda_peak_bytes: int | None = None
    #: Per probe of the call: ``{"requires_grad": bool, "grads": {input: tensor name or None}}``.
    probes: list[dict[str, Any]] | None = None
    #: For calls without kept outputs: ``[weighted sum, weighted absolute sum]`` per tensor name.
    digests: dict[str, list[float]] = field(default_factory=dict)


@dataclass
class JobResult:
    """The outcome of one visit, assembled by the trusted runner."""

    status: JobStatus
    message: str = ""
    line: int | None = None
    #: What the learner's module raised while being imported (``runtime_error`` only), its
    #: fields validated like a call's error (``sandbox.verdicts``): the judge's feedback reads
    #: these, never the message text.
    import_error: CallError | None = None
    calls: list[CallResult] = field(default_factory=list)
    tensors: dict[str, Any] = field(default_factory=dict)
    stdout: str = ""
    stderr: str = ""
    #: Peak memory of the child, read by the trusted side (cgroup) and never by the child.
    peak_memory_bytes: int | None = None
    #: How the peak was measured: "cgroup-v1", "cgroup-v2", "rusage" or "nvml".
    memory_source: str | None = None
    cpu_seconds: float | None = None
    wall_seconds: float | None = None
    timings: dict[str, float] = field(default_factory=dict)

    def call(self, call_id: str) -> CallResult | None:
        """The result of the call with this id, or None when the child never reported it."""
        for c in self.calls:
            if c.id == call_id:
                return c
        return None


def encode_frame(header: dict[str, Any], blob: bytes = b"") -> bytes:
    """One frame: both lengths, then the JSON header, then the blob (the only frame format)."""
    data = json.dumps(header).encode()
    return _HEADER.pack(len(data), len(blob)) + data + blob


def write_frame_fd(fd: int, header: dict[str, Any], blob: bytes = b"") -> None:
    """Write one frame to a raw file descriptor, all of it (the host's side: no buffered
    stream survives its forks)."""
    view = memoryview(encode_frame(header, blob))
    while view:
        view = view[os.write(fd, view) :]


def read_frame_fd(
    fd: int, deadline_read: ReadExactly, *, max_blob: int, max_json: int = MAX_JSON_BYTES
) -> tuple[dict[str, Any], bytes]:
    """Read one frame from a file descriptor with a reader that enforces a deadline.

    Both lengths are checked against their caps before anything is read, so a frame can never
    make the reader hold more than ``max_json + max_blob`` bytes. The JSON part must be an object.
    """
    head = deadline_read(fd, _HEADER.size)
    json_len, blob_len = _HEADER.unpack(head)
    if json_len > max_json:
        raise ValueError(f"frame header of {json_len} bytes is over the limit")
    if blob_len > max_blob:
        raise ValueError(f"frame blob of {blob_len} bytes is over the limit of {max_blob}")
    header = json.loads(deadline_read(fd, json_len))
    if not isinstance(header, dict):
        raise ValueError("frame header is not a JSON object")
    blob = deadline_read(fd, blob_len) if blob_len else b""
    return header, blob


class ReadExactly:
    """Read exactly n bytes from an fd: EOFError at end of stream, TimeoutError past ``deadline``.

    ``deadline`` is a ``time.monotonic()`` value; None waits as long as it takes. With
    ``then``, the deadline applies to the first byte only: once a frame has begun, the rest may
    take ``then`` more seconds. A frame that begins just before the deadline is then read whole,
    never cut in two (which would leave the stream in the middle of a frame).
    """

    def __init__(self, deadline: float | None = None, then: float | None = None) -> None:
        self.deadline = deadline
        self.then = then
        self.started = False

    def __call__(self, fd: int, n: int) -> bytes:
        chunks: list[bytes] = []
        while n:
            if self.deadline is not None:
                left = self.deadline - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    raise TimeoutError
            chunk = os.read(fd, min(n, 1 << 20))
            if not chunk:
                raise EOFError("the other end closed the stream")
            if not self.started:
                self.started = True
                if self.then is not None and self.deadline is not None:
                    self.deadline = max(self.deadline, time.monotonic() + self.then)
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

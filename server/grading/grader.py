"""The one grading call every worker makes, whatever queue fed it.

``grade_submission(slug, source, submission_id, judge=...)``: the in-process pool binds
``judge`` with ``functools.partial``; the procrastinate task
(server/grading/procrastinate_backend.py) does the same with a judge created in its
worker process.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from server.config import Settings

if TYPE_CHECKING:
    from exercises.judge import GradeReport, Judge

GradeFunction = Callable[[str, str, int], "GradeReport"]


def sandbox_limits(settings: Settings) -> Any:
    """The jail limits from settings, as the sandbox's ``SandboxLimits``."""
    from sandbox.protocol import SandboxLimits

    fields = {f.name for f in dataclasses.fields(SandboxLimits)}
    limits: dict[str, Any] = {
        "cpu_seconds": settings.CPU_SECONDS,
        "wall_seconds": settings.WALL_SECONDS,
        "memory_bytes": settings.MEMORY_BYTES,
    }
    # OUTPUT_BYTES caps the stdout/stderr we keep. The sandbox separates that cap
    # (captured_output_bytes) from the largest file the child may write (output_bytes,
    # which also bounds the result tensors); use the former when it exists so a large
    # result file is not mistaken for an output-limit breach.
    if "captured_output_bytes" in fields:
        limits["captured_output_bytes"] = settings.OUTPUT_BYTES
    else:
        limits["output_bytes"] = settings.OUTPUT_BYTES
    return SandboxLimits(**limits)


def build_judge(settings: Settings, device: str = "cpu") -> Judge:
    """Create the judge (it starts warm jail hosts); call ``close()`` on it at shutdown.

    ``device="cuda"`` on a GPU worker (``ppo-grader worker --queue gpu``)."""
    from exercises.judge import Judge

    return Judge(
        secret=settings.secret_bytes,
        limits=sandbox_limits(settings),
        pool_size=settings.WORKERS,
        device=device,
    )


def grade_submission(
    exercise_slug: str, source: str, submission_id: int, *, judge: Judge
) -> GradeReport:
    """Grade one submission (blocking). The submission id is the public part of the seed;
    the judge mixes in the secret so visible cases cannot be memorised."""
    return judge.grade(exercise_slug, source, seed=submission_id)

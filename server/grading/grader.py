"""The one grading call every worker makes, whatever queue fed it.

``grade_submission(slug, source, submission_id, judge=...)``: the in-process pool binds
``judge`` with ``functools.partial``; the procrastinate task
(server/grading/procrastinate_backend.py) does the same with a judge created in its
worker process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from server.config import Settings

if TYPE_CHECKING:
    from exercises.judge import Judge
    from exercises.report import GradeReport

GradeFunction = Callable[[str, str, int], "GradeReport"]


def sandbox_limits(settings: Settings) -> Any:
    """The jail limits from settings, as the sandbox's ``SandboxLimits``."""
    from sandbox.protocol import SandboxLimits

    limits: dict[str, Any] = {
        "cpu_seconds": settings.CPU_SECONDS,
        "wall_seconds": settings.WALL_SECONDS,
        "memory_bytes": settings.MEMORY_BYTES,
        "output_bytes": settings.FILE_BYTES,
        "captured_output_bytes": settings.OUTPUT_BYTES,
    }
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


def grade_submission(exercise_slug: str, source: str, submission_id: int, *, judge: Judge) -> GradeReport:
    """Grade one submission (blocking). The submission id is the public part of the seed;
    the judge mixes in the secret so visible cases cannot be memorised."""
    return judge.grade(exercise_slug, source, seed=submission_id)


def verdict_versions(exercise_slug: str) -> tuple[str, str]:
    """(content version, grader version) of what this process grades ``exercise_slug`` (a slug,
    or slug@version) with, stored on the verdict; the content part is "unknown" for a slug the
    catalogue lacks (and a stored version this process cannot find)."""
    from exercises.registry import UnknownExercise, get_exercise
    from exercises.versions import UNKNOWN_VERSION, content_version, grader_version, split_ref

    if split_ref(exercise_slug)[1] is not None:  # a stored version: what it is, without loading it
        return str(split_ref(exercise_slug)[1]), grader_version()
    try:
        content = content_version(get_exercise(exercise_slug))
    except UnknownExercise:
        content = UNKNOWN_VERSION
    return content, grader_version()

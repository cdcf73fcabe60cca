"""What the judge says about one submission: the verdict list, the report and its checks.

These types are the judge's whole answer, as the server stores it and every renderer shows
it. They are importable without torch (the server's models and the API read them), and so
is everything else here: the caps of a report's texts (cut by the one capper,
:func:`sandbox.text.cap`) and tracebacks shown once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from sandbox.text import cap


class Verdict(StrEnum):
    """Closed list of verdicts; ``INTERNAL_ERROR`` is the grader's fault and never counts.

    ``GRADED`` is the one verdict with a score (0-100). Every other one is how the jail's visit
    ended (``sandbox.protocol.JobStatus``, whose ``ok`` becomes ``graded``): the sandbox cannot
    import this list, so a test ties the two (tests/exercises/test_report.py).
    """

    GRADED = "graded"
    SYNTAX_ERROR = "syntax_error"
    MISSING_FUNCTION = "missing_function"
    RUNTIME_ERROR = "runtime_error"
    TIME_LIMIT = "time_limit"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    CRASHED = "crashed"
    INTERNAL_ERROR = "internal_error"


#: The verdict names, in order.
VERDICTS: tuple[str, ...] = tuple(v.value for v in Verdict)

#: Longest check message kept: learners' error messages and tracebacks are quoted in them.
MESSAGE_CAP = 4 << 10
#: Longest mistake title kept on a check.
TITLE_CAP = 400
#: Longest stdout or stderr kept (the jail keeps its head and tail already).
OUTPUT_CAP = 8 << 10


#: How a withheld check's message opens (``exercises.scoring.withhold_contract_points``): it
#: passed, and its points wait for the core values to be right. Every view shows it as such, a
#: score-only one too (``server.courses.feedback_policy``); here, beside the outcome it marks, so
#: that the server reads it without importing the scoring (and torch).
WITHHELD = "Not counted yet:"


@dataclass
class CheckOutcome:
    """One check's result, as stored and shown."""

    name: str
    weight: float
    passed: bool
    message: str = ""
    #: The title of the mistake named on this failed check (display text).
    mistake_title: str | None = None
    hidden: bool = False
    #: The check's stable id, ``"<slug>/<check>"``: what is stored and grouped by.
    check_id: str | None = None
    #: The named mistake's stable id, ``"<slug>/<mistake>"`` (None when none is named).
    mistake_id: str | None = None
    #: The fact only the learner's process reports, when this check rests on one ("": none,
    #: the judge confirmed the evidence). Stored on the check's row, where the boards read it
    #: (``server.courses.counted.submission_board``): a self-reported check earns no board place.
    self_reported: str = ""


@dataclass
class GradeReport:
    """The judge's verdict on one submission."""

    verdict: str
    score: float | None
    message: str
    checks: list[CheckOutcome] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    peak_memory_bytes: int | None = None
    cpu_seconds: float | None = None
    line: int | None = None
    #: The mistakes found, each once: {"mistake_id": id, "title", "fix", "checks": [check names]}.
    diagnosis: list[dict[str, Any]] = field(default_factory=list)
    #: Root causes and summary for every renderer (exercises/feedback.py).
    feedback: dict[str, Any] | None = None


def cap_messages(outcomes: Iterable[CheckOutcome]) -> None:
    """Every check's message and mistake title within its cap."""
    for outcome in outcomes:
        outcome.message = cap(outcome.message, MESSAGE_CAP)
        outcome.mistake_title = cap(outcome.mistake_title, TITLE_CAP) if outcome.mistake_title else None


def shorten_repeated_tracebacks(outcomes: Iterable[CheckOutcome], tracebacks: set[str]) -> None:
    """Show each distinct traceback of the learner's once; later checks point back to it.

    A function that raises on every call would otherwise repeat the same traceback in every
    failing check.
    """
    shown: set[str] = set()
    for outcome in outcomes:
        for tb in tracebacks:
            if tb in outcome.message:
                if tb in shown:
                    outcome.message = outcome.message.replace("\n" + tb, " (traceback as above)").replace(
                        tb, "(traceback as above)"
                    )
                shown.add(tb)

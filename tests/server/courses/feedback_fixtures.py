"""A graded report whose learner code printed and raised what it was given (the judge's inputs),
so that a test can see exactly which of it a learner is shown under each feedback policy."""

from __future__ import annotations

from typing import Any

from exercises.report import CheckOutcome, GradeReport

#: What the learner's code raised with on a hidden input (``raise ValueError(str(x))``).
RAISED = "SECRET-RAISED-0.4711"
#: What it printed (``print(x)``).
PRINTED = "SECRET-PRINTED-0.4711"
#: The judge's expected/got text of a failed value check.
EXPECTED = "expected -1.2, got -2.0"
#: The same mismatch under the report view: where and by how much, not the learner's value.
EXPECTED_CUT = "expected -1.2, got another value (off by about 1e-1, about 1e-1 relative)"
TRACEBACK = (
    'Traceback (most recent call last):\n  File "mine.py", line 3, in compute_actor_loss\n'
    f"    raise ValueError(str(ratio))\nValueError: {RAISED}"
)
CHECK_NAMES = ["value", "gradient", "clip"]


def leaky_report() -> GradeReport:
    """60 points: a value check passes, one fails on the learner's exception, one on a wrong value."""
    raised = f"Raised ValueError: {RAISED} on input ratio: (4, 8) [case 3, seed 17]\n{TRACEBACK}"
    wrong = f"Wrong loss on input ratio: (4, 8) [case 2, seed 17]: {EXPECTED}. This matches a known mistake: max instead of min"
    checks = [
        CheckOutcome("value", 60, True, "ok", check_id="actor-loss/value"),
        CheckOutcome("gradient", 20, False, raised, check_id="actor-loss/gradient"),
        CheckOutcome("clip", 20, False, wrong, "max instead of min",
                     check_id="actor-loss/clip", mistake_id="actor-loss/max-for-min"),
    ]
    feedback: dict[str, Any] = {
        "root_causes": [{
            "exception": "ValueError", "message": RAISED,
            "location": {"file": "mine.py", "line": 3, "column": 5, "end_column": 34,
                         "function": "compute_actor_loss", "source": "    raise ValueError(str(ratio))"},
            "traceback": TRACEBACK, "phase": "call", "calls": 4, "total_calls": 12,
            "checks": ["gradient"], "checks_line": "1 of 3 checks: gradient",
            "headline": "Your function raised ValueError on 4 of 12 calls (1 check)",
        }],
        "diagnosis": [{"mistake_id": "actor-loss/max-for-min", "title": "max instead of min",
                       "fix": "take the min", "checks": ["clip"]}],
        "summary": {
            "verdict": "graded", "score": 60.0, "checks_passed": 1, "checks_total": 3,
            "headline": "1 of 3 checks passed.", "next_step": "Fix this ValueError first: it explains 1 of the 2 failed checks.",
            "details": [{"check": "gradient", "text": f"Raised ValueError: {RAISED}", "cause": 1},
                        {"check": "clip", "text": f"Wrong loss: {EXPECTED}.", "cause": None}],
        },
    }
    return GradeReport(verdict="graded", score=60.0, message="1 of 3 checks passed.", checks=checks,
                       stdout=f"{PRINTED}\n", stderr=f"warning: {PRINTED}\n", timings={"grade_seconds": 0.1},
                       peak_memory_bytes=1000, cpu_seconds=0.1, feedback=feedback)

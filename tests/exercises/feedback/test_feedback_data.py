"""exercises/feedback.py: root causes, locations, suggestions and the stored form, on its own
(hostile jail text included) and on runs of the real judge."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from exercises.feedback import (
    JAIL_FILENAME,
    MAX_ROOT_CAUSES,
    MAX_TRACEBACK,
    diagnosis_data,
    for_learner,
    from_run,
    location_from_traceback,
    safe_filename,
    suggest,
    syntax_error_location,
)
from exercises.report import CheckOutcome, GradeReport
from sandbox.protocol import CallError

SOURCE = "import torch\n\n\ndef f(values):\n    x = 1\n    return value + x\n"
TRACEBACK = (
    '  File "submission.py", line 6, in f\n    return value + x\n           ^^^^^\n'
    "NameError: name 'value' is not defined\n"
)


@dataclass
class _Outcome:
    error: Any = None
    output: Any = None
    grads: dict[str, Any] = field(default_factory=dict)


def _error(line: int = 6, kind: str = "NameError", message: str = "name 'value' is not defined") -> CallError:
    tb = TRACEBACK.replace("line 6", f"line {line}").replace("NameError: name 'value' is not defined",
                                                              f"{kind}: {message}")
    return CallError(type=kind, classes=[kind, "Exception"], message=message, traceback=tb)


def test_location_comes_from_the_caret_and_the_judges_copy_of_the_source() -> None:
    loc = location_from_traceback(TRACEBACK, SOURCE)
    assert loc == {"file": JAIL_FILENAME, "line": 6, "column": 12, "end_column": 17, "function": "f",
                   "source": "    return value + x"}


@pytest.mark.parametrize("traceback", [
    '  File "submission.py", line 99, in f\n',           # a line the file does not have
    '  File "submission.py", line 99999999999999999, in f\n',
    '  File "elsewhere.py", line 2, in f\n',             # not the learner's file
    "garbage" * 1000,
    "",
])
def test_a_traceback_that_does_not_fit_the_source_gives_no_location(traceback: str) -> None:
    assert location_from_traceback(traceback, SOURCE) is None


def test_a_caret_line_that_lies_falls_back_to_the_whole_line() -> None:
    tb = '  File "submission.py", line 6, in f\n    something else entirely\n    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n'
    loc = location_from_traceback(tb, SOURCE)
    assert loc is not None and (loc["column"], loc["end_column"]) == (5, 21)


def test_syntax_error_location_has_the_column_of_the_parser() -> None:
    loc, message = syntax_error_location("def f(:\n    pass\n", 1)
    assert message == "invalid syntax"
    assert loc is not None and (loc["line"], loc["column"], loc["source"]) == (1, 7, "def f(:")


def _report(checks: list[CheckOutcome], verdict: str = "graded") -> GradeReport:
    score = sum(c.weight for c in checks if c.passed)
    return GradeReport(verdict=verdict, score=score, message="", checks=checks)


def test_one_exception_on_every_call_is_one_root_cause_listing_its_checks() -> None:
    err = _error()
    raised = f"Raised NameError: name 'value' is not defined on input x\n{err.traceback}"
    checks = [CheckOutcome("values", 50, False, raised), CheckOutcome("grads", 30, False, raised),
              CheckOutcome("shapes", 20, True, "ok")]
    data = from_run(_report(checks), SOURCE, {"c1": _Outcome(err), "c2": _Outcome(err)}, "f")
    (cause,) = data["root_causes"]
    assert cause["headline"] == "Your function raised NameError on every call (2 checks)"
    assert cause["checks"] == ["values", "grads"]
    assert cause["checks_line"] == "2 of 3 checks, all but shapes"
    assert [d["cause"] for d in data["summary"]["details"]] == [1, 1]
    assert data["summary"]["next_step"] == "Fix this NameError first: it explains all 2 failed checks."


def test_different_lines_are_different_causes_and_unmentioned_errors_are_none() -> None:
    a, b = _error(6), _error(5, "ZeroDivisionError", "division by zero")
    contract = CallError(type="ValueError", classes=["ValueError"], message="shapes differ", traceback="")
    checks = [CheckOutcome("values", 50, False, "Raised NameError: name 'value' is not defined on input x"),
              CheckOutcome("zeros", 30, False, "Raised ZeroDivisionError: division by zero on input y"),
              CheckOutcome("ValueError on shapes", 20, True, "ok")]
    outcomes = {"1": _Outcome(a), "2": _Outcome(a), "3": _Outcome(b), "4": _Outcome(contract), "5": _Outcome()}
    data = from_run(_report(checks), SOURCE, outcomes, "f")
    heads = [c["headline"] for c in data["root_causes"]]
    # of the calls that raised nothing else: 2 NameErrors and one clean call; 1 ZeroDivisionError and the clean one
    assert heads == ["Your function raised NameError on 2 of 3 calls (1 check)",
                     "Your function raised ZeroDivisionError on 1 of 2 calls (1 check)"]


def test_root_causes_and_tracebacks_are_capped() -> None:
    checks, outcomes = [], {}
    for i in range(20):
        err = CallError(type=f"E{i}", classes=[f"E{i}"], message="m" * 5000,
                        traceback=f'  File "submission.py", line {i % 6 + 1}, in f\n' + "x" * 50_000)
        outcomes[str(i)] = _Outcome(err)
        checks.append(CheckOutcome(f"c{i}", 5, False, f"Raised E{i}: {'m' * 5000}"))
    data = from_run(_report(checks), SOURCE, outcomes, "f")
    assert len(data["root_causes"]) == MAX_ROOT_CAUSES
    assert all(len(c["traceback"]) <= MAX_TRACEBACK for c in data["root_causes"])


def test_near_misses_are_suggested_and_far_ones_are_not() -> None:
    assert suggest("gea", ["gae", "whiten", "kl-penalty"]) == "gae"
    assert suggest("compute_gea", ["compute_gae", "compute_actor_loss"]) == "compute_gae"
    assert suggest("banana", ["gae", "whiten"]) is None


def test_missing_function_says_did_you_mean() -> None:
    report = GradeReport(verdict="missing_function", score=0.0, message="Your file does not define compute_gae().")
    data = from_run(report, "def compute_gea(r, v):\n    return r\n", None, "compute_gae")
    assert "did you mean compute_gae?" in data["summary"]["headline"]
    assert data["summary"]["next_step"] == "Rename compute_gea() to compute_gae()."


@pytest.mark.parametrize(("sent", "kept"), [
    ("typo.py", "typo.py"), ("/home/ada/work/typo.py", "typo.py"), ("C:\\Users\\ada\\typo.py", "typo.py"),
    ('we"ird\x1b[31m.py', "weird[31m.py"), ("", None), (None, None), ("../", None), ("x" * 500 + ".py", "x" * 100),
])
def test_file_names_are_reduced_to_a_safe_base_name(sent: str | None, kept: str | None) -> None:
    assert safe_filename(sent) == kept


def test_the_stored_form_names_the_learners_file_and_takes_the_diagnosis() -> None:
    err = _error()
    checks = [CheckOutcome("values", 100, False, f"Raised NameError: name 'value' is not defined\n{err.traceback}")]
    stored = for_learner(from_run(_report(checks), SOURCE, {"1": _Outcome(err)}, "f"), "/tmp/mine.py",
                         [{"mistake_id": "m", "title": "T", "fix": "do this", "checks": ["values"]}])
    assert stored is not None
    cause = stored["root_causes"][0]
    assert cause["location"]["file"] == "mine.py"
    assert 'File "mine.py", line 6' in cause["traceback"] and "submission.py" not in cause["traceback"]
    assert stored["diagnosis"] == [{"mistake_id": "m", "title": "T", "fix": "do this", "checks": ["values"]}]
    assert for_learner(None, "x.py") is None


def test_diagnosis_objects_of_any_shape_are_read() -> None:
    @dataclass
    class Mistake:
        mistake_id: str
        title: str
        fix: str
        checks: list[str]

    assert diagnosis_data([Mistake("m", "t", "f", ["a"])]) == [
        {"mistake_id": "m", "title": "t", "fix": "f", "checks": ["a"]}]
    # a report stored before the rename (issue 33) named the id ``misconception``
    assert diagnosis_data([{"misconception": "m", "fix": "f", "checks": ["a"]}]) == [
        {"mistake_id": "m", "title": "m", "fix": "f", "checks": ["a"]}]


def test_the_real_judge_attaches_feedback_for_a_typo(graded: dict[str, dict[str, Any]]) -> None:
    typo = graded["typo"]
    (cause,) = typo["feedback"]["root_causes"]
    assert cause["headline"] == "Your function raised NameError on every call (11 checks)"
    assert cause["location"] == {"file": "typo.py", "line": 11, "column": 28, "end_column": 33,
                                 "function": "compute_gae",
                                 "source": "    v = torch.where(valid, value, torch.zeros_like(values)).detach()"}
    assert all("submission.py" not in c["message"] for c in typo["checks"])
    assert any('File "typo.py", line 11' in c["message"] for c in typo["checks"])
    assert graded["correct"]["feedback"]["root_causes"] == []
    assert graded["correct"]["feedback"]["summary"]["next_step"] is None
    syntax = graded["syntax"]["feedback"]["root_causes"][0]
    assert (syntax["location"]["line"], syntax["location"]["column"], syntax["message"]) == (5, 34, "'(' was never closed")
    assert "did you mean compute_gae?" in graded["wrong_name"]["message"].lower()


def test_an_import_time_error_is_a_root_cause_from_its_structured_fields() -> None:
    """The jail's import error arrives as fields (``JobResult.import_error``), never as text
    parsed back: a message that only says it is no cause, fields of the wrong type are none."""
    said = "Your module raised NameError while being imported: name 'value' is not defined\n" + TRACEBACK
    report = GradeReport(verdict="runtime_error", score=0.0, message=said)
    cause = from_run(report, SOURCE, import_error=_error())["root_causes"][0]
    assert (cause["exception"], cause["phase"], cause["location"]["line"]) == ("NameError", "import", 6)
    assert cause["headline"] == "Your file raised NameError while being imported"
    assert from_run(report, SOURCE)["root_causes"] == []  # the text alone is never parsed back
    forged = CallError(type="NameError", classes=["NameError"], message=["not", "text"], traceback="")  # type: ignore[arg-type]
    assert from_run(report, SOURCE, import_error=forged)["root_causes"] == []
    huge = _error(message="x" * 10**6)
    assert len(from_run(report, SOURCE, import_error=huge)["root_causes"][0]["message"]) <= 500 + 40


def test_the_jail_reports_an_import_error_as_validated_fields() -> None:
    import json

    from sandbox.protocol import JobResult, JobStatus, SandboxLimits
    from sandbox.verdicts import UNNAMED_TYPE, _read_result

    child = {"status": "runtime_error", "error": {"type": "Bad Name!", "classes": ["NameError"], "message": "m",
                                                  "traceback": "tb", "phase": "import"}}
    res = JobResult(JobStatus.OK)
    _read_result(res, {"result.json": json.dumps(child).encode()}, 1, SandboxLimits())
    assert res.status is JobStatus.RUNTIME_ERROR and res.import_error is not None
    assert (res.import_error.type, res.import_error.message, res.import_error.traceback) == (UNNAMED_TYPE, "m", "tb")
    child["error"]["message"] = 7  # a field of the wrong type: the child's doing
    res = JobResult(JobStatus.OK)
    _read_result(res, {"result.json": json.dumps(child).encode()}, 1, SandboxLimits())
    assert res.status is JobStatus.CRASHED and res.import_error is None


def test_the_real_judge_names_an_import_time_error_as_its_root_cause(judge: Any) -> None:
    source = "import torch\n\nCLIP = undefined_name * 2\n\ndef compute_gae(*args, **kwargs):\n    return None\n"
    report = judge.grade("gae", source, 3)
    assert report.verdict == "runtime_error"
    (cause,) = report.feedback["root_causes"]
    assert (cause["exception"], cause["phase"], cause["location"]["line"]) == ("NameError", "import", 3)

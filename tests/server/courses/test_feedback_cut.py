"""The report view's cut on the judge's sentences (review 4, findings 6 and 7): the learner's
exception, returned numbers, shapes and reprs go, where and by how much stay."""

from __future__ import annotations

import re

import pytest
import torch

from exercises.compare import explain_mismatch, summarize
from server.courses.feedback_cut import (
    CUT_NOTE,
    REPORT_ROOT_CAUSES,
    cut_check_message,
    cut_feedback,
    cut_location,
    cut_message,
    cut_traceback,
    off_by,
)
from server.courses.source_facts import MODULE_FRAME, SourceFacts
from server.submissions.schemas import CheckDetail, Feedback, FeedbackSummary, Location, RootCause

SECRET = "0.4711"


@pytest.mark.parametrize("text, kept", [
    ("Wrong loss on input x: expected 1, got 0.4711. This matches", "expected 1, got another value (off by about 1e-1"),
    ("expected shape [4, 8], got shape [4711]", "expected shape [4, 8], got another shape"),
    ("got shape [47", "got another shape"),  # cut by a cap mid-number
    ("Expected a dict, got str 'x 0.4711' on input x.", "got a str (not shown"),
    ("Expected keys ['a'], got ['0.4711', 'k2'].", "got another value (not shown"),
    ("Expected a dict, got Opaque <0.4711> on hidden case 3.", "got another value (not shown"),
    # a case described by its inputs (exercises.compare.where): the case stays, the repr goes
    ("Expected a dict, got str 'x 0.4711' on torch.float32 inputs: (x=float32[4]).",
     "got a str (not shown under this exercise's feedback policy) on torch.float32 inputs: (x=float32[4])"),
    (f"Got {summarize(torch.tensor([0.4711, 2.0]))} on input x: a row", "got another value on input x"),
    ("Raised ValueError: 0.4711 on input x\nValueError: 0.4711", f"Raised ValueError {CUT_NOTE}"),
    ("Expected ValueError on input x, got KeyError: 0.4711", f"got KeyError {CUT_NOTE}"),
    ("Raised " + "LEAK_4711_" * 9 + ": boom", f"Raised an exception {CUT_NOTE}"),
    ("Peak memory 47.11 MiB on input x is over the budget of 20.0 MiB", "Peak memory on input x is over the budget"),
])
def test_the_cut_keeps_where_and_how_much_never_the_value(text: str, kept: str) -> None:
    cut = cut_check_message(text)
    assert "4711" not in cut and kept in cut, cut


def test_a_mismatch_keeps_its_first_position_and_error_class_only() -> None:
    """Where the first mismatch is and by how much stay; how many elements differ and the worst
    one go: the learner's code chooses those from the inputs (review 5, attack 8)."""
    message = explain_mismatch(torch.tensor([1.0, 2.0, 0.4711, 7.0]), torch.tensor([1.0, 2.0, 3.0, 1.0]), 1e-4, 1e-5)
    assert message is not None and "2 of 4 elements differ" in message and "worst at [3]" in message
    cut = cut_check_message(f"Wrong loss on input x: {message}.")
    assert cut == (
        "Wrong loss on input x: values differ; first at [2]: expected 3, got another value "
        "(off by about 1e0, about 1e-1 relative)."
    )
    assert off_by(1.0, 1.0) == "off by less than the printed digits" and "finite" in off_by(float("nan"), 1.0)


def test_import_time_and_missing_function_messages_are_cut() -> None:
    assert cut_message("runtime_error", f"Your module raised RuntimeError while being imported: {SECRET}", None) == (
        f"Your module raised an exception while being imported: {CUT_NOTE}")
    assert SECRET not in cut_message("missing_function", f"functions defined: f_{SECRET.replace('.', '_')}", None)


def test_a_cut_location_is_a_code_line_and_what_the_source_says_of_it() -> None:
    """Review 5 and 6: a frame's name made at run time, the jail's printed source line and its
    caret's columns never reach the cut; the line's function, span and text are the stored
    source's, so a location carries its line number only."""
    facts = SourceFacts("def f(x):\n    # a comment\n    return g(x)\n", "mine.py")
    stored = Location(file="x.py", line=3, column=12, end_column=13, function="LEAK_123", source="LEAK_456")
    location = cut_location(stored, facts)
    assert location == Location(file="mine.py", line=3, column=5, end_column=16, function="f", source="    return g(x)")
    cut = cut_traceback(location, "ValueError")
    assert "LEAK" not in cut
    assert cut.splitlines() == [
        "Traceback (most recent call last):", '  File "mine.py", line 3, in f', "    return g(x)", f"ValueError: {CUT_NOTE}"
    ]
    assert cut_location(stored.model_copy(update={"line": 2}), facts) is None  # a comment: no code raises there
    assert cut_location(stored.model_copy(update={"line": 9}), facts) is None  # past the file
    assert cut_location(stored, None) is None and cut_traceback(None, "ValueError") == f"ValueError: {CUT_NOTE}"


def test_a_lines_function_is_the_one_the_source_defines_around_it() -> None:
    source = (
        "import torch\n"  # 1
        "def outer(x):\n"  # 2
        "    def inner(y):\n"  # 3
        "        return y / 0\n"  # 4
        "    return inner(x)\n"  # 5
        "class Box:\n"  # 6
        "    def get(self): return 1 / 0\n"  # 7
        "    size = 3\n"  # 8
        "def f_0001(): pass\n"  # 9
        "x = outer(1)\n"  # 10
    )
    facts = SourceFacts(source, None)
    got = [facts.function_at(line) for line in range(1, 11)]
    assert got == [MODULE_FRAME, MODULE_FRAME, "outer", "inner", "outer", MODULE_FRAME, "get", "Box", "f_0001", MODULE_FRAME]
    assert SourceFacts("def broken(:\n", None).function_at(1) == MODULE_FRAME


def _cause(n: int) -> RootCause:
    return RootCause(
        exception="ValueError", message=f"m{n}", phase="call", calls=1, total_calls=8, checks=[f"c{n}"],
        location=Location(file="mine.py", line=n, column=1, end_column=2, function="f", source=""),
        traceback=f'  File "mine.py", line {n}, in f\n    x\nValueError: m{n}', headline="",
    )


def test_a_report_shows_a_fixed_number_of_causes_with_one_line_each() -> None:
    """Review 6, attack 2: every cause's place is the learner's to choose, so the report keeps a
    fixed number of causes; a check explained by one it leaves out points at none."""
    facts = SourceFacts("".join(f"def f_{i}(): pass\n" for i in range(1, 9)), "mine.py")
    causes = [_cause(n) for n in range(1, 6)]
    details = [CheckDetail(check=f"c{n}", text="Raised ValueError: m on input x", cause=n) for n in range(1, 6)]
    summary = FeedbackSummary(verdict="graded", score=0.0, checks_passed=0, checks_total=5, headline="",
                              next_step=None, details=details)
    cut = cut_feedback(Feedback(root_causes=causes, diagnosis=[], summary=summary), facts)
    assert len(cut.root_causes) == REPORT_ROOT_CAUSES == 3
    for n, cause in enumerate(cut.root_causes, 1):
        assert cause.location is not None and cause.location.function == f"f_{n}"
        assert re.findall(r"line (\d+)", cause.traceback) == [str(n)]
    assert [d.cause for d in cut.summary.details] == [1, 2, 3, None, None]

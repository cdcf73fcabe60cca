"""The terminal layout of feedback data, at widths where it has to give way."""

from __future__ import annotations

from typing import Any

from ppo_submit.render import plain_text, submission_result


def _sub(source: str, column: int, **cause: Any) -> dict[str, Any]:
    location = {"file": "mine.py", "line": 120, "column": column, "end_column": column + 3,
                "function": "f", "source": source}
    root = {"exception": "KeyError", "message": "'x'", "location": location, "traceback": "", "phase": "call",
            "calls": 3, "total_calls": 3, "checks": ["a", "b"], "checks_line": "all 2 checks",
            "headline": "Your function raised KeyError on every call (2 checks)", **cause}
    return {
        "id": 1, "exercise": "gae", "status": "done", "verdict": "graded", "score": 0.0, "message": "",
        "filename": "mine.py",
        "checks": [{"name": "a", "weight": 50, "passed": False, "message": "Raised KeyError: 'x'"},
                   {"name": "b", "weight": 50, "passed": False, "message": "Raised KeyError: 'x'"}],
        "feedback": {"root_causes": [root], "diagnosis": [], "summary": {
            "verdict": "graded", "score": 0.0, "checks_passed": 0, "checks_total": 2, "headline": "",
            "next_step": "Fix this KeyError first: it explains all 2 failed checks.",
            "details": [{"check": "a", "text": "Raised KeyError: 'x'", "cause": 1},
                        {"check": "b", "text": "Raised KeyError: 'x'", "cause": 1}]}},
    }


def test_the_caret_sits_under_the_column_with_a_three_digit_gutter() -> None:
    out = plain_text(submission_result(_sub("    return d['x']", 12)), 80).splitlines()
    at = next(i for i, line in enumerate(out) if line.startswith("120 | "))
    assert out[at + 1] == "    |            ^^^ KeyError: 'x'"
    assert out[at][len("120 | ") + 11:] == "d['x']"  # column 12, under the first caret
    assert "  = failed: all 2 checks" in out


def test_a_line_too_wide_to_underline_is_wrapped_and_its_column_named() -> None:
    source = "    return " + " + ".join(f"d['k{i}']" for i in range(30))
    out = plain_text(submission_result(_sub(source, 200)), 80)
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "= at column 200: KeyError: 'x'" in out
    assert "^" not in out


def test_a_label_too_long_beside_the_caret_goes_below_it() -> None:
    sub = _sub("    return d['x']", 12)
    sub["feedback"]["root_causes"][0]["message"] = "a long message " * 8
    out = plain_text(submission_result(sub), 80).splitlines()
    at = next(i for i, line in enumerate(out) if line.startswith("120 | "))
    assert out[at + 1].rstrip().endswith("^^^")
    assert out[at + 2].lstrip().startswith("= KeyError: a long message")


def test_several_causes_are_numbered_and_the_table_points_at_each() -> None:
    sub = _sub("    return d['x']", 12)
    second = {**sub["feedback"]["root_causes"][0], "exception": "ZeroDivisionError", "checks": ["b"],
              "headline": "Your function raised ZeroDivisionError on 1 of 3 calls (1 check)"}
    sub["feedback"]["root_causes"][0]["checks"] = ["a"]
    sub["feedback"]["root_causes"].append(second)
    sub["feedback"]["summary"]["details"][1]["cause"] = 2
    out = plain_text(submission_result(sub), 100)
    assert "error[1]: Your function raised KeyError" in out and "error[2]: Your function raised ZeroDivisionError" in out
    assert "see error[1] above" in out and "see error[2] above" in out

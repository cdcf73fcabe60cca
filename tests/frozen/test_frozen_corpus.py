"""The judge says exactly what it said about the frozen corpus (see tests/frozen/corpus.py).

Each exercise's folder is one test: its reference, starter and mutants graded through the
real jail at a fixed secret and seed must give byte-identical scores, check results, named
mistakes and feedback data. ``UPDATE_FROZEN=1`` rewrites the expected files instead (only for
a change meant to alter grading; say why in the commit).
"""

from __future__ import annotations

import os

import pytest

from .corpus import EXPECTED, dumps, folders, grade_folder

UPDATE = os.environ.get("UPDATE_FROZEN") == "1"


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("folder", folders())
def test_the_judge_says_what_it_said(judge, folder: str) -> None:
    text = dumps(grade_folder(judge, folder))
    path = EXPECTED / f"{folder}.json"
    if UPDATE:
        EXPECTED.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    want = path.read_text(encoding="utf-8")
    if text != want:
        # the first difference, named by entry, check and field, so the failure says what moved
        import difflib

        diff = "".join(list(difflib.unified_diff(want.splitlines(True), text.splitlines(True),
                                                 f"expected/{folder}.json", "now", n=2))[:80])
        pytest.fail(f"the judge's output on the frozen corpus changed ({folder}):\n{diff}")

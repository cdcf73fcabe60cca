"""The report's closed lists and ids: one verdict list everywhere, report types without torch."""

from __future__ import annotations

import subprocess
import sys

from exercises.registry import all_exercises
from exercises.report import VERDICTS, Verdict
from sandbox.protocol import JobStatus
from server import models


def test_every_way_a_visit_ends_is_a_verdict_and_ok_is_graded() -> None:
    # The sandbox cannot import the verdict list (it knows nothing of exercises): its statuses
    # are the verdicts, with "ok" for the one the judge turns into "graded".
    assert {s.value for s in JobStatus} - {"ok"} == set(VERDICTS) - {"graded"}
    assert VERDICTS == tuple(Verdict) and VERDICTS[0] == "graded"


def test_the_server_stores_the_judges_verdict_list() -> None:
    assert models.Verdict is Verdict


def test_report_types_and_server_models_import_without_torch() -> None:
    code = "import exercises.report, server.models, sys; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_every_check_and_mistake_has_one_id_of_its_exercise() -> None:
    check_ids = [ex.check_id(c) for ex in all_exercises() for c in ex.checks]
    mistake_ids = [m.id for ex in all_exercises() for m in ex.mistakes]
    assert len(set(check_ids)) == len(check_ids) and len(set(mistake_ids)) == len(mistake_ids)
    for ex in all_exercises():
        assert all(m.id == f"{ex.slug}/{m.key}" and "/" not in m.key for m in ex.mistakes)
        assert all(ex.check_id(c).startswith(f"{ex.slug}/") for c in ex.checks)
    assert max(map(len, check_ids + mistake_ids)) <= models.submission.ID_CHARS

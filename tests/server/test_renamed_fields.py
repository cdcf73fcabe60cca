"""Fields renamed by issue 33 keep their old name for one release (docs/api.md): the OpenAPI
schema marks each old name deprecated, the answer carries it with the new field's value whatever
was done to the record (a policy's copy included), and a body or a stored record with only the
old name reads as the new one."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.app import create_app
from server.config import Settings
from server.courses.score_schemas import ScorePublic
from server.stats.schemas import ExerciseStats, MistakeStats
from server.submissions.schemas import CheckPublic, Mistake
from tests.server.fakes import FakeGrader

#: (schema, old name, new name), as docs/api.md lists them.
RENAMED = [
    ("CheckPublic", "misconception", "mistake_title"),
    ("Mistake", "misconception", "mistake_id"),
    ("MistakeStats", "misconception", "mistake_title"),
    ("ExerciseStats", "misconceptions", "mistakes"),
    ("ScorePublic", "shown", "described"),
    ("SimilarityReport", "shown", "pairs_run"),
]


def test_the_schema_marks_every_old_name_deprecated_and_only_those(tmp_path: Path) -> None:
    app = create_app(Settings(DATABASE_URL=f"sqlite:///{tmp_path / 'g.db'}", WORKERS=1), FakeGrader().factory)
    schemas = app.openapi()["components"]["schemas"]
    for name, old, new in RENAMED:
        properties = schemas[name]["properties"]
        assert properties[old].get("deprecated") is True, (name, old)
        assert not properties[new].get("deprecated"), (name, new)
        assert f"`{new}`" in properties[old]["description"]
    deprecated = {(n, f) for n, s in schemas.items() for f, p in s.get("properties", {}).items() if p.get("deprecated")}
    assert deprecated == {(name, old) for name, old, _ in RENAMED}
    doc = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text(encoding="utf-8")
    assert all(f"`{old}` | `{new}`" in doc for _, old, new in RENAMED)


def _check(**fields: object) -> CheckPublic:
    return CheckPublic.model_validate({"name": "clip", "weight": 25, "passed": False, "message": "", **fields})


def test_the_old_name_always_says_what_the_new_one_says() -> None:
    named = _check(mistake_title="max instead of min", mistake_id="actor-loss/max-for-min")
    assert named.model_dump()["misconception"] == "max instead of min"
    # a view that blanks the new field blanks the old one too (the feedback policy copies records)
    blanked = named.model_copy(update={"mistake_title": None}).model_dump(mode="json")
    assert blanked["mistake_title"] is None and blanked["misconception"] is None
    stats = ExerciseStats.model_validate({
        "exercise": "x", "submissions": 1, "graded_submissions": 1, "learners_attempted": 1, "learners_solved": 0,
        "score_distribution": [], "checks": [],
        "mistakes": [MistakeStats(mistake_title="t", mistake_id="x/t", learners=1, submissions=1)],
    }).model_dump(mode="json")
    assert stats["misconceptions"] == stats["mistakes"] and stats["mistakes"][0]["misconception"] == "t"


@pytest.mark.parametrize("key", ["mistake_id", "misconception"])
def test_a_record_with_only_the_old_name_reads_as_the_new_one(key: str) -> None:
    mistake = Mistake.model_validate({key: "x/t", "title": "t", "fix": None, "checks": []})
    assert (mistake.mistake_id, mistake.model_dump()["misconception"]) == ("x/t", "x/t")
    assert _check(misconception="old title").mistake_title == "old title"
    score = ScorePublic.model_validate({
        "learner": "a", "display_name": "A", "exercise": "x", "counted_score": 90, "raw_best_score": 100,
        "counted_submission_id": 1, "late": True, "late_seconds": 60, "penalty_percent": 10, "extended_to": None,
        "override": None, "excused": None, "attempts": 1, "shown": "90 (raw 100, late 1m: -10%)",
    })
    assert score.described == score.model_dump()["shown"] == "90 (raw 100, late 1m: -10%)"

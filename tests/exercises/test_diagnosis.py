"""Several mistakes, each named where it applies: the compound corpus and the report's diagnosis.

The corpus (``exercises/corpus.py``) holds, per exercise, 12 files with 2 or 3 catalogued
mistakes drawn from the fault switches. Diagnosis must name the injected mistakes (recall at
least 95% overall), name nothing else (precision at least 98%) and never name a mistake on a
check it does not explain. A few files go through the real jail too.
"""

from __future__ import annotations

import json
from functools import cache

import pytest

from exercises.corpus import Scored, build_corpus, evaluate
from exercises.registry import all_exercises, get_exercise

EXERCISES = all_exercises()
IDS = [e.slug for e in EXERCISES]


@cache
def _scored(slug: str) -> list[Scored]:
    ex = get_exercise(slug)
    return [evaluate(ex, entry) for entry in build_corpus(ex)]


@pytest.mark.slow
@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_corpus_has_at_least_ten_compound_files(ex):
    scored = _scored(ex.slug)
    assert len(scored) >= 10
    assert all(len(s.entry.faults) in (2, 3) for s in scored)
    assert {len(s.entry.faults) for s in scored} == {2, 3}


@pytest.mark.slow
@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_no_mistake_is_named_on_a_check_it_does_not_explain(ex):
    wrong = [(s.entry.faults, s.wrong_check) for s in _scored(ex.slug) if s.wrong_check]
    assert not wrong


@pytest.mark.slow
@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_most_injected_mistakes_are_named_per_exercise(ex):
    scored = _scored(ex.slug)
    injected = sum(len(s.entry.faults) for s in scored)
    assert sum(s.hits for s in scored) / injected >= 0.85, [(s.entry.faults, sorted(s.named)) for s in scored
                                                            if s.hits < len(s.entry.faults)]


@pytest.mark.slow
def test_corpus_recall_and_precision():
    scored = [s for ex in EXERCISES for s in _scored(ex.slug)]
    injected = sum(len(s.entry.faults) for s in scored)
    hits = sum(s.hits for s in scored)
    named = hits + sum(len(s.false) for s in scored)
    assert hits / injected >= 0.95, f"recall {hits}/{injected}"
    assert hits / named >= 0.98, f"precision {hits}/{named}"


@pytest.mark.slow
@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_compound_file_is_diagnosed_through_the_real_jail(judge, ex):
    scored = next(s for s in _scored(ex.slug) if s.hits == len(s.entry.faults) and not s.false)
    report = judge.grade(ex.slug, scored.entry.source(ex), scored.entry.seed)
    assert report.verdict == "graded", report.message
    json.dumps(report.diagnosis)  # the report's JSON carries it as is
    named = {d["mistake_id"] for d in report.diagnosis}
    injected = {f"{ex.slug}/{f}" for f in scored.entry.faults}
    assert injected <= named, (injected, report.diagnosis)
    assert named - injected <= {f"{ex.slug}/unexplained"}, report.diagnosis
    failed = {c.name for c in report.checks if not c.passed and not c.message.startswith("Not counted yet")}
    by_id = {m.key: m for m in ex.mistakes if m.is_switch}
    for entry in report.diagnosis:
        assert set(entry) == {"mistake_id", "title", "fix", "checks"}
        assert entry["fix"] and entry["title"] and entry["checks"]
        assert set(entry["checks"]) <= failed
        fault = entry["mistake_id"].split("/", 1)[1]
        if fault in by_id:
            explained = {c.name for c in ex.checks if c.id in by_id[fault].explains}
            assert set(entry["checks"]) <= explained, entry


def test_a_correct_file_gets_no_diagnosis(judge):
    ex = get_exercise("actor-loss")
    report = judge.grade(ex.slug, ex.reference_source, 4)
    assert report.score == 100 and report.diagnosis == []


def test_an_unknown_mistake_is_said_to_be_unexplained(judge):
    ex = get_exercise("actor-loss")
    source = ex.reference_source.replace("return -torch.min(pg_loss1, pg_loss2).mean()",
                                         "return -1.5 * torch.min(pg_loss1, pg_loss2).mean()")
    assert source != ex.reference_source
    report = judge.grade(ex.slug, source, 4)
    assert [d["mistake_id"] for d in report.diagnosis] == ["actor-loss/unexplained"]
    values = next(c for c in report.checks if c.name.startswith("value on random inputs"))
    assert not values.passed and values.mistake_title is None
    assert "No known mistake explains this failure" in values.message
    assert "expected" in values.message and "got" in values.message  # the mismatch is shown


def test_contract_points_are_withheld_until_the_values_are_right(judge):
    ex = get_exercise("actor-loss")
    mutant = next(m for m in ex.mistakes if m.key == "sum-not-mean")
    report = judge.grade(ex.slug, mutant.source(ex.function_name), 4)
    shape = next(c for c in report.checks if c.name.startswith("ValueError on mismatched shapes"))
    assert not shape.passed and shape.message.startswith("Not counted yet")
    assert [d["mistake_id"] for d in report.diagnosis] == ["actor-loss/sum-not-mean"]
    assert report.score == sum(c.weight for c in report.checks if c.passed)

"""The error model: every mutant is the reference with exactly one mistake, caught on every seed.

Runs the trusted references and mutants in process (through the harness's own call logic);
``test_catalogue.py`` sends every mutant through the real jail as well.
"""

from __future__ import annotations

from functools import cache

import pytest

from exercises.mistakes import faulty_source, with_faults
from exercises.offline import OfflineRun, grade_offline, regular_cases, score
from exercises.outcomes import run_in_process
from exercises.registry import all_exercises

EXERCISES = all_exercises()
IDS = [e.slug for e in EXERCISES]
SEEDS = range(101, 121)  # 20 seeds


@cache
def _sweep(slug: str) -> dict[str, list[OfflineRun]]:
    """Every value mutant of ``slug`` graded on every seed of SEEDS (the reference too, as "")."""
    ex = next(e for e in EXERCISES if e.slug == slug)
    runs: dict[str, list[OfflineRun]] = {"": []}
    for seed in SEEDS:
        cases = regular_cases(ex, seed)
        want = run_in_process(ex.reference, cases, "reference.py")
        runs[""].append(grade_offline(ex, ex.reference, seed, cases=cases, want=want))
        for m in ex.mistakes:
            if not m.is_memory:
                runs.setdefault(m.id, []).append(grade_offline(ex, m.fn, seed, cases=cases, want=want))
    return runs


@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_every_exercise_has_a_fault_parametrised_reference(ex):
    value_mutants = [m for m in ex.mistakes if not m.is_memory]
    assert value_mutants and all(m.is_switch and m.faulty for m in value_mutants), "mutants are switches of faulty.py"
    assert all(m.explains and m.fix for m in ex.mistakes), "every mistake says which checks it explains and how to fix it"
    faulty = value_mutants[0].faulty
    source = faulty_source(faulty, [], ex.function_name)
    assert "import exercises" not in source and "from exercises" not in source, "mutant files are self-contained"


@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_faulty_reference_with_no_switch_is_the_reference(ex):
    faulty = next(m.faulty for m in ex.mistakes if m.faulty)
    for seed in (1, 2, 3):
        run = grade_offline(ex, with_faults(faulty, []), seed)
        assert not run.failed, (seed, {c: run.results[c][1][:300] for c in run.failed})


@pytest.mark.slow
@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_reference_passes_on_every_seed(ex):
    for run in _sweep(ex.slug)[""]:
        assert not run.failed, {c: run.results[c][1][:300] for c in run.failed}


@pytest.mark.slow
@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_every_mutant_is_caught_on_every_seed(ex):
    """Each check's decisive inputs are built deterministically: no seed lets a mutant through."""
    missed = {name: [r for r in runs if not r.failed] for name, runs in _sweep(ex.slug).items() if name}
    assert not {n: len(m) for n, m in missed.items() if m}, "mutants passing every check on some seeds"
    for name, runs in _sweep(ex.slug).items():
        if name:
            assert all(score(ex, r.results) < 100 for r in runs), name


@pytest.mark.slow
@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_each_mutant_fails_only_checks_its_mistake_explains(ex):
    for m in ex.mistakes:
        if m.is_memory:
            continue
        failed = set().union(*(set(r.failed) for r in _sweep(ex.slug)[m.id]))
        assert failed <= set(m.explains), f"{m.id} fails {sorted(failed - set(m.explains))}, not in its explains"

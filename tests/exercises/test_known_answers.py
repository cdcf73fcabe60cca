"""Verify's known answers (exercises/known_answers.py, issue 32): a reference that contradicts
the starter's own self-tests or the spec's examples is caught, naming which."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from exercises.framework import KnownAnswer
from exercises.known_answers import check_known_answers
from exercises.packs import load_pack, path_pack
from exercises.registry import get_exercise
from exercises.scaffold import new_exercise


def test_the_built_in_references_pass_their_starters_self_tests() -> None:
    assert check_known_answers(get_exercise("kl-penalty")) == []


def test_a_sign_flipped_reference_is_named_by_the_self_test_it_contradicts() -> None:
    exercise = get_exercise("kl-penalty")
    source = exercise.reference_source
    assert source.count("log_probs - ref_log_probs") == 1
    flipped = dataclasses.replace(
        exercise, reference_source=source.replace("log_probs - ref_log_probs", "ref_log_probs - log_probs")
    )
    found = check_known_answers(flipped)
    assert len(found) == 1  # the first failing assertion ends the block
    lines = exercise.starter.splitlines()
    line = next(i for i, t in enumerate(lines, 1) if "# k1 is the default" in t)
    assert found[0].example.startswith(f"the starter's self-test at starter.py line {line} (assert torch.allclose(")
    assert found[0].detail.startswith("AssertionError")


def test_the_scaffold_declares_a_known_answer_its_reference_gives(tmp_path: Path) -> None:
    new_exercise("scaled-diff", tmp_path / "pack")
    (exercise,) = load_pack(path_pack(tmp_path / "pack"))
    assert [e.name for e in exercise.spec.examples] == ["half of 3 - 1 is 1"]
    assert check_known_answers(exercise) == []
    wrong = dataclasses.replace(
        exercise.spec,
        examples=(
            KnownAnswer(
                "doubled", "compute_scaled_diff(torch.tensor([2.0]), torch.tensor([0.0]))", "torch.tensor([4.0])"
            ),
        ),
    )
    found = check_known_answers(dataclasses.replace(exercise, spec=wrong))
    assert [d.example for d in found] == ["the spec's known answer 'doubled'"]
    assert "gave tensor([2.])" in found[0].detail

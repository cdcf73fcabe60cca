"""The second blind corpus (issue 37): its shape, and its proof that every mistake is real.

The corpus lives in tests/exercises/blind_mistakes_2/ (see its README.md). These tests check
that every wrong file parses, defines its exercise's function and has labels; the counts per
exercise, per half and single/compound; that the files are exactly what corpus_spec.py says;
and (slow) that prove.py shows every labelled mistake changing behaviour.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import pathlib
import subprocess
import sys

import pytest

CORPUS = pathlib.Path(__file__).resolve().parent / "blind_mistakes_2"
FAMILIES = {"gradient-path", "aggregation", "numerics", "contract", "masking", "other"}


def _load_build():
    spec = importlib.util.spec_from_file_location("blind_corpus_2_build", CORPUS / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build = _load_build()
LABELS = json.loads((CORPUS / "labels.json").read_text())
WRONG = sorted(str(p.relative_to(CORPUS)) for half in ("dev", "heldout") for p in (CORPUS / half).rglob("*.py"))


def test_every_wrong_file_has_labels_and_every_label_a_file():
    assert sorted(LABELS) == WRONG


@pytest.mark.parametrize("rel", WRONG)
def test_wrong_file_parses_defines_the_function_and_is_labelled(rel):
    _half, slug, _name = rel.split("/")
    source = (CORPUS / rel).read_text()
    tree = ast.parse(source)
    assert any(isinstance(n, ast.FunctionDef) and n.name == build.FUNCTIONS[slug] for n in tree.body)
    labels = LABELS[rel]
    assert 1 <= len(labels) <= 3
    n_lines = len(source.splitlines())
    for label in labels:
        assert set(label) == {"id", "family", "what", "line"}
        assert label["family"] in FAMILIES
        assert label["id"] and label["what"]
        assert 1 <= label["line"] <= n_lines
    assert len({label["id"] for label in labels}) == len(labels)


def test_files_are_their_correct_file_plus_the_labelled_edits():
    made = {rel: text for _slug, _n, _base, _m, rel, text, _lines in build.corpus()}
    assert sorted(made) == WRONG
    for rel, text in made.items():
        assert (CORPUS / rel).read_text() == text, rel
    assert build.labels() == LABELS


def test_counts_per_exercise_per_half_and_single_or_compound():
    assert len(WRONG) >= 130
    assert set(build.FUNCTIONS) == {rel.split("/")[1] for rel in WRONG}
    for slug in build.FUNCTIONS:
        assert len(list((CORPUS / "correct" / slug).glob("*.py"))) >= 3, slug
        for half in ("dev", "heldout"):
            files = [rel for rel in WRONG if rel.startswith(f"{half}/{slug}/")]
            singles = [rel for rel in files if len(LABELS[rel]) == 1]
            assert len(files) == 6, (slug, half)
            assert len(singles) == 3, (slug, half)
    for half in ("dev", "heldout"):
        sizes = [len(LABELS[rel]) for rel in WRONG if rel.startswith(half)]
        assert sizes.count(1) == 33 and sizes.count(2) == 22 and sizes.count(3) == 11, half


def test_families_are_balanced_across_the_halves():
    counts = {half: {f: 0 for f in FAMILIES} for half in ("dev", "heldout")}
    for rel, labels in LABELS.items():
        for label in labels:
            counts[rel.split("/")[0]][label["family"]] += 1
    for family in FAMILIES:
        dev, heldout = counts["dev"][family], counts["heldout"][family]
        assert dev > 0 and heldout > 0, family
        assert abs(dev - heldout) <= max(2, (dev + heldout) // 8), (family, dev, heldout)


@pytest.mark.slow
def test_prove_shows_every_mistake_changing_behaviour():
    done = subprocess.run(
        [sys.executable, str(CORPUS / "prove.py")], capture_output=True, text=True, timeout=1800, check=False
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "0 problems" in done.stdout

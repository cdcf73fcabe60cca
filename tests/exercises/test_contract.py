"""What a learner reads is what is graded, and points need right values.

Every check is announced in its starter's docstring (each check's ``announce`` sentences,
by default its name); a stub or constant answer earns at most 5 points, graded through the
real jail.
"""

from __future__ import annotations

import ast
import re

import pytest

from exercises.registry import all_exercises

EXERCISES = all_exercises()
IDS = [e.slug for e in EXERCISES]
TOLERANCE = ("float64 within 1e-10 relative (+1e-12 absolute), float32 within 1e-4 relative + 1e-5 absolute, "
             "bfloat16 within 2e-2 relative + 2e-2 absolute")


def _docstring(ex) -> str:
    tree = ast.parse(ex.starter)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == ex.function_name)
    return " ".join((ast.get_docstring(fn) or "").split())


@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_starter_announces_every_check(ex):
    doc = _docstring(ex)
    missing = [(c.id, s) for c in ex.checks for s in c.announce if " ".join(s.split()) not in doc]
    assert not missing, f"checks not announced in the starter's docstring: {missing}"
    for c in ex.checks:
        assert f"[{c.weight:g}{'*' if c.gated else ''}]" in doc, f"{c.id}: its points are stated"


@pytest.mark.parametrize("ex", [e for e in EXERCISES if e.slug != "ppo-memory"], ids=lambda e: e.slug)
def test_starter_states_the_tolerance_of_each_dtype(ex):
    assert TOLERANCE in _docstring(ex)


@pytest.mark.parametrize("ex", [e for e in EXERCISES if any(c.needs_memory for c in e.checks)], ids=lambda e: e.slug)
def test_starter_states_the_memory_input_and_budget(ex):
    doc = _docstring(ex)
    assert re.search(r"peak memory on a \d+ x \d+ input", doc), "the measured input size"
    assert "max(1.5 x" in doc and "16 MiB" in doc, "the budget"


@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_core_and_gated_checks_are_declared(ex):
    assert any(c.core for c in ex.checks), "an exercise names its core value checks"
    assert not any(c.core and c.gated for c in ex.checks)
    for c in ex.checks:
        if c.needs_memory or c.id in ("shape_errors", "no_inplace", "dtype_device"):
            assert c.gated, f"{c.id} is a contract detail: its points need right values"


STUBS = {
    "zeros": "torch.zeros_like(v)",
    "times-zero": "v * 0",
    "ones": "torch.ones_like(v)",
}


def stub_source(ex, how: str) -> str:
    """The reference's validation and shapes, with a constant answer: what a stub-writer submits."""
    fill = STUBS[how]
    return (f"import torch\n{ex.reference_source}\n\n_real = {ex.function_name}\n\n\n"
            f"def _const(v):\n"
            f"    if isinstance(v, torch.Tensor):\n"
            f"        return {fill}\n"
            f"    if isinstance(v, (tuple, list)):\n"
            f"        return type(v)(_const(x) for x in v)\n"
            f"    if isinstance(v, dict):\n"
            f"        return {{k: 0 for k in v}}\n"
            f"    return v\n\n\n"
            f"def {ex.function_name}(*args, **kwargs):\n"
            f"    return _const(_real(*args, **kwargs))\n")


@pytest.mark.slow
@pytest.mark.parametrize("how", list(STUBS))
@pytest.mark.parametrize("ex", EXERCISES, ids=IDS)
def test_a_stub_scores_at_most_5(judge, ex, how):
    report = judge.grade(ex.slug, stub_source(ex, how), 31)
    assert report.verdict == "graded", report.message
    passed = [(c.name, c.weight) for c in report.checks if c.passed]
    assert report.score <= 5, f"{how} stub scores {report.score}: {passed}"


ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
CONTRACT_PAGE = (ROOT / "docs" / "contract.md").read_text()
SECTION_SLUGS = dict(re.findall(r"^## §(\d+) `([a-z0-9-]+)`", CONTRACT_PAGE, re.M))
RULE_HEADINGS = set(re.findall(r"^### (.+)$", CONTRACT_PAGE, re.M))


def _citing_files():
    for top in ("exercises", "sandbox", "server", "client"):
        for path in sorted((ROOT / top).rglob("*.py")):
            text = path.read_text()
            if "docs/contract.md" in text:
                yield path, text


def test_the_contract_lives_in_the_repository_and_code_cites_it():
    """Code cites the project's own contract page, never a file outside the repository."""
    outside = [str(p.relative_to(ROOT)) for top in ("exercises", "sandbox", "server", "client")
               for p in (ROOT / top).rglob("*.py") if "EXERCISES.md" in p.read_text()]
    assert not outside, f"cite docs/contract.md instead: {outside}"
    assert len(SECTION_SLUGS) == len(EXERCISES)


def test_every_citation_names_a_real_section_of_the_right_exercise():
    """`docs/contract.md §N` in an exercise package names that exercise; a quoted rule is a heading."""
    wrong = []
    for path, text in _citing_files():
        for number in re.findall(r"docs/contract\.md §(\d+)", text):
            slug = SECTION_SLUGS.get(number)
            package = path.relative_to(ROOT).parts
            if slug is None or (package[0] == "exercises" and len(package) > 2
                                and package[1] != slug.replace("-", "_")):
                wrong.append(f"{path.relative_to(ROOT)}: §{number}")
        for rule in re.findall(r'docs/contract\.md,? \(?"([A-Z][a-z ]+)"', text):
            if rule not in RULE_HEADINGS:
                wrong.append(f"{path.relative_to(ROOT)}: {rule!r}")
    assert not wrong, wrong

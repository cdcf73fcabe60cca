"""The gate an exercise passes before learners see it: ``ppo-grader exercises verify``.

It holds any exercise, built-in or from a course's pack, to what the catalogue's own tests
hold the built-in ones to (``tests/exercises``), and says what fails in words a course author
can act on ("fault clip-advantage is not caught on seed 7 by any check"):

- the checks' points add up to 100;
- the starter announces every check with its points (``[8]``, ``[6*]`` when gated) and the
  per-dtype tolerance, has ``# YOUR CODE`` blocks and self-tests, and does not hold the
  reference's body;
- the cases are deterministic: one seed builds the same cases twice;
- through the real jail, on every seed: the reference scores 100, every known mistake is
  caught, fails only checks its ``explains`` lists and is named on one of them;
- the starter scores below 100 and a stub that validates like the reference but answers zeros
  scores at most 5;
- the reference gives the known answers: the starter's own self-tests and the spec's
  ``examples`` (:mod:`exercises.known_answers`), so a reference that contradicts the spec is
  refused, naming the example.

Seeds are the gate's own (1..20), mixed with the judge's secret like a learner's.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from exercises.compare import TOLERANCES
from exercises.framework import Case, CaseGen, Exercise
from exercises.judge import Judge
from exercises.known_answers import check_known_answers
from exercises.mistakes import Mistake
from exercises.report import WITHHELD, GradeReport

#: The seeds the gate grades on.
SEEDS = tuple(range(1, 21))
#: Seeds graded in one jail visit (:meth:`Judge.grade_seeds`: one fork and load for all of them).
#: A seed whose batched report shows any problem is graded again on its own, and only that
#: report is believed and quoted, so batching changes the gate's cost, never its findings.
BATCH = 5
#: The most a stub that answers zeros may score.
STUB_CEILING = 5.0
#: How a passed contract check whose points are withheld starts its message (exercises.scoring).
#: Problems shown and kept per criterion.
MAX_PROBLEMS = 12


def _exp(x: float) -> str:
    return f"{x:.0e}".replace("e-0", "e-")


def tolerance_statement() -> str:
    """The sentence every starter of a floating-point exercise states (docs/contract.md, "Numbers")."""
    (r64, a64), (r32, a32), (rbf, abf) = (TOLERANCES[d] for d in (torch.float64, torch.float32, torch.bfloat16))
    return (
        f"float64 within {_exp(r64)} relative (+{_exp(a64)} absolute), float32 within {_exp(r32)} relative + "
        f"{_exp(a32)} absolute, bfloat16 within {_exp(rbf)} relative + {_exp(abf)} absolute"
    )


@dataclass
class Criterion:
    """One thing the gate demands, and every way the exercise falls short of it.

    A problem found on several seeds is one problem: its text holds ``{seeds}``, which reads
    "seed 7" or "seeds 1, 2, 3 (3 of 20)" once every seed has been tried.
    """

    name: str
    #: Problem text (with ``{seeds}`` where seeds apply) -> the seeds it was found on.
    found: dict[str, list[int]] = field(default_factory=dict)
    #: How many seeds the criterion was tried on (for "3 of 20").
    tried: int = 0
    #: Per problem, what the first seed it was found on showed (a check's message).
    notes: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.found

    def add(self, problem: str, seed: int | None = None, note: str = "") -> None:
        if note and problem not in self.found:
            self.notes[problem] = note
        self.found.setdefault(problem, [])
        if seed is not None:
            self.found[problem].append(seed)

    @property
    def problems(self) -> list[str]:
        """Each problem once, its seeds filled in, the first MAX_PROBLEMS of them."""
        return [
            text.replace("{seeds}", _seeds(seeds, self.tried))
            + (f" (seed {seeds[0]}: {self.notes[text]})" if text in self.notes else "")
            for text, seeds in list(self.found.items())[:MAX_PROBLEMS]
        ]


def _seeds(seeds: list[int], tried: int) -> str:
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    shown = ", ".join(str(s) for s in seeds[:6]) + (", ..." if len(seeds) > 6 else "")
    return f"seeds {shown} ({len(seeds)} of {tried})"


@dataclass
class Verification:
    """One exercise through the gate: a criterion per demand, in the order they are checked."""

    slug: str
    pack: str
    criteria: list[Criterion] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.criteria)

    def problems(self) -> list[str]:
        """Every problem found, each once, in order."""
        return [p for c in self.criteria for p in c.problems]

    def summary(self) -> dict[str, Any]:
        """What is stored with the result (bounded: MAX_PROBLEMS per criterion)."""
        return {"criteria": [{"name": c.name, "ok": c.ok, "problems": c.problems} for c in self.criteria]}


def verify_exercise(judge: Judge, exercise: Exercise, seeds: Iterable[int] = SEEDS) -> Verification:
    """Put ``exercise`` through every criterion of the gate (see the module docstring)."""
    seeds = tuple(seeds)
    result = Verification(exercise.slug, exercise.pack)
    for name, criterion in _STATIC:
        c = Criterion(name)
        criterion(exercise, c)
        result.criteria.append(c)
    deterministic = Criterion("cases deterministic (a seed builds the same cases twice)", tried=len(seeds))
    for seed in seeds:
        _check_determinism(exercise, seed, deterministic)
    result.criteria.append(deterministic)
    result.criteria.append(_known_answers(exercise))
    result.criteria.append(_reference_on_every_seed(judge, exercise, seeds))
    result.criteria.append(_starter_and_stub(judge, exercise, seeds[0]))
    result.criteria.append(_faults_on_every_seed(judge, exercise, seeds))
    return result


# --- static criteria --------------------------------------------------------------------------


def _points(exercise: Exercise, c: Criterion) -> None:
    total = sum(ch.weight for ch in exercise.checks)
    if not math.isclose(total, 100.0):
        c.add(f"the checks' points add up to {total:g}, not 100")


def _starter_docstring(exercise: Exercise, c: Criterion) -> str:
    try:
        tree = ast.parse(exercise.starter)
    except SyntaxError as exc:
        c.add(f"the starter does not parse: line {exc.lineno}: {exc.msg}")
        return ""
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == exercise.function_name), None)
    if fn is None:
        c.add(f"the starter defines no function {exercise.function_name}()")
        return ""
    doc = ast.get_docstring(fn)
    if not doc:
        c.add(f"the starter's {exercise.function_name}() has no docstring (shapes, conventions, what is graded)")
    return " ".join((doc or "").split())


def _announces(exercise: Exercise, c: Criterion) -> None:
    doc = _starter_docstring(exercise, c)
    if not doc:
        return
    for ch in exercise.checks:
        missing = [s for s in ch.announce if " ".join(s.split()) not in doc]
        for sentence in missing:
            c.add(f"check {ch.id} is not announced in the starter's docstring (expected: {sentence!r})")
        if missing:
            continue
        # The points are the first bracket after an announcement of the check: "- values ... [40]".
        points = f"[{ch.weight:g}{'*' if ch.gated else ''}]"
        sentence = " ".join(ch.announce[0].split())
        starts = [m.end() for m in re.finditer(re.escape(sentence), doc)]
        if not any((after := _POINTS.search(doc, start)) and after.group(0) == points for start in starts):
            c.add(f"check {ch.id}: the starter does not state its points {points} after its announcement")
    if _floating(exercise) and tolerance_statement() not in doc:
        c.add(f"the starter does not state the tolerance: {tolerance_statement()!r}")
    if "# YOUR CODE" not in exercise.starter:
        c.add("the starter has no '# YOUR CODE' block")
    if '__name__ == "__main__"' not in exercise.starter:
        c.add('the starter has no self-tests (an `if __name__ == "__main__":` block)')


_POINTS = re.compile(r"\[\d+(?:\.\d+)?\*?\]")


def _floating(exercise: Exercise) -> bool:
    """Whether the exercise's cases pass floating tensors (its starter must state the tolerance)."""
    cases = exercise.build_cases(CaseGen(SEEDS[0]))
    return any(
        isinstance(a, torch.Tensor) and a.is_floating_point()
        for case in cases
        for a in [*case.args, *case.kwargs.values()]
    )


def _statements(tree: ast.AST) -> list[ast.stmt]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]


def _leak(exercise: Exercise, c: Criterion) -> None:
    """The starter must not hold the reference's body (half of its statements or more)."""
    try:
        reference, starter = ast.parse(exercise.reference_source), ast.parse(exercise.starter)
    except SyntaxError:
        return  # a starter that does not parse is reported by the announcement criterion
    fn = next((n for n in reference.body if isinstance(n, ast.FunctionDef) and n.name == exercise.function_name), None)
    if fn is None:
        return
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    held = {ast.dump(s) for s in _statements(starter)}
    leaked = [s for s in body if ast.dump(s) in held]
    if body and 2 * len(leaked) >= len(body):
        c.add(
            f"the starter holds {len(leaked)} of the {len(body)} statements of the reference's "
            f"{exercise.function_name}() (first: line {leaked[0].lineno} of reference.py: "
            f"{ast.unparse(leaked[0]).splitlines()[0][:80]!r}): learners would receive the answer"
        )


_STATIC: list[tuple[str, Callable[[Exercise, Criterion], None]]] = [
    ("points add up to 100", _points),
    ("starter announces every check, its points and the tolerance", _announces),
    ("starter does not leak the reference", _leak),
]


# --- determinism ------------------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (
            isinstance(a, torch.Tensor)
            and isinstance(b, torch.Tensor)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(torch.equal(a, b))
        )
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def _case_fields(case: Case) -> list[Any]:
    return [case.id, case.tags, case.args, case.kwargs, case.grad, case.backward, case.weights, case.memory]


def _check_determinism(exercise: Exercise, seed: int, c: Criterion) -> None:
    first, second = exercise.build_cases(CaseGen(seed)), exercise.build_cases(CaseGen(seed))
    if [x.id for x in first] != [x.id for x in second]:
        c.add("{seeds} builds different cases on two calls", seed)
        return
    for a, b in zip(first, second):
        if not _same(_case_fields(a), _case_fields(b)):
            c.add(
                f"case {a.id} ({a.about or 'no description'}) differs between two builds of {{seeds}}: draw "
                "inputs from the CaseGen (gen.randn, gen.randint...), never from torch's global generator",
                seed,
            )
            return


# --- through the jail -------------------------------------------------------------------------


def _failed_checks(report: GradeReport) -> list[str]:
    """Ids (without the slug) of the checks that really failed: not those whose points are only
    withheld (scoring.withhold_contract_points) because a core check failed."""
    return [
        ch.check_id.rsplit("/", 1)[-1]
        for ch in report.checks
        if ch.check_id and not ch.passed and not ch.message.startswith(WITHHELD)
    ]


def _first_message(report: GradeReport) -> str:
    failed = [ch.message for ch in report.checks if not ch.passed and not ch.message.startswith(WITHHELD)]
    text = failed[0] if failed else report.message
    return " ".join(text.split())[:240]


def _known_answers(exercise: Exercise) -> Criterion:
    c = Criterion("reference gives the known answers (the starter's self-tests, the spec's examples)")
    for d in check_known_answers(exercise):
        c.add(f"the reference disagrees with {d.example}: {d.detail}")
    return c


def _graded_on_seeds(
    judge: Judge, exercise: Exercise, source: str, seeds: tuple[int, ...], suspect: Callable[[GradeReport], bool]
) -> Iterator[tuple[int, GradeReport]]:
    """(seed, report) for each seed, ``BATCH`` seeds per jail visit; a report that ``suspect``
    flags is replaced by the seed graded alone (the path a learner's submission takes)."""
    for start in range(0, len(seeds), BATCH):
        batch = seeds[start : start + BATCH]
        reports = judge.grade_seeds(exercise.slug, source, batch)
        for seed, report in zip(batch, reports, strict=True):
            yield seed, (judge.grade(exercise.slug, source, seed) if suspect(report) else report)


def _reference_on_every_seed(judge: Judge, exercise: Exercise, seeds: tuple[int, ...]) -> Criterion:
    c = Criterion(f"reference scores 100 on {len(seeds)} seeds (real jail)", tried=len(seeds))
    not_full = lambda report: report.verdict != "graded" or report.score != 100  # noqa: E731
    for seed, report in _graded_on_seeds(judge, exercise, exercise.reference_source, seeds, not_full):
        if report.verdict != "graded":
            c.add(f"the reference ends as {report.verdict} on {{seeds}}", seed, _first_message(report))
        elif report.score != 100:
            c.add(
                f"the reference fails its own checks {', '.join(_failed_checks(report))} on {{seeds}}",
                seed,
                _first_message(report),
            )
    return c


def stub_source(exercise: Exercise) -> str:
    """The reference's validation and output structure, with zeros for every tensor it returns."""
    return (
        f"import torch\n{exercise.reference_source}\n\n_real = {exercise.function_name}\n\n\n"
        "def _zeros(v):\n"
        "    if isinstance(v, torch.Tensor):\n"
        "        return torch.zeros_like(v)\n"
        "    if isinstance(v, (tuple, list)):\n"
        "        return type(v)(_zeros(x) for x in v)\n"
        "    if isinstance(v, dict):\n"
        "        return {k: 0 for k in v}\n"
        "    return v\n\n\n"
        f"def {exercise.function_name}(*args, **kwargs):\n"
        "    return _zeros(_real(*args, **kwargs))\n"
    )


def _starter_and_stub(judge: Judge, exercise: Exercise, seed: int) -> Criterion:
    c = Criterion(f"starter below 100, a zeros stub at most {STUB_CEILING:g}")
    starter = judge.grade(exercise.slug, exercise.starter, seed)
    if starter.score is None or starter.score >= 100:
        c.add(f"the starter scores {starter.score} ({starter.verdict}): it must not pass as it is")
    stub = judge.grade(exercise.slug, stub_source(exercise), seed)
    if stub.verdict != "graded" or stub.score is None or stub.score > STUB_CEILING:
        passed = ", ".join(f"{ch.check_id} [{ch.weight:g}]" for ch in stub.checks if ch.passed)
        c.add(
            f"a stub that validates its inputs and returns zeros scores {stub.score} ({stub.verdict}), more "
            f"than {STUB_CEILING:g}; it passes {passed or 'no check'}: mark contract checks gated=True and "
            "give value checks core=True"
        )
    return c


def _faults_on_every_seed(judge: Judge, exercise: Exercise, seeds: tuple[int, ...]) -> Criterion:
    c = Criterion(
        f"{len(exercise.mistakes)} fault(s): each caught on every seed, named on what it explains", tried=len(seeds)
    )
    if not exercise.mistakes:
        c.add("the exercise declares no fault (mutants.py: FAULTS with fault(...), MUTANTS = fault_mutants(...))")
    for mistake in exercise.mistakes:

        def flawed(report: GradeReport, mistake: Mistake = mistake) -> bool:
            probe = Criterion("probe")
            _fault_on_seed(exercise, mistake, report, 0, probe)
            return not probe.ok

        source = mistake.source(exercise.function_name)
        for seed, report in _graded_on_seeds(judge, exercise, source, seeds, flawed):
            _fault_on_seed(exercise, mistake, report, seed, c)
    return c


def _fault_on_seed(exercise: Exercise, mistake: Mistake, report: GradeReport, seed: int, c: Criterion) -> None:
    """The problems of ``mistake``'s graded ``report`` on ``seed``, added to ``c``."""
    if report.verdict != "graded":
        c.add(f"fault {mistake.key} ends as {report.verdict} on {{seeds}}, not graded", seed, _first_message(report))
        return
    local = set(_failed_checks(report))
    if not local:
        c.add(f"fault {mistake.key} is not caught on {{seeds}} by any check", seed)
        return
    # A memory check also compares the large input's values, so any wrong-valued fault fails it.
    measured = {ch.id for ch in exercise.checks if ch.needs_memory and not mistake.is_memory}
    stray = sorted(local - set(mistake.explains) - measured)
    if stray:
        c.add(f"fault {mistake.key} fails {', '.join(stray)} on {{seeds}}, which its explains= does not list", seed)
    # A form of another mistake (Mistake.form_of) is named as that mistake.
    if not any(ch.mistake_id == mistake.named_id for ch in report.checks if not ch.passed):
        c.add(
            f"fault {mistake.key} is caught on {{seeds}} ({', '.join(sorted(local))}) but no failed check names "
            "it: its outcomes must fail a check its explains= lists",
            seed,
        )

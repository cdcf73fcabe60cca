"""The parts every exercise is made of: cases, checks, runs, and the spec that binds them.

An exercise folder ``exercises/<name>/`` holds ``spec.py`` (an :class:`ExerciseSpec` called
``SPEC``), ``starter.py`` (the learner's template), ``reference.py`` (the hidden solution),
``checks.py`` (a ``cases(gen)`` function and ``@check`` functions) and ``mutants.py`` (its
known mistakes, :mod:`exercises.mistakes`).

A grading run is a :class:`Run`: the cases, the submission's outcomes, the reference's, and
the memory readings. A check reads it through a :class:`CheckContext` and calls
:meth:`CheckContext.fail` (or a helper from :mod:`exercises.compare`) with a message for the
learner. What a check read is recorded (:mod:`exercises.evidence`), so diagnosis can tell
whether a failing learner matches a known mistake on exactly that and name it.
"""

from __future__ import annotations

import logging
import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any

import torch

from exercises.evidence import Evidence, seen
from exercises.mistakes import Mistake
from sandbox.text import cap

log = logging.getLogger(__name__)


class CheckFailed(Exception):
    """Raised inside a check: the message is shown to the learner as is."""


@dataclass
class Case:
    """One call of the function under test, with its inputs built by the trusted judge.

    ``args`` and ``kwargs`` hold tensors or plain JSON values. ``grad`` names the arguments
    (by position as a string, or keyword) that get ``requires_grad``; ``backward`` asks for a
    backward pass from the output at that path (``[]``: the object itself); ``weights``
    reduces a non-scalar output before it. ``memory`` cases are measured in a visit of their
    own, after ``warmup``. ``about`` describes the case in failure messages.
    """

    id: str
    args: list[Any]
    kwargs: dict[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    grad: tuple[str, ...] = ()
    backward: list[int | str] | None = None
    weights: torch.Tensor | None = None
    return_inputs: bool = False
    memory: bool = False
    warmup: Case | None = None
    about: str = ""
    #: The run's case seed (already mixed with the server secret), shown so a case can be named.
    seed: int | None = None
    #: Output positions no check grades (whiten's padding): diagnosis does not compare them.
    ungraded: torch.Tensor | None = None
    #: Output paths to back-propagate from, one at a time, to learn whether they are detached
    #: (the answer is a gradient, computed by the engine, never a flag the output carries).
    probes: tuple[tuple[int | str, ...], ...] = ()

    def digest_seed(self) -> int:
        """Seed of the digest weights of a measured case (varies with the run's secret seed)."""
        return zlib.crc32(f"{self.seed}:{self.id}".encode()) & 0x7FFFFFFF

    def describe(self) -> str:
        """Shapes, dtypes, hyper-parameters and the seed, for messages."""
        seed = f" [case {self.id}, seed {self.seed}]" if self.seed is not None else ""
        return f"{self.about + ': ' if self.about else ''}({self.signature()}){seed}"

    def signature(self) -> str:
        """Shapes, dtypes and hyper-parameters: equal for cases that cost the same to run."""
        parts = []
        for i, a in enumerate(self.args):
            parts.append(_short_value(a, f"arg{i}"))
        for k, v in self.kwargs.items():
            parts.append(f"{k}={_short_value(v, k)}")
        return ", ".join(parts)


@dataclass(frozen=True)
class GeneratedTensor:
    """A large input the jail generates itself from a public seed (``randn * scale + shift``).

    For memory cases, whose values do not matter: nothing large crosses the boundary, and
    the reference and the learner are measured on identical tensors.
    """

    shape: tuple[int, ...]
    seed: int
    dtype: torch.dtype = torch.float32
    scale: float = 1.0
    shift: float = 0.0

    def spec(self) -> dict[str, Any]:
        return {
            "shape": list(self.shape),
            "seed": self.seed,
            "dtype": str(self.dtype).removeprefix("torch."),
            "scale": self.scale,
            "shift": self.shift,
        }


def _short_value(v: Any, name: str) -> str:
    if isinstance(v, (torch.Tensor, GeneratedTensor)):
        dtype = str(v.dtype).removeprefix("torch.")
        return f"{dtype}{list(v.shape)}"
    return repr(v)


@dataclass
class Outcome:
    """What one call produced, decoded: the same structure for learner, reference and mistake."""

    output: Any = None
    #: Metadata the harness recorded for each tensor in the output, by path ("" for the root).
    meta: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: Any = None  # sandbox.protocol.CallError
    grads: dict[str, torch.Tensor | None] = field(default_factory=dict)
    inputs_after: dict[str, torch.Tensor] = field(default_factory=dict)
    seconds: float | None = None
    missing: bool = False
    #: Per probe of the case: ``{"requires_grad": bool, "grads": {input: gradient or None}}``;
    #: None when no answer came back.
    probes: list[dict[str, Any]] | None = None
    #: For measured cases: ``[weighted sum, weighted absolute sum]`` per output/gradient name.
    digests: dict[str, list[float]] = field(default_factory=dict)

    def raised(self, name: str) -> bool:
        """Whether the call raised an exception of class ``name`` (or a subclass)."""
        return self.error is not None and name in self.error.classes


@dataclass
class MemoryReading:
    """Peak memory of a measured case: the learner's and the reference's, same harness."""

    learner_bytes: int | None
    reference_bytes: int | None
    source: str | None
    learner_status: str
    learner_message: str = ""
    #: Whether the measured run's results matched the reference's on the same inputs (None:
    #: not compared); ``mismatch`` says how they differ. An unverified run earns nothing.
    verified: bool | None = None
    mismatch: str = ""


@dataclass(frozen=True)
class Run:
    """One grading run as its checks see it: the cases, what the submission's calls gave, what
    the reference's gave on the same cases, and the measured cases' memory readings.

    A check reads a run through a :class:`CheckContext`; diagnosis asks the same checks about
    a candidate mistake's outcomes on the same run (:meth:`with_outcomes`).
    """

    cases: dict[str, Case]
    got: dict[str, Outcome]
    want: dict[str, Outcome]
    memory: dict[str, MemoryReading] = field(default_factory=dict)
    device: str = "cpu"

    def outcome(self, case_id: str) -> Outcome:
        """The submission's outcome for a case (a missing one when nothing came back)."""
        return self.got.get(case_id) or Outcome(missing=True)

    def with_outcomes(self, got: dict[str, Outcome], memory: dict[str, MemoryReading] | None = None) -> Run:
        """The same run with other outcomes (a mistake's), for matching it against the learner's."""
        return replace(self, got=got, memory=self.memory if memory is None else memory)


class CheckContext:
    """A check's view of one :class:`Run`. Records what the check reads (its :class:`Evidence`)."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.evidence = Evidence()

    @property
    def device(self) -> str:
        """The device the submission's calls ran on ("cpu" or "cuda")."""
        return self.run.device

    def cases(self, *tags: str) -> list[Case]:
        """Cases carrying every one of ``tags``, in the order they were built."""
        return [c for c in self.run.cases.values() if all(t in c.tags for t in tags)]

    def case(self, case_id: str) -> Case:
        return self.run.cases[case_id]

    def got(self, case: Case) -> Outcome:
        """The submission's outcome for a case (a view that records which parts are read)."""
        self.evidence.cases.add(case.id)
        return seen(self.run.outcome(case.id), self.evidence)

    def want(self, case: Case) -> Outcome:
        """The reference's outcome for a case."""
        return self.run.want[case.id]

    def memory(self, case: Case) -> MemoryReading:
        self.evidence.cases.add(case.id)
        return self.run.memory[case.id]

    @staticmethod
    def fail(message: str) -> None:
        raise CheckFailed(message)


@dataclass
class Check:
    """A weighted check. ``hidden`` checks do not reveal their inputs in messages.

    ``id`` is the check function's name, the stable handle mistakes and starters refer to.
    ``core`` checks are the exercise's values on ordinary inputs; ``gated`` checks (contract
    details: shape errors, in-place edits, dtype, memory) earn their points only when every
    core check passes, so an empty or constant answer scores close to 0 (docs/contract.md,
    "Scores and feedback"). ``announce`` is the sentence of the starter's docstring that
    tells the learner this property is graded.
    """

    name: str
    weight: float
    fn: Callable[[CheckContext], None]
    hidden: bool = False
    needs_memory: bool = False
    id: str = ""
    core: bool = False
    gated: bool = False
    announce: tuple[str, ...] = ()
    #: What the check is about, when reading alone would say more (a detachment check looks at
    #: the output only to see that it is a tensor): e.g. ("meta:requires_grad",).
    reads: tuple[str, ...] = ()
    #: The fact this check's evidence rests on when only the learner's own process can report
    #: it ("detachment", "in-place edits", "gradient provenance"), or "" when the judge confirms
    #: it by comparing values with the reference. A self-reported check keeps small points and
    #: earns no board place (:func:`board_points`; docs/security.md, "What the trusted side believes").
    self_reported: str = ""


#: The facts a check may rest on that only the learner's process reports ("" : none).
SELF_REPORTED_FACTS = ("", "detachment", "in-place edits", "gradient provenance")


def check(
    name: str,
    weight: float,
    *,
    hidden: bool = False,
    memory: bool = False,
    core: bool = False,
    gated: bool = False,
    announce: str | tuple[str, ...] = (),
    reads: tuple[str, ...] = (),
    self_reported: str = "",
) -> Callable[[Callable[[CheckContext], None]], Check]:
    """Declare a check function with its name and weight (weights of an exercise sum to 100).

    ``core``: a value check on ordinary inputs; ``gated``: a contract detail whose points count
    only when every core check passes; ``announce``: the sentence(s) of the starter's
    docstring that announce it. A memory check is always gated. ``self_reported``: the fact
    only the learner's process reports (see :attr:`Check.self_reported`).
    """
    if self_reported not in SELF_REPORTED_FACTS:
        raise ValueError(f"unknown self-reported fact {self_reported!r}")

    def wrap(fn: Callable[[CheckContext], None]) -> Check:
        sentences = (announce,) if isinstance(announce, str) else tuple(announce)
        sentences = sentences or (name,)  # by default the check's own name announces it
        return Check(
            name=name,
            weight=weight,
            fn=fn,
            hidden=hidden,
            needs_memory=memory,
            id=fn.__name__,
            core=core,
            gated=gated or memory,
            announce=sentences,
            reads=tuple(reads),
            self_reported=self_reported,
        )

    return wrap


_MiB = 1 << 20


@dataclass(frozen=True)
class MemoryBudget:
    """The peak memory a measured case may take: max(``ratio`` x the reference's peak, the
    reference's peak + ``slack_bytes``), both measured by the same harness."""

    ratio: float = 1.5
    slack_bytes: int = 16 * _MiB

    def allowed(self, reference_bytes: int) -> int:
        """The budget, in bytes, for a reference that peaked at ``reference_bytes``."""
        return max(int(self.ratio * reference_bytes), reference_bytes + self.slack_bytes)

    def __str__(self) -> str:
        return f"max({self.ratio:g} x reference, reference + {self.slack_bytes / _MiB:.0f} MiB)"


@dataclass(frozen=True)
class KnownAnswer:
    """An example the spec promises, with its answer worked out by hand: ``exercises verify``
    evaluates ``call`` (a Python expression over ``torch`` and the exercise's function) with the
    reference and refuses the version, naming the example, unless it equals ``expect``
    (tensors within 1e-5 relative + 1e-6 absolute). A reference that contradicts the spec is
    caught here, not by learners who got it right."""

    name: str
    call: str
    expect: str


@dataclass
class ExerciseSpec:
    """Everything about one exercise that is not code to run."""

    slug: str
    title: str
    function_name: str
    summary: str
    description: str
    order: int
    #: The one place an exercise states its memory budget; its memory checks read it.
    memory_budget: MemoryBudget = field(default_factory=MemoryBudget)
    #: Known answers the reference must give (verify checks them, with the starter's self-tests).
    examples: tuple[KnownAnswer, ...] = ()


@dataclass
class Exercise:
    """A loaded exercise: its spec, sources, reference, cases, checks and known mistakes."""

    spec: ExerciseSpec
    starter: str
    reference_source: str
    reference: Callable[..., Any]
    build_cases: Callable[[CaseGen], list[Case]]
    checks: list[Check]
    #: The known mistakes, each under its id ``"<slug>/<key>"``.
    mistakes: list[Mistake]
    folder: str = ""
    #: The name of the pack it was loaded from (:mod:`exercises.packs`): "built-in" or the pack's.
    pack: str = ""

    # flat attributes the server reads
    @property
    def slug(self) -> str:
        return self.spec.slug

    @property
    def title(self) -> str:
        return self.spec.title

    @property
    def function_name(self) -> str:
        return self.spec.function_name

    @property
    def summary(self) -> str:
        return self.spec.summary

    @property
    def description(self) -> str:
        return self.spec.description

    @property
    def order(self) -> int:
        return self.spec.order

    def check_id(self, check: Check) -> str:
        """A check's stable id: ``"<slug>/<check>"`` (e.g. ``gae/no_bootstrap_from_padding``)."""
        return f"{self.slug}/{check.id}"

    @staticmethod
    def from_modules(
        folder: str,
        spec_mod: ModuleType,
        checks_mod: ModuleType,
        mutants_mod: ModuleType,
        reference_mod: ModuleType,
        starter: str,
        reference_source: str,
    ) -> Exercise:
        spec: ExerciseSpec = spec_mod.SPEC
        checks = [v for v in vars(checks_mod).values() if isinstance(v, Check)]
        declared = [v for v in vars(mutants_mod).values() if isinstance(v, Mistake)]
        declared += [m for m in getattr(mutants_mod, "MUTANTS", []) if isinstance(m, Mistake)]
        mistakes = [m.in_exercise(spec.slug) for m in declared]
        known = {c.id for c in checks}
        for m in mistakes:
            unknown = set(m.explains) - known
            if unknown:
                raise ValueError(f"{spec.slug}: mistake {m.key} explains unknown checks {sorted(unknown)}")
        if len({m.id for m in mistakes}) != len(mistakes):
            raise ValueError(f"{spec.slug}: two mistakes share an id")
        total = sum(c.weight for c in checks)
        if not math.isclose(total, 100.0):
            raise ValueError(f"{spec.slug}: check weights sum to {total}, not 100")
        return Exercise(
            spec=spec,
            starter=starter,
            reference_source=reference_source,
            reference=getattr(reference_mod, spec.function_name),
            build_cases=checks_mod.cases,
            checks=checks,
            mistakes=mistakes,
            folder=folder,
        )


class CaseGen:
    """Seeded input factory for one grading run; the seed mixes the server secret."""

    def __init__(self, seed: int, device: str = "cpu") -> None:
        self.seed = seed
        self.device = device
        self.generator = torch.Generator().manual_seed(seed)
        self._next = 0

    def next_id(self) -> str:
        self._next += 1
        return str(self._next)

    def randn(self, *shape: int, dtype: torch.dtype = torch.float32, scale: float = 1.0) -> torch.Tensor:
        return (torch.randn(*shape, generator=self.generator, dtype=torch.float64) * scale).to(dtype)

    def uniform(
        self, *shape: int, low: float = 0.0, high: float = 1.0, dtype: torch.dtype = torch.float32
    ) -> torch.Tensor:
        u = torch.rand(*shape, generator=self.generator, dtype=torch.float64)
        return (low + (high - low) * u).to(dtype)

    def generated(
        self, *shape: int, scale: float = 1.0, shift: float = 0.0, dtype: torch.dtype = torch.float32
    ) -> GeneratedTensor:
        """A large input for a memory case, generated inside the jail (see :class:`GeneratedTensor`)."""
        return GeneratedTensor(tuple(shape), self.randint(0, 2**31 - 1), dtype, scale, shift)

    def randint(self, low: int, high: int) -> int:
        return int(torch.randint(low, high, (1,), generator=self.generator).item())

    def right_padded_mask(
        self,
        batch: int,
        length: int,
        *,
        min_len: int = 1,
        lengths: list[int] | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> torch.Tensor:
        """A [B, T] mask of ones then zeros; ``lengths`` fixes the valid length per row."""
        if lengths is None:
            lengths = [self.randint(min_len, length + 1) for _ in range(batch)]
        idx = torch.arange(length).unsqueeze(0)
        return (idx < torch.tensor(lengths).unsqueeze(1)).to(dtype)

    def case(self, *args: Any, **fields: Any) -> Case:
        """A :class:`Case` with a fresh id (keyword fields as in :class:`Case`, ``kwargs=`` for the call)."""
        return Case(id=self.next_id(), args=list(args), seed=self.seed, **fields)


def evaluate_check(check: Check, run: Run) -> tuple[bool, str, Evidence]:
    """Run one check on ``run``: whether it passed, its message, and what it read."""
    ctx = CheckContext(run)
    passed, message = run_check(check.fn, ctx)
    return passed, message, ctx.evidence


def run_check(fn: Any, ctx: CheckContext) -> tuple[bool, str]:
    """Run one check: (passed, message). A check that breaks on odd output fails, never crashes."""
    try:
        fn(ctx)
        return True, "ok"
    except CheckFailed as exc:
        return False, str(exc)
    except Exception as exc:  # a check that breaks on odd output is a failed check, not a crash
        log.exception("check raised")
        return False, f"Your result could not be checked ({type(exc).__name__}: {cap(str(exc), 200)})."

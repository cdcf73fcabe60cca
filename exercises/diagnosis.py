"""Naming every mistake, even when a learner made several.

For each failed check, diagnosis looks for the smallest set of catalogued faults (1, 2 or 3
switches of the exercise's fault-parametrised reference, see :mod:`exercises.mistakes`) whose
behaviour matches the learner's on what that check is about: the cases the check reads and
only the parts of their outcomes it reads (values, gradients, inputs after the call, the
exception raised), each tensor within its dtype's tolerance. Only faults that explain the
check (``Mistake.explains``) are candidates there, so a mistake is never named on a check it
cannot change, and a second mistake elsewhere cannot hide the first. Among the per-check
matches the combination naming the fewest faults overall is kept.

Learners rarely write a mistake in exactly its switch's form, and often beside one the
catalogue lacks: a check no combination matches may still show single mistakes case by case
(:func:`_supports`), and a mistake with a ``signature`` is recognised by what all its forms
share (:func:`_shows_signature`). A mistake marked ``exact_only`` (the detached-branch family:
right values, a gradient wrong in one region) is named only where a combination holding it
matches every case of the check, values included, never case by case. Whichever way it was found, a mistake is named only when it
explains most of the failed checks it claims (:func:`_most_claims_explained`).

Runs of the faulty reference are memoised per (switches, case) and the search is bounded by
counted work (:class:`Budget`: ``max_faults`` switches, runs of a candidate, elements
compared), with a CPU-time ceiling only as a safety net far above normal use, so the same
submission gets the same diagnosis on a fast or a slow machine. It runs only when checks fail.
Where nothing fits, the check is reported as unexplained, never guessed.

Learner data is untrusted and may be large (a result tree can name big tensors), so every
comparison here is bounded before it allocates: a learner tensor is compared only with a
candidate's tensor of the same shape (the candidates are trusted code run on the check-sized
cases), never one of more than ``Budget.max_tensor_elements`` elements, and never turned into
Python lists; each comparison spends its elements from the budget, which is checked inside
every comparison. A case whose outcome holds a larger tensor is left out of the search (no
candidate could match it). So the memory diagnosis adds is at most a few float64 temporaries
of one case-sized tensor (``max_tensor_elements`` x 8 bytes each), whatever the learner sent.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from exercises.compare import tolerance
from exercises.evidence import Evidence
from exercises.framework import Case, Check, Exercise, Outcome, Run, evaluate_check
from exercises.mistakes import Mistake, with_faults
from exercises.outcomes import Opaque, run_in_process

#: Diagnosis compares two wrong answers, computed in different orders: a few ulps more than a check.
TOLERANCE_FACTOR = 4.0


class BudgetExceeded(Exception):
    """The diagnosis spent its budget: the search stops and keeps what it found so far."""


@dataclass
class Budget:
    """What one diagnosis may spend, counted as work so the result does not depend on CPU speed.

    ``max_runs``: runs of a faulty reference (a run covers the cases it is asked about);
    ``max_elements``: tensor elements compared in all; ``max_tensor_elements``: the largest
    tensor one comparison looks at (a larger one, which no check-sized case produces, makes the
    case incomparable); ``cpu_seconds``: a ceiling of this thread's CPU time, a safety net far
    above what the counted budget allows on a slow machine (normal diagnoses take tens of ms).
    Measured on the compound corpus and every single mistake (2026-12-01): at most 328 runs,
    11,760 elements and 66 ms of CPU; the largest regular case holds 95 elements.
    """

    max_runs: int = 2000
    max_elements: int = 2_000_000
    max_tensor_elements: int = 1 << 16
    cpu_seconds: float = 5.0
    runs: int = 0
    elements: int = 0
    exhausted: bool = False
    _cpu_deadline: float = field(default=float("inf"), repr=False)

    def start(self) -> None:
        """Start the CPU-time ceiling's clock (this thread's CPU time)."""
        self._cpu_deadline = time.thread_time() + self.cpu_seconds

    def spend(self, elements: int = 0, runs: int = 0) -> None:
        """Count work; raise :class:`BudgetExceeded` once any limit is passed."""
        self.elements += elements
        self.runs += runs
        if (
            self.exhausted
            or self.elements > self.max_elements
            or self.runs > self.max_runs
            or time.thread_time() > self._cpu_deadline
        ):
            self.exhausted = True
            raise BudgetExceeded


#: The budget of the diagnosis being run in this thread (comparisons spend from it).
_LOCAL = threading.local()


def _spend(elements: int) -> None:
    budget: Budget | None = getattr(_LOCAL, "budget", None)
    if budget is not None:
        budget.spend(elements)


def _fits(t: torch.Tensor) -> bool:
    """Whether a tensor is small enough for one comparison (learner tensors can be any size)."""
    budget: Budget | None = getattr(_LOCAL, "budget", None)
    return t.numel() <= (budget.max_tensor_elements if budget is not None else Budget.max_tensor_elements)


@dataclass
class Finding:
    """One mistake found, with the (display) names of the failed checks it explains."""

    mistake: Mistake
    checks: list[str] = field(default_factory=list)


@dataclass
class Diagnosis:
    """What diagnosis found: per failed check, the mistakes named there; and what nothing explains."""

    by_check: dict[str, list[Mistake]] = field(default_factory=dict)
    unexplained: list[str] = field(default_factory=list)
    runs: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    #: Elements compared, and whether the budget ran out before the search was complete.
    elements: int = 0
    exhausted: bool = False
    #: Why diagnosis was dropped (it raised), or None: verdict and score never depend on it.
    skipped: str | None = None
    #: The checks the diagnosis was asked about (those that failed on the run it looked at).
    probed: set[str] = field(default_factory=set)

    def findings(self, checks: list[Check]) -> list[Finding]:
        """Each named mistake once, with the checks it explains, in check order."""
        found: dict[str, Finding] = {}
        for chk in checks:
            for m in self.by_check.get(chk.id, []):
                found.setdefault(m.id, Finding(m)).checks.append(chk.name)
        return list(found.values())


# -- comparing what a check is about --------------------------------------------------------


def _close(a: Any, b: Any, compare_dtype: bool) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        # The shape check comes first, against ``b``: the candidate's (trusted, case-sized).
        if a.shape != b.shape or (compare_dtype and a.dtype != b.dtype) or not _fits(b):
            return False
        _spend(b.numel())
        rtol, atol = tolerance(b.dtype)
        x, y = a.detach().double().cpu(), b.detach().double().cpu()
        return bool(torch.allclose(x, y, rtol=rtol * TOLERANCE_FACTOR, atol=atol * TOLERANCE_FACTOR, equal_nan=True))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_close(x, y, compare_dtype) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], compare_dtype) for k in a)
    if isinstance(a, (Opaque, torch.Tensor)) or isinstance(b, (Opaque, torch.Tensor)):
        return False
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-9 * max(1.0, abs(b)) or (a != a and b != b)
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # learner data must never break the judge
        return False


def _graded(output: Any, ungraded: torch.Tensor | None) -> Any:
    """The output with the positions no check grades set to 0 (where shapes allow)."""
    if ungraded is None or not isinstance(output, torch.Tensor) or output.shape != ungraded.shape:
        return output
    return torch.where(ungraded, torch.zeros((), dtype=output.dtype), output.detach())


def _item(value: Any, key: str) -> Any:
    """``value[key]`` for a returned tuple (key "0") or dict; a marker when it is missing."""
    try:
        return value[int(key)] if isinstance(value, (tuple, list)) else value[key]
    except (KeyError, IndexError, TypeError, ValueError):
        return _MISSING


_MISSING = Opaque("missing")


def _same_zeros(a: Any, b: Any) -> bool:
    """Whether the returned tensors are exactly 0 at the same places (checks about what must
    be 0), compared as tensors after a shape check: ``a`` is the learner's, ``b`` the candidate's."""
    xs = list(a) if isinstance(a, (tuple, list)) else [a]
    ys = list(b) if isinstance(b, (tuple, list)) else [b]
    if len(xs) != len(ys):
        return False
    for x, y in zip(xs, ys):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if x.shape != y.shape or not _fits(y):
                return False
            _spend(y.numel())
            if not torch.equal(x.detach().cpu() == 0, y.detach().cpu() == 0):
                return False
    return True


def _types(output: Any) -> Any:
    """The Python types in a returned structure (for checks about ints versus floats)."""
    if isinstance(output, dict):
        return {k: type(v).__name__ for k, v in output.items()}
    if isinstance(output, (tuple, list)):
        return [type(v).__name__ for v in output]
    return type(output).__name__


def _reached(probes: list[dict[str, Any]] | None) -> Any:
    """Per detachment probe: whether the output is on a graph, and the inputs a gradient
    reached (None: no answer came back)."""
    if probes is None:
        return None
    return [
        (bool(p.get("requires_grad")), sorted(k for k, g in (p.get("grads") or {}).items() if _flows(g)))
        for p in probes
    ]


def _flows(grad: torch.Tensor | None) -> bool:
    """Whether a gradient is non-zero anywhere; one too large to look at counts as "unknown",
    which no candidate's answer equals (the case is then not matched)."""
    if grad is None:
        return False
    if not _fits(grad):
        raise _Incomparable
    _spend(grad.numel())
    return bool((grad != 0).any())


class _Incomparable(Exception):
    """A learner's outcome holds something diagnosis will not look at (too large)."""


def same_behaviour(
    learner: Outcome, candidate: Outcome, aspects: set[str], ungraded: torch.Tensor | None = None
) -> bool:
    """Whether ``candidate`` behaves like ``learner`` in the parts of an outcome a check reads.

    ``aspects`` as recorded by :mod:`exercises.evidence`: "output" (all of it)
    or "output:<item>", "grads" (all) or "grads:<argument>", "inputs_after", "meta:<field>",
    "error"; or as a check declares it: "zero-pattern" (where the outputs are exactly 0),
    "types" (the Python types of the returned items), "probes" (which inputs a gradient from
    an output reaches: detachment),
    "grad-flows:1,2" (whether any of those arguments gets a non-zero gradient). A failed backward pass counts only
    where gradients are read.
    """
    if learner.missing or candidate.missing:
        return False
    try:
        return _same_behaviour(learner, candidate, aspects, ungraded)
    except _Incomparable:
        return False


def _same_behaviour(learner: Outcome, candidate: Outcome, aspects: set[str], ungraded: torch.Tensor | None) -> bool:
    a, b = learner.error, candidate.error
    if not any(x == "grads" or x.startswith(("grads:", "grad-flows:")) for x in aspects):
        a = a if a is None or a.phase != "backward" else None
        b = b if b is None or b.phase != "backward" else None
    if (a is None) != (b is None):
        return False
    if a is not None and (a.type != b.type or a.phase != b.phase):
        return False
    if a is not None and a.phase != "backward":
        return True
    # A check that reads where the result lives (dtype and device) is about its dtype too; the
    # device itself is not compared: candidates run on the CPU, a GPU learner on CUDA.
    dtype = "meta:device" in aspects
    if "output" in aspects:
        if not _close(_graded(learner.output, ungraded), _graded(candidate.output, ungraded), dtype):
            return False
    else:
        for key in (x.split(":", 1)[1] for x in aspects if x.startswith("output:")):
            if not _close(_item(learner.output, key), _item(candidate.output, key), dtype):
                return False
    if "probes" in aspects and _reached(learner.probes) != _reached(candidate.probes):
        return False
    if "zero-pattern" in aspects and not _same_zeros(learner.output, candidate.output):
        return False
    if "types" in aspects and _types(learner.output) != _types(candidate.output):
        return False
    for token in (x for x in aspects if x.startswith("grad-flows:")):
        keys = token.split(":", 1)[1].split(",")
        if any(_flows(learner.grads.get(k)) for k in keys) != any(_flows(candidate.grads.get(k)) for k in keys):
            return False
    for key in ("requires_grad", "type"):
        if f"meta:{key}" in aspects:
            mine = {p: m.get(key) for p, m in learner.meta.items()}
            if mine != {p: m.get(key) for p, m in candidate.meta.items()}:
                return False
    grad_keys = (
        set(learner.grads) | set(candidate.grads)
        if "grads" in aspects
        else {x.split(":", 1)[1] for x in aspects if x.startswith("grads:")}
    )
    for key in grad_keys:
        x, y = learner.grads.get(key), candidate.grads.get(key)
        if (x is None) != (y is None) or (x is not None and not _close(x, y, compare_dtype=False)):
            return False
    if "inputs_after" in aspects:
        for key in set(learner.inputs_after) | set(candidate.inputs_after):
            x, y = learner.inputs_after.get(key), candidate.inputs_after.get(key)
            if x is None or y is None or not _close(x, y, compare_dtype=False):
                return False
    return True


# -- the search ------------------------------------------------------------------------------


class _Runner:
    """Runs the faulty reference (or a hand-written mistake) on cases, memoised per case."""

    def __init__(self, cases: dict[str, Case], budget: Budget) -> None:
        self.cases = cases
        self.memo: dict[tuple[tuple[str, ...], str], Outcome] = {}
        self.budget = budget

    def exhausted(self) -> bool:
        return self.budget.exhausted

    def outcomes(self, combo: tuple[Mistake, ...], case_ids: list[str]) -> dict[str, Outcome]:
        key = tuple(sorted(m.id for m in combo))
        todo = [cid for cid in case_ids if (key, cid) not in self.memo]
        if todo:
            if len(combo) == 1 and not combo[0].is_switch:
                fn = combo[0].fn
            else:
                faulty = combo[0].faulty
                assert faulty is not None, "a fault switch belongs to a fault-parametrised reference"
                fn = with_faults(faulty, [m.key for m in combo])
            self.budget.spend(runs=1)
            done = run_in_process(fn, [self.cases[cid] for cid in todo], "mutant.py")
            for cid in todo:
                self.memo[(key, cid)] = done.get(cid, Outcome(missing=True))
        return {cid: self.memo[(key, cid)] for cid in case_ids}


def _evidence(chk: Check, run: Run, seen: Evidence | None) -> tuple[list[str], set[str]]:
    """The cases a check reads and the parts of their outcomes it reads: when it passes (on
    the reference's outcomes) and on the learner's (``seen``, if the judge recorded it)."""
    probe = evaluate_check(chk, run.with_outcomes(run.want))[2]
    if seen is None:
        seen = evaluate_check(chk, run)[2]
    aspects = set(chk.reads) if chk.reads else probe.aspects | seen.aspects
    return sorted(probe.cases | seen.cases, key=str), aspects | {"error"}


def _crashed(run: Run, case_ids: list[str]) -> bool:
    """Whether the learner's call raised on one of these cases where the reference's did not."""
    for cid in case_ids:
        mine, want = run.got.get(cid), run.want.get(cid)
        if (
            mine is not None
            and mine.error is not None
            and mine.error.phase == "call"
            and want is not None
            and want.error is None
        ):
            return True
    return False


def _combos(candidates: list[Mistake], size: int) -> list[tuple[Mistake, ...]]:
    """Combinations of ``size`` faults, at most one per code site; hand-written mistakes alone."""
    if size == 1:
        return [(m,) for m in candidates]
    switches = [m for m in candidates if m.is_switch]
    out = []
    for combo in itertools.combinations(switches, size):
        sites = {m.site or m.key for m in combo}
        if len(sites) == size and len({id(m.faulty) for m in combo}) == 1:
            out.append(combo)
    return out


def _tensors_of(outcome: Outcome) -> list[torch.Tensor]:
    """Every tensor an outcome holds: returned ones, gradients, inputs after, probes' gradients."""
    found: list[torch.Tensor] = []

    def walk(value: Any) -> None:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (tuple, list)):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)

    walk(outcome.output)
    walk(outcome.grads)
    walk(outcome.inputs_after)
    walk([p.get("grads") for p in outcome.probes or []])
    return found


def comparable_cases(run: Run, case_ids: list[str], budget: Budget) -> list[str]:
    """The cases diagnosis may compare: those whose learner outcome holds no tensor larger than
    one comparison may look at. No candidate (trusted code on a check-sized case) returns such
    a tensor, so such a case could never match; leaving it out costs nothing and keeps the
    search's memory to case-sized tensors, whatever a result tree names."""
    kept = []
    for cid in case_ids:
        mine = run.got.get(cid)
        if mine is not None and all(t.numel() <= budget.max_tensor_elements for t in _tensors_of(mine)):
            kept.append(cid)
    return kept


def _alike(
    run: Run, aspects: set[str], outs: dict[str, Outcome], cids: list[str], mine: dict[str, Outcome] | None = None
) -> bool:
    """Whether ``outs`` behave like the learner (or like ``mine``) on these cases, in these aspects."""
    mine = run.got if mine is None else mine
    return all(
        same_behaviour(mine.get(cid, Outcome(missing=True)), outs[cid], aspects, run.cases[cid].ungraded)
        for cid in cids
    )


def _matching(
    chk: Check, run: Run, evidence: tuple[list[str], set[str]], combos: list[tuple[Mistake, ...]], runner: _Runner
) -> list[tuple[Mistake, ...]]:
    """The combinations that behave like the learner where ``chk`` looks, and fail it too
    (those found before the budget ran out)."""
    found: list[tuple[Mistake, ...]] = []
    try:
        _search(chk, run, evidence, combos, runner, found)
    except BudgetExceeded:
        pass
    return found


def _search(
    chk: Check,
    run: Run,
    evidence: tuple[list[str], set[str]],
    combos: list[tuple[Mistake, ...]],
    runner: _Runner,
    found: list[tuple[Mistake, ...]],
) -> None:
    case_ids, aspects = evidence
    if not case_ids:
        return

    def alike(outs: dict[str, Outcome], cids: list[str]) -> bool:
        return _alike(run, aspects, outs, cids)

    # Most candidates are told apart on the first case where the learner leaves the
    # reference: try that one case before all the others.
    probe = next(
        (cid for cid in case_ids if not alike({cid: run.want.get(cid, Outcome(missing=True))}, [cid])), case_ids[0]
    )
    for combo in combos:
        if runner.exhausted():
            break
        if any(m.signature and not _shows_signature(run, m.signature, case_ids) for m in combo):
            continue  # what every form of that mistake shares is not there
        if not alike(runner.outcomes(combo, [probe]), [probe]):
            continue
        outs = runner.outcomes(combo, case_ids)
        if not alike(outs, case_ids):
            continue
        if any(m.exact_only for m in combo) and not _alike(run, aspects | {"output"}, outs, case_ids):
            # A gradient-path mistake keeps the values: a combination naming one must give the
            # learner's values too, not only its gradients (a wrong value with a zero gradient
            # is no detached branch).
            continue
        if evaluate_check(chk, run.with_outcomes(outs))[0]:
            continue  # behaves alike within the tolerance, yet passes: not this
        found.append(combo)


def _changed(run: Run, aspects: set[str], outs: dict[str, Outcome], case_ids: list[str]) -> list[str]:
    """The cases where ``outs`` leave the reference's behaviour (what a mistake changes there)."""
    return [
        cid
        for cid in case_ids
        if not _alike(run, aspects, {cid: run.want.get(cid, Outcome(missing=True))}, [cid], mine=outs)
    ]


def _supports(chk: Check, run: Run, evidence: tuple[list[str], set[str]], mistake: Mistake, runner: _Runner) -> bool:
    """Whether ``mistake`` alone explains part of what the learner got wrong on ``chk``.

    A learner with several mistakes rarely matches one of them on every case of a check. Per
    case, a mistake changes some of them (its own footprint there); it is supported when the
    learner leaves the reference on every case it changes, behaves exactly like it on at least
    one of them, and the mistake alone fails the check. The other cases are left to the other
    mistakes.
    """
    case_ids, aspects = evidence
    if mistake.exact_only:
        return False  # named only on a whole check's match (see Mistake.exact_only)
    if mistake.signature:
        return _shows_signature(run, mistake.signature, case_ids)
    outs = runner.outcomes((mistake,), case_ids)
    footprint = _changed(run, aspects, outs, case_ids)
    if not footprint or not set(footprint) <= set(_changed(run, aspects, run.got, case_ids)):
        return False
    if not any(_alike(run, aspects, outs, [cid]) for cid in footprint):
        return False
    return not evaluate_check(chk, run.with_outcomes(outs))[0]


def _shows_signature(run: Run, signature: str, case_ids: list[str]) -> bool:
    """Whether the learner shows ``signature`` (see :data:`exercises.mistakes.SIGNATURES`) on one
    of these cases, compared with the reference's outcome there. A function that never returns
    (a starter, a typo) shows nothing: its exception is the root cause, not a missing check."""
    if not any(o.error is None and not o.missing for o in run.got.values()):
        return False
    for cid in case_ids:
        mine, want = run.got.get(cid), run.want.get(cid)
        if mine is None or want is None or mine.missing or want.missing:
            continue
        if signature == "no-value-error" and want.raised("ValueError") and not mine.raised("ValueError"):
            return True
        if (
            signature == "wrong-dtype"
            and mine.error is None
            and want.error is None
            and any(
                a is not None and b is not None and a != b for a, b in zip(_dtypes(mine.output), _dtypes(want.output))
            )
        ):
            return True
        if (
            signature == "edits-inputs"
            and mine.error is None
            and any(
                key in mine.inputs_after and not _close(mine.inputs_after[key], before, compare_dtype=False)
                for key, before in want.inputs_after.items()
            )
        ):
            return True
    return False


def _dtypes(output: Any) -> list[Any]:
    """The dtypes of the tensors in a returned structure, in order (None for anything else)."""
    items = (
        list(output.values()) if isinstance(output, dict) else output if isinstance(output, (tuple, list)) else [output]
    )
    return [x.dtype if isinstance(x, torch.Tensor) else None for x in items]


def _claims(
    exercise: Exercise,
    run: Run,
    mistake: Mistake,
    failed: list[Check],
    evidence: dict[str, tuple[list[str], set[str]]],
    runner: _Runner,
) -> list[str]:
    """The failed checks ``mistake`` would fail on its own (those it claims to explain), leaving
    out the checks the learner's own exception failed (they say nothing for or against it)."""
    claimed = []
    for chk in failed:
        case_ids = evidence[chk.id][0]
        if chk.id not in mistake.explains or not case_ids or _crashed(run, case_ids):
            continue
        if not evaluate_check(chk, run.with_outcomes(runner.outcomes((mistake,), case_ids)))[0]:
            claimed.append(chk.id)
    return claimed


def _smallest_union(options: dict[str, list[tuple[Mistake, ...]]], limit: int = 256) -> dict[str, tuple[Mistake, ...]]:
    """One match per check such that the union names the fewest mistakes (then the most specific)."""
    ids = list(options)
    choices = [options[i] for i in ids]
    total = 1
    for c in choices:
        total *= len(c)
    if total > limit:  # keep it bounded: the first (smallest) option per check
        return {i: options[i][0] for i in ids}
    best: tuple[tuple[int, int], tuple[tuple[Mistake, ...], ...]] | None = None
    for pick in itertools.product(*choices):
        union = {m.named_id for combo in pick for m in combo}  # two forms of one mistake are one
        key = (len(union), sum(len(m.explains) for combo in pick for m in combo))
        if best is None or key < best[0]:
            best = (key, pick)
    assert best is not None
    return dict(zip(ids, best[1]))


def _most_claims_explained(
    exercise: Exercise,
    run: Run,
    failed: list[Check],
    evidence: dict[str, tuple[list[str], set[str]]],
    runner: _Runner,
    chosen: dict[str, tuple[Mistake, ...]],
    partial: dict[str, list[Mistake]],
) -> set[str]:
    """The names (``Mistake.named_id``) of the found mistakes that explain most of the failed
    checks they claim.

    A mistake matched on one check out of the seven it would fail is weak evidence (code with
    no clipping looks like "max instead of min" on the clipped-side check only): it is named
    only when the checks it explains (alone or together with others) are more than half of
    the failed checks it would fail on its own.
    """
    # Keyed by the name given (Mistake.named_id): two forms of one mistake count together.
    explained: dict[str, set[str]] = {}
    forms: dict[str, set[Mistake]] = {}
    for cid, combo in chosen.items():
        for m in combo:
            explained.setdefault(m.named_id, set()).add(cid)
            forms.setdefault(m.named_id, set()).add(m)
    for cid, found_here in partial.items():
        for m in found_here:
            explained.setdefault(m.named_id, set()).add(cid)
            forms.setdefault(m.named_id, set()).add(m)
    kept = set()
    for mid, checks in explained.items():
        try:
            claimed = set(checks)
            for m in forms[mid]:
                claimed |= set(_claims(exercise, run, m, failed, evidence, runner))
        except BudgetExceeded:
            kept.add(mid)  # its claims could not be weighed within the budget: it stays named
            continue
        if 2 * len(checks) > len(claimed):
            kept.add(mid)
    return kept


def diagnose(
    exercise: Exercise,
    run: Run,
    failed: list[Check],
    *,
    max_faults: int = 3,
    budget: Budget | None = None,
    seen: dict[str, Evidence] | None = None,
    only: set[str] | None = None,
) -> Diagnosis:
    """Name the mistakes behind ``failed`` (non-memory checks that failed on their own).

    ``seen`` maps a check id to the evidence it read on the learner's outcomes (recorded
    while grading), which saves running the check again. ``budget`` bounds the work (a
    fresh :class:`Budget` by default); comparisons in this thread spend from it. ``only``
    restricts the candidates to these mistakes (by ``Mistake.named_id``, forms included): the
    judge's probes found them, the run's own cases only say where else they show.

    Pass 1 tries every single fault that explains a failed check (cheapest checks first;
    faults already found elsewhere first). Pass 2, for the checks no
    single fault matches, tries 2 then 3 faults, first the combinations that add the fewest
    faults not already found in pass 1, and stops at the first group that matches: the
    smallest overall explanation comes first and the search stays bounded. Pass 3, for the
    checks still unmatched (and not failed by the learner's own exception), keeps the single
    faults each supports case by case. Last, a mistake that does not explain most of the
    failed checks it claims is dropped everywhere.
    """
    budget = budget if budget is not None else Budget()
    budget.start()
    _LOCAL.budget = budget
    try:
        return _diagnose(exercise, run, failed, max_faults, budget, seen, only)
    finally:
        _LOCAL.budget = None


def _diagnose(
    exercise: Exercise,
    run: Run,
    failed: list[Check],
    max_faults: int,
    budget: Budget,
    seen: dict[str, Evidence] | None,
    only: set[str] | None = None,
) -> Diagnosis:
    t0, cpu0 = time.monotonic(), time.thread_time()
    runner = _Runner(run.cases, budget)
    result = Diagnosis()
    mistakes = [m for m in exercise.mistakes if not m.is_memory and (only is None or m.named_id in only)]
    candidates = {chk.id: [m for m in mistakes if chk.id in m.explains] for chk in failed}
    evidence = {}
    for chk in failed:
        cases, aspects = _evidence(chk, run, (seen or {}).get(chk.id))
        evidence[chk.id] = (comparable_cases(run, cases, budget), aspects)
    options: dict[str, list[tuple[Mistake, ...]]] = {}
    confirmed: set[str] = set()
    # Cheap checks first; a fault already seen elsewhere is tried first and, if it fits, ends
    # the pass for this check (it can only make the overall explanation smaller).
    order = sorted(failed, key=lambda c: len(evidence[c.id][0]))
    for chk in order:
        known = [m for m in candidates[chk.id] if m.id in confirmed]
        found = _matching(chk, run, evidence[chk.id], _combos(known, 1), runner)
        if not found:
            rest = [m for m in candidates[chk.id] if m.id not in confirmed]
            found = _matching(chk, run, evidence[chk.id], _combos(rest, 1), runner)
        if found:
            options[chk.id] = found
            confirmed |= {m.id for combo in found for m in combo}
    for chk in order:
        if chk.id in options or not evidence[chk.id][0]:
            continue
        for size in range(2, max_faults + 1):
            groups: dict[int, list[tuple[Mistake, ...]]] = {}
            for combo in _combos(candidates[chk.id], size):
                groups.setdefault(sum(m.id not in confirmed for m in combo), []).append(combo)
            for new in sorted(groups):
                found = _matching(chk, run, evidence[chk.id], groups[new], runner)
                if found:
                    options[chk.id] = found
                    confirmed |= {m.id for combo in found for m in combo}
                    break
            if chk.id in options:
                break
    # Pass 3: a check no combination matches may still show single mistakes in the cases each
    # changes (a learner's form of a mistake, or a mistake beside an uncatalogued one).
    partial: dict[str, list[Mistake]] = {}
    for chk in order:
        if chk.id in options or not evidence[chk.id][0] or _crashed(run, evidence[chk.id][0]):
            continue
        found_here = []
        try:
            for m in candidates[chk.id]:
                if _supports(chk, run, evidence[chk.id], m, runner):
                    found_here.append(m)
        except BudgetExceeded:
            pass  # what was found before the budget ran out still counts
        if found_here:
            partial[chk.id] = found_here
    chosen = _smallest_union(options)
    named = _most_claims_explained(exercise, run, failed, evidence, runner, chosen, partial)
    for cid, combo in chosen.items():
        if all(m.named_id in named for m in combo):
            result.by_check[cid] = _as_named(exercise, combo)
    for cid, found_here in partial.items():
        kept = [m for m in found_here if m.named_id in named]
        if kept:
            result.by_check[cid] = _as_named(exercise, kept)
    # A check the learner's own exception failed (where the reference returned) is explained by
    # that exception, which the feedback's root causes show; it is no unknown mistake.
    result.unexplained = [
        chk.id for chk in failed if chk.id not in result.by_check and not _crashed(run, evidence[chk.id][0])
    ]
    result.runs, result.elements, result.exhausted = budget.runs, budget.elements, budget.exhausted
    result.seconds = time.monotonic() - t0
    result.cpu_seconds = time.thread_time() - cpu0
    return result


def _as_named(exercise: Exercise, found: tuple[Mistake, ...] | list[Mistake]) -> list[Mistake]:
    """The mistakes to name for ``found``, in catalogue order: a form of a mistake (``form_of``)
    is named as that mistake, once."""
    by_id = {m.id: m for m in exercise.mistakes}
    named = {by_id.get(m.named_id, m).id: by_id.get(m.named_id, m) for m in found}
    return sorted(named.values(), key=lambda m: exercise.mistakes.index(m))

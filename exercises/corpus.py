"""A compound-mistake corpus built from the fault switches, and diagnosis measured on it.

Each entry is an exercise and 2 or 3 catalogued mistakes at different code sites, written
as a submittable file (the faulty reference with those switches on). An entry is kept only
when every one of its mistakes shows: switching it off changes the outcome of a failed check
it explains (a mistake another one masks completely is not a fair test of naming).

``evaluate`` grades an entry in process, runs diagnosis and scores it: which injected
mistakes were named (recall), what was named that was not injected (precision), and any
mistake named on a check it does not explain.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from exercises.diagnosis import diagnose, same_behaviour
from exercises.framework import Exercise, Run, evaluate_check
from exercises.mistakes import Mistake, faulty_source, with_faults
from exercises.offline import OfflineRun, grade_offline, regular_cases
from exercises.outcomes import run_in_process


@dataclass(frozen=True)
class Entry:
    """One corpus file: an exercise, its injected mistakes (fault ids) and the case seed."""

    slug: str
    faults: tuple[str, ...]
    seed: int

    def source(self, exercise: Exercise) -> str:
        """The submittable file of this entry."""
        return faulty_source(_faulty(exercise), self.faults, exercise.function_name)


@dataclass
class Scored:
    """Diagnosis of one entry against what was injected."""

    entry: Entry
    named: set[str] = field(default_factory=set)
    wrong_check: list[tuple[str, str]] = field(default_factory=list)
    unexplained: list[str] = field(default_factory=list)
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    @property
    def hits(self) -> int:
        return len(self.named & set(self.entry.faults))

    @property
    def false(self) -> set[str]:
        return self.named - set(self.entry.faults)


def _faulty(exercise: Exercise) -> Callable[..., Any]:
    return next(m.faulty for m in exercise.mistakes if m.faulty is not None)


def _switches(exercise: Exercise) -> list[Mistake]:
    return [m for m in exercise.mistakes if m.is_switch]


def _visible(exercise: Exercise, combo: tuple[Mistake, ...], seed: int) -> bool:
    """Every mistake of ``combo`` changes a failed check it explains (switching it off shows)."""
    faulty = _faulty(exercise)
    cases = regular_cases(exercise, seed)
    want = run_in_process(exercise.reference, cases, "reference.py")
    full = grade_offline(exercise, with_faults(faulty, [m.key for m in combo]), seed, cases=cases, want=want)
    run = full.run()
    for m in combo:
        rest = [o.key for o in combo if o is not m]
        without = grade_offline(exercise, with_faults(faulty, rest), seed, cases=cases, want=want)
        if not any(_differs(full, without, chk_id, run) for chk_id in set(full.failed) & set(m.explains)):
            return False
    return True


def _differs(full: OfflineRun, without: OfflineRun, check_id: str, run: Run) -> bool:
    if without.results[check_id][0]:
        return True
    chk = next(c for c in full.exercise.checks if c.id == check_id)
    probe = evaluate_check(chk, run.with_outcomes(full.want))[2]
    aspects = probe.aspects | {"error"}
    return not all(
        same_behaviour(full.got[cid], without.got[cid], aspects, run.cases[cid].ungraded) for cid in probe.cases
    )


def build_corpus(exercise: Exercise, *, pairs: int = 6, triples: int = 6, seed: int = 7) -> list[Entry]:
    """Entries with 2 and 3 visible mistakes at distinct sites, drawn reproducibly from ``seed``."""
    rng = random.Random(f"{exercise.slug}:{seed}")
    switches = _switches(exercise)
    entries: list[Entry] = []
    for size, wanted in ((2, pairs), (3, triples)):
        combos = [c for c in itertools.combinations(switches, size) if len({m.site for m in c}) == size]
        rng.shuffle(combos)
        taken = 0
        for combo in combos:
            if taken == wanted:
                break
            case_seed = rng.randrange(1, 10**6)
            if _visible(exercise, combo, case_seed):
                entries.append(Entry(exercise.slug, tuple(m.key for m in combo), case_seed))
                taken += 1
    return entries


def evaluate(exercise: Exercise, entry: Entry) -> Scored:
    """Grade an entry in process, diagnose its failed checks and score the naming."""
    learner = with_faults(_faulty(exercise), entry.faults)
    run = grade_offline(exercise, learner, entry.seed)
    failed = [c for c in exercise.checks if c.id in run.failed]
    diag = diagnose(exercise, run.run(), failed, seen=run.seen)
    scored = Scored(entry, unexplained=list(diag.unexplained), seconds=diag.seconds, cpu_seconds=diag.cpu_seconds)
    # A mistake named for an injected form of it (Mistake.form_of) names that form.
    forms = {m.named_id: m.key for m in exercise.mistakes if m.form_of and m.key in entry.faults}
    for check_id, named in diag.by_check.items():
        for m in named:
            scored.named.add(forms.get(m.id, m.key))
            if check_id not in m.explains:
                scored.wrong_check.append((m.key, check_id))
    return scored

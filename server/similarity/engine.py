"""Which learners handed in the same code: per exercise, then summed over a course.

Pure computation on text (no database, no learner code run). The service feeds it each
learner's latest and best submission per exercise and stores what it returns.

Per exercise:

1. every source is normalised (``normalize``) and winnowed (``fingerprints``);
2. a fingerprint is **excluded** when it occurs anywhere in the starter (its docstring,
   signature and self-tests are everyone's), or when more than ``common_share`` of the
   learners have it (the few lines most correct solutions of a short exercise share);
3. each remaining fingerprint weighs ``log((1 + n) / d)`` for ``n`` learners of whom ``d``
   have it: a line only two learners share says more than one that five share;
4. two documents' similarity is the shared weight over each one's own weight, averaged
   (1.0: each is the other's copy; 0.5: one holds half of the other); a pair of learners
   gets the best of their documents' pairs (latest against best too), and needs at least
   ``min_shared`` shared fingerprints to count at all.

Over a course, a pair's **score** is the sum of its per-exercise similarities: a pair
similar on four exercises ranks above one similar on one, and one exercise's noise (short
functions look alike) weighs little against a pattern.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from server.similarity.fingerprints import Fingerprinted, fingerprint, kgram_hashes, statement_hashes
from server.similarity.normalize import normalize

LearnerPair = tuple[int, int]


@dataclass(frozen=True)
class Tuning:
    """The engine's knobs (stored with every run, so a result says how it was made)."""

    #: A fingerprint more than this share of the exercise's learners have is common code.
    common_share: float = 0.2
    #: ... but one that at most this many learners have is never common (small courses).
    common_floor: int = 3
    #: Fewer shared fingerprints than this is no similarity at all.
    min_shared: int = 3
    #: An exercise counts as "similar" for a pair from this similarity on.
    similar_at: float = 0.5

    def common_above(self, learners: int) -> int:
        """Fingerprints held by more learners than this are excluded."""
        return max(self.common_floor, math.ceil(self.common_share * learners))


#: The knobs every run uses unless a caller (a benchmark, a test) asks otherwise.
DEFAULT_TUNING = Tuning()


@dataclass(frozen=True)
class Entry:
    """One submission to compare: whose it is, its id, its text."""

    learner: int
    submission: int
    source: str


@dataclass(frozen=True)
class ExerciseMatch:
    """A learner pair on one exercise: the best pair of their submissions."""

    similarity: float
    submission_a: int
    submission_b: int
    shared: int


@dataclass
class CoursePair:
    """A learner pair over the course (``learner_a < learner_b``)."""

    learner_a: int
    learner_b: int
    score: float = 0.0
    exercises: dict[str, ExerciseMatch] = field(default_factory=dict)

    def similar_on(self, tuning: Tuning) -> int:
        """On how many exercises the pair is at least ``tuning.similar_at`` similar."""
        return sum(m.similarity >= tuning.similar_at for m in self.exercises.values())


@dataclass
class _Doc:
    entry: Entry
    prints: Fingerprinted
    kept: frozenset[int] = frozenset()
    mass: float = 0.0


class ExerciseComparison:
    """One exercise's documents, their kept fingerprints and every learner pair's match."""

    def __init__(self, starter: str, entries: Iterable[Entry], tuning: Tuning = Tuning()) -> None:
        self.tuning = tuning
        seen: set[int] = set()
        self._docs: dict[int, _Doc] = {}
        for entry in entries:
            if entry.submission in seen:  # latest and best are often the same submission
                continue
            seen.add(entry.submission)
            self._docs[entry.submission] = _Doc(entry, fingerprint(normalize(entry.source)))
        self.learners = len({d.entry.learner for d in self._docs.values()})
        starter_tokens = normalize(starter)
        starter_grams = set(kgram_hashes(starter_tokens)) | {h for h, _, _ in statement_hashes(starter_tokens)}
        holders: dict[int, set[int]] = defaultdict(set)
        for doc in self._docs.values():
            for value in doc.prints.positions:
                holders[value].add(doc.entry.learner)
        limit = tuning.common_above(self.learners)
        self.weights = {
            value: math.log((1 + self.learners) / len(who))
            for value, who in holders.items()
            if value not in starter_grams and len(who) <= limit
        }
        self.excluded = len(holders) - len(self.weights)
        for doc in self._docs.values():
            doc.kept = frozenset(v for v in doc.prints.positions if v in self.weights)
            doc.mass = sum(self.weights[v] for v in doc.kept)
        self.matches = self._match()

    def _match(self) -> dict[LearnerPair, ExerciseMatch]:
        """Every learner pair that shares at least ``min_shared`` kept fingerprints."""
        postings: dict[int, list[int]] = defaultdict(list)
        for submission, doc in self._docs.items():
            for value in doc.kept:
                postings[value].append(submission)
        shared: dict[tuple[int, int], list[float]] = defaultdict(lambda: [0.0, 0])
        for value, holders in postings.items():
            if len(holders) < 2:
                continue
            weight = self.weights[value]
            for x, y in combinations(sorted(holders), 2):
                if self._docs[x].entry.learner == self._docs[y].entry.learner:
                    continue
                tally = shared[(x, y)]
                tally[0] += weight
                tally[1] += 1
        best: dict[LearnerPair, ExerciseMatch] = {}
        for (x, y), (weight, count) in shared.items():
            if count < self.tuning.min_shared:
                continue
            doc_x, doc_y = self._docs[x], self._docs[y]
            similarity = min(1.0, weight * (1 / doc_x.mass + 1 / doc_y.mass) / 2)
            if doc_x.entry.learner > doc_y.entry.learner:
                doc_x, doc_y = doc_y, doc_x
            key = (doc_x.entry.learner, doc_y.entry.learner)
            match = ExerciseMatch(similarity, doc_x.entry.submission, doc_y.entry.submission, int(count))
            if key not in best or (match.similarity, match.shared) > (best[key].similarity, best[key].shared):
                best[key] = match
        return best

    def spans(self, submission_a: int, submission_b: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """The source lines (first, last; merged) of each side that the other shares."""
        doc_a, doc_b = self._docs[submission_a], self._docs[submission_b]
        common = doc_a.kept & doc_b.kept
        return _merged(doc_a.prints, common), _merged(doc_b.prints, common)


def _merged(prints: Fingerprinted, values: Iterable[int]) -> list[tuple[int, int]]:
    ranges = sorted(prints.span(p) for v in values for p in prints.positions[v])
    merged: list[tuple[int, int]] = []
    for first, last in ranges:
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


def aggregate(comparisons: dict[str, ExerciseComparison]) -> list[CoursePair]:
    """Every pair similar on at least one exercise, best first (score, then how many
    exercises are similar, then the learners' ids for a stable order)."""
    pairs: dict[LearnerPair, CoursePair] = {}
    for exercise, comparison in comparisons.items():
        for (a, b), match in comparison.matches.items():
            pair = pairs.setdefault((a, b), CoursePair(a, b))
            pair.exercises[exercise] = match
            pair.score += match.similarity
    tuning = next(iter(comparisons.values())).tuning if comparisons else Tuning()
    return sorted(pairs.values(), key=lambda p: (-p.score, -p.similar_on(tuning), p.learner_a, p.learner_b))


def rank(pairs: Sequence[CoursePair], exercise: str | None = None) -> list[CoursePair]:
    """``pairs`` ranked over the course, or by one exercise's similarity alone."""
    if exercise is None:
        return sorted(pairs, key=lambda p: (-p.score, p.learner_a, p.learner_b))
    having = [p for p in pairs if exercise in p.exercises]
    return sorted(having, key=lambda p: (-p.exercises[exercise].similarity, -p.score, p.learner_a, p.learner_b))

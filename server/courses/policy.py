"""The date rules of one exercise for one learner, as pure functions of the time.

Boundaries (each tested at, one second before and one second after):

- before ``release_at``: refused (and not listed); at ``release_at``: open;
- at ``due_at``: on time; after it: late by the seconds past it;
- at ``close_at``: still accepted; after it: refused;
- an extension replaces the learner's due date when it is later, and moves the close to
  it when the close came earlier (an extension past the close would otherwise be useless);
- the penalty is ``percent`` of the raw score per started unit (day or hour) of lateness,
  capped at 100: one second late costs one unit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

UNIT_SECONDS = {"day": 86_400, "hour": 3_600}


def late_rule(penalty_percent: float, penalty_unit: str) -> str:
    """A late rule in words: "10% off per day late" or "late: flagged only"."""
    if penalty_percent:
        return f"{penalty_percent:g}% off per {penalty_unit} late"
    return "late: flagged only"


def learner_due(due_at: datetime | None, extended_to: datetime | None) -> datetime | None:
    """A learner's due date: the set's ``due_at``, or their extension's when it is later (an
    earlier "extension" changes nothing). The one place the two are compared."""
    if extended_to is not None and (due_at is None or extended_to > due_at):
        return extended_to
    return due_at


class Phase(StrEnum):
    """Where an exercise stands for one learner at one moment."""

    NOT_RELEASED = "not_released"
    OPEN = "open"
    LATE = "late"
    CLOSED = "closed"


@dataclass(frozen=True)
class Rules:
    """The dates and late policy in force for one learner (extension applied)."""

    release_at: datetime | None
    due_at: datetime | None
    close_at: datetime | None
    penalty_percent: float = 0.0
    penalty_unit: str = "day"
    max_attempts: int | None = None
    extended: bool = False

    def with_extension(self, due_at: datetime | None) -> Rules:
        """These rules with a learner's extended due date (None: no extension)."""
        due_at = learner_due(self.due_at, due_at)
        if due_at == self.due_at or due_at is None:
            return self
        close_at = self.close_at
        if close_at is not None and close_at < due_at:
            close_at = due_at
        return Rules(
            self.release_at, due_at, close_at, self.penalty_percent, self.penalty_unit, self.max_attempts, extended=True
        )

    def phase(self, now: datetime) -> Phase:
        """Not released, open, late (accepted, flagged) or closed (refused) at ``now``."""
        if self.release_at is not None and now < self.release_at:
            return Phase.NOT_RELEASED
        if self.close_at is not None and now > self.close_at:
            return Phase.CLOSED
        if self.due_at is not None and now > self.due_at:
            return Phase.LATE
        return Phase.OPEN

    def late_seconds(self, now: datetime) -> int | None:
        """Whole seconds past the due date (at least 1 when late), or None when on time."""
        if self.due_at is None or now <= self.due_at:
            return None
        return max(1, math.ceil((now - self.due_at).total_seconds()))

    def penalty_for(self, late_seconds: int | None) -> float:
        """Percent of the raw score taken off for this lateness (0 to 100)."""
        if not late_seconds or self.penalty_percent <= 0:
            return 0.0
        units = math.ceil(late_seconds / UNIT_SECONDS[self.penalty_unit])
        return min(100.0, units * self.penalty_percent)


def counted_score(raw: float | None, penalty_percent: float) -> float | None:
    """The score that counts: the raw score less ``penalty_percent`` of it (None stays None)."""
    if raw is None:
        return None
    return round(raw * (1.0 - min(100.0, max(0.0, penalty_percent)) / 100.0), 6)

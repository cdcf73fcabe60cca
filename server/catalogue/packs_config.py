"""The pack folders the service is configured with, kept in its database (issue 32).

``ppo-grader serve --pack DIR`` (or ``PPO_GRADER_EXERCISE_PACKS`` in serve's environment)
records them; every command (serve, worker, admin, verify) reads them from the database it
uses, so none depends on a variable its shell may lack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from server.models import ServiceSetting

if TYPE_CHECKING:
    from exercises.framework import Exercise

#: The setting's name in ``service_settings``.
PACKS = "exercise_packs"


def recorded_packs(session: Session) -> list[str]:
    """The pack folders recorded for the service (none when never configured)."""
    row = session.get(ServiceSetting, PACKS)
    value = row.value if row is not None else None
    return [str(v) for v in value] if isinstance(value, list) else []


def record_packs(session: Session, folders: list[str]) -> bool:
    """Record ``folders`` as the service's packs; whether that changed the record."""
    row = session.get(ServiceSetting, PACKS)
    if row is not None and row.value == folders:
        return False
    if row is None:
        session.add(ServiceSetting(name=PACKS, value=folders))
    else:
        row.value = folders
    session.flush()
    return True


def packs_line(catalogue: list[Exercise]) -> str:
    """``packs: built-in (11 exercises); course (2 exercises: rloo, ppo-kl)``: each pack with its
    exercises, in catalogue order (serve's banner and the service's start-up log line)."""
    by_pack: dict[str, list[str]] = {}
    for exercise in catalogue:
        by_pack.setdefault(exercise.pack, []).append(exercise.slug)
    return "packs: " + "; ".join(
        f"{pack} ({len(slugs)} exercise{'s' if len(slugs) != 1 else ''}"
        + ("" if pack == "built-in" else ": " + ", ".join(slugs))
        + ")"
        for pack, slugs in by_pack.items()
    )

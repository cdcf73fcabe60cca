"""The pack folders the service is configured with, kept in its database (issue 32).

``ppo-grader serve --pack DIR`` (or ``PPO_GRADER_EXERCISE_PACKS`` in serve's environment)
records them; every command (serve, worker, admin, verify) reads them from the database it
uses, so none depends on a variable its shell may lack.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from server.models import ServiceSetting

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

"""Alembic migrations, applied programmatically at start (``upgrade_to_head``)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine

MIGRATIONS_DIR = Path(__file__).resolve().parent


def alembic_config(engine: Engine | None = None) -> Config:
    """An Alembic config pointing at this folder; with ``engine``, env.py migrates through it."""
    config = Config(str(MIGRATIONS_DIR / "alembic.ini"))
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if engine is not None:
        # Passed as an attribute, not a URL option, so passwords with '%' need no escaping
        # and an in-memory or test engine is migrated in place.
        config.attributes["engine"] = engine
    return config


def include_name(name: str | None, type_: str, _parents: object = None) -> bool:
    """Alembic's ``include_name``: our tables only. procrastinate's objects (migration 0003)
    are created from its own SQL, not from our models, so autogenerate must not see them."""
    return not (name or "").startswith("procrastinate")


def upgrade_to_head(engine: Engine) -> None:
    """Apply every pending migration (``alembic upgrade head``)."""
    command.upgrade(alembic_config(engine), "head")

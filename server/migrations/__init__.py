"""Alembic migrations, applied programmatically at start (``upgrade_to_head``).

Every admin command opens the database through :func:`upgrade_to_head`, so its common case (the
database is at the newest revision already) is answered without Alembic: the revision the
database records is read with one query and compared with the head of ``versions/``, read from
the files' ``revision`` and ``down_revision`` lines. Importing Alembic and loading every
revision script cost about half a second of each command's start (docs/benchmarks.md, "Admin
commands"); anything unexpected (a database behind, ahead, without the table, or revision
files this reading does not understand) goes to Alembic as before.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Engine, text
from sqlalchemy.exc import SQLAlchemyError

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).resolve().parent
_REVISION = re.compile(r'^revision(?:: str)? = "([^"]+)"$', re.M)
_DOWN = re.compile(r'^down_revision(?:: [\w |]+)? = (?:"([^"]+)"|None)$', re.M)


def alembic_config(engine: Engine | None = None) -> Config:
    """An Alembic config pointing at this folder; with ``engine``, env.py migrates through it."""
    from alembic.config import Config

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


@functools.cache
def head_revision() -> str | None:
    """The one head of ``versions/`` from the files' ``revision`` / ``down_revision`` lines;
    None when a file does not read so or there is not exactly one head (Alembic decides then)."""
    revisions, parents = set(), set()
    for path in (MIGRATIONS_DIR / "versions").glob("*.py"):
        source = path.read_text()
        revision, down = _REVISION.findall(source), _DOWN.search(source)
        if len(revision) != 1 or down is None:
            return None
        revisions.add(revision[0])
        if down.group(1):
            parents.add(down.group(1))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 and parents <= revisions else None


def at_head(engine: Engine) -> bool:
    """Whether the database records the head revision (one query; False on any doubt)."""
    head = head_revision()
    if head is None:
        return False
    try:
        with engine.connect() as conn:
            recorded = [row[0] for row in conn.execute(text("SELECT version_num FROM alembic_version"))]
    except SQLAlchemyError:  # no table yet: a new database
        return False
    return recorded == [head]


def upgrade_to_head(engine: Engine) -> None:
    """Apply every pending migration (``alembic upgrade head``); nothing to do costs one query."""
    if at_head(engine):
        return
    from alembic import command

    command.upgrade(alembic_config(engine), "head")

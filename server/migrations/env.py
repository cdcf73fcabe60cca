"""Alembic environment: the engine comes from the caller or from Settings."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Engine

from server.config import Settings
from server.db import make_engine
from server.migrations import include_name
from server.models import Base

config = context.config
target_metadata = Base.metadata


def _run(engine: Engine) -> None:
    with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:
            # Batch mode rebuilds a table by copying it and dropping the old one; with foreign
            # keys on (server.db turns them on) that DROP would cascade into every child table
            # (rebuilding ``courses`` deleted the submissions). Off for the migration; SQLite
            # ignores the pragma inside a transaction, so it is set before one begins.
            connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
            connection.commit()
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            # SQLite cannot ALTER most things; batch mode rebuilds tables instead.
            render_as_batch=connection.dialect.name == "sqlite",
            compare_type=True,
            include_name=include_name,  # leave procrastinate's tables alone
        )
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()
        if sqlite:
            connection.exec_driver_sql("PRAGMA foreign_keys=ON")
            connection.commit()


def run_migrations_offline() -> None:
    """Emit SQL to stdout (``alembic upgrade head --sql``)."""
    url = Settings().DATABASE_URL
    context.configure(
        url=url,
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=url.startswith("sqlite"),
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Migrate through the engine the server passed in, or one built from Settings."""
    engine = config.attributes.get("engine")
    if engine is not None:
        _run(engine)
        return
    own = make_engine(Settings().DATABASE_URL)
    try:
        _run(own)
    finally:
        own.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()

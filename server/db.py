"""Engine and session factories. Created by the app's lifespan (or the CLI), never at import."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from sqlalchemy import Engine, Table, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

SessionFactory = sessionmaker[Session]


def make_engine(database_url: str) -> Engine:
    """Create an engine; for SQLite files, create the parent folder and tune for threads."""
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True)

    if url.database and url.database != ":memory:":
        Path(url.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    # API threads and worker threads share the engine, so connections cross threads.
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
    event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets readers (API) proceed while a worker writes; busy_timeout waits out the
    # short write locks instead of failing with "database is locked".
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def make_session_factory(engine: Engine) -> SessionFactory:
    """A session factory whose objects stay readable after commit (we return them as JSON)."""
    return sessionmaker(engine, expire_on_commit=False)


@contextmanager
def transaction(factory: SessionFactory) -> Iterator[Session]:
    """A session that commits on success and rolls back on any exception."""
    with factory() as session, session.begin():
        yield session


def insert_unless_taken(session: Session, model: type[DeclarativeBase], values: dict[str, Any]) -> Any:
    """Insert one row of ``model`` unless a row holding one of its unique keys exists: its
    primary key (a tuple for a composite one), or None when the key was taken.

    One statement (``INSERT ... ON CONFLICT DO NOTHING RETURNING``, PostgreSQL and SQLite), so
    two transactions that both looked and found the key free cannot both insert it: the second
    waits for the first to end (a row lock in PostgreSQL, the write lock in SQLite) and then
    inserts nothing. Its transaction stays usable (no ``IntegrityError`` to roll back), and it
    then reads the winner's row. Column defaults apply as for an ORM insert; the row is not
    loaded into the session (``session.get`` it)."""
    table = cast(Table, model.__table__)  # every model is one table
    statement = (
        dialect_insert(session.get_bind().dialect.name)(table)
        .values(values)
        .on_conflict_do_nothing()
        .returning(*table.primary_key.columns)
    )
    row = session.execute(statement).first()
    if row is None:
        return None
    return row[0] if len(row) == 1 else tuple(row)


def dialect_insert(dialect: str) -> Callable[[Any], Any]:
    """The ``insert`` of the dialect named (``"postgresql"``, else SQLite's), whose statement has
    ``on_conflict_do_nothing`` and ``on_conflict_do_update``. Imported when first asked for: the
    PostgreSQL dialect costs a twentieth of a second to import, which no command on SQLite needs."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as postgresql_insert

        return postgresql_insert
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert


@contextmanager
def rolled_back(session: Session) -> Iterator[None]:
    """A block whose writes are undone when it ends, whatever happens in it: a dry run runs the
    same services (so the same refusals and the same result, read inside the block) and keeps
    nothing. A savepoint, so the session and its transaction go on afterwards."""
    savepoint = session.begin_nested()
    try:
        yield
    finally:
        if savepoint.is_active:
            savepoint.rollback()

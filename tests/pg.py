"""PostgreSQL for the test suite: one fresh database per test session on the local server
(``ppo_grader_test_<pid>``), dropped at the end; tests needing it SKIP only when the server
is unreachable (in CI it is reachable).

``PPO_GRADER_TEST_PG`` overrides the admin URL (default: postgres@127.0.0.1:5432).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

ADMIN_URL = os.environ.get("PPO_GRADER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


def _connect(dbname: str | None = None):  # type: ignore[no-untyped-def]
    import psycopg

    url = ADMIN_URL if dbname is None else ADMIN_URL.rsplit("/", 1)[0] + f"/{dbname}"
    return psycopg.connect(url, autocommit=True, connect_timeout=3)


def sqlalchemy_url(dbname: str) -> str:
    """The SQLAlchemy URL (psycopg 3 driver) of a database on the test server."""
    return "postgresql+psycopg://" + ADMIN_URL.split("://", 1)[1].rsplit("/", 1)[0] + f"/{dbname}"


def reset_schema(dbname: str) -> None:
    """Empty a database: drop and recreate its ``public`` schema (migrations then run anew)."""
    with _connect(dbname) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """Name of a database created for this session (skips if PostgreSQL is unreachable)."""
    try:
        admin = _connect()
    except Exception as exc:  # noqa: BLE001 - any failure to connect means "unreachable"
        pytest.skip(f"PostgreSQL unreachable at {ADMIN_URL}: {exc}")
    name = f"ppo_grader_test_{os.getpid()}"
    with admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with _connect() as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
            admin.execute(f'DROP DATABASE IF EXISTS "{name}"')


@pytest.fixture
def pg_url(pg_database: str) -> str:
    """SQLAlchemy URL of the session database, emptied for this test."""
    reset_schema(pg_database)
    return sqlalchemy_url(pg_database)

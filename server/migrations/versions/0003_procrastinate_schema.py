"""procrastinate's schema on PostgreSQL (the scale-out job queue); nothing on SQLite.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29

``QUEUE=procrastinate`` inserts job rows in the submission's transaction, so its tables
must live in the same database, created by the same migration run. The SQL is
procrastinate's own (``SchemaManager.get_schema()``, from the installed version, pinned
by pyproject). Later procrastinate upgrades ship their own migration files; apply those in
a new Alembic revision (``procrastinate schema --migrations-path`` lists them).
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create procrastinate's tables, types and functions unless they exist already."""
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    exists = bind.exec_driver_sql("SELECT to_regclass('procrastinate_jobs') IS NOT NULL").scalar()
    if exists:
        return
    from procrastinate.schema import SchemaManager

    # The raw psycopg connection (same transaction): the script holds many statements and
    # '%' signs, which must not go through a parameter-formatting layer.
    driver = bind.connection.driver_connection
    driver.execute(SchemaManager.get_schema())  # type: ignore[union-attr]


def downgrade() -> None:
    """Drop procrastinate's objects (the job history goes with them)."""
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    driver = bind.connection.driver_connection
    driver.execute(  # type: ignore[union-attr]
        """
        DO $$
        DECLARE r record;
        BEGIN
            FOR r IN SELECT tablename FROM pg_tables
                     WHERE schemaname = current_schema() AND tablename LIKE 'procrastinate%' LOOP
                EXECUTE format('DROP TABLE IF EXISTS %I CASCADE', r.tablename);
            END LOOP;
            FOR r IN SELECT p.oid::regprocedure AS f FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                     WHERE n.nspname = current_schema() AND p.proname LIKE 'procrastinate%' LOOP
                EXECUTE format('DROP FUNCTION IF EXISTS %s CASCADE', r.f);
            END LOOP;
            FOR r IN SELECT t.typname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
                     WHERE n.nspname = current_schema() AND t.typname LIKE 'procrastinate%' AND t.typtype IN ('e', 'c') LOOP
                EXECUTE format('DROP TYPE IF EXISTS %I CASCADE', r.typname);
            END LOOP;
        END $$;
        """
    )

"""The named mistake's title has one name: ``check_results.misconception`` is ``mistake_title``.

Revision ID: 0023_mistake_title
Revises: 0024_lti_round6
Create Date: 2026-12-04

A rename only, issue 33 ("one concept, one name"): the column beside ``mistake_id`` is the
mistake's title as it was worded when graded, and it is now called that. The check rows a
regrade keeps as JSON (its results, and the verdicts it superseded) rename the same key, so
every stored check says ``mistake_title``. In place on both databases (``ALTER TABLE ...
RENAME COLUMN``, SQLite 3.25+), never a batch copy: on SQLite a copy drops the table, and the
foreign keys that point at it cascade. The data does not change; the downgrade renames back.

Stored reports (``submissions.feedback``) keep their ``diagnosis`` entries' old key
``misconception`` (the mistake's id): the code that reads them accepts both
(``server.submissions.schemas.Mistake``, ``exercises.feedback.diagnosis_data``), so no report
is rewritten here.
"""

from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0023_mistake_title"
down_revision: str | None = "0024_lti_round6"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: Tables that keep check rows as JSON (``server.grading.persistence.Storable.checks``).
_JSON_CHECKS = ("regrade_results", "superseded_verdicts")


def upgrade() -> None:
    """Rename the column and the JSON checks' key to ``mistake_title``."""
    _rename_column("misconception", "mistake_title")
    for table in _JSON_CHECKS:
        _rewrite_checks(table, lambda c: _renamed_key(c, "misconception", "mistake_title"))


def downgrade() -> None:
    """Rename both back to ``misconception``."""
    for table in _JSON_CHECKS:
        _rewrite_checks(table, lambda c: _renamed_key(c, "mistake_title", "misconception"))
    _rename_column("mistake_title", "misconception")


def _rename_column(old: str, new: str) -> None:
    if op.get_bind().dialect.name == "sqlite":  # in place (Alembic's SQLite rename is a batch copy)
        op.execute(f"ALTER TABLE check_results RENAME COLUMN {old} TO {new}")
    else:
        op.alter_column("check_results", old, new_column_name=new)


def _renamed_key(check: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """``check`` with ``old`` renamed ``new``, in the same place among its keys."""
    return {new if k == old else k: v for k, v in check.items()}


def _rewrite_checks(table: str, change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Every check dict of ``table``'s JSON ``checks`` column through ``change``, row by row."""
    rows = sa.table(table, sa.column("id", sa.Integer()), sa.column("checks", sa.JSON()))
    bind = op.get_bind()
    for row_id, checks in bind.execute(sa.select(rows.c.id, rows.c.checks)).all():
        if isinstance(checks, list) and checks:
            new = [change(c) if isinstance(c, dict) else c for c in checks]
            if new != checks:
                bind.execute(rows.update().where(rows.c.id == row_id).values(checks=new))

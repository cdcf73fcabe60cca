"""Each check row says whether the judge confirmed its evidence: ``check_results.self_reported``.

Revision ID: 0020_check_self_reported
Revises: 0021_version_served
Create Date: 2026-12-03

The board score (the passed confirmed checks' share, issue 19) was computed from the stored
rows by looking each row's check id up in today's catalogue, so a row without an id, or of a
check a pack no longer has, counted as confirmed, and rewording a pack could move old board
places. From here on the judge's own per-check flag (``CheckOutcome.self_reported``) is stored
on the row, and the board reads only that (``server.courses.counted.submission_board``).

Backfill, conservative: a row is confirmed (``false``) only when its check id is one of the
built-in catalogue's confirmed checks, frozen below as of this revision so the migration does
the same whenever it runs; every other row (no id, a course pack's check, a self-reported one)
stays ``true``, never confirmed. The checks a regrade keeps as JSON (its results, and the
verdicts it superseded) get the same key by the same rule, so applying or reading them later
agrees with the rows. Stored board scores are not recomputed: they were computed when graded.
Downgrade drops the column and the key.
"""

from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0020_check_self_reported"
down_revision: str | None = "0021_version_served"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: The built-in checks whose evidence the judge confirms (not self-reported), as of this revision.
CONFIRMED: tuple[str, ...] = (
    # actor-loss
    'actor-loss/values_default',
    'actor-loss/values_custom_clip',
    'actor-loss/clipped_side',
    'actor-loss/unclipped_side',
    'actor-loss/gradient',
    'actor-loss/zero_grad_where_clipped',
    'actor-loss/shape_errors',
    'actor-loss/dtype_device',
    'actor-loss/any_shape',
    'actor-loss/memory',
    # masked-actor-loss
    'masked-actor-loss/values_seq',
    'masked-actor-loss/values_token',
    'masked-actor-loss/values_custom_clip',
    'masked-actor-loss/edge_rows',
    'masked-actor-loss/large_padding',
    'masked-actor-loss/gradient',
    'masked-actor-loss/bad_mode',
    'masked-actor-loss/shape_errors',
    'masked-actor-loss/dtype_device',
    # gae
    'gae/advantages_default',
    'gae/returns_default',
    'gae/hyper',
    'gae/no_bootstrap_from_padding',
    'gae/zero_at_padding',
    'gae/edge_rows',
    'gae/no_mask',
    'gae/shape_errors',
    'gae/dtype_device',
    'gae/memory',
    # critic-loss
    'critic-loss/values_unclipped',
    'critic-loss/values_clipped',
    'critic-loss/clip_zero',
    'critic-loss/edge_rows',
    'critic-loss/large_padding',
    'critic-loss/gradient',
    'critic-loss/shape_errors',
    'critic-loss/dtype_device',
    # token-rewards
    'token-rewards/values_default',
    'token-rewards/values_custom_coef',
    'token-rewards/score_placement',
    'token-rewards/padding_zero',
    'token-rewards/mask_kinds',
    'token-rewards/edge_rows',
    'token-rewards/shape_errors',
    'token-rewards/dtype_device',
    # pairwise-loss
    'pairwise-loss/values_no_margin',
    'pairwise-loss/values_float_margin',
    'pairwise-loss/values_tensor_margin',
    'pairwise-loss/worked_values',
    'pairwise-loss/stable',
    'pairwise-loss/gradient',
    'pairwise-loss/shape_errors',
    'pairwise-loss/dtype_device',
    'pairwise-loss/any_shape',
    # whiten
    'whiten/values_random',
    'whiten/values_no_shift',
    'whiten/unbiased',
    'whiten/any_shape',
    'whiten/near_constant',
    'whiten/custom_eps',
    'whiten/too_few',
    'whiten/shape_errors',
    'whiten/dtype_device',
    # kl-penalty
    'kl-penalty/values_k1',
    'kl-penalty/values_k2',
    'kl-penalty/values_k3',
    'kl-penalty/large_gaps',
    'kl-penalty/gradient',
    'kl-penalty/any_shape',
    'kl-penalty/bad_kind',
    'kl-penalty/shape_errors',
    'kl-penalty/dtype_device',
    # grpo-advantages
    'grpo-advantages/values_random',
    'grpo-advantages/values_no_std',
    'grpo-advantages/all_equal',
    'grpo-advantages/eps_outside',
    'grpo-advantages/unbiased',
    'grpo-advantages/consecutive',
    'grpo-advantages/flat',
    'grpo-advantages/not_multiple',
    'grpo-advantages/dtype_device',
    # dpo-loss
    'dpo-loss/loss_default',
    'dpo-loss/loss_custom_beta',
    'dpo-loss/rewards',
    'dpo-loss/worked_values',
    'dpo-loss/gradient',
    'dpo-loss/stable',
    'dpo-loss/shape_errors',
    'dpo-loss/dtype_device',
    # ppo-memory
    'ppo-memory/chapter',
    'ppo-memory/chapter_zero3',
    'ppo-memory/stage1',
    'ppo-memory/stage2',
    'ppo-memory/rounding',
    'ppo-memory/byte_sizes',
    'ppo-memory/random_ledgers',
    'ppo-memory/invalid_counts',
    'ppo-memory/ints',
)


#: Tables that keep check rows as JSON (``server.grading.persistence.Storable.checks``).
_JSON_CHECKS = ("regrade_results", "superseded_verdicts")


def upgrade() -> None:
    """Add ``check_results.self_reported`` (true: not confirmed) and mark the known confirmed rows."""
    # In place, never a batch copy (on SQLite a copy drops the table, and foreign keys cascade).
    op.add_column("check_results", sa.Column("self_reported", sa.Boolean(), nullable=False, server_default=sa.true()))
    rows = sa.table("check_results", sa.column("check_id", sa.String()), sa.column("self_reported", sa.Boolean()))
    op.execute(rows.update().where(rows.c.check_id.in_(CONFIRMED)).values(self_reported=False))
    known = frozenset(CONFIRMED)
    for table in _JSON_CHECKS:
        _rewrite_checks(table, lambda c: {**c, "self_reported": c.get("check_id") not in known})


def _rewrite_checks(table: str, change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Every check dict of ``table``'s JSON ``checks`` column through ``change``, row by row."""
    rows = sa.table(table, sa.column("id", sa.Integer()), sa.column("checks", sa.JSON()))
    bind = op.get_bind()
    for row_id, checks in bind.execute(sa.select(rows.c.id, rows.c.checks)).all():
        if isinstance(checks, list) and checks:
            new = [change(c) if isinstance(c, dict) else c for c in checks]
            bind.execute(rows.update().where(rows.c.id == row_id).values(checks=new))


def downgrade() -> None:
    """Drop the column and the key (the board reads the catalogue again)."""
    for table in _JSON_CHECKS:
        _rewrite_checks(table, lambda c: {k: v for k, v in c.items() if k != "self_reported"})
    if op.get_bind().dialect.name == "sqlite":  # in place (SQLite 3.35+), as in upgrade()
        op.execute("ALTER TABLE check_results DROP COLUMN self_reported")
    else:
        op.drop_column("check_results", "self_reported")

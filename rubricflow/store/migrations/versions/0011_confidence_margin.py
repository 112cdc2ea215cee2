"""How sure a verdict is: each criterion result's confidence in [0, 1] and what it was
measured from (panel agreement, sample agreement, log-probabilities), and each
evaluation's margin to its pass threshold (score minus threshold), as columns for the
queries that route uncertain verdicts to people; and in the call ledger, which judge of a
panel made a call and what its answer said. Older rows keep NULL (unknown).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28 06:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("evaluations") as batch:
        batch.add_column(sa.Column("margin", sa.Float(), nullable=True))
    with op.batch_alter_table("criterion_results") as batch:
        batch.add_column(sa.Column("confidence", sa.Float(), nullable=True))
        batch.add_column(sa.Column("confidence_source", sa.String(length=50), nullable=True))
    with op.batch_alter_table("llm_calls") as batch:
        batch.add_column(sa.Column("judge", sa.String(length=500), nullable=True))
        batch.add_column(sa.Column("verdict", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("llm_calls") as batch:
        batch.drop_column("verdict")
        batch.drop_column("judge")
    with op.batch_alter_table("criterion_results") as batch:
        batch.drop_column("confidence_source")
        batch.drop_column("confidence")
    with op.batch_alter_table("evaluations") as batch:
        batch.drop_column("margin")

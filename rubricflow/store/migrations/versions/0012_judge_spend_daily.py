"""Daily judge budgets per artifact type: the spend of each type on each UTC day, reserved
and settled by atomic UPDATEs shared by every worker and server process.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-28 07:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "judge_spend_daily",
        sa.Column("artifact_type", sa.String(length=200), nullable=False),
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("spent", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("artifact_type", "day"),
    )


def downgrade() -> None:
    op.drop_table("judge_spend_daily")

"""The criteria people say the judge got wrong when they decide (judge_corrections: with
the audit trail and the evaluations, every human decision is a label for judge
agreement), and the review queue's indexes: by state in keyset order (status, updated_at,
id), and the counts per state (status, awaiting_approval, failures)

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "judge_corrections",
        sa.Column("artifact_id", sa.String(length=200), nullable=False),
        sa.Column("event_seq", sa.Integer(), nullable=False),
        sa.Column("evaluation_id", sa.String(length=64), nullable=False),
        sa.Column("criterion_id", sa.String(length=200), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["artifact_id"], ["artifacts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("artifact_id", "event_seq", "evaluation_id", "criterion_id"),
    )
    op.create_index(
        "ix_artifacts_status_updated", "artifacts", ["status", "updated_at", "id"], unique=False
    )
    op.create_index(
        "ix_artifacts_states",
        "artifacts",
        ["status", "awaiting_approval", "failures"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_artifacts_states", table_name="artifacts")
    op.drop_index("ix_artifacts_status_updated", table_name="artifacts")
    op.drop_table("judge_corrections")

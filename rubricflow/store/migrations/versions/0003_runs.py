"""runs: batch evaluation runs, and the run each evaluation belongs to

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 01:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("rubric_id", sa.String(length=200), nullable=False),
        sa.Column("rubric_version", sa.String(length=100), nullable=False),
        sa.Column("source", sa.Text(), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("options", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index("ix_runs_started", ["started_at"], unique=False)
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("run_id", sa.String(length=200), nullable=True))
        batch_op.create_index("ix_evaluations_run", ["run_id", "target_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.drop_index("ix_evaluations_run")
        batch_op.drop_column("run_id")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index("ix_runs_started")
    op.drop_table("runs")

"""The reviewer's workbench: claims (who is reviewing an artifact on the dashboard, until
when: a short lease), comments on artifacts, kept with their history, and each artifact's
latest score and distance to the pass threshold (|margin|) as columns with an index per
state, so the queue sorted by either reads a page per state from an index (1e9: none yet;
filled here from each artifact's latest evaluation of its current revision).

Revision ID: 0014
Revises: 0012
Create Date: 2026-11-28 09:15:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "review_claims",
        sa.Column("artifact_id", sa.String(length=200), nullable=False),
        sa.Column("holder", sa.String(length=200), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["artifact_id"], ["artifacts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("artifact_id"),
    )
    op.create_table(
        "artifact_comments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("artifact_id", sa.String(length=200), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("author", sa.String(length=200), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["artifact_id"], ["artifacts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_artifact_comments_artifact", "artifact_comments", ["artifact_id", "id"], unique=False
    )
    with op.batch_alter_table("artifacts") as batch:
        batch.add_column(
            sa.Column("review_score", sa.Float(), nullable=False, server_default="1e9")
        )
        batch.add_column(
            sa.Column("review_margin", sa.Float(), nullable=False, server_default="1e9")
        )
    latest = (
        "FROM evaluations e WHERE e.artifact_id = artifacts.id AND e.revision = "
        "artifacts.revision ORDER BY e.created_at DESC, e.id DESC LIMIT 1"
    )
    op.execute(
        f"UPDATE artifacts SET review_score = COALESCE((SELECT e.score {latest}), 1e9), "
        f"review_margin = COALESCE((SELECT ABS(e.margin) {latest}), 1e9)"
    )
    op.create_index(
        "ix_artifacts_status_score", "artifacts", ["status", "review_score", "id"], unique=False
    )
    op.create_index(
        "ix_artifacts_status_margin", "artifacts", ["status", "review_margin", "id"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_artifacts_status_margin", table_name="artifacts")
    op.drop_index("ix_artifacts_status_score", table_name="artifacts")
    with op.batch_alter_table("artifacts") as batch:
        batch.drop_column("review_margin")
        batch.drop_column("review_score")
    op.drop_index("ix_artifact_comments_artifact", table_name="artifact_comments")
    op.drop_table("artifact_comments")
    op.drop_table("review_claims")

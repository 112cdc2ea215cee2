"""The reviewer's workbench: claims (who is reviewing an artifact on the dashboard, until
when: a short lease) and comments on artifacts, kept with their history.

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


def downgrade() -> None:
    op.drop_index("ix_artifact_comments_artifact", table_name="artifact_comments")
    op.drop_table("artifact_comments")
    op.drop_table("review_claims")

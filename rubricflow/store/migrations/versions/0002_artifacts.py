"""artifacts: types, artifacts, revisions, events

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 23:34:04.820244
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.create_index(
            "uq_evaluations_review",
            ["artifact_id", "revision", "rubric_id", "rubric_version"],
            unique=True,
            sqlite_where=sa.text("artifact_id IS NOT NULL AND verdict <> 'incomplete'"),
            postgresql_where=sa.text("artifact_id IS NOT NULL AND verdict <> 'incomplete'"),
        )
    op.create_table(
        "artifact_types",
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("document", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_table(
        "artifacts",
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("type", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=30), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=True),
        sa.Column("metadata_json", sa.Text(), nullable=False),
        sa.Column("created_by", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("queued_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("awaiting_approval", sa.Boolean(), nullable=False),
        sa.Column("lease_owner", sa.String(length=200), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_reason", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["type"],
            ["artifact_types.name"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("artifacts", schema=None) as batch_op:
        batch_op.create_index("ix_artifacts_queue", ["status", "queued_at"], unique=False)
        batch_op.create_index(
            "ix_artifacts_type_status", ["type", "status", "updated_at"], unique=False
        )

    op.create_table(
        "artifact_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("artifact_id", sa.String(length=200), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("trigger", sa.String(length=30), nullable=False),
        sa.Column("source", sa.String(length=30), nullable=False),
        sa.Column("dest", sa.String(length=30), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("evaluation_ids", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["artifact_id"], ["artifacts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("artifact_id", "seq", name="uq_artifact_events_seq"),
    )
    with op.batch_alter_table("artifact_events", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_artifact_events_artifact_id"), ["artifact_id"], unique=False
        )

    op.create_table(
        "artifact_revisions",
        sa.Column("artifact_id", sa.String(length=200), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=30), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["artifact_id"], ["artifacts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("artifact_id", "revision"),
    )


def downgrade() -> None:
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.drop_index("uq_evaluations_review")
    op.drop_table("artifact_revisions")
    with op.batch_alter_table("artifact_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_artifact_events_artifact_id"))

    op.drop_table("artifact_events")
    with op.batch_alter_table("artifacts", schema=None) as batch_op:
        batch_op.drop_index("ix_artifacts_type_status")
        batch_op.drop_index("ix_artifacts_queue")

    op.drop_table("artifacts")
    op.drop_table("artifact_types")

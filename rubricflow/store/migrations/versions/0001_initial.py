"""initial store: rubrics, evaluations, ledger, judge cache

Revision ID: 0001
Revises:
Create Date: 2026-11-21 23:19:34.794369
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "evaluations",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("rubric_id", sa.String(length=200), nullable=False),
        sa.Column("rubric_version", sa.String(length=100), nullable=False),
        sa.Column("rubric_hash", sa.String(length=64), nullable=False),
        sa.Column("target_id", sa.String(length=500), nullable=True),
        sa.Column("target_hash", sa.String(length=64), nullable=False),
        sa.Column("artifact_id", sa.String(length=200), nullable=True),
        sa.Column("revision", sa.Integer(), nullable=True),
        sa.Column("verdict", sa.String(length=20), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("scaled_score", sa.Float(), nullable=False),
        sa.Column("raw_score", sa.Float(), nullable=False),
        sa.Column("coverage", sa.Float(), nullable=False),
        sa.Column("threshold", sa.Float(), nullable=False),
        sa.Column("unscored_policy", sa.String(length=20), nullable=False),
        sa.Column("feedback", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("duration_ms", sa.Float(), nullable=False),
        sa.Column("llm_calls", sa.Integer(), nullable=False),
        sa.Column("input_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("document", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.create_index(
            "ix_evaluations_artifact", ["artifact_id", "revision", "created_at"], unique=False
        )
        batch_op.create_index("ix_evaluations_created", ["created_at"], unique=False)
        batch_op.create_index(
            "ix_evaluations_rubric", ["rubric_id", "rubric_version", "created_at"], unique=False
        )
        batch_op.create_index("ix_evaluations_target", ["target_id", "created_at"], unique=False)
        batch_op.create_index("ix_evaluations_verdict", ["verdict", "created_at"], unique=False)

    op.create_table(
        "judge_cache",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("hits", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )
    op.create_table(
        "rubrics",
        sa.Column("rubric_id", sa.String(length=200), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("rubric_id"),
    )
    op.create_table(
        "criterion_results",
        sa.Column("evaluation_id", sa.String(length=64), nullable=False),
        sa.Column("criterion_id", sa.String(length=200), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=30), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("verdict", sa.String(length=10), nullable=True),
        sa.Column("level", sa.String(length=200), nullable=True),
        sa.Column("passed", sa.Boolean(), nullable=True),
        sa.Column("weight", sa.Float(), nullable=False),
        sa.Column("required", sa.Boolean(), nullable=False),
        sa.Column("scorer", sa.String(length=100), nullable=False),
        sa.Column("notes", sa.Text(), nullable=False),
        sa.Column("evidence", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["evaluation_id"], ["evaluations.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("evaluation_id", "criterion_id"),
    )
    op.create_table(
        "llm_calls",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("evaluation_id", sa.String(length=64), nullable=True),
        sa.Column("criterion_id", sa.String(length=200), nullable=True),
        sa.Column("provider", sa.String(length=100), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("prompt_hash", sa.String(length=64), nullable=False),
        sa.Column("response_hash", sa.String(length=64), nullable=True),
        sa.Column("input_tokens", sa.Integer(), nullable=True),
        sa.Column("output_tokens", sa.Integer(), nullable=True),
        sa.Column("latency_ms", sa.Float(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("outcome", sa.String(length=30), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["evaluation_id"], ["evaluations.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("llm_calls", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_llm_calls_evaluation_id"), ["evaluation_id"], unique=False
        )

    op.create_table(
        "rubric_versions",
        sa.Column("rubric_id", sa.String(length=200), nullable=False),
        sa.Column("version", sa.String(length=100), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("target_type", sa.String(length=200), nullable=True),
        sa.Column("source_format", sa.String(length=50), nullable=True),
        sa.Column("document", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["rubric_id"], ["rubrics.rubric_id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("rubric_id", "version"),
    )
    with op.batch_alter_table("rubric_versions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_rubric_versions_target_type"), ["target_type"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("rubric_versions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_rubric_versions_target_type"))

    op.drop_table("rubric_versions")
    with op.batch_alter_table("llm_calls", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_llm_calls_evaluation_id"))

    op.drop_table("llm_calls")
    op.drop_table("criterion_results")
    op.drop_table("rubrics")
    op.drop_table("judge_cache")
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.drop_index("ix_evaluations_verdict")
        batch_op.drop_index("ix_evaluations_target")
        batch_op.drop_index("ix_evaluations_rubric")
        batch_op.drop_index("ix_evaluations_created")
        batch_op.drop_index("ix_evaluations_artifact")

    op.drop_table("evaluations")

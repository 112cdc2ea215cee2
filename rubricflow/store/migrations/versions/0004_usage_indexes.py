"""usage indexes: criterion results and LLM calls read by the pass-rate, judge-usage and
run-summary queries

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29 10:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

CRITERIA = ["evaluation_id", "criterion_id", "status", "passed", "score", "position"]
CALLS = [
    "evaluation_id",
    "outcome",
    "provider",
    "model",
    "input_tokens",
    "output_tokens",
    "cost",
]


def upgrade() -> None:
    with op.batch_alter_table("criterion_results", schema=None) as batch_op:
        batch_op.create_index("ix_criterion_results_outcome", CRITERIA, unique=False)
    # the covering index replaces the one on evaluation_id alone (its first column): the
    # same number of indexes to write per call
    with op.batch_alter_table("llm_calls", schema=None) as batch_op:
        batch_op.create_index("ix_llm_calls_usage", CALLS, unique=False)
        batch_op.drop_index("ix_llm_calls_evaluation_id")


def downgrade() -> None:
    with op.batch_alter_table("llm_calls", schema=None) as batch_op:
        batch_op.create_index("ix_llm_calls_evaluation_id", ["evaluation_id"], unique=False)
        batch_op.drop_index("ix_llm_calls_usage")
    with op.batch_alter_table("criterion_results", schema=None) as batch_op:
        batch_op.drop_index("ix_criterion_results_outcome")

"""An index on the audit trail by trigger: the reviewers' screen and the disagreements
API find the artifacts that were voted on (`trigger = 'vote'`) from it, not by reading
every event.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28 10:40:00
"""

from __future__ import annotations

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_artifact_events_trigger",
        "artifact_events",
        ["trigger", "artifact_id", "created_at"],
    )


def downgrade() -> None:
    op.drop_index("ix_artifact_events_trigger", table_name="artifact_events")

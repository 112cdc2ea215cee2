"""A count of the writes to the rubric tables, kept by triggers: a review reads it with
the artifact it submits (one more column of a query it makes anyway), and takes a bound
rubric's latest version from its process's memory while the count is what it was when
that version was read, instead of asking the database for the rubric's versions again.

Triggers, not the code that writes rubrics, keep the count: every writer (this or an
older rubricflow, a script, `sqlite3` at the prompt) moves it.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-29 07:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_TABLES = ("rubrics", "rubric_versions")
_EVENTS = ("INSERT", "UPDATE", "DELETE")
_BUMP = "UPDATE rubric_generation SET generation = generation + 1 WHERE id = 1"


def upgrade() -> None:
    op.create_table(
        "rubric_generation",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.execute("INSERT INTO rubric_generation (id, generation) VALUES (1, 0)")
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "CREATE FUNCTION rubricflow_rubric_generation() RETURNS trigger "
            f"LANGUAGE plpgsql AS $$ BEGIN {_BUMP}; RETURN NULL; END $$"
        )
        for table in _TABLES:
            op.execute(
                f"CREATE TRIGGER {table}_generation AFTER INSERT OR UPDATE OR DELETE OR "
                f"TRUNCATE ON {table} FOR EACH STATEMENT "
                "EXECUTE FUNCTION rubricflow_rubric_generation()"
            )
        return
    for table in _TABLES:
        for event in _EVENTS:
            op.execute(
                f"CREATE TRIGGER {table}_generation_{event.lower()} AFTER {event} ON {table} "
                f"BEGIN {_BUMP}; END"
            )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in _TABLES:
            op.execute(f"DROP TRIGGER {table}_generation ON {table}")
        op.execute("DROP FUNCTION rubricflow_rubric_generation()")
    else:
        for table in _TABLES:
            for event in _EVENTS:
                op.execute(f"DROP TRIGGER {table}_generation_{event.lower()}")
    op.drop_table("rubric_generation")

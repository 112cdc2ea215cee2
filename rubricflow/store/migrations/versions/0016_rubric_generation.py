"""A count of the writes to the rubric tables, kept by triggers: a review reads it with
the artifact it submits (one more column of a query it makes anyway), and takes a bound
rubric's latest version from its process's memory while the count is what it was when
that version was read, instead of asking the database for the rubric's versions again.

Triggers, not the code that writes rubrics, keep the count: every writer (rubricflow, a
script, `sqlite3` or `psql` at the prompt) moves it. They fire for each row written, so
an insert that `ON CONFLICT DO NOTHING` skips (registering a stored version again) moves
nothing. A later migration that rebuilds `rubrics` or `rubric_versions` (SQLite's batch
mode copies a table into a new one) drops their triggers: it must create them again
(`tests/store/test_rubric_generation.py` checks that the head schema has them).

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
        # the function finds the table in the schema the migration ran in, whatever the
        # search path of the session that writes a rubric
        op.execute(
            "CREATE FUNCTION rubricflow_rubric_generation() RETURNS trigger "
            "LANGUAGE plpgsql SET search_path FROM CURRENT "
            f"AS $$ BEGIN {_BUMP}; RETURN NULL; END $$"
        )
        for table in _TABLES:
            op.execute(
                f"CREATE TRIGGER {table}_generation AFTER INSERT OR UPDATE OR DELETE "
                f"ON {table} FOR EACH ROW EXECUTE FUNCTION rubricflow_rubric_generation()"
            )
            op.execute(
                f"CREATE TRIGGER {table}_generation_truncate AFTER TRUNCATE ON {table} "
                "FOR EACH STATEMENT EXECUTE FUNCTION rubricflow_rubric_generation()"
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
            op.execute(f"DROP TRIGGER {table}_generation_truncate ON {table}")
        op.execute("DROP FUNCTION rubricflow_rubric_generation()")
    else:
        for table in _TABLES:
            for event in _EVENTS:
                op.execute(f"DROP TRIGGER {table}_generation_{event.lower()}")
    op.drop_table("rubric_generation")

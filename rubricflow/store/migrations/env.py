"""Alembic environment: runs on the connection rubricflow hands it (see database.py)."""

from __future__ import annotations

from alembic import context

from rubricflow.store.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `rubricflow db upgrade`, not the alembic CLI")

context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=True,
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()

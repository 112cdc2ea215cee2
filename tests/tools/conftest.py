"""Fixtures for the agent tools: an application over a real store (a SQLite file, or a
scratch PostgreSQL database) holding two rubrics and two artifact types.

PostgreSQL is the server at $RUBRICFLOW_TEST_PG (default
postgresql://postgres@127.0.0.1:5432/test); a database is created for the test and
dropped after it. With CI == "true" an unreachable server fails the test; elsewhere it
skips with the reason.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from rubricflow.application import Application
from rubricflow.model import parse_rubric
from rubricflow.review import ArtifactType
from rubricflow.store.artifacts import RubricBinding

PG_ENV = "RUBRICFLOW_TEST_PG"
PG_DEFAULT = "postgresql://postgres@127.0.0.1:5432/test"

#: a post: at most 60 characters (required), says "please", names no email address
POST_RUBRIC: dict[str, Any] = {
    "id": "post",
    "name": "Post",
    "version": "1.0.0",
    "pass_threshold": 0.75,
    "criteria": [
        {
            "id": "short",
            "name": "Short",
            "description": "At most 60 characters",
            "required": True,
            "weight": 2,
            "scoring": {
                "method": "deterministic",
                "function": "char_count_between",
                "config": {"max": 60},
            },
        },
        {
            "id": "polite",
            "name": "Polite",
            "description": "Says please",
            "scoring": {
                "method": "deterministic",
                "function": "contains_all",
                "config": {"terms": ["please"]},
            },
        },
        {
            "id": "no-email",
            "name": "No email",
            "description": "Names no email address",
            "scoring": {"method": "deterministic", "function": "no_email_addresses"},
        },
    ],
}

#: a judged rubric: one criterion an LLM decides
TONE_RUBRIC: dict[str, Any] = {
    "id": "tone",
    "name": "Tone",
    "criteria": [{"id": "friendly", "name": "Friendly", "description": "The reply is friendly"}],
}


async def seed(application: Application) -> None:
    await application.rubrics.register(parse_rubric(POST_RUBRIC))
    await application.rubrics.register(parse_rubric({**POST_RUBRIC, "version": "0.9.0"}))
    await application.rubrics.register(parse_rubric(TONE_RUBRIC))
    await application.artifacts.set_type(
        ArtifactType(name="post", rubrics=(RubricBinding(rubric_id="post"),))
    )
    await application.artifacts.set_type(
        ArtifactType(
            name="queued-post", rubrics=(RubricBinding(rubric_id="post"),), auto_review=False
        )
    )


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[Application]:
    """An application over a fresh SQLite file, seeded."""
    application = await Application.open(f"sqlite+aiosqlite:///{tmp_path / 'tools.db'}")
    try:
        await seed(application)
        yield application
    finally:
        await application.close()


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true, so PostgreSQL tests may not skip: {reason}", pytrace=False)
    pytest.skip(f"PostgreSQL not available ({reason}); set {PG_ENV} or start the server")


@pytest.fixture
async def pg_app() -> AsyncIterator[Application]:
    """An application over a scratch PostgreSQL database, seeded; dropped afterwards."""
    try:
        import asyncpg  # type: ignore[import-untyped]
    except ImportError:
        _unavailable("asyncpg is not installed (pip install -e '.[dev]')")
    admin = make_url(os.environ.get(PG_ENV, PG_DEFAULT))
    admin_dsn = admin.set(drivername="postgresql").render_as_string(hide_password=False)
    name = f"rubricflow_tools_{uuid.uuid4().hex[:12]}"
    try:
        connection = await asyncpg.connect(admin_dsn, timeout=5)
    except (OSError, TimeoutError, asyncpg.PostgresError) as error:
        _unavailable(f"cannot connect to {admin.render_as_string()}: {error!r}")
    try:
        await connection.execute(f'CREATE DATABASE "{name}"')
    finally:
        await connection.close()
    url = admin.set(drivername="postgresql+asyncpg", database=name)
    try:
        application = await Application.open(url.render_as_string(hide_password=False))
        try:
            await seed(application)
            yield application
        finally:
            await application.close()
    finally:
        connection = await asyncpg.connect(admin_dsn, timeout=5)
        try:
            await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await connection.close()

"""Fixtures for the store tests, parametrised over both backends.

`backend` is "sqlite" (a real file in tmp_path: a copy of a store migrated once per
session, so each test starts empty) or "postgresql" (the server at
$RUBRICFLOW_TEST_PG, default postgresql://postgres@127.0.0.1:5432/test). The PostgreSQL
tests get a database `rubricflow_test_<random>` created for the test session and dropped
at its end; every test starts with its tables emptied. Tests that need a database of their
own (schema and migration checks) use `fresh_db_url`, a new database for that test.

When CI == "true" a PostgreSQL test may not skip: an unreachable server fails the run.
Elsewhere (a laptop without PostgreSQL) those tests skip with the reason.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from rubricflow.model import Rubric, parse_rubric
from rubricflow.results import CriterionResult, Evaluation, LLMCall
from rubricflow.store import Store
from rubricflow.store.tables import metadata

PG_ENV = "RUBRICFLOW_TEST_PG"
PG_DEFAULT = "postgresql://postgres@127.0.0.1:5432/test"
BACKENDS = ["sqlite", "postgresql"]
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


def run_blocking(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run `coroutine` to completion from sync code, even inside a running event loop
    (fixtures requested by async tests): it gets an event loop of its own in a thread."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def in_ci() -> bool:
    return os.environ.get("CI") == "true"


def postgres_unavailable(reason: str) -> None:
    """Skip on a laptop; fail on CI, where PostgreSQL tests must run."""
    if in_ci():
        pytest.fail(f"CI=true, so PostgreSQL tests may not skip: {reason}", pytrace=False)
    pytest.skip(f"PostgreSQL not available ({reason}); set {PG_ENV} or start the server")


class PostgresServer:
    """Creates and drops scratch databases through asyncpg, connected to the admin database."""

    def __init__(self, admin_url: str) -> None:
        url = make_url(admin_url)
        self.admin_dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
        self.base = url.set(drivername="postgresql+asyncpg")
        self.created: list[str] = []

    async def _execute(self, *statements: str) -> None:
        import asyncpg

        connection = await asyncpg.connect(self.admin_dsn, timeout=5)
        try:
            for statement in statements:
                await connection.execute(statement)
        finally:
            await connection.close()

    def probe(self) -> None:
        run_blocking(self._execute("SELECT 1"))

    def create_database(self) -> str:
        name = f"rubricflow_test_{uuid.uuid4().hex[:12]}"
        run_blocking(self._execute(f'CREATE DATABASE "{name}"'))
        self.created.append(name)
        return self.url(name)

    def drop_database(self, name: str) -> None:
        run_blocking(self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        if name in self.created:
            self.created.remove(name)

    def url(self, name: str, password: str | None = None) -> str:
        url = self.base.set(database=name)
        if password is not None:
            url = url.set(password=password)
        return url.render_as_string(hide_password=False)

    def truncate(self, url: str) -> None:
        """Empty every store table of the database at `url` (if they exist yet)."""
        # DELETE, children first: much faster than TRUNCATE on tables this small
        # the rubrics' write count is schema, set by the migration: kept (its triggers
        # count the deletes below)
        deletes = "; ".join(
            f'DELETE FROM "{t.name}"'
            for t in reversed(metadata.sorted_tables)
            if t.name != "rubric_generation"
        )
        dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)

        async def run() -> None:
            import asyncpg

            connection = await asyncpg.connect(dsn, timeout=5)
            try:
                exists = await connection.fetchval("SELECT to_regclass('public.evaluations')")
                if exists is not None:
                    await connection.execute(deletes)
            finally:
                await connection.close()

        run_blocking(run())


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    try:
        import asyncpg
    except ImportError:
        postgres_unavailable("asyncpg is not installed (pip install -e '.[dev]')")
    server = PostgresServer(os.environ.get(PG_ENV, PG_DEFAULT))
    try:
        server.probe()
    except (OSError, asyncio.TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
        postgres_unavailable(f"cannot connect to {server.base.render_as_string()}: {error!r}")
    yield server
    for name in list(server.created):
        server.drop_database(name)


@pytest.fixture(scope="session")
def pg_session_url(pg_server: PostgresServer) -> str:
    """One database for the session's PostgreSQL tests, migrated once."""
    url = pg_server.create_database()

    async def migrate() -> None:
        store = await Store.open(url)
        await store.close()

    run_blocking(migrate())
    return url


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def migrate_to(url: str, revision: str) -> None:
    """Bring the database at `url` to schema `revision` (older than the head: a store as
    an earlier rubricflow left it)."""
    from alembic import command

    import rubricflow.store.database as database_module

    engine = database_module._create_engine(url)
    config = database_module._alembic_config()

    def upgrade(sync: sa.Connection) -> None:
        config.attributes["connection"] = sync
        command.upgrade(config, revision)

    try:
        async with engine.begin() as connection:
            await connection.run_sync(upgrade)
    finally:
        await engine.dispose()


def sqlite_url(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path}"


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty SQLite store, migrated once; each test gets a copy (migrating is slower)."""
    path = tmp_path_factory.mktemp("template") / "store.db"

    async def migrate() -> None:
        store = await Store.open(sqlite_url(path))
        await store.close()

    run_blocking(migrate())
    assert not Path(f"{path}-wal").exists()  # closing checkpointed everything into the file
    return path


@pytest.fixture
def db_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A store URL with empty tables: a SQLite file, or the session's PostgreSQL database."""
    if backend == "sqlite":
        template: Path = request.getfixturevalue("sqlite_template")
        path = tmp_path / "store.db"
        shutil.copyfile(template, path)
        return sqlite_url(path)
    server: PostgresServer = request.getfixturevalue("pg_server")
    url: str = request.getfixturevalue("pg_session_url")
    server.truncate(url)
    return url


@pytest.fixture
def fresh_db_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """A database nobody has opened yet (for schema and migration tests)."""
    if backend == "sqlite":
        yield sqlite_url(tmp_path / "fresh.db")
        return
    server: PostgresServer = request.getfixturevalue("pg_server")
    url = server.create_database()
    yield url
    server.drop_database(make_url(url).database or "")


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    async with await Store.open(db_url) as opened:
        yield opened


# ---------------------------------------------------------------- builders and SQL helpers


def rubric_doc(
    rubric_id: str = "essay",
    version: str = "1.0.0",
    *,
    target_type: str | None = "essay",
    note: str = "",
    criteria: Sequence[str] = ("clear", "short"),
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "id": rubric_id,
        "name": f"Rubric {rubric_id}",
        "version": version,
        "description": f"{rubric_id} {version} {note}".strip(),
        "criteria": [
            {
                "id": cid,
                "description": f"criterion {cid}",
                "scoring": {"method": "deterministic", "function": "non_empty"},
            }
            for cid in criteria
        ],
    }
    if target_type is not None:
        doc["target_type"] = target_type
    return doc


AGENTV_SUITE = """\
description: tiny suite
evalcases:
  - id: case-one
    expected_outcome: Says hello
    input: hi
    rubrics:
      - Greets the user
      - id: polite
        expected_outcome: Is polite
  - id: case-two
    expected_outcome: Says bye
    input: bye
    rubrics:
      - Says goodbye
  - id: case-three
    expected_outcome: Says thanks
    input: thanks
    rubrics:
      - Says you are welcome
"""


def make_rubric(rubric_id: str = "essay", version: str = "1.0.0", **extra: Any) -> Rubric:
    return parse_rubric(rubric_doc(rubric_id, version, **extra))


def make_call(criterion_id: str, n: int = 0, **extra: Any) -> LLMCall:
    fields: dict[str, Any] = {
        "provider": "fake",
        "model": "judge-1",
        "prompt_hash": f"{n:064x}",
        "response_hash": f"{n + 1:064x}",
        "criterion_ids": (criterion_id,),
        "input_tokens": 100 + n,
        "output_tokens": 20 + n,
        "latency_ms": 12.5,
        "attempt": 1,
        "outcome": "ok",
        "cost": 0.001,
        "created_at": T0.isoformat(),
    }
    fields.update(extra)
    return LLMCall(**fields)


def make_evaluation(
    eval_id: str | None = None,
    *,
    rubric_id: str = "essay",
    rubric_version: str = "1.0.0",
    target_id: str | None = "t1",
    verdict: str = "pass",
    created_at: datetime | str | None = None,
    criteria: int = 3,
    calls: int = 1,
    score: float = 0.75,
) -> Evaluation:
    """An evaluation with `criteria` results; the first one carries `calls` LLM calls."""
    when = created_at if created_at is not None else T0
    results = []
    for index in range(criteria):
        cid = f"c{index}"
        judged = index == 0 and calls > 0
        results.append(
            CriterionResult(
                criterion_id=cid,
                status="scored",
                score=0.5 + index / 10,
                verdict="MET" if index % 2 == 0 else "UNMET",
                passed=index % 2 == 0,
                weight=1.0 + index,
                required=index == 0,
                evidence=(f"quote {index}", "ünïcode ✓"),
                notes=f"notes for {cid}",
                reasoning="because" if judged else None,
                scorer="llm_judge" if judged else "deterministic",
                duration_ms=1.5,
                llm_calls=tuple(make_call(cid, n) for n in range(calls)) if judged else (),
            )
        )
    return Evaluation(
        id=eval_id or uuid.uuid4().hex,
        rubric_id=rubric_id,
        rubric_version=rubric_version,
        rubric_hash="a" * 64,
        target_id=target_id,
        target_hash="b" * 64,
        verdict=verdict,  # type: ignore[arg-type]
        passed=verdict == "pass",
        score=score,
        scaled_score=score * 10,
        raw_score=score * 3,
        coverage=1.0,
        threshold=0.7,
        unscored_policy="fail_closed",
        criteria=tuple(results),
        gating_failures=(),
        feedback=f"Feedback for {target_id}:\nWhat to fix: nothing",
        created_at=when if isinstance(when, str) else when.isoformat(),
        duration_ms=42.0,
        metadata={"run": "test"},
    )


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


async def fetch(store: Store, query: str, **params: Any) -> list[Any]:
    """Rows of a raw SQL query on the store's database."""
    async with store.database.engine.connect() as connection:
        return list((await connection.execute(sa.text(query), params)).all())


async def scalar(store: Store, query: str, **params: Any) -> Any:
    rows = await fetch(store, query, **params)
    return rows[0][0]

"""Fixtures for the review lifecycle tests, on both backends.

`backend` is "sqlite" (a real file in tmp_path) or "postgresql": a database
`rubricflow_review_<random>` created through asyncpg on the server at $RUBRICFLOW_TEST_PG
(default postgresql://postgres@127.0.0.1:5432/test) for the test session and dropped at
its end; every test starts with its tables emptied. When CI == "true" a PostgreSQL test
may not skip: an unreachable server fails the run; elsewhere those tests skip with the
reason.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
import uuid
from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from rubricflow.hookspecs import hookimpl
from rubricflow.model import Rubric, parse_rubric
from rubricflow.plugins import PluginRegistry, create_plugin_manager
from rubricflow.review import ArtifactEvent, ArtifactRegistry, ArtifactType, Lifecycle
from rubricflow.review.events import TRANSITION
from rubricflow.review.lifecycle import STATES
from rubricflow.store import Store
from rubricflow.store.artifacts import RubricBinding
from rubricflow.store.tables import metadata

from .checks_plugin import ExplodingScorer, ReviewChecks

PG_ENV = "RUBRICFLOW_TEST_PG"
PG_DEFAULT = "postgresql://postgres@127.0.0.1:5432/test"
TESTS = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent


def run_blocking(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine from sync code, even while an event loop runs in this thread."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def postgres_unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true, so PostgreSQL tests may not skip: {reason}", pytrace=False)
    pytest.skip(f"PostgreSQL not available ({reason}); set {PG_ENV} or start the server")


class PostgresServer:
    """Creates, empties and drops scratch databases through asyncpg."""

    def __init__(self, admin_url: str) -> None:
        url = make_url(admin_url)
        self.admin_dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
        self.base = url.set(drivername="postgresql+asyncpg")

    async def _execute(self, *statements: str, dsn: str | None = None) -> None:
        import asyncpg  # type: ignore[import-untyped]

        connection = await asyncpg.connect(dsn or self.admin_dsn, timeout=5)
        try:
            for statement in statements:
                await connection.execute(statement)
        finally:
            await connection.close()

    def probe(self) -> None:
        run_blocking(self._execute("SELECT 1"))

    def create(self) -> tuple[str, str]:
        name = f"rubricflow_review_{uuid.uuid4().hex[:12]}"
        run_blocking(self._execute(f'CREATE DATABASE "{name}"'))
        return name, self.base.set(database=name).render_as_string(hide_password=False)

    def drop(self, name: str) -> None:
        run_blocking(self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    def empty(self, url: str) -> None:
        dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        # the rubrics' write count is schema, set by the migration: kept
        deletes = [
            f'DELETE FROM "{t.name}"'
            for t in reversed(metadata.sorted_tables)
            if t.name != "rubric_generation"
        ]
        run_blocking(self._execute(*deletes, dsn=dsn))


@pytest.fixture(scope="session")
def pg_session_url() -> Iterator[str]:
    """A fresh PostgreSQL database for this session's review tests, migrated once."""
    try:
        import asyncpg
    except ImportError:
        postgres_unavailable("asyncpg is not installed (pip install -e '.[dev]')")
    server = PostgresServer(os.environ.get(PG_ENV, PG_DEFAULT))
    try:
        server.probe()
    except (OSError, asyncio.TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as error:
        postgres_unavailable(f"cannot connect to {server.base.render_as_string()}: {error!r}")
    name, url = server.create()

    async def migrate() -> None:
        store = await Store.open(url)
        await store.close()

    try:
        run_blocking(migrate())
        yield url
    finally:
        server.drop(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A store URL with empty tables: a SQLite file, or the session's PostgreSQL database."""
    if backend == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'review.db'}"
    url: str = request.getfixturevalue("pg_session_url")
    PostgresServer(os.environ.get(PG_ENV, PG_DEFAULT)).empty(url)
    return url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'review.db'}"


@pytest.fixture
def pg_url(pg_session_url: str) -> str:
    PostgresServer(os.environ.get(PG_ENV, PG_DEFAULT)).empty(pg_session_url)
    return pg_session_url


# ----------------------------------------------------------------------------- plugins


class Recorder:
    """A lifecycle listener that records the transitions it is told about, as the audit
    trail has them (`events`), and every event of any kind (`heard`)."""

    def __init__(self, name: str = "recorder") -> None:
        self.__name__ = name
        self.events: list[dict[str, Any]] = []
        self.heard: list[dict[str, Any]] = []

    def record(self, event: dict[str, Any]) -> None:
        self.heard.append(dict(event))
        if event["kind"] == TRANSITION:
            self.events.append({k: v for k, v in event.items() if k != "kind"})

    @hookimpl
    def rubricflow_artifact_transition(self, event: dict[str, Any]) -> None:
        self.record(event)


class AsyncRecorder(Recorder):
    """The same, as an async listener that yields to the event loop before recording."""

    @hookimpl
    async def rubricflow_artifact_transition(self, event: dict[str, Any]) -> None:  # type: ignore[override]
        await asyncio.sleep(0)
        self.record(event)


class RaisingListener:
    """A listener that fails on every event."""

    __name__ = "raising-listener"

    def __init__(self) -> None:
        self.calls = 0

    @hookimpl
    def rubricflow_artifact_transition(self, event: dict[str, Any]) -> None:
        if event["kind"] != TRANSITION:
            return
        self.calls += 1
        raise RuntimeError(f"listener broke on {event['trigger']}")


@pytest.fixture
def checks() -> ReviewChecks:
    return ReviewChecks()


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def review_plugins(checks: ReviewChecks, recorder: Recorder) -> PluginRegistry:
    return create_plugin_manager(
        plugins=[checks, ExplodingScorer(), recorder], load_entry_points=False
    )


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    async with await Store.open(db_url) as opened:
        yield opened


@pytest.fixture
async def registry(store: Store, review_plugins: PluginRegistry) -> ArtifactRegistry:
    return ArtifactRegistry(store, plugins=review_plugins)


# ---------------------------------------------------------------------------- builders


def check(criterion_id: str, function: str, **config: Any) -> dict[str, Any]:
    """A deterministic criterion running the registered check `function`."""
    scoring: dict[str, Any] = {"method": "deterministic", "function": function}
    if config:
        scoring["config"] = config
    return {"id": criterion_id, "description": f"{criterion_id} holds", "scoring": scoring}


def make_rubric(
    rubric_id: str = "filled",
    *criteria: dict[str, Any],
    version: str = "1.0.0",
    threshold: float = 0.7,
) -> Rubric:
    """A rubric of deterministic criteria (default: one `non_empty` check)."""
    return parse_rubric(
        {
            "id": rubric_id,
            "name": f"Rubric {rubric_id}",
            "version": version,
            "pass_threshold": threshold,
            "criteria": list(criteria) or [check("filled", "non_empty")],
        }
    )


async def define(
    registry: ArtifactRegistry,
    name: str,
    *rubrics: Rubric | str | RubricBinding,
    **options: Any,
) -> ArtifactType:
    """Register the rubrics (unless given by id) and define a type bound to them."""
    bindings = []
    for rubric in rubrics:
        if isinstance(rubric, Rubric):
            await registry.store.rubrics.register(rubric)
            bindings.append(RubricBinding(rubric_id=rubric.id))
        elif isinstance(rubric, str):
            bindings.append(RubricBinding.parse(rubric))
        else:
            bindings.append(rubric)
    return await registry.set_type(ArtifactType(name=name, rubrics=tuple(bindings), **options))


def assert_replays(events: Sequence[ArtifactEvent], *, status: str, revision: int) -> None:
    """The history is a consistent, gap-free chain the state machine accepts, ending in
    `status` at `revision`."""
    assert events, "no history"
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    first = events[0]
    assert (first.trigger, first.source, first.dest, first.revision) == ("create", "", "draft", 1)
    lifecycle = Lifecycle()
    state, current = "draft", 1
    for event in events[1:]:
        assert event.source == state, f"event {event.seq} starts from {event.source}, not {state}"
        assert lifecycle.next_state(event.artifact_id, state, event.trigger) == event.dest
        expected_revision = current + 1 if event.trigger == "revise" else current
        assert event.revision == expected_revision, f"event {event.seq} revision"
        assert event.actor
        state, current = event.dest, event.revision
    assert state == status
    assert state in STATES
    assert current == revision
    assert all(a.created_at <= b.created_at for a, b in itertools.pairwise(events))


def triggers(events: Sequence[ArtifactEvent]) -> list[str]:
    return [e.trigger for e in events]


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment for a child process: the tests folder importable, no stray plugins."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), *filter(None, [env.get("PYTHONPATH")])])
    env.update(extra)
    return env


PYTHON = sys.executable
WORKER_SCRIPT = HERE / "worker_proc.py"


# --------------------------------------------------------------- artifacts in any state

PASS = {"score": 0.9, "text": "a fine answer"}
FAIL = {"score": 0.2, "text": "a weak answer"}
BROKEN = {"text": "no score field: the score_field check raises KeyError"}


def score_rubric(rubric_id: str = "scored", version: str = "1.0.0", **extra: Any) -> Rubric:
    """A rubric whose score is the content's `score` field (pass mark 0.7)."""
    return make_rubric(rubric_id, check("score", "score_field"), version=version, **extra)


async def doc_types(registry: ArtifactRegistry) -> None:
    """`doc`: reviewed by `scored`; `gated`: the same, but a passing review waits for a
    human's approval."""
    rubric = score_rubric()
    await define(registry, "doc", rubric)
    await define(registry, "gated", rubric, requires_approval=True)


async def reach(
    registry: ArtifactRegistry,
    state: str,
    *,
    content: Any = None,
    type_name: str = "doc",
) -> str:
    """A new artifact driven through the public API into `state`; returns its id."""
    if content is None:
        content = FAIL if state in ("needs_revision", "rejected") else PASS
        if state == "dead_lettered":
            content = {"no": "score"}  # the check cannot read a score: the review fails
    created = await registry.create(type_name, content, actor="bot")
    artifact_id = created.id
    if state == "draft":
        pass
    elif state == "superseded":
        replacement = await registry.create(type_name, content, actor="bot")
        await registry.supersede(
            artifact_id, actor="bot", reason="a better draft", by=replacement.id
        )
    elif state == "archived":
        await registry.archive(artifact_id, actor="bot")
    elif state == "dead_lettered":  # one failed review (no score to read) at a limit of 1
        limit, registry.max_failures = registry.max_failures, 1
        try:
            await registry.submit_for_review(artifact_id, actor="bot")
        finally:
            registry.max_failures = limit
    elif state in ("pending_review", "in_review"):
        await registry.submit_for_review(artifact_id, actor="bot", defer=True)
        if state == "in_review":
            await registry.claim(artifact_id, worker="worker-1")
    else:
        outcome = await registry.submit_for_review(artifact_id, actor="bot")
        if state == "rejected":
            await registry.reject(artifact_id, actor="carol", reason="not salvageable")
        elif outcome.artifact.status != state:
            raise AssertionError(f"wanted {state}, review gave {outcome.artifact.status}")
    artifact = await registry.get(artifact_id)
    assert artifact.status == state, (artifact.status, state)
    return artifact_id

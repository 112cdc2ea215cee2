"""The store's judge cache end to end, on both backends: `rubricflow eval --db URL` keeps
the judge's answers in the store (not in the local cache file), a re-run is answered from
it with zero HTTP requests and `cached` ledger rows, and `rubricflow llm cache --db URL`
(or `--store`, which honours $RUBRICFLOW_DB) shows and clears it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import store.conftest as backends
from cli_assertions import assert_error, ok_json
from llm.fixtures import clean_llm_env
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, verdict
from typer.testing import CliRunner, Result

from rubricflow.cli import app
from rubricflow.store import DB_ENV, Store

# the store suite's backend fixtures (tests/store/conftest.py): a SQLite file, or a
# PostgreSQL database emptied for each test; PostgreSQL tests skip only outside CI
backend = backends.backend
db_url = backends.db_url
pg_server = backends.pg_server
pg_session_url = backends.pg_session_url
sqlite_template = backends.sqlite_template
# no judge or key from the environment; RUBRICFLOW_CACHE_DIR is this test's rf-cache folder
__all__ = ["clean_llm_env"]

RUBRIC = (
    "id: support\nversion: 1.0.0\ncriteria:\n"
    "  - id: polite\n    description: The reply is polite.\n"
    "  - id: refund\n    description: The reply gives the 30-day refund window.\n"
)
TARGETS = '{"id": "a", "content": "Hi!"}\n{"id": "b", "content": "Hello there"}\n'
UNREACHABLE = "postgresql://postgres:hunter2@127.0.0.1:1/x"


@pytest.fixture(autouse=True)
def _no_store_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(DB_ENV, raising=False)
    monkeypatch.chdir(tmp_path)  # the default ./rubricflow.db would land in the scratch folder


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(RUBRIC)
    targets = tmp_path / "targets.jsonl"
    targets.write_text(TARGETS)
    return rubric, targets


def judge(request: Recorded) -> Reply:
    return openai_reply(verdict("UNMET" if "refund" in request.messages[-1]["content"] else "MET"))


def run(*args: Any) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def rows(url: str, query: str, **params: Any) -> list[tuple[Any, ...]]:
    async def fetch() -> list[tuple[Any, ...]]:
        async with await Store.open(url) as store:
            found = await backends.fetch(store, query, **params)
        return [tuple(row) for row in found]

    return asyncio.run(fetch())


def evaluate(files: tuple[Path, Path], spec: str, db: str, run_id: str) -> Result:
    rubric, targets = files
    return run("eval", rubric, targets, "--llm", spec, "--db", db, "--run", run_id, "--json")


def test_eval_with_db_keeps_answers_in_the_store_and_a_rerun_makes_no_request(
    files: tuple[Path, Path], db_url: str, clean_llm_env: Path
) -> None:
    with ScriptedServer(judge) as server:
        spec = f"openai:judge@{server.url}/v1"
        first = evaluate(files, spec, db_url, "run-first")
        assert first.exit_code == 1, first.output  # refund is UNMET
        assert len(server.requests) == 4  # two targets, two judged criteria
        second = evaluate(files, spec, db_url, "run-second")
        assert second.exit_code == 1, second.output
        assert len(server.requests) == 4  # the re-run made no HTTP request at all

    again = [json.loads(line) for line in second.stdout.splitlines()]
    assert [line["usage"]["llm_calls"] for line in again] == [0, 0]
    assert [line["usage"]["cache_hits"] for line in again] == [2, 2]
    assert [[c["verdict"] for c in line["criteria"]] for line in again] == [["MET", "UNMET"]] * 2

    # the answers are in the store's judge_cache table, each served once by the re-run
    cached = rows(db_url, "SELECT value, hits FROM judge_cache")
    assert len(cached) == 4 and all(hits == 1 for _, hits in cached)
    answers = [json.loads(json.loads(value)["text"]) for value, _ in cached]
    assert sorted(answer["verdict"] for answer in answers) == [
        "MET",
        "MET",
        "UNMET",
        "UNMET",
    ]
    # the ledger: the first run asked, the second was answered from the cache
    ledger = rows(
        db_url,
        "SELECT e.run_id, c.outcome, count(*) FROM llm_calls c "
        "JOIN evaluations e ON e.id = c.evaluation_id GROUP BY e.run_id, c.outcome "
        "ORDER BY e.run_id",
    )
    assert ledger == [("run-first", "ok", 4), ("run-second", "cached", 4)]
    # and no local cache file was created: $RUBRICFLOW_CACHE_DIR stays empty
    assert not clean_llm_env.exists() or not any(clean_llm_env.iterdir())


def test_llm_cache_db_shows_and_clears_the_stores_cache(
    files: tuple[Path, Path], db_url: str, clean_llm_env: Path
) -> None:
    with ScriptedServer(judge) as server:
        spec = f"openai:judge@{server.url}/v1"
        assert evaluate(files, spec, db_url, "run-1").exit_code == 1
        assert evaluate(files, spec, db_url, "run-2").exit_code == 1
        assert len(server.requests) == 4

        stats = ok_json(run("llm", "cache", "--db", db_url, "--json"))
        assert stats["entries"] == 4 and stats["hits"] == 4 and stats["chars"] > 0
        assert stats["db"].startswith(("sqlite+aiosqlite:///", "postgresql+asyncpg://"))
        human = run("llm", "cache", "--db", db_url)
        assert human.exit_code == 0, human.output
        assert ": 4 answer(s)" in human.stdout and "served 4 time(s)" in human.stdout
        # the local file cache is another cache: the store's answers are not in it
        assert ok_json(run("llm", "cache", "--json"))["entries"] == 0

        cleared = run("llm", "cache", "--db", db_url, "--clear")
        assert cleared.exit_code == 0, cleared.output
        assert "removed 4 cached answer(s)" in cleared.stdout
        assert ": 0 answer(s)" in cleared.stdout
        assert rows(db_url, "SELECT count(*) FROM judge_cache") == [(0,)]
        # with the cache cleared, the judge is asked again
        assert evaluate(files, spec, db_url, "run-3").exit_code == 1
        assert len(server.requests) == 8
    assert ok_json(run("llm", "cache", "--db", db_url, "--clear", "--json"))["removed"] == 4


def test_llm_cache_store_honours_the_environment_variable(
    files: tuple[Path, Path], db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ScriptedServer(judge) as server:
        assert evaluate(files, f"openai:judge@{server.url}/v1", db_url, "run-1").exit_code == 1
    monkeypatch.setenv(DB_ENV, db_url)
    assert ok_json(run("llm", "cache", "--store", "--json"))["entries"] == 4
    # without --store or --db it is still the local file `eval` uses without --db; a note
    # says where the store's cache is
    local = run("llm", "cache")
    assert local.exit_code == 0, local.output
    assert "judge-cache.sqlite: 0 answer(s)" in local.stdout
    assert "llm cache --store" in local.stderr
    # --db wins over the environment
    other = tmp_path / "other.db"
    assert run("rubrics", "list", "--db", other).exit_code == 0  # an empty store
    assert ok_json(run("llm", "cache", "--db", other, "--json"))["entries"] == 0


def test_llm_cache_store_errors_exit_2_without_a_traceback(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    assert_error(run("llm", "cache", "--db", missing), "no store at", str(missing), "--db URL")
    assert not missing.exists()  # looking did not create an empty store
    assert_error(run("llm", "cache", "--store", "--clear"), "no store at rubricflow.db")
    assert not (tmp_path / "rubricflow.db").exists()
    assert_error(run("llm", "cache", "--db", "mysql://u@h/db"), "unsupported database")
    down = run("llm", "cache", "--db", UNREACHABLE, "--clear")
    assert_error(down, "cannot open database")
    assert "hunter2" not in down.output

"""`rubricflow llm cache export FILE` / `import FILE`: the judge cache (the local file or a
store's) to a recorded-answers file and back. What `rubricflow eval` cached replays in
pytest, and an imported file serves `eval` with the judge down: the same verdicts."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import store.conftest as backends
from cli_assertions import assert_error
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, verdict
from typer.testing import CliRunner, Result

from rubricflow.cli import app
from rubricflow.llm.replay import read_answers
from rubricflow.store import DB_ENV

backend = backends.backend
db_url = backends.db_url
pg_server = backends.pg_server
pg_session_url = backends.pg_session_url
sqlite_template = backends.sqlite_template

RUBRIC = (
    "id: support\nversion: 1.0.0\ncriteria:\n"
    "  - id: polite\n    description: The reply is polite.\n"
    "  - id: refund\n    description: The reply gives the 30-day refund window.\n"
)
TARGETS = '{"id": "a", "content": "Hi!"}\n{"id": "b", "content": "Hello there"}\n'


def judge(request: Recorded) -> Reply:
    return openai_reply(verdict("UNMET" if "refund" in request.messages[-1]["content"] else "MET"))


def run(*args: Any) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(autouse=True)
def _scratch(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    monkeypatch.delenv(DB_ENV, raising=False)
    if "pytester" not in request.fixturenames:  # pytester runs in its own folder
        monkeypatch.chdir(tmp_path)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "rubric.yaml").write_text(RUBRIC)
    (tmp_path / "targets.jsonl").write_text(TARGETS)
    return tmp_path / "rubric.yaml", tmp_path / "targets.jsonl"


def verdicts(result: Result) -> list[list[str]]:
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    return [[c["verdict"] for c in line["criteria"]] for line in lines]


def evaluate(files: tuple[Path, Path], spec: str, *extra: Any) -> Result:
    return run("eval", files[0], files[1], "--llm", spec, "--json", *extra)


def test_what_eval_cached_exports_and_replays_in_pytest(
    pytester: pytest.Pytester, files: tuple[Path, Path], tmp_path: Path
) -> None:
    answers = pytester.path / "answers.jsonl"  # a path in the run's folder: its ini applies
    with ScriptedServer(judge) as server:
        spec = f"openai:judge@{server.url}/v1"
        first = evaluate(files, spec)
        assert first.exit_code == 1, first.output
        exported = run("llm", "cache", "export", answers)
        assert exported.exit_code == 0, exported.output
        assert "wrote 4 judge answer(s)" in exported.stdout
    recorded = read_answers(answers)
    assert sorted((a.about["target"], a.about["criteria"][0]) for a in recorded) == [
        ("a", "polite"),
        ("a", "refund"),
        ("b", "polite"),
        ("b", "refund"),
    ]
    assert (
        run("llm", "cache", "export", tmp_path / "none.jsonl", "--rubric", "other").exit_code == 0
    )
    assert len(read_answers(tmp_path / "none.jsonl")) == 0

    # the judge is gone: the same question asked through the pytest plugin replays
    pytester.makepyfile(
        test_support=f"""
        from rubricflow.pytest_plugin import assert_passes

        def test_a():
            assert_passes({str(files[0])!r}, "Hi!", id="a")
        """
    )
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--rubric-replay", str(answers), f"--junitxml={junit}"
    )
    result.assert_outcomes(failed=1)
    assert "no recorded judge answer" not in result.stdout.str()
    assert "refund" in result.stdout.str()
    props = {p.get("name"): p.get("value") for p in ET.parse(junit).getroot().iter("property")}
    assert props["rubric_failed_criteria"] == "refund"
    assert props["rubric_verdict"] == "fail"


def test_an_imported_file_serves_eval_with_the_judge_down(
    files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = tmp_path / "answers.jsonl"
    with ScriptedServer(judge) as server:
        spec = f"openai:judge@{server.url}/v1"
        before = evaluate(files, spec)
        assert run("llm", "cache", "export", answers).exit_code == 0
    # a fresh machine: an empty local cache, the file imported, the judge unreachable
    monkeypatch.setenv("RUBRICFLOW_CACHE_DIR", str(tmp_path / "fresh-cache"))
    imported = run("llm", "cache", "import", answers)
    assert imported.exit_code == 0, imported.output
    assert "imported 4 judge answer(s)" in imported.stdout
    after = evaluate(files, spec)
    assert after.exit_code == 1, after.output
    assert verdicts(after) == verdicts(before) == [["MET", "UNMET"], ["MET", "UNMET"]]
    usage = [json.loads(line)["usage"] for line in after.stdout.splitlines()]
    assert [u["cache_hits"] for u in usage] == [2, 2]
    assert [u["llm_calls"] for u in usage] == [0, 0]


def test_a_stores_cache_exports_and_imports(
    files: tuple[Path, Path], db_url: str, tmp_path: Path
) -> None:
    answers = tmp_path / "answers.jsonl"
    with ScriptedServer(judge) as server:
        spec = f"openai:judge@{server.url}/v1"
        before = evaluate(files, spec, "--db", db_url)
        exported = run("llm", "cache", "export", answers, "--db", db_url)
        assert exported.exit_code == 0, exported.output
    assert len(read_answers(answers)) == 4
    other = f"sqlite+aiosqlite:///{tmp_path / 'other.db'}"
    assert run("db", "upgrade", "--db", other).exit_code == 0
    imported = run("llm", "cache", "import", answers, "--db", other)
    assert imported.exit_code == 0, imported.output
    after = evaluate(files, spec, "--db", other)
    assert verdicts(after) == verdicts(before)
    assert [json.loads(line)["usage"]["llm_calls"] for line in after.stdout.splitlines()] == [0, 0]


def test_bad_files_are_clear_errors(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    assert_error(run("llm", "cache", "import", missing), "no such recorded-answers file")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "rubricflow-judge-answers", "format_version": 99}\n')
    assert_error(
        run("llm", "cache", "import", bad), "format_version 99", "record the answers again"
    )
    bad.write_text("not json\n")
    assert_error(run("llm", "cache", "import", bad), "bad.jsonl:1: not JSON")
    assert_error(
        run("llm", "cache", "export", tmp_path / "no-such-dir" / "x.jsonl"), "cannot be written"
    )

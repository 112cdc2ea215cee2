"""`rubricflow rubrics | evaluations | db` and `rubricflow eval --db`, on both backends:
JSON output, filters and paging, and errors that exit 2 with a message, never a traceback."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import store.conftest as backends
import yaml
from cli_assertions import assert_error, ok_json
from store.conftest import AGENTV_SUITE, at, make_evaluation, rubric_doc
from typer.testing import CliRunner, Result

from rubricflow.cli import app
from rubricflow.store import DB_ENV, Database, Store

# the store suite's backend fixtures (tests/store/conftest.py): a SQLite file, or a
# PostgreSQL database emptied for each test; PostgreSQL tests skip only outside CI
backend = backends.backend
db_url = backends.db_url
fresh_db_url = backends.fresh_db_url
pg_server = backends.pg_server
pg_session_url = backends.pg_session_url
sqlite_template = backends.sqlite_template

EVAL = Path(__file__).parent.parent / "fixtures" / "eval"
UNREACHABLE = "postgresql://postgres:hunter2@127.0.0.1:1/x"


@pytest.fixture(autouse=True)
def _no_store_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(DB_ENV, raising=False)
    monkeypatch.chdir(tmp_path)  # the default ./rubricflow.db lands in the scratch folder


def invoke(cli: CliRunner, *args: Any, db: str | None = None) -> Result:
    argv = [str(a) for a in args] + (["--db", db] if db is not None else [])
    return cli.invoke(app, argv)


def write(path: Path, document: Any) -> Path:
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def seed(url: str, *evaluations: Any) -> None:
    async def run() -> None:
        async with await Store.open(url) as store:
            await store.evaluations.save_many(list(evaluations))

    asyncio.run(run())


# ----------------------------------------------------------------------------- rubrics


def test_register_several_files_then_list_show_history(
    cli: CliRunner, db_url: str, tmp_path: Path
) -> None:
    one = write(tmp_path / "essay.yaml", rubric_doc("essay", "1.0.0"))
    two = write(tmp_path / "essay-2.yaml", rubric_doc("essay", "1.10.0"))
    three = write(tmp_path / "essay-3.yaml", rubric_doc("essay", "1.2.0-rc.1"))
    suite = tmp_path / "suite.yaml"
    suite.write_text(AGENTV_SUITE)
    registered = ok_json(
        invoke(cli, "rubrics", "register", one, two, three, suite, "--json", db=db_url)
    )
    assert [(r["id"], r["version"], r["created"]) for r in registered["registered"]] == [
        ("essay", "1.0.0", True),
        ("essay", "1.10.0", True),
        ("essay", "1.2.0-rc.1", True),
        ("case-one", "1.0.0", True),
        ("case-two", "1.0.0", True),
        ("case-three", "1.0.0", True),
    ]
    again = invoke(cli, "rubrics", "register", one, db=db_url)
    assert again.exit_code == 0 and "unchanged essay@1.0.0" in again.stdout

    listed = ok_json(invoke(cli, "rubrics", "list", "--json", db=db_url))["rubrics"]
    assert [(r["id"], r["version"]) for r in listed] == [
        ("case-one", "1.0.0"),
        ("case-three", "1.0.0"),
        ("case-two", "1.0.0"),
        ("essay", "1.10.0"),
    ]
    essay = next(r for r in listed if r["id"] == "essay")
    assert essay["criteria"] == 2 and essay["target_type"] == "essay"
    by_target = ok_json(
        invoke(cli, "rubrics", "list", "--target-type", "essay", "--json", db=db_url)
    )
    assert [r["id"] for r in by_target["rubrics"]] == ["essay"]
    table = invoke(cli, "rubrics", "list", db=db_url)
    assert table.exit_code == 0 and "essay" in table.stdout and "1.10.0" in table.stdout

    latest = ok_json(invoke(cli, "rubrics", "show", "essay", "--json", db=db_url))
    assert latest["version"] == "1.10.0" and latest["id"] == "essay"
    exact = ok_json(
        invoke(cli, "rubrics", "show", "essay", "--version", "1.2.0-rc.1", "--json", db=db_url)
    )
    assert exact["version"] == "1.2.0-rc.1"
    as_yaml = invoke(cli, "rubrics", "show", "essay", "--version", "1.0.0", db=db_url)
    assert as_yaml.exit_code == 0
    assert yaml.safe_load(as_yaml.stdout)["version"] == "1.0.0"

    history = ok_json(invoke(cli, "rubrics", "history", "essay", "--json", db=db_url))
    assert [v["version"] for v in history["versions"]] == ["1.0.0", "1.2.0-rc.1", "1.10.0"]
    assert {v["source_format"] for v in history["versions"]} == {"native"}
    text = invoke(cli, "rubrics", "history", "essay", db=db_url)
    assert text.exit_code == 0 and text.stdout.index("@1.2.0-rc.1") < text.stdout.index("@1.10.0")


def test_register_is_one_transaction_across_files(
    cli: CliRunner, db_url: str, tmp_path: Path
) -> None:
    good = write(tmp_path / "good.yaml", rubric_doc("good", "1.0.0"))
    first = write(tmp_path / "first.yaml", rubric_doc("essay", "1.0.0"))
    assert invoke(cli, "rubrics", "register", first, db=db_url).exit_code == 0
    changed = write(tmp_path / "changed.yaml", rubric_doc("essay", "1.0.0", note="edited"))
    result = invoke(cli, "rubrics", "register", good, changed, db=db_url)
    assert_error(result, "'essay'", "bump the version")
    listed = ok_json(invoke(cli, "rubrics", "list", "--json", db=db_url))["rubrics"]
    assert [r["id"] for r in listed] == ["essay"]


def test_delete_hides_and_keeps_versions(cli: CliRunner, db_url: str, tmp_path: Path) -> None:
    path = write(tmp_path / "essay.yaml", rubric_doc("essay", "1.0.0"))
    assert invoke(cli, "rubrics", "register", path, db=db_url).exit_code == 0
    deleted = ok_json(invoke(cli, "rubrics", "delete", "essay", "--json", db=db_url))
    assert deleted == {"deleted": "essay"}
    assert ok_json(invoke(cli, "rubrics", "list", "--json", db=db_url)) == {"rubrics": []}
    assert_error(invoke(cli, "rubrics", "show", "essay", db=db_url), "'essay'")
    kept = ok_json(
        invoke(cli, "rubrics", "show", "essay", "--version", "1.0.0", "--json", db=db_url)
    )
    assert kept["version"] == "1.0.0"
    history = ok_json(invoke(cli, "rubrics", "history", "essay", "--json", db=db_url))
    assert history["versions"][0]["deleted"] is True
    text = invoke(cli, "rubrics", "delete", "essay", db=db_url)
    assert text.exit_code == 0 and "deleted essay" in text.stdout


def test_rubric_errors_exit_2(cli: CliRunner, db_url: str, tmp_path: Path) -> None:
    assert_error(invoke(cli, "rubrics", "show", "ghost", db=db_url), "'ghost'")
    assert_error(
        invoke(cli, "rubrics", "show", "ghost", "--version", "1.0.0", db=db_url), "'ghost'"
    )
    assert_error(invoke(cli, "rubrics", "history", "ghost", db=db_url), "'ghost'")
    assert_error(invoke(cli, "rubrics", "delete", "ghost", db=db_url), "'ghost'")
    assert_error(
        invoke(cli, "rubrics", "register", tmp_path / "missing.yaml", db=db_url), "missing.yaml"
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: x\ncriteria: [\n")
    assert_error(invoke(cli, "rubrics", "register", bad, db=db_url), "bad.yaml")


# ------------------------------------------------------------------------- evaluations


def test_eval_with_db_stores_every_evaluation_and_the_rubric(cli: CliRunner, db_url: str) -> None:
    result = cli.invoke(
        app,
        ["eval", str(EVAL / "rubric.yaml"), str(EVAL / "mixed.jsonl"), "--json", "--db", db_url],
    )
    assert result.exit_code == 1, result.output  # one target fails
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    listed = ok_json(invoke(cli, "evaluations", "list", "--json", db=db_url))["evaluations"]
    assert len(listed) == len(lines) == 2
    assert {e["target_id"] for e in listed} == {line["target_id"] for line in lines}
    assert {(e["rubric_id"], e["rubric_version"]) for e in listed} == {("reply-check", "1.2.0")}
    rubric = ok_json(invoke(cli, "rubrics", "show", "reply-check", "--json", db=db_url))
    assert rubric["version"] == "1.2.0"
    for summary in listed:
        shown = ok_json(invoke(cli, "evaluations", "show", summary["id"], "--json", db=db_url))
        assert shown["id"] == summary["id"] and shown["verdict"] == summary["verdict"]
        assert [c["criterion_id"] for c in shown["criteria"]] == ["nonempty", "short"]
    failed = ok_json(invoke(cli, "evaluations", "list", "--verdict", "fail", "--json", db=db_url))
    assert [e["verdict"] for e in failed["evaluations"]] == ["fail"]
    # running again registers nothing new and adds two more evaluations
    again = cli.invoke(
        app, ["eval", str(EVAL / "rubric.yaml"), str(EVAL / "mixed.jsonl"), "--db", db_url]
    )
    assert again.exit_code == 1, again.output
    history = ok_json(invoke(cli, "rubrics", "history", "reply-check", "--json", db=db_url))
    assert len(history["versions"]) == 1
    assert len(ok_json(invoke(cli, "evaluations", "list", "--json", db=db_url))["evaluations"]) == 4


def test_eval_without_db_stores_nothing(cli: CliRunner, tmp_path: Path) -> None:
    result = cli.invoke(
        app, ["eval", str(EVAL / "rubric.yaml"), str(EVAL / "mixed.jsonl"), "--json"]
    )
    assert result.exit_code == 1, result.output
    assert not (tmp_path / "rubricflow.db").exists()


def test_evaluations_list_filters_and_pages(cli: CliRunner, db_url: str) -> None:
    seed(
        db_url,
        *(
            make_evaluation(
                f"e{i:02d}",
                rubric_id="essay" if i % 2 == 0 else "code",
                target_id=f"t{i % 3}",
                verdict=("pass", "fail", "incomplete")[i % 3],
                created_at=at(i),
            )
            for i in range(10)
        ),
    )

    def ids(*args: str) -> list[str]:
        found = ok_json(invoke(cli, "evaluations", "list", *args, "--json", db=db_url))
        return [e["id"] for e in found["evaluations"]]

    everything = ids("--limit", "100")
    assert everything == [f"e{i:02d}" for i in range(9, -1, -1)]
    assert ids("--rubric", "code") == ["e09", "e07", "e05", "e03", "e01"]
    assert ids("--rubric", "essay", "--rubric-version", "1.0.0") == [
        "e08",
        "e06",
        "e04",
        "e02",
        "e00",
    ]
    assert ids("--rubric", "essay", "--rubric-version", "9.9.9") == []
    assert ids("--target", "t1") == ["e07", "e04", "e01"]
    assert ids("--verdict", "incomplete") == ["e08", "e05", "e02"]
    assert ids("--since", "2026-03-01T12:03:00", "--until", "2026-03-01T12:06:00+00:00") == [
        "e05",
        "e04",
        "e03",
    ]
    assert ids("--since", "2026-03-01T14:08:00+02:00") == ["e09", "e08"]
    assert ids("--until", "2026-03-01") == []
    pages = [ids("--limit", "3", "--offset", str(offset)) for offset in (0, 3, 6, 9)]
    assert [e for page in pages for e in page] == everything
    assert [len(page) for page in pages] == [3, 3, 3, 1]
    table = invoke(cli, "evaluations", "list", "--target", "t1", db=db_url)
    assert table.exit_code == 0 and "e07" in table.stdout and "e05" not in table.stdout

    summary = ok_json(invoke(cli, "evaluations", "list", "--limit", "1", "--json", db=db_url))
    (first,) = summary["evaluations"]
    assert first["usage"]["llm_calls"] == 1 and first["coverage"] == 1.0
    shown = invoke(cli, "evaluations", "show", "e03", db=db_url)
    assert shown.exit_code == 0 and "e03" in shown.stdout and "What to fix" in shown.stdout


def test_evaluations_list_keeps_each_id_on_one_line_at_80_columns(
    cli: CliRunner, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 31: 32-character ids wrapped over four lines at 80 columns."""
    ids = [f"{i:032x}" for i in (0xABC, 0xDEF)]
    seed(db_url, *(make_evaluation(i, rubric_id="support-reply-tone") for i in ids))
    monkeypatch.setenv("COLUMNS", "80")
    listed = invoke(cli, "evaluations", "list", db=db_url)
    assert listed.exit_code == 0, listed.output
    lines = listed.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), listed.stdout
    for evaluation_id in ids:
        assert any(evaluation_id in line for line in lines), listed.stdout


def test_evaluations_show_json_is_the_stored_evaluation(cli: CliRunner, db_url: str) -> None:
    evaluation = make_evaluation("e1", calls=2)
    seed(db_url, evaluation)
    assert (
        ok_json(invoke(cli, "evaluations", "show", "e1", "--json", db=db_url))
        == evaluation.to_dict()
    )


def test_evaluation_errors_exit_2(cli: CliRunner, db_url: str) -> None:
    assert_error(invoke(cli, "evaluations", "show", "nope", db=db_url), "'nope'")
    assert_error(
        invoke(cli, "evaluations", "list", "--verdict", "great", db=db_url),
        "--verdict",
        "pass, fail or incomplete",
    )
    assert_error(
        invoke(cli, "evaluations", "list", "--since", "yesterday", db=db_url),
        "--since",
        "'yesterday'",
    )
    assert_error(invoke(cli, "evaluations", "list", "--until", "2026-13-45", db=db_url), "--until")
    limited = invoke(cli, "evaluations", "list", "--limit", "0", db=db_url)
    assert limited.exit_code == 2 and "Traceback" not in limited.output


# ---------------------------------------------------------------------------------- db


def test_db_upgrade_on_a_new_database(cli: CliRunner, fresh_db_url: str) -> None:
    created = ok_json(invoke(cli, "db", "upgrade", "--json", db=fresh_db_url))
    head = Database.head_revision()
    assert created["before"] is None and created["revision"] == created["head"] == head
    assert created["upgraded"] is True
    again = ok_json(invoke(cli, "db", "upgrade", "--json", db=fresh_db_url))
    assert again["before"] == again["revision"] == head and again["upgraded"] is False
    text = invoke(cli, "db", "upgrade", db=fresh_db_url)
    assert text.exit_code == 0 and f"{head} (current)" in text.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["rubrics", "list"],
        ["rubrics", "show", "x"],
        ["rubrics", "history", "x"],
        ["rubrics", "delete", "x"],
        ["evaluations", "list"],
        ["evaluations", "show", "x"],
        ["db", "upgrade"],
    ],
)
def test_an_unreachable_server_exits_2(cli: CliRunner, args: list[str]) -> None:
    result = invoke(cli, *args, db=UNREACHABLE)
    assert_error(result, "cannot open database", "127.0.0.1:1")
    assert "hunter2" not in result.output


def test_register_and_eval_with_an_unreachable_server_exit_2(
    cli: CliRunner, tmp_path: Path
) -> None:
    path = write(tmp_path / "essay.yaml", rubric_doc("essay", "1.0.0"))
    assert_error(invoke(cli, "rubrics", "register", path, db=UNREACHABLE), "cannot open database")
    result = cli.invoke(
        app, ["eval", str(EVAL / "rubric.yaml"), str(EVAL / "mixed.jsonl"), "--db", UNREACHABLE]
    )
    assert_error(result, "cannot open database")
    assert "hunter2" not in result.output


def test_bad_db_urls_exit_2(cli: CliRunner) -> None:
    assert_error(invoke(cli, "rubrics", "list", db="mysql://u@h/db"), "unsupported database")
    assert_error(invoke(cli, "db", "upgrade", db="mysql://u@h/db"), "unsupported database")


def test_the_environment_variable_picks_the_store(
    cli: CliRunner, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DB_ENV, db_url)
    path = write(tmp_path / "essay.yaml", rubric_doc("essay", "1.0.0"))
    assert invoke(cli, "rubrics", "register", path).exit_code == 0
    result = cli.invoke(
        app, ["eval", str(EVAL / "rubric.yaml"), str(EVAL / "one_target.json"), "--db", db_url]
    )
    assert result.exit_code in (0, 1), result.output
    listed = ok_json(invoke(cli, "rubrics", "list", "--json"))["rubrics"]
    assert [r["id"] for r in listed] == ["essay", "reply-check"]
    assert not (tmp_path / "rubricflow.db").exists()
    # --db wins over the environment
    other = tmp_path / "other.db"
    assert ok_json(invoke(cli, "rubrics", "list", "--json", db=str(other))) == {"rubrics": []}
    assert other.exists()


def test_the_default_store_is_rubricflow_db_in_the_working_folder(
    cli: CliRunner, tmp_path: Path
) -> None:
    path = write(tmp_path / "essay.yaml", rubric_doc("essay", "1.0.0"))
    assert invoke(cli, "rubrics", "register", path).exit_code == 0
    assert (tmp_path / "rubricflow.db").exists()


def test_a_real_process(tmp_path: Path) -> None:
    executable = Path(sys.executable).parent / "rubricflow"
    path = write(tmp_path / "essay.yaml", rubric_doc("essay", "1.0.0"))
    env = {k: v for k, v in os.environ.items() if k != DB_ENV}
    db = str(tmp_path / "store.db")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(executable), *args], capture_output=True, text=True, env=env, timeout=60
        )

    registered = run("rubrics", "register", str(path), "--db", db, "--json")
    assert registered.returncode == 0, registered.stderr
    assert json.loads(registered.stdout)["registered"][0]["created"] is True
    unreachable = run("evaluations", "list", "--db", UNREACHABLE)
    assert unreachable.returncode == 2, unreachable.stderr
    assert "cannot open database" in unreachable.stderr
    assert "Traceback" not in unreachable.stderr and "hunter2" not in unreachable.stderr

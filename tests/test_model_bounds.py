"""Ids, versions and names are bounded by the model, identically on both backends: a value
the model accepts always fits the store's columns (rubricflow/store/tables.py), and one
that does not is refused at validation, naming the field and the limit. NUL, which
PostgreSQL cannot store, is refused the same way on SQLite. Before, a 5,000-digit version
was stored on SQLite and broke `rubrics list` (exit 3) from then on, and PostgreSQL
dumped the SQL of a refused INSERT (exit 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import store.conftest as backends
import yaml
from cli_assertions import ok_json
from typer.testing import CliRunner, Result

from rubricflow.cli import app
from rubricflow.errors import RubricflowError, RubricValidationError
from rubricflow.model import MAX_ID_LENGTH, MAX_VERSION_LENGTH, parse_rubric
from rubricflow.store import DB_ENV
from rubricflow.store.tables import ArtifactRow, RubricVersionRow, RunRow

backend = backends.backend
db_url = backends.db_url
pg_server = backends.pg_server
pg_session_url = backends.pg_session_url
sqlite_template = backends.sqlite_template


def rubric(**fields: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "id": "fine",
        "criteria": [
            {"id": "text", "scoring": {"method": "deterministic", "function": "non_empty"}}
        ],
    }
    document.update(fields)
    return document


def problems(document: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(RubricValidationError) as caught:
        parse_rubric(document)
    return [(p.path, p.message) for p in caught.value.problems]


def test_the_model_limits_are_the_store_columns() -> None:
    columns = {
        "rubric id": RubricVersionRow.__table__.c.rubric_id.type.length,  # type: ignore[attr-defined]
        "version": RubricVersionRow.__table__.c.version.type.length,  # type: ignore[attr-defined]
        "artifact id": ArtifactRow.__table__.c.id.type.length,  # type: ignore[attr-defined]
        "run id": RunRow.__table__.c.id.type.length,  # type: ignore[attr-defined]
    }
    assert columns == {
        "rubric id": MAX_ID_LENGTH,
        "version": MAX_VERSION_LENGTH,
        "artifact id": MAX_ID_LENGTH,
        "run id": MAX_ID_LENGTH,
    }


@pytest.mark.parametrize(
    ("fields", "path", "limit"),
    [
        ({"version": "1.0." + "1" * 5000}, "version", "100"),
        ({"id": "r" * 201}, "id", "200"),
        ({"name": "n" * 501}, "name", "500"),
        ({"target_type": "t" * 201}, "target_type", "200"),
    ],
)
def test_too_long_is_refused_naming_field_and_limit(
    fields: dict[str, Any], path: str, limit: str
) -> None:
    [(where, message)] = problems(rubric(**fields))
    assert where == path
    assert f"the limit is {limit} characters" in message


def test_limits_are_inclusive() -> None:
    parsed = parse_rubric(rubric(id="r" * 200, version="1.0.0-" + "a" * 94))
    assert len(parsed.id) == 200 and len(parsed.version) == 100


def test_a_criterion_id_is_bounded_as_qualified_by_its_group() -> None:
    document = rubric(
        groups=[{"id": "g" * 150}],
        criteria=[
            {
                "id": "c" * 60,
                "group": "g" * 150,
                "scoring": {"method": "deterministic", "function": "non_empty"},
            }
        ],
    )
    [(where, message)] = problems(document)
    assert where == "criteria[0].id"
    assert "211 characters as `group.item`; the limit is 200" in message


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"name": "a\x00b"}, "name"),
        ({"description": "\x00"}, "description"),
        ({"metadata": {"note": "x\x00"}}, "metadata.note"),
        (
            {
                "criteria": [
                    {
                        "id": "t",
                        "scoring": {
                            "method": "deterministic",
                            "function": "contains_all",
                            "config": {"terms": ["a\x00"]},
                        },
                    }
                ]
            },
            "criteria[0].scoring.config.terms[0]",
        ),
    ],
)
def test_nul_is_refused_in_rubric_text(fields: dict[str, Any], path: str) -> None:
    [(where, message)] = problems(rubric(**fields))
    assert where == path
    assert "NUL character" in message


# ------------------------------------------------------------------ the CLI, both backends


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> CliRunner:
    monkeypatch.delenv(DB_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    return CliRunner()


def invoke(cli: CliRunner, *args: Any, db: str) -> Result:
    return cli.invoke(app, [str(a) for a in args] + ["--db", db])


def assert_error(result: Result, *fragments: str) -> None:
    """A usage error (exit 2) naming each fragment, as the `rubricflow` command prints it:
    a RubricflowError that leaves the app is turned into `error: ...`, exit 2, by `main`."""
    if isinstance(result.exception, RubricflowError):
        code, message = 2, f"error: {result.exception}"
    else:
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(
            result.exception
        )
        code, message = result.exit_code, result.stderr
    assert code == 2, result.output
    assert "Traceback" not in result.output
    assert message.startswith("error"), message
    for fragment in fragments:
        assert fragment in message, message


def write(path: Path, document: Any) -> Path:
    path.write_text(yaml.safe_dump(document))
    return path


def test_a_huge_version_is_refused_and_the_store_keeps_working(
    cli: CliRunner, db_url: str, tmp_path: Path
) -> None:
    huge = write(tmp_path / "huge.yaml", rubric(version="1.0." + "1" * 5000))
    long_id = write(tmp_path / "long.yaml", rubric(id="r" * 201))
    assert_error(invoke(cli, "rubrics", "register", huge, db=db_url), "version", "limit is 100")
    assert_error(invoke(cli, "rubrics", "register", long_id, db=db_url), "id", "limit is 200")
    validated = cli.invoke(app, ["validate", str(huge)])
    assert validated.exit_code == 1 and "the limit is 100" in validated.stdout
    fine = write(tmp_path / "fine.yaml", rubric(id="huge"))
    assert invoke(cli, "rubrics", "register", fine, db=db_url).exit_code == 0
    listed = ok_json(invoke(cli, "rubrics", "list", "--json", db=db_url))
    assert [r["id"] for r in listed["rubrics"]] == ["huge"]


def test_artifact_fields_over_their_columns_are_refused(
    cli: CliRunner, db_url: str, tmp_path: Path
) -> None:
    assert invoke(cli, "rubrics", "register", write(tmp_path / "r.yaml", rubric()), db=db_url)
    assert invoke(cli, "types", "set", "t", "-r", "fine", db=db_url).exit_code == 0
    content = tmp_path / "content.txt"
    content.write_text("hello")
    create = ("artifacts", "create", content, "-t", "t")
    assert_error(invoke(cli, *create, "--id", "a" * 201, db=db_url), "artifact id", "limit is 200")
    assert_error(invoke(cli, *create, "--title", "t" * 501, db=db_url), "title", "limit is 500")
    assert_error(invoke(cli, *create, "--actor", "p" * 201, db=db_url), "actor", "limit is 200")
    assert_error(invoke(cli, "types", "set", "t" * 201, "-r", "fine", db=db_url), "name")
    assert_error(invoke(cli, "types", "set", "", "-r", "fine", db=db_url), "name")
    made = ok_json(
        invoke(cli, *create, "--id", "a" * 200, "--title", "t" * 500, "--json", db=db_url)
    )
    assert made["id"] == "a" * 200


def test_target_ids_and_run_ids_are_bounded(cli: CliRunner, db_url: str, tmp_path: Path) -> None:
    good = write(tmp_path / "r.yaml", rubric())
    nul = tmp_path / "nul.jsonl"
    nul.write_text(json.dumps({"id": "a\x00b", "content": "x"}) + "\n")
    long = tmp_path / "long.jsonl"
    long.write_text(json.dumps({"id": "i" * 501, "content": "x"}) + "\n")
    fine = tmp_path / "fine.jsonl"
    fine.write_text(json.dumps({"id": "i" * 500, "content": "x"}) + "\n")
    assert_error(invoke(cli, "eval", good, nul, db=db_url), "nul.jsonl line 1", "NUL character")
    assert_error(invoke(cli, "eval", good, long, db=db_url), "long.jsonl line 1", "limit is 500")
    assert_error(invoke(cli, "eval", good, fine, "--run", "r" * 201, db=db_url), "run id")
    assert invoke(cli, "eval", good, fine, "--run", "r" * 200, db=db_url).exit_code == 0

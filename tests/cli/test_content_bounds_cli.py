"""Content bounds and content schemas at the command line (issue 27, findings 2 and 3):
`artifacts create` and `artifacts submit` with a JSON file nested past the depth bound,
and `types set --content-schema` with a schema that refers to a file, exit 2 with a
message naming the bound (or the reference) and the path, no traceback, nothing stored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_assertions import assert_error, ok_json
from typer.testing import CliRunner, Result

from rubricflow.cli import app
from rubricflow.store import DB_ENV

RUBRIC = {
    "id": "filled",
    "name": "Filled",
    "version": "1.0.0",
    "criteria": [
        {
            "id": "text",
            "description": "Has text",
            "scoring": {"method": "deterministic", "function": "non_empty"},
        }
    ],
}


def nested(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = {"a": value}
    return value


class Cli:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.db = f"sqlite+aiosqlite:///{folder / 'cli.db'}"

    def __call__(self, *args: Any) -> Result:
        return CliRunner().invoke(app, [str(a) for a in args] + ["--db", self.db])

    def file(self, name: str, document: Any) -> Path:
        path = self.folder / name
        path.write_text(
            json.dumps(document) if name.endswith(".json") else yaml.safe_dump(document)
        )
        return path


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    monkeypatch.delenv(DB_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    made = Cli(tmp_path)
    assert made("rubrics", "register", made.file("rubric.yaml", RUBRIC)).exit_code == 0
    assert made("types", "set", "note", "--rubric", "filled").exit_code == 0
    return made


def test_content_past_the_depth_bound_exits_2_and_stores_nothing(cli: Cli) -> None:
    deep = cli.file("deep.json", {"doc": nested(64)})
    for command in (("artifacts", "create"), ("artifacts", "submit")):
        assert_error(
            cli(*command, "--type", "note", deep), "64 levels deep", "$.doc.a", "max_depth"
        )
    assert ok_json(cli("artifacts", "list", "--json")) == {"artifacts": []}
    fine = cli.file("fine.json", {"doc": nested(63)})
    assert ok_json(cli("artifacts", "create", "--type", "note", fine, "--json"))["content"] == {
        "doc": nested(63)
    }


def test_a_content_schema_referring_to_a_file_exits_2(cli: Cli, tmp_path: Path) -> None:
    secret = cli.file("secret.json", {"type": "integer"})
    schema = cli.file("schema.json", {"properties": {"n": {"$ref": secret.as_uri()}}})
    result = cli("types", "set", "refs", "--rubric", "filled", "--content-schema", schema)
    assert_error(result, "refers outside itself at $/properties/n/$ref", secret.as_uri(), "$defs")
    assert_error(cli("types", "show", "refs"), "refs")

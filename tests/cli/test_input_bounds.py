"""Inputs that used to end in an internal error (exit 3) are clear errors naming the input
and the line (exit 2): JSONL nested 100,000 deep, a 5,000-digit number, bytes that are not
UTF-8 on stdin, and a `--limit` or `--offset` past any database's integers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import Result
from typer.testing import CliRunner

from rubricflow.cli import app

RUBRIC = {
    "id": "filled",
    "name": "Filled",
    "criteria": [
        {
            "id": "text",
            "description": "Has text",
            "scoring": {"method": "deterministic", "function": "non_empty"},
        }
    ],
}


@pytest.fixture
def rubric(tmp_path: Path) -> Path:
    path = tmp_path / "rubric.yaml"
    path.write_text(yaml.safe_dump(RUBRIC))
    return path


def _targets(tmp_path: Path, second_line: str) -> Path:
    path = tmp_path / "targets.jsonl"
    first = json.dumps({"id": "fine", "content": "text"})
    path.write_text(first + "\n" + second_line + "\n")
    return path


def _assert_clear(result: Result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.stderr, result.stderr
    assert "internal error" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def test_jsonl_nested_too_deep_names_the_line(rubric: Path, tmp_path: Path) -> None:
    deep = '{"id": "deep", "content": ' + "[" * 100_000 + "]" * 100_000 + "}"
    targets = _targets(tmp_path, deep)
    result = CliRunner().invoke(app, ["eval", str(rubric), str(targets)])
    _assert_clear(result, f"{targets} line 2:", "nested too deeply", "flatten it")


def test_a_number_of_5000_digits_names_the_line(rubric: Path, tmp_path: Path) -> None:
    targets = _targets(tmp_path, '{"id": "big", "content": ' + "9" * 5000 + "}")
    result = CliRunner().invoke(app, ["eval", str(rubric), str(targets)])
    _assert_clear(result, f"{targets} line 2:", "digits", "as a string")


@pytest.mark.parametrize(
    "data", [b"\xff\xfe{}\n", b'{"id": "a", "content": "x"}\n{"id": "\xff"}\n']
)
def test_stdin_that_is_not_utf8_is_a_clear_error(rubric: Path, data: bytes) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rubricflow", "eval", str(rubric), "-"],
        input=data,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    stderr = done.stderr.decode()
    assert "not UTF-8" in stderr and "Traceback" not in stderr, stderr


@pytest.mark.parametrize(
    "args",
    [
        ["evaluations", "list", "--limit", "99999999999999999999999"],
        ["evaluations", "list", "--offset", "99999999999999999999999"],
        ["artifacts", "list", "--offset", "99999999999999999999999"],
        ["runs", "list", "--limit", "99999999999999999999999"],
    ],
)
def test_limits_and_offsets_past_the_database_are_usage_errors(
    args: list[str], tmp_path: Path
) -> None:
    result = CliRunner().invoke(app, [*args, "--db", str(tmp_path / "store.db")])
    assert result.exit_code == 2, result.output
    assert "Invalid value for" in result.output
    assert not (tmp_path / "store.db").exists()

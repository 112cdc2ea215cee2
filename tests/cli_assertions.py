"""Assertions the CLI tests share: a command that succeeded with JSON on stdout, and a
usage error (exit 2) that names what is wrong, without a traceback."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import Result


def ok_json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def assert_error(result: Result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output
    assert result.stderr.startswith("error"), result.output
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr

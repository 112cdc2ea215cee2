"""`rubricflow plugins`: every plugin with what it adds, as a table or JSON."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rubricflow
from rubricflow.cli import app
from rubricflow.plugins import BLOCK_ENV

INFO_KEYS = {
    "name",
    "distribution",
    "version",
    "scorers",
    "metrics",
    "functions",
    "formats",
    "providers",
}


@pytest.fixture(autouse=True)
def _no_blocking_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BLOCK_ENV, raising=False)


def test_plugins_json_lists_the_builtins_and_what_they_add(cli: CliRunner) -> None:
    result = cli.invoke(app, ["plugins", "--json"])

    assert result.exit_code == 0, result.output
    plugins = json.loads(result.stdout)["plugins"]
    for info in plugins:
        assert set(info) == INFO_KEYS
    by_name = {info["name"]: info for info in plugins}
    builtins = [name for name in by_name if name.startswith("builtin-")]
    assert builtins == [
        "builtin-formats",
        "builtin-scorers",
        "builtin-functions",
        "builtin-trajectory",
        "builtin-llm-providers",
    ]
    assert [info["name"] for info in plugins][:5] == builtins  # built-ins first
    assert by_name["builtin-scorers"]["scorers"] == [
        "deterministic",
        "schema",
        "llm_verdict",
        "llm_oneshot",
        "llm_decode",
        "llm_score",
    ]
    assert by_name["builtin-llm-providers"]["providers"] == [
        "openai",
        "anthropic",
        "ollama",
        "local",
        "python",
    ]
    assert {"non_empty", "no_secrets", "meta.level_ordering"} <= set(
        by_name["builtin-functions"]["functions"]
    )
    assert by_name["builtin-formats"]["formats"] == [
        "native",
        "openrubricrl",
        "agentv",
        "rubric-pkg",
        "dataknobs",
        "rubricjudgespec",
        "rar",
        "healthbench",
        "openai-graders",
        "promptfoo",
    ]
    for name in builtins:
        assert by_name[name]["distribution"] == "rubricflow"
        assert by_name[name]["version"] == rubricflow.__version__


def test_plugins_json_honours_the_disable_variable(cli: CliRunner) -> None:
    result = cli.invoke(
        app, ["plugins", "--json"], env={BLOCK_ENV: "builtin-functions,builtin-formats"}
    )

    assert result.exit_code == 0, result.output
    names = [info["name"] for info in json.loads(result.stdout)["plugins"]]
    assert "builtin-scorers" in names
    assert "builtin-functions" not in names
    assert "builtin-formats" not in names


def test_plugins_human_output_shows_each_plugin_and_contribution(cli: CliRunner) -> None:
    result = cli.invoke(app, ["plugins"])

    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    for fragment in ("deterministic", "schema", "native", "agentv", rubricflow.__version__):
        assert fragment in result.stdout, fragment


def test_plugins_table_names_are_readable_in_an_80_column_terminal() -> None:
    """The names shown are what a user types into RUBRICFLOW_DISABLE_PLUGINS or a rubric,
    so they must not be cut short with an ellipsis."""
    executable = shutil.which("rubricflow", path=str(Path(sys.executable).parent))
    assert executable is not None
    env = {k: v for k, v in os.environ.items() if k != BLOCK_ENV}
    env["COLUMNS"] = "80"

    done = subprocess.run(
        [executable, "plugins"], capture_output=True, text=True, timeout=60, env=env, check=False
    )

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    for name in (
        "builtin-formats",
        "builtin-scorers",
        "builtin-functions",
        "deterministic",
        "word_count_between",
        "no_phone_numbers",
        "meta.threshold_reasonableness",
        "rubricjudgespec",
    ):
        assert name in done.stdout, name

"""One settings module (issue 26, item 2): every RUBRICFLOW_* variable is a typed field
of `rubricflow.settings.Settings`, read once at an edge and passed down; no other module
names one; the docs' table is generated from it; one boolean syntax; and two applications
in one process hold different settings."""

from __future__ import annotations

import ast
import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rubricflow.application import Application
from rubricflow.errors import ConfigurationError
from rubricflow.model import parse_rubric
from rubricflow.server import ServerSettings
from rubricflow.settings import (
    BOOLEAN_WORDS,
    Settings,
    current,
    documented_table,
    render_table,
    use,
)

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "rubricflow"
NAME = re.compile(r"^RUBRICFLOW_[A-Z0-9_]*$")
WORDS = {"1", "true", "yes", "on", "0", "false", "no", "off"}
BOOLEANS = [env for env, spec in Settings.variables() if spec.metadata["kind"] == "bool"]


def _names_outside_settings() -> list[str]:
    """Every string literal outside rubricflow/settings.py that is a RUBRICFLOW_ name
    (or the start of one): what reading a variable by its name needs."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "settings.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            literal = isinstance(node, ast.Constant) and isinstance(node.value, str)
            if literal and NAME.match(node.value):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    return found


def test_no_module_but_the_settings_module_names_a_rubricflow_variable() -> None:
    assert _names_outside_settings() == [], (
        "read RUBRICFLOW_* variables through rubricflow.settings (a field of Settings, "
        "`current()` below an entry point), never by name"
    )


def test_the_docs_table_is_the_generated_one_and_documents_every_variable() -> None:
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert documented_table(page) == render_table(), (
        "docs/settings.md is out of date: run "
        '`python -c "import rubricflow.settings as s; s.write_docs()"`'
    )
    names = [env for env, _ in Settings.variables()]
    assert len(names) == len(set(names))
    assert [name for name in names if f"| `{name}` |" not in page] == []
    for _, spec in Settings.variables():
        assert spec.metadata["doc"] and "\n" not in spec.metadata["doc"]


def test_every_variable_the_source_mentions_is_a_setting() -> None:
    """A message or docstring that names a variable names one that exists."""
    known = {env for env, _ in Settings.variables()}
    # prefixes ("RUBRICFLOW_SERVER_*") and a constant's own name
    allowed = known | {"RUBRICFLOW_", "RUBRICFLOW_SERVER_", "RUBRICFLOW_LLM_", "RUBRICFLOW_ENV"}
    mentioned = {
        (name, str(path.relative_to(ROOT)))
        for path in PACKAGE.rglob("*")
        if path.suffix in (".py", ".j2", ".html")
        for name in re.findall(r"RUBRICFLOW_[A-Z0-9_]*", path.read_text(encoding="utf-8"))
    }
    assert sorted(item for item in mentioned if item[0] not in allowed) == []


def test_the_server_defaults_the_docs_show_are_the_servers() -> None:
    defaults = ServerSettings(base=Settings.from_environment({}))
    for env, spec in Settings.variables():
        if env.startswith("RUBRICFLOW_SERVER_") and spec.metadata.get("shown") is not None:
            value = getattr(defaults, spec.name)
            shown = spec.metadata["shown"]
            if isinstance(value, bool):
                assert shown == ("1" if value else "0"), env
            elif isinstance(value, str):
                assert shown == value, env
            elif not shown.startswith("$"):
                assert float(shown) == float(value), env


@pytest.mark.parametrize("name", BOOLEANS)
@pytest.mark.parametrize(
    ("word", "value"),
    [(w, True) for w in ("1", "true", "yes", "on")]
    + [(w, False) for w in ("0", "false", "no", "off")],
)
def test_every_boolean_has_one_syntax(name: str, word: str, value: bool) -> None:
    for spelling in (word, word.upper(), f" {word.title()} "):
        settings = Settings.from_environment({name: spelling})
        field = next(spec for env, spec in Settings.variables() if env == name)
        holder = settings.server if name.startswith("RUBRICFLOW_SERVER_") else settings
        assert getattr(holder, field.name) is value


@given(
    name=st.sampled_from(BOOLEANS),
    text=st.text(min_size=1, max_size=12).filter(
        lambda t: bool(t.strip()) and t.strip().lower() not in WORDS
    ),
)
def test_any_other_boolean_is_refused_naming_the_variable_and_the_words(
    name: str, text: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_environment({name: text})
    assert str(caught.value).startswith(f"{name}=")
    assert BOOLEAN_WORDS in str(caught.value)


def test_secrets_are_not_shown() -> None:
    settings = Settings.from_environment(
        {"RUBRICFLOW_LLM_API_KEY": "sk-hidden-1", "RUBRICFLOW_TOKEN": "rf_hidden_2"}
    )
    assert settings.llm_api_key == "sk-hidden-1"
    assert "hidden" not in repr(settings)


def test_an_entry_point_binds_its_settings_for_the_code_below_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RUBRICFLOW_REGEX_TIMEOUT", "3")
    chosen = Settings.from_environment({"RUBRICFLOW_REGEX_TIMEOUT": "0.5"})
    assert current().regex_timeout == 3.0
    with use(chosen):
        monkeypatch.setenv("RUBRICFLOW_REGEX_TIMEOUT", "7")  # read once: no effect here
        assert current() is chosen
    assert current().regex_timeout == 7.0


def test_a_bad_variable_stops_the_cli_before_it_runs_naming_it(tmp_path: Path) -> None:
    env = {**os.environ, "RUBRICFLOW_SQLITE_FASTPATH": "maybe"}
    done = subprocess.run(
        [sys.executable, "-m", "rubricflow", "runs", "list", "--db", str(tmp_path / "x.db")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "RUBRICFLOW_SQLITE_FASTPATH='maybe' is not a boolean" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "x.db").exists()


_PID_RUBRIC: dict[str, Any] = {
    "id": "where",
    "name": "Where the check runs",
    "version": "1.0.0",
    "criteria": [
        {
            "id": "here",
            "description": "The check runs in the evaluating process",
            "scoring": {"method": "deterministic", "function": "settings_checks:in_this_process"},
        }
    ],
}


async def test_two_applications_in_one_process_hold_different_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One application runs imported checks in-process, the other in the check process
    pool, at the same time and whatever the environment says afterwards."""
    monkeypatch.delenv("RUBRICFLOW_CHECK_ISOLATION", raising=False)
    base = Settings.from_environment()
    inline = dataclasses.replace(base, check_isolation="off")
    pooled = dataclasses.replace(base, check_isolation="process")
    rubric = parse_rubric(_PID_RUBRIC)
    target = {"content": {"pid": os.getpid()}}
    async with (
        await Application.open(str(tmp_path / "a.db"), settings=inline) as first,
        await Application.open(str(tmp_path / "b.db"), settings=pooled) as second,
    ):
        monkeypatch.setenv("RUBRICFLOW_CHECK_ISOLATION", "auto")  # read once: ignored
        (here,) = await first.evaluate(rubric, [target], allow_import=True)
        (there,) = await second.evaluate(rubric, [target], allow_import=True)
        (again,) = await first.evaluate(rubric, [target], allow_import=True)
    assert [e.criteria[0].status for e in (here, there, again)] == ["scored"] * 3
    assert here.criteria[0].passed is True  # ran in this process
    assert there.criteria[0].passed is False  # ran in a pool process
    assert again.criteria[0].passed is True
    assert first.settings.check_isolation == "off"
    assert second.settings.check_isolation == "process"

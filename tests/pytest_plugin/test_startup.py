"""The plugin is loaded in every pytest run, so loading it imports nothing heavy: a
pytest run that uses no rubric imports no part of rubricflow, SQLAlchemy, httpx, pydantic
or jinja2 (benchmarks/pytest_startup.py measures the time)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("rubricflow", "sqlalchemy", "httpx", "pydantic", "jinja2", "typer", "sqlmodel")

PROGRAM = """
import json, sys
import pytest
code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *sys.argv[1:]])
plugin = "rubricflow_pytest" in sys.modules
print(json.dumps({"code": int(code), "plugin": plugin, "modules": sorted(sys.modules)}))
"""


def test_a_pytest_run_with_the_plugin_loaded_imports_nothing_heavy(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
    )
    (tmp_path / "test_trivial.py").write_text("def test_nothing():\n    pass\n")

    def modules(*options: str) -> dict[str, object]:
        done = subprocess.run(
            [sys.executable, "-c", PROGRAM, str(tmp_path), *options],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        report: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
        assert report["code"] == 0
        return report

    loaded, disabled = modules(), modules("-p", "no:rubricflow")
    assert loaded["plugin"] is True  # the entry point loaded it
    assert disabled["plugin"] is False
    added = set(loaded["modules"]) - set(disabled["modules"])  # type: ignore[call-overload]
    assert sorted(added) == ["rubricflow_pytest"]
    # the one module it adds is the hook module: no rubricflow, SQLAlchemy, httpx, ...
    assert not [name for name in added if name.split(".")[0] in HEAVY]


def test_the_library_is_not_assertion_rewritten_by_its_own_plugin() -> None:
    """pytest rewrites every module of a distribution with a `pytest11` entry point; the
    plugin unmarks the library, so a test importing rubricflow gets it as compiled by
    Python (no per-run recompilation, no rewritten asserts inside the library)."""
    import rubricflow.engine.executor
    import rubricflow.model

    rewritten = [
        name
        for name, module in sorted(sys.modules.items())
        if name.split(".")[0] == "rubricflow" and hasattr(module, "@pytest_ar")
    ]
    assert rewritten == []
    assert rubricflow.model.Rubric and rubricflow.engine.executor

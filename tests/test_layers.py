"""The layers are enforced by a tool: the import-linter contracts in pyproject.toml.

`test_contracts_hold` runs them on rubricflow; a broken contract fails it with the
contract's name and the offending import (module, line). `test_an_upward_import_is_caught`
shows the contracts bite: it runs them on a copy of the package with upward imports added.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from rubricflow.llm.cache import JudgeCache
from rubricflow.store.judge_cache import StoreJudgeCache

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
# the venv's own interpreter runs import-linter's command line (the `lint-imports` script)
LINT = [sys.executable, "-c", "from importlinter.cli import lint_imports_command as c; c()"]


def lint_imports(*, cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NO_COLOR="1", COLUMNS="200")
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        [*LINT, "--no-cache", str(PYPROJECT)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def broken_report(output: str) -> str:
    """The broken contracts and their offending imports, from import-linter's output."""
    _, found, details = output.partition("Broken contracts")
    return details.strip(" \n-") if found else output


def test_contracts_hold() -> None:
    result = lint_imports(cwd=ROOT)
    assert "Contracts:" in result.stdout, result.stdout + result.stderr
    broken = re.findall(r"^(.+?) BROKEN", result.stdout, flags=re.MULTILINE)
    assert result.returncode == 0 and not broken, (
        f"import-linter contracts broken: {broken}\n(see docs/design.md, Layers)\n\n"
        + broken_report(result.stdout + result.stderr)
    )


def _copy_package(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(
        ROOT / "rubricflow", src / "rubricflow", ignore=shutil.ignore_patterns("__pycache__")
    )
    return src


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def test_an_upward_import_is_caught(tmp_path: Path) -> None:
    src = _copy_package(tmp_path)
    package = src / "rubricflow"
    # an import inside a function counts as much as one at the top of a module
    _append(
        package / "llm" / "specs.py",
        "\n\ndef _reach_up() -> object:\n    from rubricflow.store import Store\n\n"
        "    return Store\n",
    )
    _append(package / "formats" / "loader.py", "\nfrom rubricflow import plugins as _up\n")
    _append(package / "plugins.py", "\nfrom rubricflow import __version__ as _v\n")
    # a face naming a store record, even only for type checking, goes around the one door
    _append(
        package / "tools" / "callers.py",
        "\nimport typing\n\nif typing.TYPE_CHECKING:\n"
        "    from rubricflow.store.tokens import ApiToken as _Token\n",
    )
    # a wire model naming a store record ties the HTTP API to the store's columns
    _append(
        package / "wire" / "tokens.py",
        "\nif TYPE_CHECKING:\n    from rubricflow.store.tokens import TokenStore as _Store\n",
    )
    result = lint_imports(cwd=tmp_path, pythonpath=src)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "Layers: imports only point down BROKEN" in output
    assert "The LLM layer never imports the store" in output
    assert "No module imports the package root" in output
    report = broken_report(output)
    assert "rubricflow.llm.specs -> rubricflow.store" in report
    assert "rubricflow.formats.loader -> rubricflow.plugins" in report
    assert "rubricflow.plugins -> rubricflow (l." in report
    assert "No face imports the store" in output
    assert "rubricflow.tools.callers -> rubricflow.store.tokens" in report
    assert "The HTTP wire models never import the store" in output
    assert "rubricflow.wire.tokens -> rubricflow.store.tokens" in report


def test_faces_only_start_each_other(tmp_path: Path) -> None:
    """The CLI may import another face's package to start it, never its modules."""
    src = _copy_package(tmp_path)
    launcher = src / "rubricflow" / "cli" / "serve_launcher.py"
    launcher.write_text("from rubricflow.server import create_app\n", encoding="utf-8")
    assert lint_imports(cwd=tmp_path, pythonpath=src).returncode == 0

    _append(launcher, "from rubricflow.server.app import create_app_from_env\n")
    result = lint_imports(cwd=tmp_path, pythonpath=src)
    assert result.returncode != 0
    assert "rubricflow.cli.serve_launcher -> rubricflow.server.app" in broken_report(result.stdout)


def test_the_store_judge_cache_is_an_llm_judge_cache() -> None:
    """The LLM layer reaches the store's cache only through its `JudgeCache` protocol."""
    assert issubclass(StoreJudgeCache, JudgeCache)

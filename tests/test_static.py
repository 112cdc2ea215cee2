"""The package stays lint-clean, formatted and type-checked: ruff and mypy --strict run
here, so CI (which runs exactly the README's test command) keeps them clean."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_ruff_finds_nothing_to_fix() -> None:
    done = _run(
        "ruff",
        "check",
        "rubricflow",
        "rubricflow_pytest",
        "tests",
        "benchmarks",
        "examples",
        "plugins",
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_code_is_formatted() -> None:
    done = _run(
        "ruff",
        "format",
        "--check",
        "rubricflow",
        "rubricflow_pytest",
        "tests",
        "benchmarks",
        "examples",
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_strict_is_clean_on_the_package() -> None:
    done = _run("mypy", "--cache-dir", str(ROOT / ".mypy_cache"), "rubricflow", "rubricflow_pytest")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success" in done.stdout

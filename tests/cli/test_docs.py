"""docs/cli.md is generated from the typer app: it must match what the generator prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import typer
from typer.testing import CliRunner

from rubricflow.cli import app
from rubricflow.cli.docs import render_cli_reference

ROOT = Path(__file__).resolve().parents[2]
CLI_MD = ROOT / "docs" / "cli.md"
REGENERATE = "python -m rubricflow.cli.docs > docs/cli.md"


def test_docs_cli_md_is_up_to_date() -> None:
    generated = render_cli_reference()
    written = CLI_MD.read_text(encoding="utf-8") if CLI_MD.exists() else ""
    assert written == generated, (
        f"docs/cli.md is out of date with the CLI (rubricflow/cli.py and its sub-apps); "
        f"regenerate it: run `{REGENERATE}`"
    )


def test_the_module_prints_the_reference() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rubricflow.cli.docs"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == render_cli_reference()


def _paths(command: object, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
    found = [prefix]
    commands = getattr(command, "commands", None) or {}
    for name, sub in commands.items():
        if not getattr(sub, "hidden", False):
            found += _paths(sub, (*prefix, name))
    return found


def test_every_command_and_option_is_documented() -> None:
    text = render_cli_reference()
    root = typer.main.get_command(app)
    paths = _paths(root, ("rubricflow",))
    assert len(paths) > 20
    for path in paths[1:]:
        assert f"`{' '.join(path)}`" in text, path
    eval_section = text.split("`rubricflow eval`\n", 2)[-1].split("\n#", 1)[0]
    for option in ("--json", "--db", "--llm SPEC", "--concurrency", "--allow-import"):
        assert f"`{option}`" in eval_section


def test_exit_codes_come_from_the_docstrings() -> None:
    text = render_cli_reference()
    submit = text.split("`rubricflow artifacts submit`\n", 2)[-1].split("\n#", 1)[0]
    assert "- `0`: when the artifact ends approved" in submit
    assert "- `1`: otherwise" in submit
    assert "## Exit codes" in text and "- `2`: usage or input errors" in text


def test_a_command_added_later_is_picked_up() -> None:
    extra = typer.Typer()

    @extra.command()
    def first() -> None:
        """Do the first thing."""

    @extra.command("second")
    def second(
        count: int = typer.Option(3, "--count", "-n", min=1, help="How many."),
    ) -> None:
        """Do the second thing.

        Exit 0 when done, 4 when not.
        """

    text = render_cli_reference(extra)
    assert "`rubricflow second`" in text and "Do the first thing." in text
    assert "| `--count`, `-n` | integer ≥ 1 | `3` | How many. |" in text
    assert "- `4`: when not" in text
    assert CliRunner().invoke(extra, ["second", "--help"]).exit_code == 0

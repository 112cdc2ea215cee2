"""A newcomer's first commands: --version, help that is not cut off, validate --strict,
output into a closed pipe, PostgreSQL without its driver, and what `plugins` lists."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from rubricflow.cli import app

ROOT = Path(__file__).resolve().parents[2]
ENTRY = "from rubricflow.cli import main; main()"

WEAK_RUBRIC = """\
id: weak
name: Weak
version: 1.0.0
pass_threshold: 0.05
criteria:
  - id: a
    description: good
    weight: 1
    scoring: {method: deterministic, function: non_empty}
  - id: b
    description: good
    weight: 100
    scoring: {method: deterministic, function: non_empty}
"""


def _cli(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args],
        capture_output=True,
        text=True,
        timeout=120,
        **kwargs,  # type: ignore[call-overload]
    )


def test_version_prints_the_installed_version(cli: CliRunner) -> None:
    result = cli.invoke(app, ["--version"])

    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"rubricflow {metadata.version('rubricflow')}"


def _groups(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for name, sub in getattr(command, "commands", {}).items():
        if hasattr(sub, "commands"):
            found += _groups(sub, (*path, name))
    return found


@pytest.mark.parametrize("width", [60, 80])
def test_command_lists_in_help_show_each_first_sentence_whole(width: int) -> None:
    runner = CliRunner(env={"COLUMNS": str(width)})
    root = typer.main.get_command(app)
    paths = _groups(root)
    assert ("artifacts",) in paths and ("rubrics",) in paths
    for path in paths:
        result = runner.invoke(app, [*path, "--help"], terminal_width=width)
        assert result.exit_code == 0, result.output
        listing = result.stdout.split("Commands:", 1)[1]
        assert "..." not in listing.replace("FILE...", ""), (path, listing)
        assert "…" not in listing, (path, listing)
        # every command's summary line ends its first sentence
        text = re.sub(r"\s+", "", listing)  # wrapped lines, "self-" "contained" too
        group = root
        for name in path:
            group = group.commands[name]  # type: ignore[attr-defined]
        for name, sub in group.commands.items():  # type: ignore[attr-defined]
            first = (sub.help or "").split("\n\n")[0]
            sentence = re.match(r"(.+?[^.]\.)(?=\s+[A-Z(`]|$)", " ".join(first.split()))
            assert sentence is not None
            whole = re.sub(r"\s+", "", sentence.group(1))
            assert whole in text, (path, name, sentence.group(1), listing)


def test_validate_strict_fails_when_the_meta_rubric_fails(tmp_path: Path, cli: CliRunner) -> None:
    rubric = tmp_path / "weak.yaml"
    rubric.write_text(WEAK_RUBRIC, encoding="utf-8")

    lenient = cli.invoke(app, ["validate", str(rubric)])
    strict = cli.invoke(app, ["validate", "--strict", str(rubric)])
    strict_json = cli.invoke(app, ["validate", "--strict", "--json", str(rubric)])

    assert lenient.exit_code == 0, lenient.output
    assert strict.exit_code == 1, strict.output
    assert "meta-rubric" in strict.stdout and "FAIL" in strict.stdout
    assert strict_json.exit_code == 1, strict_json.output
    assert json.loads(strict_json.stdout)["files"][0]["valid"] is True


def test_validate_strict_passes_a_library_rubric(cli: CliRunner) -> None:
    result = cli.invoke(
        app, ["validate", "--strict", str(ROOT / "rubrics" / "support-reply-checks.yaml")]
    )

    assert result.exit_code == 0, result.output


@pytest.fixture
def review_db(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "RUBRICFLOW_DB": str(tmp_path / "gate.db")}
    for args in (
        ["rubrics", "register", str(ROOT / "rubrics" / "support-reply-checks.yaml")],
        ["types", "set", "support_reply", "--rubric", "support-reply-checks"],
    ):
        done = _cli(*args, env=env)
        assert done.returncode == 0, done.stderr
    return env


def test_submit_into_a_closed_pipe_keeps_the_approved_exit_code(review_db: dict[str, str]) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before anything is written (as `| head -0`)
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                ENTRY,
                "artifacts",
                "submit",
                "--type",
                "support_reply",
                str(ROOT / "examples" / "artifacts" / "support-reply.txt"),
            ],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            env=review_db,
        )
    finally:
        os.close(write_end)

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr


BLOCK_ASYNCPG = textwrap.dedent(
    """\
    import sys

    class NoAsyncpg:
        def find_spec(self, name, path=None, target=None):
            if name == "asyncpg" or name.startswith("asyncpg."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NoAsyncpg())
    from rubricflow.cli import main
    main()
    """
)


@pytest.mark.parametrize(
    "url", ["postgresql://postgres@127.0.0.1:5432/test", "postgresql+asyncpg://u@h/db"]
)
def test_postgres_without_asyncpg_is_an_install_hint(url: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", BLOCK_ASYNCPG, "rubrics", "list", "--db", url],
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 2, done.stderr
    assert "internal error" not in done.stderr
    assert "asyncpg" in done.stderr
    assert "pip install -e '.[postgres]'" in done.stderr  # works from a checkout
    assert "Traceback" not in done.stderr


def test_plugins_lists_the_metric_names_a_plugin_provides(cli: CliRunner) -> None:
    pytest.importorskip("rubricflow_metrics")

    table = cli.invoke(app, ["plugins"])
    as_json = cli.invoke(app, ["plugins", "--json"])

    assert table.exit_code == 0, table.output
    by_name = {info["name"]: info for info in json.loads(as_json.stdout)["plugins"]}
    assert {"bleu", "chrf", "ter", "rouge1", "rouge2", "rougeL"} <= set(
        by_name["metrics"]["metrics"]
    )
    assert by_name["builtin-scorers"]["metrics"] == []
    line = next(x for x in table.stdout.splitlines() if x.strip().startswith("metrics:"))
    assert "bleu" in line and "rougeL" in line and "chrf" in line


def test_openrubricrl_guide_shows_what_convert_writes(tmp_path: Path, cli: CliRunner) -> None:
    guide = (ROOT / "docs" / "migrating" / "openrubricrl.md").read_text(encoding="utf-8")
    after = guide[guide.index("`answer-quality.json`:") :]
    source = re.search(r"```json\n(.*?)```", after, re.S)
    shown = re.search(r"\$ cat answer-quality.yaml\n(.*?)\$ rubricflow validate", after, re.S)
    assert source is not None and shown is not None
    (tmp_path / "answer-quality.json").write_text(source.group(1), encoding="utf-8")
    output = tmp_path / "answer-quality.yaml"

    result = cli.invoke(app, ["convert", str(tmp_path / "answer-quality.json"), "-o", str(output)])

    assert result.exit_code == 0, result.output
    assert output.read_text(encoding="utf-8") == shown.group(1)

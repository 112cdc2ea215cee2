"""Text holding half of a UTF-16 pair (`\\ud800`, written as a JSON or YAML escape)
cannot be stored or sent to a judge. It is refused where it comes in, naming the file,
instead of passing `validate` and then failing `rubrics register` with exit 3."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rubricflow.cli import app
from rubricflow.errors import ReviewError
from rubricflow.review import ArtifactRegistry, ArtifactType, RubricBinding
from rubricflow.store import Store

RUBRIC = """\
id: {id}
name: {name}
criteria:
- id: text
  description: Has text
  scoring: {{method: deterministic, function: non_empty}}
"""


def _cli(*args: str) -> object:
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    path = tmp_path / "broken.yaml"
    path.write_text(RUBRIC.format(id="broken", name='"cut \\ud800 emoji"'), encoding="utf-8")
    return path


def test_validate_convert_and_register_refuse_a_rubric_holding_one(
    broken: Path, tmp_path: Path
) -> None:
    runner = CliRunner()
    validated = runner.invoke(app, ["validate", str(broken)])
    assert validated.exit_code == 1, validated.output
    assert "lone surrogate (\\ud800)" in validated.stdout
    converted = runner.invoke(app, ["convert", str(broken)])
    assert converted.exit_code == 2, converted.output
    assert "lone surrogate" in converted.stderr
    db = str(tmp_path / "store.db")
    registered = runner.invoke(app, ["rubrics", "register", str(broken), "--db", db])
    assert registered.exit_code == 2, registered.output
    assert f"{broken}: holds a lone surrogate" in registered.stderr


def test_artifact_content_holding_one_is_refused(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "store.db")
    rubric = tmp_path / "fine.yaml"
    rubric.write_text(RUBRIC.format(id="fine", name="Fine"))
    assert runner.invoke(app, ["rubrics", "register", str(rubric), "--db", db]).exit_code == 0
    assert runner.invoke(app, ["types", "set", "t", "-r", "fine", "--db", db]).exit_code == 0
    content = tmp_path / "content.json"
    content.write_text('{"text": "cut \\ud800 emoji"}')
    created = runner.invoke(app, ["artifacts", "create", str(content), "-t", "t", "--db", db])
    assert created.exit_code == 2, created.output
    assert "lone surrogate" in created.stderr

    async def revise() -> None:
        async with await Store.open(db) as store:
            registry = ArtifactRegistry(store)
            await registry.set_type(
                ArtifactType(name="t", rubrics=(RubricBinding(rubric_id="fine"),))
            )
            artifact = await registry.create("t", {"text": "fine"}, actor="bot")
            with pytest.raises(ReviewError, match="lone surrogate"):
                await registry.revise(artifact.id, {"text": "x\ud800"}, actor="bot", reason="r")
            assert (await registry.get(artifact.id)).revision == 1

    asyncio.run(revise())

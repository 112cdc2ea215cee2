"""The id rule (rubricflow.identifiers) at the CLI: an artifact id or a type name holding a
bidi control or a zero-width character is a usage error (exit 2) naming the character,
and nothing is created; the same rule as the API's (tests/server/test_text_at_the_door.py).
Its regular expression (the OpenAPI document's pattern) and its check agree on any text."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from rubricflow.cli import app
from rubricflow.identifiers import ID_PATTERN, INVISIBLE_CHARACTERS, id_problem
from rubricflow.model import MAX_ID_LENGTH
from rubricflow.review import ArtifactRegistry
from rubricflow.store import Store

RUBRIC = """\
id: fine
criteria:
- id: text
  description: Has text
  scoring: {method: deterministic, function: non_empty}
"""


@pytest.fixture
def store(tmp_path: Path) -> str:
    db = str(tmp_path / "store.db")
    rubric = tmp_path / "fine.yaml"
    rubric.write_text(RUBRIC)
    runner = CliRunner()
    assert runner.invoke(app, ["rubrics", "register", str(rubric), "--db", db]).exit_code == 0
    assert runner.invoke(app, ["types", "set", "t", "-r", "fine", "--db", db]).exit_code == 0
    return db


def _ids(db: str) -> list[str]:
    async def read() -> list[str]:
        async with await Store.open(db) as opened:
            return [a.id for a in await ArtifactRegistry(opened).list_artifacts(limit=100)]

    return asyncio.run(read())


@pytest.mark.parametrize(
    ("hidden", "named"),
    [("a\u202eb", "U+202E (RIGHT-TO-LEFT OVERRIDE)"), ("a\u200db", "U+200D (ZERO WIDTH JOINER)")],
)
def test_an_artifact_id_with_an_invisible_character_is_a_usage_error(
    store: str, tmp_path: Path, hidden: str, named: str
) -> None:
    content = tmp_path / "content.json"
    content.write_text('{"text": "hello"}')
    runner = CliRunner()
    done = runner.invoke(
        app, ["artifacts", "create", str(content), "-t", "t", "--id", hidden, "--db", store]
    )
    assert done.exit_code == 2, done.output
    assert named in done.stderr and "remove it" in done.stderr
    assert "Traceback" not in done.output
    assert _ids(store) == []
    fine = runner.invoke(
        app, ["artifacts", "create", str(content), "-t", "t", "--id", "\uff41", "--db", store]
    )
    assert fine.exit_code == 0, fine.output
    assert _ids(store) == ["\uff41"]


def test_a_type_name_with_an_invisible_character_is_a_usage_error(store: str) -> None:
    done = CliRunner().invoke(app, ["types", "set", "t\u2067x", "-r", "fine", "--db", store])
    assert done.exit_code == 2, done.output
    assert "U+2067 (RIGHT-TO-LEFT ISOLATE)" in done.stderr
    listed = CliRunner().invoke(app, ["types", "list", "--db", store])
    assert "t\u2067x" not in listed.output


_AROUND = st.characters(codec="utf-8") | st.sampled_from(
    [*sorted(INVISIBLE_CHARACTERS), "/", ".", "\x00", "\x1f", "\x7f"]
)


@given(st.text(_AROUND, max_size=12))
def test_the_pattern_and_the_check_agree(value: str) -> None:
    """The OpenAPI document's pattern says what the check says (up to the length; JSON
    text carries no lone surrogate, so the pattern leaves those to the check)."""
    assert (id_problem(value) is None) == bool(re.fullmatch(ID_PATTERN, value))


@given(st.text(_AROUND | st.just("\ud800"), min_size=1, max_size=MAX_ID_LENGTH + 5))
def test_an_accepted_id_is_a_safe_path_segment_and_shows_as_itself(value: str) -> None:
    problem = id_problem(value, what="the id")
    if problem is None:
        assert len(value) <= MAX_ID_LENGTH
        assert "/" not in value and value not in (".", "..")
        assert not INVISIBLE_CHARACTERS & set(value)
        assert not re.search(r"[\x00-\x1f\x7f]", value)
        value.encode("utf-8")  # no lone surrogate: storable and sendable
    else:
        assert problem.startswith("the id ")

"""Content bounds and the content schema through the Python API (`Application`), on
SQLite and PostgreSQL (issue 27, findings 2 and 3): beyond a bound, a
`ContentBoundsError` naming the bound and the path, and nothing stored; a content schema
that refers outside itself, or nests too deep, is refused when set."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from rubricflow.application import Application
from rubricflow.errors import ConfigurationError, ContentBoundsError
from rubricflow.model import parse_rubric
from rubricflow.review import ArtifactType, RubricBinding

RUBRIC = {
    "id": "gate",
    "name": "Gate",
    "version": "1.0.0",
    "criteria": [
        {
            "id": "clean",
            "description": "The content does not say FAIL.",
            "scoring": {
                "method": "deterministic",
                "function": "contains_none",
                "config": {"terms": ["FAIL"]},
            },
        }
    ],
}


def nested(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return value


@pytest.fixture
async def app(db_url: str) -> AsyncIterator[Application]:
    async with await Application.open(db_url) as application:
        await application.store.rubrics.register(parse_rubric(RUBRIC))
        binding = (RubricBinding(rubric_id="gate"),)
        await application.artifacts.set_type(ArtifactType(name="note", rubrics=binding))
        yield application


@pytest.mark.parametrize(
    ("content", "bound", "path"),
    [
        ({"a": nested(64)}, "max_depth", ".a[0][0]"),
        ({"rows": list(range(100_001))}, "max_items", ".rows"),
        ({"rows": ["ok", "y" * 5_000_001]}, "max_string_length", ".rows[1]"),
        # 12 MB in three strings each under the string bound
        ({"parts": ["z" * 4_000_000] * 3}, "max_total_bytes", ".parts"),
    ],
    ids=["depth", "items", "string", "total"],
)
async def test_content_beyond_a_bound_is_refused_and_nothing_is_stored(
    app: Application, content: Any, bound: str, path: str
) -> None:
    for attempt in (
        app.artifacts.create("note", content, actor="bot", artifact_id="big"),
        app.create_and_submit("note", content, actor="bot", artifact_id="big"),
        app.artifacts.create("note", "fine", actor="bot", metadata={"m": content}),
    ):
        with pytest.raises(ContentBoundsError) as refused:
            await attempt
        assert refused.value.bound == bound
        assert path in refused.value.path
        assert bound in str(refused.value)
    assert await app.artifacts.list_artifacts() == []
    draft = await app.artifacts.create("note", "fine", actor="bot")
    with pytest.raises(ContentBoundsError):
        await app.artifacts.revise(draft.id, content, actor="bot", reason="bigger")
    assert (await app.artifacts.get(draft.id)).revision == 1


async def test_content_at_the_bounds_is_stored(app: Application) -> None:
    content = {"deep": nested(63), "rows": list(range(100_000)), "text": "y" * 1_000_000}
    made = await app.artifacts.create("note", content, actor="bot")
    assert (await app.artifacts.get(made.id)).content == content


@pytest.mark.parametrize(
    "ref", ["file:///etc/passwd", "https://example.com/s.json", "local.json#/x"]
)
async def test_a_content_schema_that_refers_outside_itself_is_refused(
    app: Application, ref: str
) -> None:
    schema = {"$defs": {"ok": {"type": "string"}}, "items": [{"$ref": "#/$defs/ok"}, {"$ref": ref}]}
    binding = (RubricBinding(rubric_id="gate"),)
    with pytest.raises(ConfigurationError, match=r"refers outside itself at \$/items/1/\$ref"):
        await app.artifacts.set_type(
            ArtifactType(name="refs", rubrics=binding, content_schema=schema)
        )
    assert [t.name for t in await app.artifacts.list_types()] == ["note"]


async def test_a_content_schema_nested_too_deep_is_refused(app: Application) -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(70):
        schema = {"items": schema}
    binding = (RubricBinding(rubric_id="gate"),)
    with pytest.raises(ContentBoundsError, match="content schema of artifact type 'deep'"):
        await app.artifacts.set_type(
            ArtifactType(name="deep", rubrics=binding, content_schema=schema)
        )


async def test_evaluate_refuses_a_target_beyond_the_bounds_before_scoring_any(
    app: Application,
) -> None:
    rubric = await app.rubrics.get("gate")
    with pytest.raises(ContentBoundsError, match=r"target 1 content nests .* at \$\[0\]"):
        await app.evaluate(rubric, ["fine", {"content": nested(65)}])
    (evaluation,) = await app.evaluate(rubric, [{"content": nested(64)}])
    assert evaluation.verdict == "pass"

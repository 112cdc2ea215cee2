"""Round trips: whatever any format loads dumps to native YAML/JSON that loads back to the
same rubrics (same content hash); native -> load -> dump -> load is the identity, for the
fixtures and for random valid rubrics built by hypothesis."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rubricflow import dump_rubric, load_file, parse_rubric
from rubricflow.formats.loader import load_text
from rubricflow.formats.native import dump_rubrics
from rubricflow.model import Rubric

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "formats"
ALL_FIXTURES = [
    pytest.param(path, id=f"{folder.name}/{path.name}")
    for folder in sorted(p for p in FIXTURES.iterdir() if p.is_dir())
    for path in sorted(folder.iterdir())
    if path.is_file()
]


def test_fixtures_cover_every_format() -> None:
    folders = {p.values[0].parent.name for p in ALL_FIXTURES}  # type: ignore[union-attr]
    assert folders == {
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
    }


@pytest.mark.parametrize("path", ALL_FIXTURES)
@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_every_fixture_survives_conversion_to_native(path: Path, fmt: str) -> None:
    original = load_file(path)
    text = dump_rubrics(original.rubrics, fmt)
    converted = load_text(text, source=f"converted.{fmt}")
    assert converted.format == "native"  # detected, not forced
    assert converted.warnings == []
    assert converted.rubrics == original.rubrics
    assert [r.content_hash for r in converted.rubrics] == [r.content_hash for r in original.rubrics]
    assert dump_rubrics(converted.rubrics, fmt) == text


@pytest.mark.parametrize("path", [p for p in ALL_FIXTURES if p.values[0].parent.name == "native"])  # type: ignore[union-attr]
def test_native_load_dump_load_is_the_identity(path: Path) -> None:
    first = load_file(path).rubrics
    again = load_text(dump_rubrics(first), format="native").rubrics
    assert again == first
    for before, after in zip(first, again, strict=True):
        assert after.to_dict() == before.to_dict()
        assert after.content_hash == before.content_hash


# -- random valid native rubrics -------------------------------------------------------

ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_.:/-", min_size=1, max_size=10).map(
    lambda tail: "x" + tail
)
# any text a store can keep: NUL is refused by the model (PostgreSQL cannot hold it)
texts = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=30)
unit = st.floats(min_value=0, max_value=1, allow_nan=False)
weights = st.one_of(
    st.floats(min_value=-10, max_value=10, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -1.0, 1e-9, 0.1, 1 / 3]),
)
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)
json_data = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(texts, inner, max_size=3)),
    max_leaves=8,
)
versions = st.builds(
    lambda major, minor, patch, pre, build: f"{major}.{minor}.{patch}{pre}{build}",
    st.integers(0, 30),
    st.integers(0, 30),
    st.integers(0, 300),
    st.sampled_from(["", "-alpha", "-rc.1", "-beta.11", "-0.3.7", "-x-y.2"]),
    st.sampled_from(["", "+build.5", "+sha.abc123"]),
)


@st.composite
def band_lists(draw: st.DrawFn) -> list[dict[str, Any]] | dict[str, str]:
    cuts = sorted(draw(st.sets(st.integers(1, 10), max_size=5)))
    lows = [0, *cuts]
    if draw(st.booleans()):
        return {str(low): draw(texts) for low in lows}
    bands = [
        {
            "min": low,
            "max": (lows[i + 1] - 1 if i + 1 < len(lows) else 10),
            "description": draw(texts),
        }
        for i, low in enumerate(lows)
    ]
    return draw(st.permutations(bands))


@st.composite
def level_lists(draw: st.DrawFn) -> list[dict[str, Any]]:
    level_ids = draw(st.lists(ids, min_size=2, max_size=4, unique=True))
    levels = []
    for level_id in level_ids:
        level: dict[str, Any] = {"id": level_id, "score": draw(unit)}
        if draw(st.booleans()):
            level["label"] = draw(texts.filter(bool))
        if draw(st.booleans()):
            level["description"] = draw(texts)
        if draw(st.booleans()):
            level["indicators"] = draw(st.lists(texts, max_size=3))
        levels.append(level)
    return levels


scorings = st.one_of(
    st.just({}),
    st.builds(lambda m: {"method": m}, st.sampled_from(["llm", "llm_verdict", "llm_score"])),
    st.builds(
        lambda fn, config: {"method": "deterministic", "function": fn, "config": config},
        st.sampled_from(["contains_all", "regex.internal_ids", "app.checks:count"]),
        st.dictionaries(texts, json_data, max_size=3),
    ),
    st.builds(
        lambda metric: {"method": "metric", "metric": metric},
        st.sampled_from(["bleu", "rouge", "sql_exec_match"]),
    ),
    st.builds(
        lambda schema: {"method": "schema", "schema": schema},
        st.sampled_from(
            [
                {"type": "object"},
                {"type": "array", "items": {"type": "string"}, "minItems": 1},
                {"$schema": "https://json-schema.org/draft/2020-12/schema", "required": ["a"]},
            ]
        ),
    ),
    st.builds(
        lambda template, model: {
            "method": "llm_decode",
            "template": template,
            "output_schema": {"type": "object", "required": ["level_id"]},
            "model": model,
        },
        st.sampled_from(
            ["{{ content }}", "Grade:\n{% for q in qs %}- {{ q }}\n{% endfor %}", "plain"]
        ),
        st.sampled_from(["judge-small", "gpt-4o"]),
    ),
)


@st.composite
def criteria(draw: st.DrawFn, criterion_id: str) -> dict[str, Any]:
    criterion: dict[str, Any] = {"id": criterion_id}
    kind = draw(st.sampled_from(["binary", "levels", "bands"]))
    levels: list[dict[str, Any]] = []
    if kind == "levels":
        levels = draw(level_lists())
        criterion["levels"] = levels
    elif kind == "bands":
        criterion["score_ranges"] = draw(band_lists())
    for key, strategy in (
        ("name", texts.filter(bool)),
        ("description", texts),
        ("weight", weights),
        ("required", st.booleans()),
        ("min_score", unit),
        ("section", texts),
        ("scoring", scorings),
        (
            "subcriteria",
            st.lists(
                st.fixed_dictionaries(
                    {"name": texts.filter(bool)}, optional={"description": texts}
                ),
                max_size=2,
            ),
        ),
    ):
        if draw(st.booleans()):
            criterion[key] = draw(strategy)
    if draw(st.booleans()):
        example: dict[str, Any] = {"output": draw(texts)}
        if levels and draw(st.booleans()):
            example["level"] = draw(st.sampled_from([level["id"] for level in levels]))
        for key, strategy in (
            ("input", texts),
            ("score", st.floats(0, 10)),
            ("label", texts),
            ("explanation", texts),
        ):
            if draw(st.booleans()):
                example[key] = draw(strategy)
        criterion["examples"] = [example]
    return criterion


@st.composite
def native_rubrics(draw: st.DrawFn) -> dict[str, Any]:
    criterion_ids = draw(st.lists(ids, min_size=1, max_size=5, unique=True))
    document: dict[str, Any] = {
        "id": draw(ids),
        "criteria": [draw(criteria(criterion_id)) for criterion_id in criterion_ids],
    }
    low = draw(st.integers(-10, 10))
    optional = {
        "name": texts.filter(bool),
        "version": versions,
        "description": texts,
        "target_type": texts,
        "pass_threshold": unit,
        "scale": st.fixed_dictionaries(
            {
                "min": st.just(low),
                "max": st.integers(low + 1, low + 100),
                "type": st.sampled_from(["continuous", "discrete"]),
            }
        ),
        "unscored_policy": st.sampled_from(["fail_closed", "exclude", "count_as_zero"]),
        "metadata": st.dictionaries(texts, json_data, max_size=4),
    }
    for key, strategy in optional.items():
        if draw(st.booleans()):
            document[key] = draw(strategy)
    return document


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=native_rubrics())
def test_random_valid_rubrics_survive_dump_and_load(document: dict[str, Any]) -> None:
    rubric = parse_rubric(document)
    assert isinstance(rubric, Rubric)
    for fmt in ("yaml", "json"):
        text = dump_rubric(rubric, fmt)
        again = load_text(text, source=f"random.{fmt}")
        assert again.format == "native"
        (loaded,) = again.rubrics
        assert loaded == rubric
        assert loaded.to_dict() == rubric.to_dict()
        assert loaded.content_hash == rubric.content_hash
        assert dump_rubric(loaded, fmt) == text


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents=st.lists(native_rubrics(), min_size=2, max_size=3, unique_by=lambda d: d["id"]))
def test_random_bundles_survive_dump_and_load(documents: list[dict[str, Any]]) -> None:
    rubrics = [parse_rubric(document) for document in documents]
    for fmt in ("yaml", "json"):
        loaded = load_text(dump_rubrics(rubrics, fmt))
        assert loaded.format == "native"
        assert loaded.rubrics == rubrics

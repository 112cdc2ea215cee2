"""Format detection: every fixture is recognised as its own format (and no other format is
as confident), an explicit format overrides detection, and an unknown document is refused
with the list of known formats."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rubricflow import (
    FormatDetectionError,
    RubricLoadError,
    RubricValidationError,
    load_document,
    load_file,
)
from rubricflow.cli import app
from rubricflow.formats.document import read_document
from rubricflow.formats.loader import detect_format
from rubricflow.plugins import PluginRegistry, create_plugin_manager

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "formats"
FORMATS = [
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
]
CASES = [
    pytest.param(folder, path, id=f"{folder}/{path.name}")
    for folder in FORMATS
    for path in sorted((FIXTURES / folder).iterdir())
    if path.is_file()
]


@pytest.fixture(scope="module")
def registry() -> PluginRegistry:
    return create_plugin_manager(load_entry_points=False)


def test_registry_lists_the_builtin_formats(registry: PluginRegistry) -> None:
    assert sorted(registry.formats) == sorted(FORMATS)
    for name, fmt in registry.formats.items():
        assert fmt.name == name
        assert fmt.description


def test_every_format_has_at_least_two_fixtures() -> None:
    for folder in FORMATS:
        assert len([c for c in CASES if c.values[0] == folder]) >= 2, folder


@pytest.mark.parametrize(("expected", "path"), CASES)
def test_each_fixture_is_detected_as_its_format(
    expected: str, path: Path, registry: PluginRegistry
) -> None:
    document = read_document(path)
    scores = {name: fmt.detect(document) for name, fmt in registry.formats.items()}
    assert scores[expected] >= 0.5, scores
    rivals = {name: score for name, score in scores.items() if name != expected}
    assert max(rivals.values()) < scores[expected], scores
    assert detect_format(document, plugins=registry).name == expected
    assert load_file(path, plugins=registry).format == expected


# An OpenRubricRL rubric that also has an `id` (so the OpenRubricRL detector steps back)
# and criteria without ids (so it is not native either): only `format=` can read it.
UNDETECTABLE: dict[str, Any] = {
    "id": "legacy-7",
    "name": "Legacy",
    "version": "1.0.0",
    "scale": {"min": 0, "max": 10},
    "criteria": [{"name": "clarity", "description": "Clear", "weight": 1.0}],
}


def test_explicit_format_reads_what_detection_cannot(registry: PluginRegistry) -> None:
    # with an `id` it is not OpenRubricRL-shaped, so detection reads it as a native rubric
    # with mistakes and says what they are, rather than "matches no format"
    with pytest.raises(RubricValidationError) as caught:
        load_document(UNDETECTABLE, plugins=registry)
    assert "criteria[0].id" in {p.path for p in caught.value.problems}
    loaded = load_document(UNDETECTABLE, format="openrubricrl", plugins=registry)
    assert loaded.format == "openrubricrl"
    assert loaded.rubrics[0].id == "legacy"
    assert [c.id for c in loaded.rubrics[0].criteria] == ["clarity"]


def test_explicit_format_overrides_detection(registry: PluginRegistry) -> None:
    path = FIXTURES / "openrubricrl" / "essay_feedback.json"
    assert load_file(path, plugins=registry).format == "openrubricrl"
    with pytest.raises(RubricValidationError) as caught:
        load_file(path, format="native", plugins=registry)  # read as native: no ids
    assert "criteria[0].id" in {p.path for p in caught.value.problems}
    with pytest.raises(RubricValidationError):
        load_file(path, format="rubric-pkg", plugins=registry)


def test_cli_format_option_overrides_detection(tmp_path: Path) -> None:
    import json

    source = tmp_path / "legacy.json"
    source.write_text(json.dumps(UNDETECTABLE), encoding="utf-8")
    runner = CliRunner()
    refused = runner.invoke(app, ["convert", str(source)])
    assert refused.exit_code != 0
    assert "criteria[0].id: required field is missing" in refused.output
    converted = runner.invoke(app, ["convert", str(source), "--format", "openrubricrl", "--json"])
    assert converted.exit_code == 0, converted.output
    assert json.loads(converted.stdout)["id"] == "legacy"


@pytest.mark.parametrize(
    "document",
    [
        {"title": "not a rubric", "items": [1, 2]},
        {"criteria": "all of them"},
        [1, 2, 3],
        "just text",
        None,
        {"tests": [{"name": "no assert"}]},
        {"rubrics": [{"id": "x"}]},
    ],
)
def test_a_document_matching_no_format_is_refused_naming_the_formats(
    document: Any, registry: PluginRegistry
) -> None:
    with pytest.raises(FormatDetectionError) as caught:
        load_document(document, source="mystery.yaml", plugins=registry)
    message = str(caught.value)
    assert message.startswith("mystery.yaml: matches no known rubric format")
    for name in FORMATS:
        assert name in message
    assert "--format" in message
    assert isinstance(caught.value, RubricLoadError)


def test_unknown_format_name_is_refused_naming_the_formats(registry: PluginRegistry) -> None:
    with pytest.raises(FormatDetectionError) as caught:
        load_document({"id": "r", "criteria": [{"id": "c"}]}, format="yaml", plugins=registry)
    assert "unknown format 'yaml'" in str(caught.value)
    assert (
        "known formats: agentv, dataknobs, healthbench, native, openai-graders, openrubricrl, "
        "promptfoo, rar, rubric-pkg" in str(caught.value)
    )


def test_a_crashing_detector_does_not_break_detection() -> None:
    class Broken:
        name = "broken"
        description = "raises in detect"

        def detect(self, document: Any) -> float:
            raise RuntimeError("boom")

        def load(self, document: Any, *, source: str | None, base_dir: Path | None) -> Any:
            raise AssertionError("never called")

    from rubricflow import hookimpl

    class Plugin:
        @hookimpl
        def rubricflow_formats(self) -> list[Any]:
            return [Broken()]

    registry = create_plugin_manager(plugins=[Plugin()], load_entry_points=False)
    loaded = load_document({"id": "r", "criteria": [{"id": "c"}]}, plugins=registry)
    assert loaded.format == "native"


def test_a_format_returning_the_same_rubric_version_twice_is_refused() -> None:
    from rubricflow import hookimpl, parse_rubric
    from rubricflow.formats.base import ImportResult

    class Twice:
        name = "twice"
        description = "returns one rubric twice"

        def detect(self, document: Any) -> float:
            return 1.0 if document == "twice" else 0.0

        def load(self, document: Any, *, source: str | None, base_dir: Path | None) -> Any:
            rubric = parse_rubric({"id": "r", "criteria": [{"id": "c"}]})
            return ImportResult([rubric, rubric])

    class Plugin:
        @hookimpl
        def rubricflow_formats(self) -> list[Any]:
            return [Twice()]

    registry = create_plugin_manager(plugins=[Plugin()], load_entry_points=False)
    with pytest.raises(RubricValidationError, match=r"'r' version 1\.0\.0 appears twice"):
        load_document("twice", plugins=registry)

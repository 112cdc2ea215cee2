"""A format's `load(document, context)` is told the load's source, base folder,
schema-ref policy and format registry (docs/plugins.md, "rubricflow_formats"); a format
written for the earlier `load(document, *, source, base_dir)` is still called that way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rubricflow import RubricValidationError, hookimpl, parse_rubric
from rubricflow.errors import ConfigurationError, Problem
from rubricflow.formats.base import ImportResult, LoadContext
from rubricflow.formats.loader import load_document, load_file, load_text
from rubricflow.formats.native import read_schema_ref
from rubricflow.plugins import PluginRegistry, create_plugin_manager


class Wrapped:
    """`{wrapped: <a document in any format>}`: hands the inner document to the format
    the registry in its context detects, so it needs that registry, and it reads a
    `schema_ref` under the load's policy."""

    name = "wrapped"
    description = "a rubric document inside `wrapped:`"

    def __init__(self) -> None:
        self.contexts: list[LoadContext] = []

    def detect(self, document: Any) -> float:
        return 1.0 if isinstance(document, dict) and "wrapped" in document else 0.0

    def load(self, document: Any, context: LoadContext) -> ImportResult:
        self.contexts.append(context)
        inner = document["wrapped"]
        ref = document.get("schema_ref")
        if ref is not None:
            try:
                read_schema_ref(ref, context)
            except ValueError as error:
                problem = Problem("schema_ref", str(error))
                raise RubricValidationError([problem], context.source) from None
        assert context.plugins is not None
        return context.plugins.formats["native"].load(inner, context)


class Legacy:
    """A format written for the earlier contract."""

    name = "legacy"
    description = "load(document, *, source, base_dir)"

    def __init__(self) -> None:
        self.calls: list[tuple[str | None, Path | None]] = []

    def detect(self, document: Any) -> float:
        return 1.0 if isinstance(document, dict) and "legacy" in document else 0.0

    def load(self, document: Any, *, source: str | None, base_dir: Path | None) -> ImportResult:
        self.calls.append((source, base_dir))
        return ImportResult([parse_rubric({"id": "old", "criteria": [{"id": "c"}]})])


def _registry(*formats: Any) -> PluginRegistry:
    class Plugin:
        @hookimpl
        def rubricflow_formats(self) -> list[Any]:
            return list(formats)

    return create_plugin_manager(plugins=[Plugin()], load_entry_points=False)


NATIVE = {"id": "inner", "criteria": [{"id": "c"}]}


def test_a_format_is_told_the_source_folder_policy_and_registry(tmp_path: Path) -> None:
    wrapped = Wrapped()
    registry = _registry(wrapped)
    path = tmp_path / "rubric.json"
    path.write_text(json.dumps({"wrapped": NATIVE}), encoding="utf-8")

    loaded = load_file(path, plugins=registry, schema_refs="anywhere")

    assert loaded.format == "wrapped" and [r.id for r in loaded.rubrics] == ["inner"]
    (context,) = wrapped.contexts
    assert context == LoadContext(str(path), tmp_path.resolve(), "anywhere", registry)


def test_the_policy_in_the_context_governs_what_a_plugin_format_may_read(
    tmp_path: Path,
) -> None:
    """The schema-ref policy reaches a third-party format through its context (it could
    not see the module ContextVar the built-in formats read before)."""
    (tmp_path / "schema.json").write_text('{"type": "object"}', encoding="utf-8")
    wrapped = Wrapped()
    registry = _registry(wrapped)
    document = {"wrapped": NATIVE, "schema_ref": "schema.json"}

    load_document(document, base_dir=tmp_path, plugins=registry)  # inside: allowed
    with pytest.raises(RubricValidationError) as refused:
        load_document(document, base_dir=tmp_path, plugins=registry, schema_refs="refuse")
    assert "schema_ref: schema_ref is not allowed here" in str(refused.value)
    assert [c.schema_refs for c in wrapped.contexts] == ["inside", "refuse"]


def test_text_has_no_folder_in_its_context() -> None:
    wrapped = Wrapped()
    load_text(json.dumps({"wrapped": NATIVE}), plugins=_registry(wrapped))
    (context,) = wrapped.contexts
    assert (context.source, context.base_dir, context.schema_refs) == ("<text>", None, "inside")


def test_a_format_with_the_earlier_signature_is_still_called(tmp_path: Path) -> None:
    legacy = Legacy()
    loaded = load_document(
        {"legacy": 1}, source="old.yaml", base_dir=tmp_path, plugins=_registry(legacy)
    )
    assert [r.id for r in loaded.rubrics] == ["old"]
    assert legacy.calls == [("old.yaml", tmp_path)]


def test_an_unknown_policy_is_refused_naming_the_choices() -> None:
    with pytest.raises(
        ConfigurationError, match=r"schema_refs='nowhere'; use one of inside, anywhere"
    ):
        LoadContext(schema_refs="nowhere")  # type: ignore[arg-type]

"""The `rubric` package (PyPI): `{weight, requirement}` criteria, flat or in `sections`.

Negative weights are penalty criteria; verdicts are MET/UNMET. The package's score
formula is rubricflow's aggregation formula, so scores carry over unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rubricflow.formats.base import ImportResult, LoadContext, SourceReader, build_rubric, slugify

__all__ = ["RubricPackageFormat"]


def _is_item(value: Any) -> bool:
    return isinstance(value, Mapping) and "requirement" in value


class RubricPackageFormat:
    name = "rubric-pkg"
    description = "the `rubric` PyPI package: [{weight, requirement}] lists or `sections`"

    def detect(self, document: Any) -> float:
        if isinstance(document, list):
            return 1.0 if document and all(_is_item(item) for item in document) else 0.0
        if not isinstance(document, Mapping):
            return 0.0
        body = document.get("rubric", document)
        if not isinstance(body, Mapping):
            return 0.0
        if isinstance(body.get("sections"), list):
            return 1.0 if "rubric" in document else 0.9
        criteria = body.get("criteria")
        if isinstance(criteria, list) and criteria and all(_is_item(c) for c in criteria):
            return 0.95
        return 0.0

    def load(self, document: Any, context: LoadContext) -> ImportResult:
        source = context.source
        reader = SourceReader(source)
        stem = Path(source).stem if source and not source.startswith("<") else "rubric"
        rubric_id: str | None = None
        prefix = ""
        items: list[tuple[str, Any, str | None]] = []
        sections_used = False
        if isinstance(document, list):
            items = [(f"[{i}]", item, None) for i, item in enumerate(document)]
        else:
            doc = reader.mapping(document, "")
            reader.raise_if_problems()
            assert doc is not None
            body: Any = doc
            if "rubric" in doc:
                prefix = "rubric."
                body = reader.mapping(doc["rubric"], "rubric")
                reader.raise_if_problems()
            assert isinstance(body, Mapping)
            rubric_id = reader.text(body, "id", prefix.rstrip("."))
            if "sections" in body:
                sections_used = True
                items = _section_items(reader, body["sections"], prefix)
            else:
                for c_index, item in enumerate(
                    reader.sequence(body.get("criteria"), f"{prefix}criteria") or []
                ):
                    items.append((f"{prefix}criteria[{c_index}]", item, None))
        criteria: list[dict[str, Any]] = []
        path_map: dict[str, str] = {}
        for number, (path, raw, section) in enumerate(items, start=1):
            entry = reader.mapping(raw, path)
            if entry is None:
                continue
            requirement = reader.text(entry, "requirement", path, required=True) or ""
            weight = reader.number(entry, "weight", path, required=True, default=1.0)
            criterion: dict[str, Any] = {
                "id": reader.text(entry, "id", path) or f"c{number}",
                "description": requirement,
                "weight": weight,
                "scoring": {"method": "llm_verdict"},
            }
            if section:
                criterion["section"] = section
            path_map[f"criteria[{len(criteria)}]"] = path
            criteria.append(criterion)
        if not items and not reader.problems:
            where = f"{prefix}sections" if sections_used else f"{prefix}criteria"
            reader.problem(where, "needs at least one criterion; add one")
        reader.raise_if_problems()
        if all((c["weight"] or 0) == 0 for c in criteria):
            reader.warn("", "every weight is zero; no outcome can change the score")
        native = {
            "id": slugify(rubric_id or stem, "rubric"),
            "version": "1.0.0",
            "criteria": criteria,
            "metadata": {"imported_from": "rubric-pkg"},
        }
        path_map["id"] = f"{prefix}id"
        return ImportResult([build_rubric(native, source, path_map)], reader.warnings)


def _section_items(
    reader: SourceReader, sections: Any, prefix: str
) -> list[tuple[str, Any, str | None]]:
    """The criteria of every section, each with its path and its section's title."""
    items: list[tuple[str, Any, str | None]] = []
    for s_index, raw in enumerate(reader.sequence(sections, f"{prefix}sections") or []):
        where = f"{prefix}sections[{s_index}]"
        group = reader.mapping(raw, where)
        if group is None:
            continue
        title = reader.text(group, "title", where) or reader.text(group, "id", where)
        for c_index, item in enumerate(
            reader.sequence(group.get("criteria"), f"{where}.criteria") or []
        ):
            items.append((f"{where}.criteria[{c_index}]", item, title))
    return items

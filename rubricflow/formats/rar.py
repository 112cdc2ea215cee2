"""Rubrics as Rewards (RaR) datasets: per-question lists of weighted `{title, description,
weight}` items, with negative weights for pitfalls.

A document is one item list, one dataset row (`rubric: [items]`, with `question` and
`reference_answer` kept as metadata), or a list of rows (a JSONL file): one rubric per row.
Items become binary criteria judged MET/UNMET; a negative weight is a penalty criterion
(MET means the pitfall was committed). The rubric scores with RaR's own formula,
S / sum(|w|) (`score_formula: rar`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rubricflow.formats.base import ImportResult, LoadContext, SourceReader, build_rubric, slugify
from rubricflow.model import Rubric

__all__ = ["RaRFormat", "is_rar_item", "rar_rubric"]

ROW_KEYS = ("rubric", "rubrics", "rubric_list")


def is_rar_item(value: Any) -> bool:
    """A RaR rubric item: a mapping with `description` and `weight` (and usually `title`)."""
    return isinstance(value, Mapping) and "description" in value and "weight" in value


def _items_of(row: Mapping[str, Any]) -> Any:
    for key in ROW_KEYS:
        value = row.get(key)
        if isinstance(value, list) and value and all(is_rar_item(item) for item in value):
            return key, value
    return None


def rar_rubric(
    items: Sequence[Any],
    *,
    rubric_id: str,
    path: str = "",
    source: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    reader: SourceReader | None = None,
) -> Rubric:
    """One rubric from a list of RaR items (each `{title, description, weight}`)."""
    reader = reader or SourceReader(source)
    criteria: list[dict[str, Any]] = []
    path_map: dict[str, str] = {}
    seen: set[str] = set()
    for number, raw in enumerate(items, start=1):
        where = f"{path}[{number - 1}]"
        item = reader.mapping(raw, where)
        if item is None:
            continue
        description = reader.text(item, "description", where, required=True) or ""
        title = reader.text(item, "title", where) or ""
        weight = reader.number(item, "weight", where, required=True, default=1.0)
        ident = slugify(title, f"c{number}")[:60] if title else f"c{number}"
        if ident in seen:
            ident = f"{ident}_{number}"
        seen.add(ident)
        criterion: dict[str, Any] = {
            "id": ident,
            "description": description,
            "weight": weight,
            "scoring": {"method": "llm_verdict"},
        }
        if title:
            criterion["name"] = title[:500]
        path_map[f"criteria[{len(criteria)}]"] = where
        criteria.append(criterion)
    if not items:
        reader.problem(path, "needs at least one rubric item; add one")
    reader.raise_if_problems()
    native = {
        "id": rubric_id,
        "version": "1.0.0",
        "score_formula": "rar",
        "criteria": criteria,
        "metadata": {"imported_from": "rar", **dict(metadata or {})},
    }
    return build_rubric(native, source, path_map)


class RaRFormat:
    name = "rar"
    description = "Rubrics as Rewards datasets: [{title, description, weight}] items per question"

    def detect(self, document: Any) -> float:
        if isinstance(document, list) and document:
            if all(is_rar_item(item) for item in document):
                return 0.9
            if all(isinstance(row, Mapping) and _items_of(row) for row in document):
                return 0.9
            return 0.0
        if isinstance(document, Mapping) and _items_of(document):
            return 0.9
        return 0.0

    def load(self, document: Any, context: LoadContext) -> ImportResult:
        source = context.source
        reader = SourceReader(source)
        stem = Path(source).stem if source and not source.startswith("<") else "rar"
        stem = slugify(stem, "rar")
        if isinstance(document, list) and all(is_rar_item(item) for item in document):
            return ImportResult([rar_rubric(document, rubric_id=stem, source=source)], [])
        rows = document if isinstance(document, list) else [document]
        rubrics: list[Rubric] = []
        used: set[str] = set()
        for index, raw in enumerate(rows):
            where = f"[{index}]" if isinstance(document, list) else ""
            row = reader.mapping(raw, where)
            reader.raise_if_problems()
            assert row is not None
            found = _items_of(row)
            if found is None:
                reader.problem(where, "holds no `rubric` list of {title, description, weight}")
                reader.raise_if_problems()
            key, items = found
            ident = reader.text(row, "id", where) or reader.text(row, "prompt_id", where)
            rubric_id = (
                slugify(ident, stem)
                if ident
                else (stem if len(rows) == 1 else f"{stem}-{index + 1}")
            )
            if rubric_id in used:
                rubric_id = f"{rubric_id}-{index + 1}"
            used.add(rubric_id)
            metadata = {
                name: row[name]
                for name in ("question", "reference_answer")
                if isinstance(row.get(name), str)
            }
            item_path = f"{where}.{key}" if where else key
            rubrics.append(
                rar_rubric(
                    items,
                    rubric_id=rubric_id,
                    path=item_path,
                    source=source,
                    metadata=metadata,
                    reader=reader,
                )
            )
        return ImportResult(rubrics, reader.warnings)

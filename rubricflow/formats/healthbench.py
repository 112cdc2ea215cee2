"""HealthBench JSONL: one conversation per line, `prompt` (chat messages) and
`rubrics: [{criterion, points, tags}]`.

Each line becomes one rubric (id from `prompt_id`): every rubric item a binary criterion
weighted by its points (negative points are penalty criteria), its tags kept in the
criterion's section (`axis:accuracy`, say). An evaluation's score is clamp(S/P),
rubricflow's default formula: the clipped reward. HealthBench's own per-example score is
S/P unclipped, and its dataset score clip(mean): `rubricflow.runs.healthbench_score`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rubricflow.formats.base import ImportResult, LoadContext, SourceReader, build_rubric, slugify
from rubricflow.model import Rubric

__all__ = ["HealthBenchFormat", "is_healthbench_row"]


def _is_item(value: Any) -> bool:
    return isinstance(value, Mapping) and "criterion" in value and "points" in value


def is_healthbench_row(value: Any) -> bool:
    """A HealthBench example: `rubrics` is a non-empty list of `{criterion, points}`."""
    if not isinstance(value, Mapping):
        return False
    items = value.get("rubrics")
    return isinstance(items, list) and bool(items) and all(_is_item(item) for item in items)


def _prompt_text(prompt: Any) -> str | None:
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        parts = [
            f"{m.get('role', 'user')}: {m.get('content', '')}"
            for m in prompt
            if isinstance(m, Mapping)
        ]
        return "\n".join(parts)
    return None


class HealthBenchFormat:
    name = "healthbench"
    description = "HealthBench JSONL: prompt + rubrics[{criterion, points, tags}] per line"

    def detect(self, document: Any) -> float:
        if isinstance(document, list) and document:
            return 1.0 if all(is_healthbench_row(row) for row in document) else 0.0
        return 1.0 if is_healthbench_row(document) else 0.0

    def load(self, document: Any, context: LoadContext) -> ImportResult:
        source = context.source
        reader = SourceReader(source)
        stem = Path(source).stem if source and not source.startswith("<") else "healthbench"
        stem = slugify(stem, "healthbench")
        rows = document if isinstance(document, list) else [document]
        rubrics: list[Rubric] = []
        used: set[str] = set()
        for index, raw in enumerate(rows):
            where = f"[{index}]" if isinstance(document, list) else ""
            row = reader.mapping(raw, where)
            reader.raise_if_problems()
            assert row is not None
            ident = reader.text(row, "prompt_id", where)
            rubric_id = (
                slugify(ident, stem)
                if ident
                else (stem if len(rows) == 1 else f"{stem}-{index + 1}")
            )
            if rubric_id in used:
                rubric_id = f"{rubric_id}-{index + 1}"
            used.add(rubric_id)
            criteria: list[dict[str, Any]] = []
            path_map: dict[str, str] = {"id": f"{where}.prompt_id" if where else "prompt_id"}
            items_path = f"{where}.rubrics" if where else "rubrics"
            for number, item_raw in enumerate(
                reader.sequence(row.get("rubrics"), items_path) or []
            ):
                item_path = f"{items_path}[{number}]"
                item = reader.mapping(item_raw, item_path)
                if item is None:
                    continue
                text = reader.text(item, "criterion", item_path, required=True) or ""
                points = reader.number(item, "points", item_path, required=True, default=1.0)
                tags = item.get("tags")
                criterion: dict[str, Any] = {
                    "id": f"c{number + 1}",
                    "description": text,
                    "weight": points,
                    "scoring": {"method": "llm_verdict"},
                }
                if isinstance(tags, list) and tags and all(isinstance(t, str) for t in tags):
                    criterion["section"] = ", ".join(tags)
                path_map[f"criteria[{len(criteria)}]"] = item_path
                criteria.append(criterion)
            reader.raise_if_problems()
            metadata: dict[str, Any] = {"imported_from": "healthbench"}
            prompt = _prompt_text(row.get("prompt"))
            if prompt is not None:
                metadata["prompt"] = prompt
            native = {
                "id": rubric_id,
                "version": "1.0.0",
                "criteria": criteria,
                "metadata": metadata,
            }
            rubrics.append(build_rubric(native, source, path_map))
        return ImportResult(rubrics, reader.warnings)

"""OpenRubricRL rubrics: weighted LLM criteria, examples, subcriteria, and hybrid metrics.

OpenRubricRL blends the LLM score with metrics: the LLM's share is
max(0, 1 - sum(metric weights)). Here each LLM criterion's weight is scaled by that
share and each metric becomes a `metric` criterion, so the one aggregation formula
gives OpenRubricRL's weighted blend (computed by rubricflow, not taken from the LLM).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rubricflow.formats.base import (
    ImportResult,
    LoadContext,
    SourceReader,
    build_rubric,
    shown,
    slugify,
)

__all__ = ["OpenRubricRLFormat"]

METRIC_TYPES = ("bleu", "rouge", "accuracy", "perplexity", "custom")
DOMAINS = ("code", "dialogue", "creative_writing", "reasoning", "general")
EXAMPLE_GRADES = ("excellent", "good", "poor")
WEIGHT_TOLERANCE = 1e-6


class OpenRubricRLFormat:
    name = "openrubricrl"
    description = "OpenRubricRL JSON/YAML rubrics (criteria with weights summing to 1, metrics)"

    def detect(self, document: Any) -> float:
        if not isinstance(document, Mapping):
            return 0.0
        criteria = document.get("criteria")
        if not isinstance(criteria, list):
            return 0.0
        if "hybrid_metrics" in document or "domain" in document:
            return 0.95
        if "id" in document or "name" not in document:
            return 0.0
        if criteria and all(
            isinstance(c, Mapping) and "id" not in c and {"name", "weight"} <= set(c)
            for c in criteria
        ):
            return 0.9
        return 0.0

    def load(self, document: Any, context: LoadContext) -> ImportResult:
        source = context.source
        reader = SourceReader(source)
        doc = reader.mapping(document, "")
        reader.raise_if_problems()
        assert doc is not None
        name = reader.text(doc, "name", "", required=True) or "rubric"
        version = reader.text(doc, "version", "", required=True)
        criteria_in = reader.sequence(doc.get("criteria"), "criteria") or []
        if "criteria" in doc and not criteria_in and isinstance(doc.get("criteria"), list):
            reader.problem("criteria", "needs at least one criterion; add one")
        metrics_in = doc.get("hybrid_metrics") or []
        metrics = reader.sequence(metrics_in, "hybrid_metrics") or []
        scale = _scale(reader, doc)

        metric_criteria: list[dict[str, Any]] = []
        metric_paths: list[str] = []
        for index, item in enumerate(metrics):
            path = f"hybrid_metrics[{index}]"
            metric = reader.mapping(item, path)
            if metric is None:
                continue
            metric_criteria.append(_metric_criterion(reader, metric, index, path))
            metric_paths.append(path)
        metric_total = sum(c["weight"] for c in metric_criteria)
        llm_share = max(0.0, 1.0 - metric_total)
        if metric_total > 1.0 + WEIGHT_TOLERANCE:
            reader.warn(
                "hybrid_metrics",
                f"metric weights sum to {metric_total:g} (> 1), so LLM criteria get no weight",
            )

        criteria: list[dict[str, Any]] = []
        paths: list[str] = []
        weight_sum = 0.0
        for index, item in enumerate(criteria_in):
            path = f"criteria[{index}]"
            crit = reader.mapping(item, path)
            if crit is None:
                continue
            crit_name = reader.text(crit, "name", path, required=True) or f"criterion_{index}"
            description = reader.text(crit, "description", path, required=True) or ""
            weight = reader.number(crit, "weight", path, required=True, default=0.0) or 0.0
            if not 0.0 <= weight <= 1.0:
                reader.problem(
                    f"{path}.weight", f"weight {weight} must be within 0..1 in OpenRubricRL"
                )
            weight_sum += weight
            criteria.append(
                {
                    "id": slugify(crit_name, f"criterion_{index}"),
                    "name": crit_name,
                    "description": description,
                    # 12 significant digits: 0.32, not 0.32000000000000006, in converted files
                    "weight": float(f"{weight * llm_share:.12g}") if metric_criteria else weight,
                    "examples": _examples(reader, crit.get("examples"), f"{path}.examples"),
                    "subcriteria": _subcriteria(reader, crit.get("subcriteria"), path),
                    # OpenRubricRL's judge scores each criterion on the rubric's scale
                    "scoring": {
                        "method": "llm_score",
                        "config": {
                            "min_score": scale.get("min", 0.0),
                            "max_score": scale.get("max", 10.0),
                        },
                    },
                }
            )
            paths.append(path)
        if criteria_in and abs(weight_sum - 1.0) > WEIGHT_TOLERANCE:
            reader.warn(
                "criteria",
                f"criterion weights sum to {weight_sum:g}; OpenRubricRL requires 1 (within "
                "1e-6) and refuses this rubric; rubricflow normalises by the weight total",
            )
        reader.raise_if_problems()

        metadata = _metadata(reader, doc)
        native = {
            "id": slugify(name, "rubric"),
            "name": name,
            "version": version,
            "description": doc.get("description") or "",
            "scale": scale,
            "criteria": criteria + metric_criteria,
            "metadata": metadata,
        }
        # criterion ids are made from names, so an id problem is a problem with the name
        sources = paths + metric_paths
        path_map = {f"criteria[{i}]": p for i, p in enumerate(sources)}
        path_map.update({f"criteria[{i}].id": f"{p}.name" for i, p in enumerate(sources)})
        path_map["id"] = "name"
        rubric = build_rubric(native, source, path_map)
        return ImportResult([rubric], reader.warnings)


def _scale(reader: SourceReader, doc: Mapping[str, Any]) -> dict[str, Any]:
    raw = doc.get("scale")
    if raw is None:
        reader.warn(
            "scale",
            "no scale given; OpenRubricRL's code requires one (its schema does not); "
            "using 0..10 continuous",
        )
        return {"min": 0.0, "max": 10.0, "type": "continuous"}
    scale = reader.mapping(raw, "scale")
    if scale is None:
        return {}
    low = reader.number(scale, "min", "scale", required=True, default=0.0)
    high = reader.number(scale, "max", "scale", required=True, default=10.0)
    kind = scale.get("type", "continuous")
    if kind not in ("continuous", "discrete"):
        reader.problem("scale.type", f"scale type {kind!r} must be continuous or discrete")
        kind = "continuous"
    return {"min": low, "max": high, "type": kind}


def _examples(reader: SourceReader, raw: Any, path: str) -> list[dict[str, Any]]:
    if raw is None:
        return []
    grades = reader.mapping(raw, path)
    if grades is None:
        return []
    examples = []
    for grade, items in grades.items():
        if grade not in EXAMPLE_GRADES:
            reader.warn(f"{path}.{grade}", f"unknown example grade; expected {EXAMPLE_GRADES}")
        for index, item in enumerate(reader.sequence(items, f"{path}.{grade}") or []):
            where = f"{path}.{grade}[{index}]"
            example = reader.mapping(item, where)
            if example is None:
                continue
            examples.append(
                {
                    "input": reader.text(example, "input", where),
                    "output": reader.text(example, "output", where, required=True) or "",
                    "score": reader.number(example, "score", where),
                    "label": str(grade),
                    "explanation": reader.text(example, "explanation", where),
                }
            )
    return examples


def _subcriteria(reader: SourceReader, raw: Any, path: str) -> list[dict[str, Any]]:
    if raw is None:
        return []
    result = []
    for index, item in enumerate(reader.sequence(raw, f"{path}.subcriteria") or []):
        where = f"{path}.subcriteria[{index}]"
        sub = reader.mapping(item, where)
        if sub is None:
            continue
        result.append(
            {
                "name": reader.text(sub, "name", where, required=True) or f"sub_{index}",
                "description": reader.text(sub, "description", where) or "",
            }
        )
    return result


def _metric_criterion(
    reader: SourceReader, metric: Mapping[str, Any], index: int, path: str
) -> dict[str, Any]:
    """A `hybrid_metrics` entry as a native `metric` criterion (its problems noted)."""
    metric_name = reader.text(metric, "name", path, required=True) or f"metric_{index}"
    kind = reader.text(metric, "type", path, required=True) or "custom"
    if kind not in METRIC_TYPES:
        reader.problem(f"{path}.type", f"unknown metric type {kind!r}; use one of {METRIC_TYPES}")
    weight = reader.number(metric, "weight", path, required=True, default=0.0) or 0.0
    if not 0.0 <= weight <= 1.0:
        reader.problem(f"{path}.weight", f"metric weight {weight} must be within 0..1")
    config = metric.get("config") or {}
    if not isinstance(config, Mapping):
        reader.problem(f"{path}.config", "expected a mapping of metric settings")
        config = {}
    if kind == "custom":
        reader.warn(
            path,
            "OpenRubricRL's `custom` metric computes nothing; this criterion needs a "
            "metric plugin that provides it (config.metric names it) or it will "
            "report an error, never a score",
        )
    return {
        "id": slugify(metric_name, f"metric_{index}"),
        "name": metric_name,
        "description": f"{kind} metric",
        "weight": weight,
        "scoring": {
            "method": "metric",
            "metric": str(config.get("metric", kind)) if kind == "custom" else kind,
            "config": dict(config),
        },
    }


def _metadata(reader: SourceReader, doc: Mapping[str, Any]) -> dict[str, Any]:
    """The rubric's metadata: the document's, its `domain`, and where it came from."""
    metadata: dict[str, Any] = {}
    if isinstance(doc.get("metadata"), Mapping):
        metadata = dict(doc["metadata"])
    elif doc.get("metadata") is not None:
        reader.problem("metadata", "expected a mapping (key: value pairs) of metadata")
        reader.raise_if_problems()
    if "domain" in doc:
        metadata["domain"] = doc["domain"]
        if doc["domain"] is not None and doc["domain"] not in DOMAINS:
            # only metadata here, so the rubric still imports; OpenRubricRL would not
            reader.warn(
                "domain",
                f"domain {shown(doc['domain'])} is not one of {', '.join(DOMAINS)}; "
                "OpenRubricRL refuses this rubric; rubricflow keeps it as "
                "metadata.domain (use one of those values to keep the file valid there)",
            )
    metadata["imported_from"] = "openrubricrl"
    return metadata

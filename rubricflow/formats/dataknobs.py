"""dataknobs_bots rubrics: leveled criteria with deterministic, schema or LLM-decode scoring.

Accepts one rubric dict or the `from_config` shape `{rubrics: [...]}`. A criterion's
`required` means "must be evaluated" in dataknobs and never gates the verdict, so it is
imported as a criterion that does not gate. `function_ref` values (`module:function`)
are kept as data: the deterministic scorer runs them only when they are registered or
the caller opts in to importing code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rubricflow.formats.base import ImportResult, LoadContext, SourceReader, build_rubric, shown
from rubricflow.formats.native import read_schema_ref

__all__ = ["DataknobsFormat"]

# dataknobs' meta-rubric checks have built-in equivalents registered under these names
META_FUNCTIONS = {
    f"dataknobs_bots.rubrics.meta:check_{name}": f"meta.{name}"
    for name in (
        "criteria_coverage",
        "criteria_independence",
        "weight_distribution",
        "threshold_reasonableness",
        "level_ordering",
    )
}
META_FUNCTIONS["dataknobs_bots.rubrics.meta:check_threshold"] = "meta.threshold_reasonableness"
METHODS = ("deterministic", "schema", "llm_decode")
RUBRIC_FIELDS = (
    "id",
    "name",
    "description",
    "version",
    "target_type",
    "pass_threshold",
    "metadata",
    "criteria",
)
CRITERION_FIELDS = ("id", "name", "description", "weight", "levels", "required", "scoring_method")
# native scoring field -> the dataknobs scoring_method field it came from
SCORING_FIELDS = {
    "method": "type",
    "function": "function_ref",
    "schema": "schema",
    "schema_ref": "schema_ref",
    "template": "decode_prompt",
    "output_schema": "decode_output_schema",
    "model": "model",
}


def _looks_dataknobs(item: Any) -> bool:
    if not isinstance(item, Mapping) or not isinstance(item.get("criteria"), list):
        return False
    return any(isinstance(c, Mapping) and "scoring_method" in c for c in item["criteria"])


class DataknobsFormat:
    name = "dataknobs"
    description = "dataknobs_bots rubric dicts and `{rubrics: [...]}` configs"

    def detect(self, document: Any) -> float:
        if not isinstance(document, Mapping):
            return 0.0
        items = document.get("rubrics")
        if isinstance(items, list) and items and "criteria" not in document:
            return 0.95 if any(_looks_dataknobs(item) for item in items) else 0.0
        return 0.95 if _looks_dataknobs(document) else 0.0

    def load(self, document: Any, context: LoadContext) -> ImportResult:
        reader = SourceReader(context.source)
        doc = reader.mapping(document, "")
        reader.raise_if_problems()
        assert doc is not None
        if "rubrics" in doc and "criteria" not in doc:
            entries = [
                (f"rubrics[{i}]", item)
                for i, item in enumerate(reader.sequence(doc["rubrics"], "rubrics") or [])
            ]
        else:
            entries = [("", doc)]
        rubrics = []
        seen: dict[tuple[str, str], str] = {}
        for path, raw in entries:
            rubric = self._one(reader, raw, path, context)
            if rubric is None:
                continue
            key = (rubric.id, rubric.version)
            if key in seen:
                reader.problem(
                    f"{path}.id",
                    f"rubric {rubric.id!r} version {rubric.version} appears twice (also "
                    f"{seen[key]}); remove one or bump its version",
                )
            seen.setdefault(key, path)
            rubrics.append(rubric)
        reader.raise_if_problems()
        return ImportResult(rubrics, reader.warnings)

    def _one(
        self,
        reader: SourceReader,
        raw: Any,
        path: str,
        context: LoadContext,
    ) -> Any:
        data = reader.mapping(raw, path or "")
        if data is None:
            return None
        prefix = f"{path}." if path else ""
        for key in data:
            if key not in RUBRIC_FIELDS:
                reader.warn(f"{prefix}{key}", "not a dataknobs rubric field; ignored")
        criteria: list[dict[str, Any]] = []
        # native paths -> source paths (the longest matching prefix wins)
        path_map = {key: f"{prefix}{key}" for key in RUBRIC_FIELDS}
        raw_criteria = data.get("criteria")
        if raw_criteria is None:
            reader.problem(f"{prefix}criteria", "required field is missing; add a list of criteria")
        for index, item in enumerate(reader.sequence(raw_criteria, f"{prefix}criteria") or []):
            where = f"{prefix}criteria[{index}]"
            crit = reader.mapping(item, where)
            if crit is None:
                continue
            native_path = f"criteria[{len(criteria)}]"
            criteria.append(_criterion(reader, crit, where, native_path, path_map, context))
        native = {key: data[key] for key in RUBRIC_FIELDS if key in data and key != "criteria"}
        native["criteria"] = criteria
        metadata = data.get("metadata")
        if metadata is None:
            native["metadata"] = {"imported_from": "dataknobs"}
        elif isinstance(metadata, Mapping):
            native["metadata"] = {**metadata, "imported_from": "dataknobs"}
        if reader.problems:
            return None
        return build_rubric(native, context.source, path_map)


def _criterion(
    reader: SourceReader,
    crit: Mapping[str, Any],
    where: str,
    native_path: str,
    path_map: dict[str, str],
    context: LoadContext,
) -> dict[str, Any]:
    """A dataknobs criterion as a native one, its source paths noted in `path_map`."""
    for key in crit:
        if key not in CRITERION_FIELDS:
            reader.warn(f"{where}.{key}", "not a dataknobs criterion field; ignored")
    # dataknobs' `required` (default true) means "must be evaluated", not a gate:
    # rubricflow evaluates every criterion (`unscored_policy: fail_closed`), and
    # the verdict is the weighted score against `pass_threshold` alone
    reader.flag(crit, "required", where, default=True)
    converted = {key: crit[key] for key in CRITERION_FIELDS[:-1] if key in crit}
    converted.pop("required", None)
    if "scoring_method" in crit:
        source_method = f"{where}.scoring_method"
        converted["scoring"] = _scoring(reader, crit["scoring_method"], source_method, context)
        path_map[f"{native_path}.scoring"] = source_method
        for native_key, source_key in SCORING_FIELDS.items():
            path_map[f"{native_path}.scoring.{native_key}"] = f"{source_method}.{source_key}"
    path_map[native_path] = where
    return converted


def _schema_scoring(
    reader: SourceReader,
    method: Mapping[str, Any],
    path: str,
    context: LoadContext,
    scoring: dict[str, Any],
) -> None:
    """A `schema` method's schema, given inline or by `schema_ref` (read here)."""
    if method.get("schema") is not None:
        scoring["schema"] = method["schema"]
    elif method.get("schema_ref") is not None:
        ref = reader.text(method, "schema_ref", path)
        if ref is not None:
            scoring["schema_ref"] = ref
            try:
                scoring["schema"] = read_schema_ref(ref, context)
            except ValueError as error:
                reader.problem(f"{path}.schema_ref", str(error))


def _scoring(reader: SourceReader, raw: Any, path: str, context: LoadContext) -> dict[str, Any]:
    method = reader.mapping(raw, path)
    if method is None:
        return {}
    kind = method.get("type")
    if kind not in METHODS:
        reader.problem(
            f"{path}.type",
            f"unknown scoring method {shown(kind)}; use one of {', '.join(METHODS)}",
        )
        return {}
    scoring: dict[str, Any] = {"method": kind}
    if kind == "deterministic":
        ref = reader.text(method, "function_ref", path, required=True)
        if ref in META_FUNCTIONS:
            ref = META_FUNCTIONS[ref]
        scoring["function"] = ref
    elif kind == "schema":
        _schema_scoring(reader, method, path, context, scoring)
    else:
        if method.get("decode_prompt") is not None:
            scoring["template"] = method["decode_prompt"]
        if method.get("decode_output_schema") is not None:
            scoring["output_schema"] = method["decode_output_schema"]
        if method.get("model"):
            scoring["model"] = method["model"]
    return scoring

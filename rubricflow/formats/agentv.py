"""AgentV eval files: v2 `evalcases` with rubric evaluators, and v4 `tests` with `llm-rubric`.

Each case (test) becomes one rubric: its own rubric items plus any file-level rubric
evaluators. As in AgentV's code, an item's `required` defaults to true and the pass
bar is 0.8. When any item has `score_ranges`, every item is scored 0..10 (AgentV's
score-range mode). Unlike AgentV, duplicate item ids are rejected, and a required
item that fails fails the whole case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rubricflow.formats.base import ImportResult, SourceReader, build_rubric, shown, slugify

__all__ = ["AgentVFormat"]

PASS_THRESHOLD = 0.8
RUBRIC_EVALUATOR_TYPES = ("rubric", "llm-rubric", "llm_rubric")


class AgentVFormat:
    name = "agentv"
    description = "AgentV eval files: v2 `evalcases` rubrics and v4 `tests` llm-rubric asserts"

    def detect(self, document: Any) -> float:
        if not isinstance(document, Mapping):
            return 0.0
        if isinstance(document.get("evalcases"), list):
            return 1.0
        tests = document.get("tests")
        if isinstance(tests, list) and all(
            isinstance(t, Mapping) and ("assert" in t or "vars" in t) for t in tests
        ):
            return 0.95
        return 0.0

    def load(self, document: Any, *, source: str | None, base_dir: Path | None) -> ImportResult:
        reader = SourceReader(source)
        doc = reader.mapping(document, "")
        reader.raise_if_problems()
        assert doc is not None
        if "evalcases" in doc:
            cases = _v2_cases(reader, doc)
            version = "agentv-v2"
        else:
            cases = _v4_cases(reader, doc)
            version = "agentv-v4"
        reader.raise_if_problems()
        rubrics = []
        seen: dict[str, str] = {}
        for case in cases:
            rubric = _case_rubric(case, doc, source, version)
            if rubric.id in seen:
                reader.problem(
                    f"{case.path}.id",
                    f"case id {case.id!r} gives rubric id {rubric.id!r}, as {seen[rubric.id]} "
                    "does; give every case its own id",
                )
            seen.setdefault(rubric.id, case.path)
            rubrics.append(rubric)
        reader.raise_if_problems()
        if not rubrics:
            reader.problem("", "no case holds rubric items; nothing to import")
            reader.raise_if_problems()
        return ImportResult(rubrics, reader.warnings)


class _Case:
    def __init__(self, case_id: str, path: str, outcome: str, extra: dict[str, Any]) -> None:
        self.id = case_id
        self.path = path
        self.outcome = outcome
        self.extra = extra
        self.items: list[tuple[str, Any]] = []  # (source path, raw item)


def _rubric_evaluators(
    reader: SourceReader, holder: Mapping[str, Any], path: str
) -> list[tuple[str, Any]]:
    execution = holder.get("execution")
    if execution is None:
        return []
    execution = reader.mapping(execution, f"{path}execution")
    if execution is None:
        return []
    evaluators = reader.sequence(execution.get("evaluators") or [], f"{path}execution.evaluators")
    items: list[tuple[str, Any]] = []
    for index, evaluator in enumerate(evaluators or []):
        where = f"{path}execution.evaluators[{index}]"
        if not isinstance(evaluator, Mapping):
            reader.problem(where, "expected a mapping describing an evaluator")
            continue
        if evaluator.get("type") not in RUBRIC_EVALUATOR_TYPES:
            reader.warn(
                where, f"evaluator type {shown(evaluator.get('type'))} is not a rubric; skipped"
            )
            continue
        for item_index, item in enumerate(
            reader.sequence(evaluator.get("rubrics") or [], f"{where}.rubrics") or []
        ):
            items.append((f"{where}.rubrics[{item_index}]", item))
    return items


def _v2_cases(reader: SourceReader, doc: Mapping[str, Any]) -> list[_Case]:
    shared = _rubric_evaluators(reader, doc, "")
    cases = []
    for index, raw in enumerate(reader.sequence(doc.get("evalcases"), "evalcases") or []):
        path = f"evalcases[{index}]"
        case = reader.mapping(raw, path)
        if case is None:
            continue
        case_id = reader.text(case, "id", path, required=True) or f"case-{index + 1}"
        outcome = (
            reader.text(case, "expected_outcome", path) or reader.text(case, "outcome", path) or ""
        )
        entry = _Case(
            case_id, path, outcome, _case_extra(case.get("input"), case.get("expected_output"))
        )
        own = case.get("rubrics")
        for item_index, item in enumerate(
            reader.sequence(own, f"{path}.rubrics") or [] if own is not None else []
        ):
            entry.items.append((f"{path}.rubrics[{item_index}]", item))
        entry.items.extend(_rubric_evaluators(reader, case, f"{path}."))
        entry.items.extend(shared)
        if not entry.items:
            if not outcome:
                reader.warn(path, "case has neither rubrics nor expected_outcome; skipped")
                continue
            reader.warn(
                path,
                "case has no rubrics; AgentV would grade expected_outcome with its default "
                "judge, so it is imported as a single required criterion",
            )
            entry.items.append((f"{path}.expected_outcome", outcome))
        cases.append(entry)
    return cases


def _v4_cases(reader: SourceReader, doc: Mapping[str, Any]) -> list[_Case]:
    shared: list[tuple[str, Any]] = []
    default = doc.get("defaultTest") or doc.get("default_test")
    if isinstance(default, Mapping):
        shared = _v4_asserts(reader, default.get("assert"), "defaultTest.assert")
    cases = []
    for index, raw in enumerate(reader.sequence(doc.get("tests"), "tests") or []):
        path = f"tests[{index}]"
        case = reader.mapping(raw, path)
        if case is None:
            continue
        case_id = reader.text(case, "id", path) or f"test-{index + 1}"
        raw_vars = case.get("vars")
        variables: Mapping[str, Any] = raw_vars if isinstance(raw_vars, Mapping) else {}
        entry = _Case(
            case_id,
            path,
            reader.text(case, "description", path) or "",
            _case_extra(variables.get("input"), variables.get("expected_output")),
        )
        entry.items = _v4_asserts(reader, case.get("assert"), f"{path}.assert") + shared
        if not entry.items:
            reader.warn(path, "test has no llm-rubric asserts; skipped")
            continue
        cases.append(entry)
    return cases


def _v4_asserts(reader: SourceReader, raw: Any, path: str) -> list[tuple[str, Any]]:
    if raw is None:
        return []
    items: list[tuple[str, Any]] = []
    for index, entry in enumerate(reader.sequence(raw, path) or []):
        where = f"{path}[{index}]"
        if isinstance(entry, str):
            items.append((where, entry))
        elif isinstance(entry, Mapping) and entry.get("type") in RUBRIC_EVALUATOR_TYPES:
            value = entry.get("value")
            if value is None:
                reader.problem(
                    f"{where}.value",
                    f"an {entry.get('type')} assert needs `value`: a list of rubric items "
                    "(texts, or mappings with id, outcome, weight, required)",
                )
                continue
            if isinstance(value, str):
                items.append((f"{where}.value", value))
                continue
            for item_index, item in enumerate(reader.sequence(value, f"{where}.value") or []):
                items.append((f"{where}.value[{item_index}]", item))
        elif isinstance(entry, Mapping):
            reader.warn(where, f"assert type {shown(entry.get('type'))} is not a rubric; skipped")
        else:
            reader.problem(where, "expected a rubric item text or an assert mapping")
    return items


def _case_extra(case_input: Any, expected: Any) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if case_input is not None:
        extra["input"] = case_input
    if expected is not None:
        extra["expected_output"] = expected
    return extra


def _criterion(reader: SourceReader, raw: Any, path: str, number: int) -> dict[str, Any] | None:
    if isinstance(raw, str):
        return {"id": f"rubric-{number}", "description": raw, "required": True}
    item = reader.mapping(raw, path)
    if item is None:
        return None
    outcome = (
        reader.text(item, "expected_outcome", path)
        or reader.text(item, "outcome", path)
        or reader.text(item, "description", path)
        or ""
    )
    item_id = reader.text(item, "id", path) or f"rubric-{number}"
    if item.get("operator") is not None:
        # an operator (e.g. contradiction) inverts what the outcome means; importing it
        # as a plain requirement would grade the opposite of what the author meant
        reader.problem(
            f"{path}.operator",
            f"rubric item operator {shown(item.get('operator'))} is not supported; rewrite "
            "the item as a requirement the answer must meet (e.g. 'Does not claim ...')",
        )
    criterion: dict[str, Any] = {
        "id": item_id,
        "description": outcome,
        "weight": reader.number(item, "weight", path, default=1.0),
        "required": reader.flag(item, "required", path, default=True),
    }
    if item.get("score_ranges") is not None:
        criterion["score_ranges"] = _bands(reader, item["score_ranges"], f"{path}.score_ranges")
    if item.get("min_score") is not None:
        criterion["min_score"] = reader.number(item, "min_score", path)
    elif item.get("required_min_score") is not None:
        value = reader.number(item, "required_min_score", path)
        criterion["min_score"] = value / 10 if value is not None else None
    return criterion


def _bands(reader: SourceReader, raw: Any, path: str) -> Any:
    if isinstance(raw, Mapping):
        return dict(raw)
    bands = []
    for index, entry in enumerate(reader.sequence(raw, path) or []):
        where = f"{path}[{index}]"
        band = reader.mapping(entry, where)
        if band is None:
            continue
        span = band.get("score_range")
        if span is None:
            low, high = band.get("min"), band.get("max")
        elif isinstance(span, Sequence) and not isinstance(span, str) and len(span) == 2:
            low, high = span
        else:
            reader.problem(
                f"{where}.score_range",
                f"expected [low, high], two whole numbers from 0 to 10, got {shown(span)}",
            )
            continue
        text = band.get("outcome") or band.get("expected_outcome") or band.get("description") or ""
        bands.append({"min": low, "max": high, "description": text})
    return bands


def _long_band_paths(raw: Any, native_path: str, path: str) -> dict[str, str]:
    """Where a long-form band's bounds and text came from: `score_range[0]`, `[1]`, `outcome`."""
    bands = raw.get("score_ranges") if isinstance(raw, Mapping) else None
    if not isinstance(bands, list):
        return {}
    paths = {}
    for index, band in enumerate(bands):
        if isinstance(band, Mapping) and "score_range" in band:
            native, source = f"{native_path}.score_ranges[{index}]", f"{path}.score_ranges[{index}]"
            paths[f"{native}.min"] = f"{source}.score_range[0]"
            paths[f"{native}.max"] = f"{source}.score_range[1]"
            paths[f"{native}.description"] = f"{source}.outcome"
    return paths


def _case_rubric(case: _Case, doc: Mapping[str, Any], source: str | None, version: str) -> Any:
    reader = SourceReader(source)
    criteria: list[dict[str, Any]] = []
    path_map: dict[str, str] = {}
    for number, (path, raw) in enumerate(case.items, start=1):
        criterion = _criterion(reader, raw, path, number)
        if criterion is not None:
            native_path = f"criteria[{len(criteria)}]"
            path_map[native_path] = path
            path_map.update(_long_band_paths(raw, native_path, path))
            criteria.append(criterion)
    reader.raise_if_problems()
    if any("score_ranges" in c for c in criteria):
        for criterion in criteria:
            criterion["scoring"] = {"method": "llm_score"}
    native = {
        "id": slugify(case.id, "case"),
        "name": case.id,
        "version": "1.0.0",
        "description": case.outcome or str(doc.get("description") or ""),
        "pass_threshold": PASS_THRESHOLD,
        "criteria": criteria,
        "metadata": {"imported_from": version, **({"agentv": case.extra} if case.extra else {})},
    }
    path_map["id"] = f"{case.path}.id"
    return build_rubric(native, source, path_map)

"""AgentV eval files: v2 `evalcases` with rubric evaluators, and v4 `tests` with rubric
assertions (`assertions:` or `assert:`; strings, `type: rubrics` with `criteria`, or
`type: llm-rubric` with `value`).

Each case (test) becomes one rubric: its own rubric items plus any file-level rubric
evaluators. As in AgentV's code, an item's `required` defaults to true and the pass
bar is 0.8. When any item has `score_ranges`, every item is scored 0..10 (AgentV's
score-range mode). An item's `operator: correctness` is a plain requirement;
`operator: contradiction` (a guard: met unless the answer contradicts the outcome) is
imported as that requirement, spelled out in the description. Unlike AgentV, duplicate
item ids are rejected, and a required item that fails fails the whole case. A key
rubricflow does not read that holds rubric items (`assertion:`, a v4 test's `rubrics:`)
is an error, never silently dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rubricflow.formats.base import ImportResult, SourceReader, build_rubric, shown, slugify

__all__ = ["AgentVFormat"]

PASS_THRESHOLD = 0.8
RUBRIC_EVALUATOR_TYPES = ("rubric", "rubrics", "llm-rubric", "llm_rubric")
ASSERT_KEYS = ("assertions", "assert")  # v4.42 documents `assertions`; older files `assert`
V4_TEST_KEYS = (*ASSERT_KEYS, "vars", "criteria")
# what each operator means for the criterion's description (None: the outcome as written)
OPERATORS: dict[str, str | None] = {
    "correctness": None,
    "contradiction": (
        "Makes no claim that contradicts the following (the answer need not mention it): {}"
    ),
}
_ITEMS_FIX = (
    "move them into the test's `assertions` (plain strings, or `type: rubrics` with a "
    "`criteria` list)"
)
# keys read elsewhere or known not to hold rubric items, per kind of mapping
_V2_TOP_KEYS = frozenset({"evalcases", "execution"})
_V4_TOP_KEYS = frozenset({"tests", "defaultTest", "default_test", "execution", *ASSERT_KEYS})
_V2_CASE_KEYS = frozenset({"rubrics", "execution"})
_V4_TEST_KEYS = frozenset({*ASSERT_KEYS, "vars", "execution", "criteria"})
_EXECUTION_KEYS = frozenset({"evaluators"})
_RUBRICISH_KEY = re.compile(r"ass?ert|rubric|criteri|evaluat|grader|check|item", re.IGNORECASE)


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
            isinstance(t, Mapping) and any(key in t for key in V4_TEST_KEYS) for t in tests
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
            _unread_items(reader, doc, "", _V2_TOP_KEYS, "v2 file")
        else:
            cases = _v4_cases(reader, doc)
            version = "agentv-v4"
            _unread_items(reader, doc, "", _V4_TOP_KEYS, "v4 file")
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
        _unread_items(
            reader, evaluator, where, frozenset({"rubrics"}), "rubric evaluator", texts=True
        )
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
        _unread_items(reader, case, path, _V2_CASE_KEYS, "v2 eval case")
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
    # suite-level items, appended to every test: `defaultTest`'s, then the file's own
    # `assertions` (a test with `execution.skip_defaults: true` leaves both out)
    shared: list[tuple[str, Any]] = []
    key = "defaultTest" if "defaultTest" in doc else "default_test"
    default = doc.get(key)
    if isinstance(default, Mapping):
        shared = _v4_asserts(reader, default, key)
        _unread_items(reader, default, key, frozenset(ASSERT_KEYS), "defaultTest")
    shared += _v4_asserts(reader, doc, "")
    _v4_execution(reader, doc, "")
    cases = []
    for index, raw in enumerate(reader.sequence(doc.get("tests"), "tests") or []):
        path = f"tests[{index}]"
        case = reader.mapping(raw, path)
        if case is None:
            continue
        case_id = reader.text(case, "id", path) or f"test-{index + 1}"
        raw_vars = case.get("vars")
        variables: Mapping[str, Any] = raw_vars if isinstance(raw_vars, Mapping) else {}
        criteria = _test_criteria(reader, case, path)
        entry = _Case(
            case_id,
            path,
            reader.text(case, "description", path) or criteria,
            _case_extra(
                case.get("input", variables.get("input")),
                case.get("expected_output", variables.get("expected_output")),
            ),
        )
        own = _v4_asserts(reader, case, path)
        _v4_execution(reader, case, path)
        _unread_items(reader, case, path, _V4_TEST_KEYS, "v4 test")
        execution = case.get("execution")
        skip_defaults = isinstance(execution, Mapping) and execution.get("skip_defaults") is True
        entry.items = own + ([] if skip_defaults else shared)
        if not entry.items:
            if criteria and not any(case.get(k) is not None for k in ASSERT_KEYS):
                reader.warn(
                    path,
                    "test has no assertions; AgentV would grade its `criteria` with its "
                    "default judge, so it is imported as a single required criterion",
                )
                entry.items.append((f"{path}.criteria", criteria))
            else:
                reader.warn(path, "test has no rubric assertions; skipped")
                continue
        cases.append(entry)
    return cases


def _test_criteria(reader: SourceReader, case: Mapping[str, Any], path: str) -> str:
    """A v4 test's `criteria`: the text of what it checks (not a list of rubric items)."""
    raw = case.get("criteria")
    if isinstance(raw, list | tuple):
        reader.problem(
            f"{path}.criteria",
            "a test's `criteria` is the text of what the test checks, not a list of rubric "
            "items; put the items in the test's `assertions`, as plain strings or under a "
            "`type: rubrics` assertion's `criteria`",
        )
        return ""
    return reader.text(case, "criteria", path) or ""


def _v4_execution(reader: SourceReader, holder: Mapping[str, Any], path: str) -> None:
    """v4 reads no rubric items under `execution`: refuse any found there."""
    execution = holder.get("execution")
    if isinstance(execution, Mapping):
        where = f"{path}.execution" if path else "execution"
        _unread_items(reader, execution, where, frozenset(), "execution")


def _v4_asserts(
    reader: SourceReader, holder: Mapping[str, Any], path: str
) -> list[tuple[str, Any]]:
    """The rubric items of `holder`'s `assertions` (or `assert`, the older name)."""
    present = [key for key in ASSERT_KEYS if holder.get(key) is not None]
    prefix = f"{path}." if path else ""
    if len(present) > 1:
        reader.problem(
            f"{prefix}assert",
            "both `assertions` and `assert` are given; AgentV reads one list, so move these "
            "entries into `assertions`",
        )
        return []
    if not present:
        return []
    key = present[0]
    items: list[tuple[str, Any]] = []
    for index, entry in enumerate(reader.sequence(holder[key], f"{prefix}{key}") or []):
        where = f"{prefix}{key}[{index}]"
        if isinstance(entry, str):
            items.append((where, entry))
        elif isinstance(entry, Mapping) and entry.get("type") in RUBRIC_EVALUATOR_TYPES:
            items.extend(_rubric_assertion(reader, entry, where))
        elif isinstance(entry, Mapping) and entry.get("type") is None and _is_item(entry):
            reader.problem(
                where,
                "a rubric item cannot stand alone in the assertions; write it as a plain "
                "string, or put it in the `criteria` list of a `type: rubrics` assertion",
            )
        elif isinstance(entry, Mapping):
            reader.warn(where, f"assert type {shown(entry.get('type'))} is not a rubric; skipped")
        else:
            reader.problem(where, "expected a rubric item text or an assert mapping")
    return items


def _rubric_assertion(
    reader: SourceReader, entry: Mapping[str, Any], where: str
) -> list[tuple[str, Any]]:
    """The items of one rubric assertion: `type: rubrics` lists them under `criteria`,
    `type: llm-rubric` under `value` (each a list, or one text)."""
    kind = entry.get("type")
    keys = [key for key in ("criteria", "value") if entry.get(key) is not None]
    _unread_items(
        reader, entry, where, frozenset({"criteria", "value"}), f"{kind} assertion", texts=True
    )
    usual = "value" if kind in ("llm-rubric", "llm_rubric") else "criteria"
    if len(keys) > 1:
        reader.problem(
            f"{where}.value",
            f"both `criteria` and `value` list rubric items; give them once, under `{usual}`",
        )
        return []
    if not keys:
        reader.problem(
            f"{where}.{usual}",
            f"a `{kind}` assert needs `{usual}`: a list of rubric items (texts, or mappings "
            "with id, outcome, weight, required)",
        )
        return []
    key = keys[0]
    value = entry[key]
    if isinstance(value, str):
        return [(f"{where}.{key}", value)]
    return [
        (f"{where}.{key}[{index}]", item)
        for index, item in enumerate(reader.sequence(value, f"{where}.{key}") or [])
    ]


def _is_item(value: Any) -> bool:
    """Whether a mapping looks like a rubric item or a rubric assertion."""
    return isinstance(value, Mapping) and (
        value.get("type") in RUBRIC_EVALUATOR_TYPES
        or any(
            key in value
            for key in ("outcome", "expected_outcome", "score_ranges", "criteria", "rubrics")
        )
    )


def _unread_items(
    reader: SourceReader,
    holder: Mapping[str, Any],
    path: str,
    known: frozenset[str],
    what: str,
    *,
    texts: bool = False,
) -> None:
    """Refuse keys rubricflow does not read that hold rubric items: a list under a
    rubric-like name (`assertion`, `rubrics`, `checks`; any name when `texts`) with a text
    or item in it, or any list holding an item mapping. Importing without them would grade
    less than the author meant."""
    for key, value in holder.items():
        if key in known or not isinstance(value, list | tuple) or not value:
            continue
        named = texts or (isinstance(key, str) and _RUBRICISH_KEY.search(key) is not None)
        if any(_is_item(item) or (named and isinstance(item, str)) for item in value):
            where = f"{path}.{key}" if path else str(key)
            reader.problem(
                where,
                f"rubricflow does not read `{key}` in an AgentV {what}, and it holds rubric "
                f"items that would be ignored; {_ITEMS_FIX}",
            )


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
    operator = item.get("operator")
    if operator is not None:
        # correctness is what a criterion means anyway; contradiction inverts it (met
        # unless the answer contradicts the outcome), so the description says so
        if isinstance(operator, str) and operator in OPERATORS:
            template = OPERATORS[operator]
            if template is not None:
                outcome = template.format(outcome)
        else:
            reader.problem(
                f"{path}.operator",
                f"unknown rubric item operator {shown(operator)}; AgentV knows "
                f"{', '.join(OPERATORS)}: use one of them, or remove `operator` and write the "
                "item as a requirement the answer must meet (e.g. 'Does not claim ...')",
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

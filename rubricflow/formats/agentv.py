"""AgentV eval files: v2 `evalcases` with rubric evaluators, and v4 `tests` with rubric
assertions (`assertions:` or `assert:`; strings, `type: rubrics` with `criteria`, or
`type: llm-rubric` with `value`).

Each case (test) becomes one rubric: its own rubric items plus any file-level rubric
evaluators. Each grader (a v2 rubric evaluator or case `rubrics` list, a v4 `rubrics` /
`llm-rubric` assertion; a v4 test's plain-string assertions together) becomes a
criterion group, scored on its own, and the case scores the mean of its graders, weighted
by a grader's own `weight`, as AgentV does; item ids are qualified as `grader.item`. A
case with one plain grader needs no groups. A grader whose items all weigh 0 scores 0
(`zero_weights: zero`). A grader of plain strings weighs as many as it has strings
(AgentV's `weight: strings.length`). A required grader (`required: true`) below its
`min_score` (else the pass bar) fails the case and makes its score 0 (`on_failure: zero`);
a number as `required` is AgentV 4.42's deprecated spelling of `required: true` +
`min_score`, read so with a warning. As in AgentV's code, an item's `required` defaults to
true, and the pass bar is 0.8 unless the file's or the case's `execution.threshold` says
otherwise. When an item of a grader has `score_ranges`, every item of that grader is
scored 0..10 (AgentV's score-range mode); a required score-range item needs 10/10 in a v2 file
(`requiredMinScore = 10`), and in a v4 file gates only through its `min_score`. An item's
`operator: correctness` is a plain requirement; `operator: contradiction` (a guard: met
unless the answer contradicts the outcome) is imported as that requirement, spelled out
in the description. Unlike AgentV, duplicate item ids in one grader are rejected, and a
required item that fails fails the whole case. A key rubricflow does not read that holds
rubric items (`assertion:`, a v4 test's `rubrics:`) is an error, never silently dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from rubricflow.formats.base import (
    ImportResult,
    LoadContext,
    SourceReader,
    build_rubric,
    shown,
    slugify,
)
from rubricflow.formats.trajectory_asserts import is_trajectory_assert, trajectory_criteria

__all__ = ["AgentVFormat"]

PASS_THRESHOLD = 0.8
RUBRIC_EVALUATOR_TYPES = ("rubric", "rubrics", "llm-rubric", "llm_rubric")
ASSERT_KEYS = ("assertions", "assert")  # v4.42 documents `assertions`; older files `assert`
V4_TEST_KEYS = (*ASSERT_KEYS, "vars", "criteria", "turns")
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
_V4_TEST_KEYS = frozenset({*ASSERT_KEYS, "vars", "execution", "criteria", "turns", "input"})
_EXECUTION_KEYS = frozenset({"evaluators"})
STRINGS_GRADER = "rubrics"  # the grader AgentV collects plain-string items into
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

    def load(self, document: Any, context: LoadContext) -> ImportResult:
        source = context.source
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


class _Grader:
    """One AgentV grader: its items, and its own weight and gate when it has them."""

    def __init__(self, name: str, path: str, *, strings: bool = False) -> None:
        self.name = name
        self.path = path
        self.strings = strings  # the plain strings of a v4 test, merged into one grader
        self.items: list[tuple[str, Any]] = []  # (source path, raw item)
        self.weight: float | None = None
        self.required = False
        self.min_score: float | None = None
        self.turn: int | None = None  # a conversation test's turn (its exchange number)

    @property
    def plain(self) -> bool:
        return self.weight is None and not self.required


class _Case:
    def __init__(self, case_id: str, path: str, outcome: str, extra: dict[str, Any]) -> None:
        self.id = case_id
        self.path = path
        self.outcome = outcome
        self.extra = extra
        self.graders: list[_Grader] = []
        self.threshold: float | None = None
        self.conversation = False  # `mode: conversation`: graders per turn and overall
        self.aggregation = "mean"


class _Prebuilt(dict[str, Any]):
    """A criterion already in the native shape (a trajectory assertion's)."""


def _grader_settings(
    reader: SourceReader, grader: _Grader, holder: Mapping[str, Any], where: str
) -> None:
    """A grader's own `weight` (its share of the case score), `required` (true: the
    grader must reach its `min_score`, else the pass bar, or the case scores 0) and
    `min_score`. A number as `required` is AgentV 4.42's deprecated spelling of `required:
    true` + `min_score`: read as such, with a warning (later AgentV refuses it)."""
    weight = reader.number(holder, "weight", where)
    if weight is not None and weight < 0:
        reader.problem(
            f"{where}.weight", f"a grader's weight must be 0 or more, got {shown(weight)}"
        )
    grader.weight = weight
    min_score = reader.number(holder, "min_score", where)
    if min_score is not None and not 0 <= min_score <= 1:
        reader.problem(
            f"{where}.min_score", f"a grader's min_score is from 0 to 1, got {shown(min_score)}"
        )
    grader.min_score = min_score
    required = holder.get("required")
    if required is None or required is False:
        return
    if required is True:
        grader.required = True
    elif isinstance(required, int | float) and 0 <= required <= 1 and min_score is not None:
        reader.problem(
            f"{where}.required",
            f"a numeric required ({shown(required)}) is a minimum score, and min_score "
            f"({shown(min_score)}) is another: write 'required: true' and one min_score",
        )
    elif isinstance(required, int | float) and 0 <= required <= 1:
        grader.required, grader.min_score = True, float(required)
        reader.warn(
            f"{where}.required",
            f"numeric 'required: {shown(required)}' is deprecated in AgentV 4.42 and refused "
            f"by later AgentV; write 'required: true' + 'min_score: {shown(required)}' (read "
            "as that here)",
        )
    else:
        reader.problem(
            f"{where}.required",
            f"a grader's `required` is true/false or its minimum score from 0 to 1, got "
            f"{shown(required)}",
        )


def _threshold(reader: SourceReader, holder: Mapping[str, Any], path: str) -> float | None:
    """`execution.threshold`: the pass bar (0..1) for the file or one case."""
    execution = holder.get("execution")
    if not isinstance(execution, Mapping) or execution.get("threshold") is None:
        return None
    where = f"{path}.execution" if path else "execution"
    value = reader.number(execution, "threshold", where)
    if value is not None and not 0 <= value <= 1:
        reader.problem(
            f"{where}.threshold",
            f"the pass threshold is a score from 0 to 1, got {shown(value)}; write e.g. 0.8",
        )
        return None
    return value


def _rubric_evaluators(reader: SourceReader, holder: Mapping[str, Any], path: str) -> list[_Grader]:
    execution = holder.get("execution")
    if execution is None:
        return []
    execution = reader.mapping(execution, f"{path}execution")
    if execution is None:
        return []
    evaluators = reader.sequence(execution.get("evaluators") or [], f"{path}execution.evaluators")
    graders: list[_Grader] = []
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
        name = evaluator.get("name")
        grader = _Grader(name if isinstance(name, str) and name else f"grader-{index + 1}", where)
        _grader_settings(reader, grader, evaluator, where)
        for item_index, item in enumerate(
            reader.sequence(evaluator.get("rubrics") or [], f"{where}.rubrics") or []
        ):
            grader.items.append((f"{where}.rubrics[{item_index}]", item))
        graders.append(grader)
    return graders


def _v2_cases(reader: SourceReader, doc: Mapping[str, Any]) -> list[_Case]:
    shared = _rubric_evaluators(reader, doc, "")
    suite_threshold = _threshold(reader, doc, "")
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
        own_grader = _Grader(STRINGS_GRADER, f"{path}.rubrics")
        for item_index, item in enumerate(
            reader.sequence(own, f"{path}.rubrics") or [] if own is not None else []
        ):
            own_grader.items.append((f"{path}.rubrics[{item_index}]", item))
        if own_grader.items:
            entry.graders.append(own_grader)
        entry.graders.extend(_rubric_evaluators(reader, case, f"{path}."))
        entry.graders.extend(shared)
        entry.graders = [grader for grader in entry.graders if grader.items]
        threshold = _threshold(reader, case, path)
        entry.threshold = suite_threshold if threshold is None else threshold
        _unread_items(reader, case, path, _V2_CASE_KEYS, "v2 eval case")
        if not entry.graders:
            if not outcome:
                reader.warn(path, "case has neither rubrics nor expected_outcome; skipped")
                continue
            reader.warn(
                path,
                "case has no rubrics; AgentV would grade expected_outcome with its default "
                "judge, so it is imported as a single required criterion",
            )
            own_grader.items.append((f"{path}.expected_outcome", outcome))
            entry.graders.append(own_grader)
        cases.append(entry)
    return cases


def _v4_cases(reader: SourceReader, doc: Mapping[str, Any]) -> list[_Case]:
    # suite-level items, appended to every test: `defaultTest`'s, then the file's own
    # `assertions` (a test with `execution.skip_defaults: true` leaves both out)
    shared: list[_Grader] = []
    key = "defaultTest" if "defaultTest" in doc else "default_test"
    default = doc.get(key)
    if isinstance(default, Mapping):
        shared = _v4_asserts(reader, default, key)
        _unread_items(reader, default, key, frozenset(ASSERT_KEYS), "defaultTest")
    shared += _v4_asserts(reader, doc, "")
    _v4_execution(reader, doc, "")
    suite_threshold = _threshold(reader, doc, "")
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
        if case.get("mode") == "conversation" or case.get("turns") is not None:
            own = _merge_strings(own) + _conversation_turns(reader, case, path, entry)
        _v4_execution(reader, case, path)
        threshold = _threshold(reader, case, path)
        entry.threshold = suite_threshold if threshold is None else threshold
        _unread_items(reader, case, path, _V4_TEST_KEYS, "v4 test")
        execution = case.get("execution")
        skip_defaults = isinstance(execution, Mapping) and execution.get("skip_defaults") is True
        entry.graders = _merge_strings(own + ([] if skip_defaults else shared))
        if not entry.graders:
            if criteria and not any(case.get(k) is not None for k in ASSERT_KEYS):
                reader.warn(
                    path,
                    "test has no assertions; AgentV would grade its `criteria` with its "
                    "default judge, so it is imported as a single required criterion",
                )
                grader = _Grader(STRINGS_GRADER, strings=True, path=f"{path}.criteria")
                grader.items.append((f"{path}.criteria", criteria))
                entry.graders.append(grader)
            else:
                reader.warn(path, "test has no rubric assertions; skipped")
                continue
        cases.append(entry)
    return cases


def _users_before(case: Mapping[str, Any]) -> int:
    """The user messages a conversation test's `input` (or `vars.input`) holds before
    its turns: turn N is then the conversation's (N + these)-th exchange."""
    raw_vars = case.get("vars")
    given = case.get("input", raw_vars.get("input") if isinstance(raw_vars, Mapping) else None)
    if not isinstance(given, list):
        return 0
    return sum(isinstance(m, Mapping) and m.get("role") == "user" for m in given)


def _conversation_turns(
    reader: SourceReader, case: Mapping[str, Any], path: str, entry: _Case
) -> list[_Grader]:
    """A `mode: conversation` test's per-turn graders, each judging the assistant's reply
    to its turn (`scope: turn`); `aggregation` and `on_turn_failure` as AgentV means them
    where a recorded conversation allows (see docs/formats.md)."""
    entry.conversation = True
    aggregation = case.get("aggregation", "mean")
    if aggregation not in ("mean", "min", "max"):
        reader.problem(
            f"{path}.aggregation", f"aggregation is mean, min or max, got {shown(aggregation)}"
        )
    elif aggregation == "max":
        reader.warn(
            f"{path}.aggregation",
            "aggregation: max (the best turn) has no rubricflow equivalent; the turns' mean "
            "is used",
        )
    else:
        entry.aggregation = aggregation
    if case.get("on_turn_failure") == "stop":
        reader.warn(
            f"{path}.on_turn_failure",
            "on_turn_failure: stop drives a live conversation; a recorded one is judged "
            "turn by turn in full",
        )
    offset = _users_before(case)
    graders: list[_Grader] = []
    for index, turn in enumerate(reader.sequence(case.get("turns"), f"{path}.turns") or []):
        where = f"{path}.turns[{index}]"
        holder = reader.mapping(turn, where)
        if holder is None:
            continue
        for grader in _merge_strings(_v4_asserts(reader, holder, where)):
            if grader.strings:  # its own turn's strings: one grader, weighing as many
                grader.strings, grader.weight = False, grader.weight or len(grader.items)
                grader.name = f"turn-{index + 1}"
            else:
                grader.name = f"turn-{index + 1}-{grader.name}"
            grader.turn = index + 1 + offset
            graders.append(grader)
    return graders


def _merge_strings(graders: list[_Grader]) -> list[_Grader]:
    """AgentV collects every plain-string assertion of a test (its own, then the suite's)
    into one grader, placed where the first of them stands."""
    merged: list[_Grader] = []
    strings: _Grader | None = None
    for grader in graders:
        if not grader.strings:
            merged.append(grader)
        elif strings is None:
            strings = _Grader(STRINGS_GRADER, strings=True, path=grader.path)
            strings.items.extend(grader.items)
            merged.append(strings)
        else:
            strings.items.extend(grader.items)
    return [grader for grader in merged if grader.items]


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


def _v4_asserts(reader: SourceReader, holder: Mapping[str, Any], path: str) -> list[_Grader]:
    """The rubric graders of `holder`'s `assertions` (or `assert`, the older name): each
    rubric assertion, and one grader per run of plain strings (merged by `_merge_strings`)."""
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
    graders: list[_Grader] = []
    for index, entry in enumerate(reader.sequence(holder[key], f"{prefix}{key}") or []):
        where = f"{prefix}{key}[{index}]"
        if isinstance(entry, str):
            strings = _Grader(STRINGS_GRADER, strings=True, path=where)
            strings.items.append((where, entry))
            graders.append(strings)
        elif isinstance(entry, Mapping) and entry.get("type") in RUBRIC_EVALUATOR_TYPES:
            name = entry.get("name")
            grader = _Grader(
                name if isinstance(name, str) and name else f"grader-{index + 1}", where
            )
            _grader_settings(reader, grader, entry, where)
            grader.items.extend(_rubric_assertion(reader, entry, where))
            graders.append(grader)
        elif isinstance(entry, Mapping) and is_trajectory_assert(entry.get("type")):
            name = entry.get("name")
            grader = _Grader(
                name if isinstance(name, str) and name else f"trajectory-{index + 1}", where
            )
            _grader_settings(reader, grader, entry, where)
            found = trajectory_criteria(reader, entry, where, index + 1)
            grader.items.extend((where, _Prebuilt(criterion)) for criterion in found)
            graders.append(grader)
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
    return graders


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
    """One rubric item as a native criterion (`number` names an item without an id)."""
    if isinstance(raw, _Prebuilt):
        return dict(raw)
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
        criterion["_min_score_given"] = True
    elif item.get("required_min_score") is not None:
        value = reader.number(item, "required_min_score", path)
        # exactly: 8.7 of 10 is 0.87, not 0.8699999999999999
        criterion["min_score"] = float(Fraction(repr(value)) / 10) if value is not None else None
        criterion["_min_score_given"] = True
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
    groups: list[dict[str, Any]] = []
    path_map: dict[str, str] = {}
    grouped = (
        case.conversation
        or len(case.graders) > 1
        or any(not grader.plain for grader in case.graders)
    )
    taken: set[str] = set()
    for grader in case.graders:
        group_id = _unique_group_id(grader.name, taken)
        grader_criteria: list[dict[str, Any]] = []
        for number, (path, raw) in enumerate(grader.items, start=1):
            criterion = _criterion(reader, raw, path, number)
            if criterion is not None:
                native_path = f"criteria[{len(criteria) + len(grader_criteria)}]"
                path_map[native_path] = path
                path_map.update(_long_band_paths(raw, native_path, path))
                grader_criteria.append(criterion)
        if any("score_ranges" in c for c in grader_criteria):
            # AgentV's score-range mode, per grader: every item is scored 0..10
            for criterion in grader_criteria:
                criterion["scoring"] = {"method": "llm_score"}
                _score_range_gate(criterion, version)
        for criterion in grader_criteria:
            criterion.pop("_min_score_given", None)
            function = str(criterion.get("scoring", {}).get("function", ""))
            if grader.turn is not None and not function.startswith("trajectory."):
                # a trajectory check reads the run's tool calls, not one reply's text
                criterion["scope"], criterion["turn"] = "turn", grader.turn
            if grouped:
                criterion["group"] = group_id
        criteria.extend(grader_criteria)
        if grouped:
            path_map[f"groups[{len(groups)}]"] = grader.path
            groups.append(_grader_group(grader, group_id, len(grader_criteria)))
    reader.raise_if_problems()
    if case.conversation:
        _turn_units(case, groups)
    native: dict[str, Any] = {
        "id": slugify(case.id, "case"),
        "name": case.id,
        "version": "1.0.0",
        "description": case.outcome or str(doc.get("description") or ""),
        "pass_threshold": PASS_THRESHOLD if case.threshold is None else case.threshold,
        # AgentV: satisfied weight / total weight, so items (or graders) that all weigh 0
        # score 0, where rubricflow's default is their plain mean
        "zero_weights": "zero",
        "criteria": criteria,
        "metadata": {"imported_from": version, **({"agentv": case.extra} if case.extra else {})},
    }
    if groups:
        native["groups"] = groups
    path_map["id"] = f"{case.path}.id"
    return build_rubric(native, source, path_map)


def _turn_units(case: _Case, groups: list[dict[str, Any]]) -> None:
    """AgentV scores each turn (and the conversation) as a case, then combines those
    scores: each unit's graders share a weight of 1, so the rubric's mean of groups is
    AgentV's mean of units. `min` (the weakest unit) fails the case when any unit is below
    the bar: each group is required at the pass bar."""
    units: dict[int | None, list[tuple[dict[str, Any], float]]] = {}
    for grader, group in zip(case.graders, groups, strict=True):
        units.setdefault(grader.turn, []).append((group, float(group.get("weight", 1.0))))
    for members in units.values():
        total = sum(weight for _, weight in members)
        for group, weight in members:
            group["weight"] = weight / total if total else 1.0 / len(members)
    if case.aggregation == "min":
        bar = PASS_THRESHOLD if case.threshold is None else case.threshold
        for group in groups:
            group["required"] = True
            group.setdefault("min_score", bar)


def _unique_group_id(name: str, taken: set[str]) -> str:
    """A group id from a grader's name, made unique among `taken` (and added to it)."""
    group_id = slugify(name, "grader").replace(".", "_")
    base, suffix = group_id, 2
    while group_id in taken:
        group_id, suffix = f"{base}-{suffix}", suffix + 1
    taken.add(group_id)
    return group_id


def _grader_group(grader: _Grader, group_id: str, items: int) -> dict[str, Any]:
    """A grader as a native criteria group (`items`: how many criteria it holds)."""
    group: dict[str, Any] = {"id": group_id, "name": grader.name}
    if grader.weight is not None:
        group["weight"] = grader.weight
    elif grader.strings:
        # AgentV: a grader of plain strings weighs as many as it has strings
        group["weight"] = items
    if grader.required:
        # AgentV: a required grader below its bar makes the case's score 0
        group["required"], group["on_failure"] = True, "zero"
    if grader.min_score is not None:
        group["min_score"] = grader.min_score
    return group


def _score_range_gate(criterion: dict[str, Any], version: str) -> None:
    """`required` on a score-range item: AgentV v2 demands 10/10 (`requiredMinScore = 10`)
    unless the item names its own minimum; current AgentV (v4 files) gates such items only
    through `min_score`."""
    if criterion.get("_min_score_given"):
        criterion["required"] = True
    elif version == "agentv-v2":
        if criterion["required"]:
            criterion["min_score"] = 1.0
    else:
        criterion["required"] = False

"""promptfoo configs (`promptfooconfig.yaml`), and AgentV-next files in promptfoo's shape.

Each test becomes one rubric whose criteria are its assertions (`defaultTest`'s first,
then the test's own), scored as promptfoo scores a test:

- the score is the weighted mean of the assertions' scores (`weight`, default 1; 0 when
  every weight is 0: `zero_weights: zero`);
- without a test `threshold` the test passes when every assertion passes, so each
  criterion is required and the rubric's pass threshold is 0; with one, the test passes
  when its score reaches it and no single assertion gates;
- an `assert-set` is a criteria group of its own `weight`, scored by the same mean; it
  passes when all its assertions pass, or, with its own `threshold`, when its score
  reaches that.

`vars` (`defaultTest`'s, then the test's) fill `{{ name }}` in assertion values; nothing
else in a value is rendered. `metric` names are kept in the rubric's metadata
(`promptfoo.metrics`, by criterion). Assertions that run code (`javascript`, `python`),
need embeddings (`similar`) or have no rubricflow counterpart are errors that name them,
never dropped; `prompts` and `providers` are not run (rubricflow grades given outputs:
`output` in a test's vars, or `eval --outputs`), with a warning.

Mapped: `llm-rubric` (a judge's verdict; with `threshold`, a 0..1 judge score at that
bar), `g-eval` (a 0..1 judge score, bar 0.7), `model-graded-closedqa` (a verdict),
`factuality` (a verdict on consistency with the given facts), `equals`, `contains`,
`icontains`, `contains-any`, `icontains-any`, `contains-all`, `icontains-all`, `regex`,
`is-json` (with a schema as `value`: the schema scorer), `contains-json`, `levenshtein`
(distance at most `threshold`, default 5), `rouge-n` (ROUGE-1, bar 0.75) and `bleu` (bar
0.5) through the metrics plugin, the `not-` forms of the deterministic checks whose
negation is itself a check, and the `trajectory:*` assertions (tool-used and its `not-`
form, tool-sequence, tool-args-match, step-count: the built-in trajectory checks;
goal-success: a judge's verdict on the whole run).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
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

__all__ = ["PROMPTFOO_TYPES", "PromptfooFormat", "is_promptfoo_document"]

#: the assertion types this importer maps (a `not-` prefix is read where it can be)
PROMPTFOO_TYPES = frozenset(
    {
        "llm-rubric",
        "g-eval",
        "model-graded-closedqa",
        "factuality",
        "equals",
        "contains",
        "icontains",
        "contains-any",
        "icontains-any",
        "contains-all",
        "icontains-all",
        "regex",
        "is-json",
        "contains-json",
        "levenshtein",
        "rouge-n",
        "bleu",
        "similar",
        "javascript",
        "python",
    }
)
#: AgentV's own rubric assertions: a file using them is AgentV's, not promptfoo's
_AGENTV_TYPES = frozenset({"rubrics", "rubric", "llm_rubric"})
_VAR = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_TEMPLATE = re.compile(r"\{\{|\{%")
_CODE = frozenset({"javascript", "python"})
_DEFAULT_THRESHOLDS = {"g-eval": 0.7, "rouge-n": 0.75, "bleu": 0.5, "levenshtein": 5.0}


def _assertion_lists(document: Mapping[str, Any]) -> list[Any]:
    lists: list[Any] = []
    default = document.get("defaultTest")
    if isinstance(default, Mapping):
        lists.append(default.get("assert"))
    for test in document.get("tests") or []:
        if isinstance(test, Mapping):
            lists.append(test.get("assert"))
    return [entries for entries in lists if entries is not None]


def _promptfoo_shaped(entry: Any) -> bool:
    """An assertion promptfoo writes: a mapping with a `type` (not an AgentV rubric list)."""
    if not isinstance(entry, Mapping) or not isinstance(entry.get("type"), str):
        return False
    kind = entry["type"]
    if kind == "assert-set":
        inner = entry.get("assert")
        return isinstance(inner, list) and all(_promptfoo_shaped(e) for e in inner)
    if kind in _AGENTV_TYPES:
        return False
    return not (kind == "llm-rubric" and isinstance(entry.get("value"), list))


def is_promptfoo_document(document: Any) -> bool:
    """A promptfoo config: `tests` as a list of mappings whose assertions (if any) are all
    promptfoo-shaped, and no AgentV-only keys (`execution`, plain-string assertions)."""
    if not isinstance(document, Mapping) or "evalcases" in document:
        return False
    tests = document.get("tests")
    if not isinstance(tests, list) or not all(isinstance(t, Mapping) for t in tests):
        return False
    if "execution" in document or any("execution" in t or "assertions" in t for t in tests):
        return False
    lists = _assertion_lists(document)
    if not lists or not all(isinstance(entries, list) for entries in lists):
        return False
    return all(_promptfoo_shaped(e) for entries in lists for e in entries)


class PromptfooFormat:
    name = "promptfoo"
    description = "promptfoo configs (tests with assert), and AgentV-next files in that shape"

    def detect(self, document: Any) -> float:
        # above AgentV's 0.95 for `tests`: AgentV-next files in promptfoo's shape read here
        return 0.97 if is_promptfoo_document(document) else 0.0

    def load(self, document: Any, context: LoadContext) -> ImportResult:
        reader = SourceReader(context.source)
        doc = reader.mapping(document, "")
        reader.raise_if_problems()
        assert doc is not None
        for key in ("prompts", "providers"):
            if doc.get(key) is not None:
                reader.warn(
                    key,
                    f"`{key}` are not run: rubricflow grades outputs it is given (`output` "
                    "in a test's vars, or eval --outputs FILE)",
                )
        default = _default_test(reader, doc)
        tests = reader.sequence(doc.get("tests"), "tests") or []
        rubrics = []
        seen: set[str] = set()
        for index, raw in enumerate(tests):
            test = reader.mapping(raw, f"tests[{index}]")
            if test is None:
                continue
            rubric = _test_rubric(reader, test, index, default, context.source, seen)
            if rubric is not None:
                rubrics.append(rubric)
        reader.raise_if_problems()
        if not rubrics:
            reader.problem("tests", "no test holds an assertion; nothing to import")
            reader.raise_if_problems()
        return ImportResult(rubrics, reader.warnings)


@dataclass
class _Default:
    asserts: list[tuple[str, Any]] = field(default_factory=list)
    variables: dict[str, Any] = field(default_factory=dict)
    threshold: float | None = None


def _default_test(reader: SourceReader, doc: Mapping[str, Any]) -> _Default:
    default = _Default()
    raw = doc.get("defaultTest")
    if raw is None:
        return default
    if isinstance(raw, str):
        reader.problem("defaultTest", f"defaultTest {shown(raw)} names a file; inline it")
        return default
    holder = reader.mapping(raw, "defaultTest")
    if holder is None:
        return default
    entries = reader.sequence(holder.get("assert") or [], "defaultTest.assert") or []
    default.asserts = [(f"defaultTest.assert[{i}]", e) for i, e in enumerate(entries)]
    variables = holder.get("vars")
    if isinstance(variables, Mapping):
        default.variables = dict(variables)
    default.threshold = reader.number(holder, "threshold", "defaultTest")
    return default


@dataclass
class _Built:
    """What one test's assertions became."""

    criteria: list[dict[str, Any]] = field(default_factory=list)
    groups: list[dict[str, Any]] = field(default_factory=list)
    path_map: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, str] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)


def _settings(
    reader: SourceReader, test: Mapping[str, Any], path: str, default: _Default
) -> tuple[dict[str, Any], float | None]:
    """A test's vars (over defaultTest's) and threshold (else defaultTest's)."""
    variables = {**default.variables}
    own_vars = test.get("vars")
    if isinstance(own_vars, Mapping):
        variables.update(own_vars)
    elif own_vars is not None:
        reader.problem(f"{path}.vars", "expected a mapping of variables (a file is not read)")
    threshold = reader.number(test, "threshold", path)
    return variables, default.threshold if threshold is None else threshold


def _test_rubric(
    reader: SourceReader,
    test: Mapping[str, Any],
    index: int,
    default: _Default,
    source: str | None,
    seen: set[str],
) -> Any:
    path = f"tests[{index}]"
    variables, threshold = _settings(reader, test, path, default)
    own = reader.sequence(test.get("assert") or [], f"{path}.assert") or []
    entries = [*default.asserts, *((f"{path}.assert[{i}]", e) for i, e in enumerate(own))]
    if not entries:
        reader.warn(path, "test has no assertions; skipped")
        return None
    grouped = any(isinstance(e, Mapping) and e.get("type") == "assert-set" for _, e in entries)
    built = _Built()
    for where, entry in entries:
        _add_entry(reader, built, where, entry, variables, gated=threshold is None, grouped=grouped)
    if not built.criteria:
        return None
    name = str(test.get("description") or test.get("id") or f"test-{index + 1}")
    ident = slugify(name, f"test-{index + 1}")
    base, number = ident, 2
    while ident in seen:
        ident, number = f"{base}-{number}", number + 1
    seen.add(ident)
    metadata: dict[str, Any] = {"imported_from": "promptfoo", "promptfoo": {"test": index}}
    if built.metrics:
        metadata["promptfoo"]["metrics"] = built.metrics
    if variables:
        metadata["promptfoo"]["vars"] = {k: v for k, v in variables.items() if k != "output"}
    native: dict[str, Any] = {
        "id": ident,
        "name": name,
        "version": "1.0.0",
        "pass_threshold": 0.0 if threshold is None else threshold,
        "zero_weights": "zero",
        "criteria": built.criteria,
        "metadata": metadata,
    }
    if built.groups:
        native["groups"] = built.groups
    try:
        return build_rubric(native, source, built.path_map)
    except Exception as error:  # RubricValidationError: collected with the file's others
        for problem in getattr(error, "problems", []):
            reader.problem(problem.path, problem.message)
        return None


def _add_entry(
    reader: SourceReader,
    built: _Built,
    where: str,
    entry: Any,
    variables: Mapping[str, Any],
    *,
    gated: bool,
    grouped: bool,
) -> None:
    assertion = reader.mapping(entry, where)
    if assertion is None:
        return
    if assertion.get("type") == "assert-set":
        _add_set(reader, built, where, assertion, variables, gated=gated)
        return
    if is_trajectory_assert(assertion.get("type")):
        _add_trajectory(reader, built, where, assertion, gated=gated, grouped=grouped)
        return
    criterion = _criterion(reader, assertion, where, variables)
    if criterion is None:
        return
    criterion["required"] = gated and criterion.get("required", True)
    _place(built, criterion, where, assertion, criterion.pop("weight", 1.0), grouped=grouped)


def _add_trajectory(
    reader: SourceReader,
    built: _Built,
    where: str,
    assertion: Mapping[str, Any],
    *,
    gated: bool,
    grouped: bool,
) -> None:
    """A `trajectory:*` assertion: the built-in trajectory checks (docs/formats.md)."""
    weight = reader.number(assertion, "weight", where, default=1.0)
    if weight is not None and weight < 0:
        reader.problem(f"{where}.weight", f"a weight is 0 or more, got {shown(weight)}")
    number = len(built.criteria) + 1
    for criterion in trajectory_criteria(reader, assertion, where, number):
        criterion["name"] = str(assertion.get("metric") or assertion.get("type"))
        criterion["required"] = gated
        _place(built, criterion, where, assertion, weight, grouped=grouped)


def _place(
    built: _Built,
    criterion: dict[str, Any],
    where: str,
    assertion: Mapping[str, Any],
    weight: Any,
    *,
    grouped: bool,
) -> None:
    """Add one assertion's criterion with its weight: on the criterion, or (`grouped`)
    on a group of one of its own, so each plain assertion weighs what it weighs."""
    if grouped:
        group = _unique(built, f"a{len(built.groups) + 1}")
        built.path_map[f"groups[{len(built.groups)}]"] = where
        built.groups.append({"id": group, "name": criterion["name"], "weight": weight})
        criterion["group"] = group
    else:
        criterion["weight"] = weight
    _append(built, criterion, where, assertion)


def _add_set(
    reader: SourceReader,
    built: _Built,
    where: str,
    assertion: Mapping[str, Any],
    variables: Mapping[str, Any],
    *,
    gated: bool,
) -> None:
    threshold = reader.number(assertion, "threshold", where)
    weight = reader.number(assertion, "weight", where, default=1.0)
    group_id = _unique(built, slugify(str(assertion.get("metric") or "set"), "set"))
    group: dict[str, Any] = {"id": group_id, "weight": weight}
    if gated and threshold is not None:
        group.update(required=True, min_score=threshold)
    built.path_map[f"groups[{len(built.groups)}]"] = where
    built.groups.append(group)
    inner = reader.sequence(assertion.get("assert"), f"{where}.assert") or []
    for index, raw in enumerate(inner):
        path = f"{where}.assert[{index}]"
        entry = reader.mapping(raw, path)
        if entry is None:
            continue
        if entry.get("type") == "assert-set":
            reader.problem(path, "an assert-set inside an assert-set is not imported; flatten it")
            continue
        criterion = _criterion(reader, entry, path, variables)
        if criterion is None:
            continue
        criterion["required"] = gated and threshold is None and criterion.get("required", True)
        criterion["group"] = group_id
        _append(built, criterion, path, entry)


def _unique(built: _Built, ident: str) -> str:
    base, number = ident, 2
    while ident in built.taken:
        ident, number = f"{base}-{number}", number + 1
    built.taken.add(ident)
    return ident


def _append(
    built: _Built, criterion: dict[str, Any], where: str, assertion: Mapping[str, Any]
) -> None:
    criterion["id"] = _unique(built, criterion["id"])
    built.path_map[f"criteria[{len(built.criteria)}]"] = where
    metric = assertion.get("metric")
    if isinstance(metric, str) and metric:
        built.metrics[criterion["id"]] = metric
    built.criteria.append(criterion)


def _value(
    reader: SourceReader, assertion: Mapping[str, Any], where: str, variables: Mapping[str, Any]
) -> Any:
    """The assertion's `value` with `{{ var }}` filled from the test's vars."""
    value = assertion.get("value")
    if isinstance(value, str):
        return _fill(reader, value, f"{where}.value", variables)
    if isinstance(value, list):
        return [
            _fill(reader, v, f"{where}.value[{i}]", variables) if isinstance(v, str) else v
            for i, v in enumerate(value)
        ]
    return value


def _fill(reader: SourceReader, text: str, where: str, variables: Mapping[str, Any]) -> str:
    if isinstance(text, str) and text.startswith("file://"):
        reader.problem(where, f"{shown(text)} names a file; inline its text")
        return text

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in variables:
            reader.problem(where, f"{{{{ {name} }}}} names no var of this test; add it to vars")
            return match.group(0)
        value = variables[name]
        return value if isinstance(value, str) else str(value)

    filled = _VAR.sub(one, text)
    if _TEMPLATE.search(_VAR.sub("", text)):
        reader.problem(
            where,
            f"{shown(text)} is a template beyond {{{{ var }}}}, which rubricflow does not "
            "render; write the text out",
        )
    return filled


def _criterion(
    reader: SourceReader, assertion: Mapping[str, Any], where: str, variables: Mapping[str, Any]
) -> dict[str, Any] | None:
    raw_kind = assertion.get("type")
    if not isinstance(raw_kind, str):
        reader.problem(f"{where}.type", f"expected an assertion type, got {shown(raw_kind)}")
        return None
    inverse = raw_kind.startswith("not-")
    kind = raw_kind[4:] if inverse else raw_kind
    if kind in _CODE:
        reader.problem(
            f"{where}.value",
            f"a {kind} assertion runs code, which rubricflow does not run from a config: "
            "port it to a check function in a plugin (docs/plugins.md) and use it in a "
            "native rubric",
        )
        return None
    if kind not in PROMPTFOO_TYPES:
        reader.problem(
            f"{where}.type",
            f"assertion type {shown(raw_kind)} is not imported (rubricflow maps "
            f"{', '.join(sorted(PROMPTFOO_TYPES - _CODE))}): remove it, or write that check "
            "as a criterion of a native rubric",
        )
        return None
    weight = reader.number(assertion, "weight", where, default=1.0)
    if weight is not None and weight < 0:
        reader.problem(f"{where}.weight", f"a weight is 0 or more, got {shown(weight)}")
    value = _value(reader, assertion, where, variables)
    threshold = reader.number(assertion, "threshold", where)
    name = str(assertion.get("metric") or raw_kind)
    base = {"id": slugify(name, "assertion"), "name": name, "weight": weight}
    body = _mapped(reader, kind, inverse, value, threshold, where)
    return None if body is None else {**base, **body}


def _mapped(
    reader: SourceReader,
    kind: str,
    inverse: bool,
    value: Any,
    threshold: float | None,
    where: str,
) -> dict[str, Any] | None:
    if kind in ("llm-rubric", "g-eval", "model-graded-closedqa", "factuality"):
        if inverse:
            return _refuse_inverse(reader, kind, where)
        return _judged(reader, kind, value, threshold, where)
    if kind in ("rouge-n", "bleu", "levenshtein", "similar"):
        if kind == "similar":
            reader.problem(
                f"{where}.type",
                "`similar` compares embeddings, which rubricflow does not compute: use "
                "rouge-n or bleu, or an llm-rubric that names what must match",
            )
            return None
        if inverse:
            return _refuse_inverse(reader, kind, where)
        return _measured(reader, kind, value, threshold, where)
    return _checked(reader, kind, inverse, value, where)


def _refuse_inverse(reader: SourceReader, kind: str, where: str) -> dict[str, Any] | None:
    """Name a `not-` form that has no counterpart (and map nothing)."""
    reader.problem(
        f"{where}.type",
        f"not-{kind} is not imported: rubricflow has no inverted form of {kind}; state the "
        "requirement positively (e.g. an llm-rubric saying what must not appear)",
    )
    return None


def _text_value(reader: SourceReader, value: Any, where: str, kind: str) -> str | None:
    if isinstance(value, str) and value:
        return value
    reader.problem(f"{where}.value", f"a {kind} assertion needs text as `value`")
    return None


_JUDGED_TEXT = {
    "llm-rubric": "{}",
    "model-graded-closedqa": "The output meets this criterion: {}",
    "factuality": (
        "The output is factually consistent with these facts (it may be a subset or a "
        "superset of them, or differ in wording, but it must not contradict them): {}"
    ),
    "g-eval": "{}",
}


def _judged(
    reader: SourceReader, kind: str, value: Any, threshold: float | None, where: str
) -> dict[str, Any] | None:
    text = _text_value(reader, value, where, kind)
    if text is None:
        return None
    body: dict[str, Any] = {"description": _JUDGED_TEXT[kind].format(text)}
    if kind == "g-eval" or threshold is not None:
        bar = _DEFAULT_THRESHOLDS.get(kind, 0.0) if threshold is None else threshold
        if not 0 <= bar <= 1:
            reader.problem(f"{where}.threshold", f"a judge's threshold is 0..1, got {shown(bar)}")
            return None
        body["scoring"] = {"method": "llm_score", "config": {"min_score": 0.0, "max_score": 1.0}}
        body["min_score"] = bar
    else:
        body["scoring"] = {"method": "llm_verdict"}
    if kind == "factuality":
        reader.warn(
            f"{where}.type",
            "factuality's five categories (A..E) are judged as one verdict: consistent "
            "(A..D, promptfoo's default passes) or contradicting (E)",
        )
    return body


def _measured(
    reader: SourceReader, kind: str, value: Any, threshold: float | None, where: str
) -> dict[str, Any] | None:
    text = _text_value(reader, value, where, kind)
    if text is None:
        return None
    bar = _DEFAULT_THRESHOLDS[kind] if threshold is None else threshold
    if kind == "levenshtein":
        return {
            "description": f"The output is within edit distance {bar:g} of the expected text",
            "scoring": {
                "method": "deterministic",
                "function": "levenshtein_within",
                "config": {"reference": text, "max_distance": int(bar)},
            },
        }
    if not 0 <= bar <= 1:
        reader.problem(f"{where}.threshold", f"a {kind} threshold is 0..1, got {shown(bar)}")
        return None
    metric = "rouge_1" if kind == "rouge-n" else "bleu"
    return {
        "description": f"The output is similar to the expected text ({kind} at {bar:g})",
        "scoring": {"method": "metric", "metric": metric, "config": {"reference": text}},
        "min_score": bar,
    }


def _checked(
    reader: SourceReader, kind: str, inverse: bool, value: Any, where: str
) -> dict[str, Any] | None:
    if kind in ("is-json", "contains-json"):
        return _json_check(reader, kind, inverse, value, where)
    if kind == "regex":
        pattern = _text_value(reader, value, where, kind)
        if pattern is None:
            return None
        function = "no_regex_match" if inverse else "matches_regex"
        return _check(
            f"The output {'does not match' if inverse else 'matches'} /{pattern}/",
            function,
            {"pattern": pattern},
        )
    return _contains(reader, kind, inverse, value, where)


def _check(description: str, function: str, config: dict[str, Any]) -> dict[str, Any]:
    return {
        "description": description,
        "scoring": {"method": "deterministic", "function": function, "config": config},
    }


_OP_WORDS = {"eq": "equals", "ne": "differs from", "like": "contains", "ilike": "contains"}


def _contains(
    reader: SourceReader, kind: str, inverse: bool, value: Any, where: str
) -> dict[str, Any] | None:
    sensitive = not kind.startswith("i")
    if kind in ("equals", "contains", "icontains"):
        text = value if isinstance(value, str) else None
        if text is None:
            reader.problem(f"{where}.value", f"a {kind} assertion needs text as `value`")
            return None
        if kind == "equals":
            op = "ne" if inverse else "eq"
        elif inverse:
            return _check(
                f"The output does not contain {text!r}",
                "contains_none",
                {"terms": [text], "case_sensitive": sensitive},
            )
        else:
            op = "like" if sensitive else "ilike"
        return _check(
            f"The output {_OP_WORDS[op]} {text!r}",
            "string_check",
            {"operation": op, "reference": text},
        )
    terms = [t.strip() for t in value.split(",")] if isinstance(value, str) else value
    if not isinstance(terms, list) or not terms or not all(isinstance(t, str) for t in terms):
        reader.problem(f"{where}.value", f"a {kind} assertion needs a list of texts as `value`")
        return None
    if kind.endswith("-all") and inverse:
        reader.problem(
            f"{where}.type",
            f"not-{kind} (fails only when every term appears) is not imported: use "
            f"not-{kind.replace('-all', '-any')} if none may appear, or split it",
        )
        return None
    function = (
        "contains_none"
        if inverse
        else ("contains_all" if kind.endswith("-all") else "contains_any")
    )
    words = {"contains_none": "none of", "contains_all": "all of", "contains_any": "any of"}
    return _check(
        f"The output contains {words[function]} {', '.join(repr(t) for t in terms)}",
        function,
        {"terms": list(terms), "case_sensitive": sensitive},
    )


def _json_check(
    reader: SourceReader, kind: str, inverse: bool, value: Any, where: str
) -> dict[str, Any] | None:
    if inverse:
        return _refuse_inverse(reader, kind, where)
    if kind == "contains-json":
        if value is not None:
            reader.problem(f"{where}.value", "contains-json with a schema is not imported")
            return None
        return _check("The output contains JSON", "contains_json", {})
    if isinstance(value, Mapping):
        return {
            "description": "The output is JSON matching the schema",
            "scoring": {"method": "schema", "schema": dict(value)},
        }
    if value is not None:
        reader.problem(
            f"{where}.value", "is-json's value is a JSON Schema (inline); a file is not read"
        )
        return None
    return _check("The output is valid JSON", "valid_json", {})

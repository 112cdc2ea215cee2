"""Built-in deterministic check functions, registered by name through the plugin hook.

Each takes the `Target` and keyword options from the criterion's `scoring.config`, and
returns a bool (MET/UNMET), a float in 0..1 or a level id, wrapped in a `CheckResult`
when it has evidence to show.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from rubricflow.engine.patterns import BoundedPattern, compile_bounded
from rubricflow.formats.loader import load_document, load_text
from rubricflow.hookspecs import config_schema, hookimpl
from rubricflow.model import Rubric
from rubricflow.results import Target
from rubricflow.scoring import CheckResult

__all__ = ["BUILTIN_FUNCTIONS"]

# Every built-in pattern runs in time linear in the text (tests/test_functions.py and the
# `checks` benchmark hold them to it): no quantifier nests an unbounded one, and a pattern
# that opens with a repeat starts only where that repeat's run starts (the look-behind
# below), so a search does not rescan one long run from each of its characters.
_EMAIL = re.compile(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_PHONE_CANDIDATE = re.compile(r"(?<![\w.])\+?\(?\d[\d\s().-]{5,}\d(?![\w.]?\d)")
_NOT_PHONE = re.compile(
    r"^(?:\d{1,3}(?:\.\d{1,3}){3}"  # an IPv4 address
    r"|\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{4}"  # a date
    r"|\d{4}\s?-\s?\d{4})$"  # a range of years
)
_SECRETS = {
    "AWS access key": re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    "private key block": re.compile(r"-----BEGIN (?:RSA |EC |OPENSSH |DSA )?PRIVATE KEY-----"),
    "API key (sk-...)": re.compile(r"\bsk-[A-Za-z0-9_-]{20,}\b"),
    "GitHub token": re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),
    "Slack token": re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"),
    "password assignment": re.compile(
        r"(?i)\b(?:password|passwd|pwd|secret|api_key|apikey|token)\s*[:=]\s*['\"][^'\"\s]{4,}['\"]"
    ),
}


def _text(target: Target) -> str:
    return target.text


def _json(target: Target) -> Any:
    if isinstance(target.content, str):
        return json.loads(target.content)
    return target.content


def non_empty(target: Target) -> CheckResult:
    """MET when the content has any non-whitespace text (or is a non-empty JSON value)."""
    content = target.content
    empty = not content.strip() if isinstance(content, str) else content in (None, {}, [], "")
    return CheckResult(not empty, ["content is empty"] if empty else [])


def _between(count: int, unit: str, minimum: int | None, maximum: int | None) -> CheckResult:
    low_ok = minimum is None or count >= minimum
    high_ok = maximum is None or count <= maximum
    bounds = f"{minimum if minimum is not None else 0}..{maximum if maximum is not None else 'any'}"
    return CheckResult(low_ok and high_ok, [f"{count} {unit} (allowed {bounds})"])


def word_count_between(
    target: Target, min: int | None = None, max: int | None = None
) -> CheckResult:
    """MET when the word count is within min..max (either bound optional)."""
    return _between(len(_text(target).split()), "words", min, max)


def char_count_between(
    target: Target, min: int | None = None, max: int | None = None
) -> CheckResult:
    """MET when the character count is within min..max (either bound optional)."""
    return _between(len(_text(target)), "characters", min, max)


def _find_terms(
    text: str, terms: Iterable[str], case_sensitive: bool
) -> tuple[list[str], list[str]]:
    haystack = text if case_sensitive else text.casefold()
    found: list[str] = []
    missing: list[str] = []
    for term in terms:
        needle = term if case_sensitive else term.casefold()
        (found if needle in haystack else missing).append(term)
    return found, missing


def contains_all(target: Target, terms: list[str], case_sensitive: bool = False) -> CheckResult:
    """The share of `terms` present in the text (1.0 when all are)."""
    if not terms:
        raise ValueError("contains_all needs a non-empty `terms` list in scoring.config")
    found, missing = _find_terms(_text(target), terms, case_sensitive)
    evidence = [f"missing: {', '.join(missing)}"] if missing else []
    return CheckResult(len(found) / len(terms), evidence)


def contains_none(target: Target, terms: list[str], case_sensitive: bool = False) -> CheckResult:
    """MET when none of `terms` appears in the text."""
    found, _ = _find_terms(_text(target), terms, case_sensitive)
    return CheckResult(not found, [f"found: {', '.join(found)}"] if found else [])


def _compile(pattern: str, flags: str) -> BoundedPattern:
    """A rubric's pattern, bounded where it runs: on RE2 (linear time), or, for what RE2
    refuses (lookarounds, backreferences), on `regex` with a time limit
    (`rubricflow.engine.patterns`)."""
    return compile_bounded(pattern, flags)


def matches_regex(target: Target, pattern: str, flags: str = "") -> CheckResult:
    """MET when `pattern` matches somewhere in the text (flags: any of i, m, s, x)."""
    match = _compile(pattern, flags).search(_text(target))
    return CheckResult(match is not None, [] if match else [f"no match for /{pattern}/"])


def no_regex_match(target: Target, pattern: str, flags: str = "") -> CheckResult:
    """MET when `pattern` matches nowhere in the text."""
    found = _compile(pattern, flags).finditer(_text(target))
    matches = [m.group(0) for m in itertools.islice(found, 10)]  # not every match of 1 MB
    return CheckResult(not matches, [f"matched: {m!r}" for m in matches])


def valid_json(target: Target) -> CheckResult:
    """MET when the content is JSON (already-parsed JSON content counts)."""
    try:
        _json(target)
    except json.JSONDecodeError as error:
        return CheckResult(
            False, [f"not JSON: line {error.lineno}, column {error.colno}: {error.msg}"]
        )
    return CheckResult(True)


def _dig(data: Any, path: str) -> Any:
    for part in [p for p in path.split(".") if p]:
        if isinstance(data, Mapping):
            data = data[part]
        elif isinstance(data, list) and part.lstrip("-").isdigit():
            data = data[int(part)]
        else:
            raise KeyError(part)
    return data


def _not_json(error: json.JSONDecodeError) -> str:
    return f"not JSON: line {error.lineno}, column {error.colno}: {error.msg}"


def json_has_keys(target: Target, keys: list[str]) -> CheckResult:
    """The share of dotted key paths in `keys` present in the JSON content."""
    if not keys:
        raise ValueError("json_has_keys needs a non-empty `keys` list in scoring.config")
    try:
        data = _json(target)
    except json.JSONDecodeError as error:
        return CheckResult(False, [_not_json(error)])
    missing = []
    for key in keys:
        try:
            _dig(data, key)
        except (KeyError, IndexError, TypeError):
            missing.append(key)
    return CheckResult(
        1 - len(missing) / len(keys), [f"missing: {', '.join(missing)}"] if missing else []
    )


def json_array_length(
    target: Target,
    path: str = "",
    min: int | None = None,
    max: int | None = None,
) -> CheckResult:
    """MET when the JSON array at dotted `path` has min..max items."""
    try:
        value = _dig(_json(target), path)
    except json.JSONDecodeError as error:
        return CheckResult(False, [_not_json(error)])
    except (KeyError, IndexError, TypeError):
        return CheckResult(False, [f"no value at {path or '(root)'}"])
    if not isinstance(value, list):
        return CheckResult(False, [f"{path or '(root)'} is not an array"])
    return _between(len(value), "items", min, max)


def no_email_addresses(target: Target) -> CheckResult:
    """MET when the text holds no e-mail address."""
    found = _EMAIL.findall(_text(target))[:10]
    return CheckResult(not found, [f"e-mail address: {f}" for f in found])


def _is_phone(candidate: str) -> bool:
    """A phone number: 7 to 15 digits, written with a + prefix or with separators
    (a bare run of digits is an order number; IP addresses, dates and year ranges are not)."""
    digits = sum(ch.isdigit() for ch in candidate)
    if not 7 <= digits <= 15 or _NOT_PHONE.match(candidate):
        return False
    return candidate.startswith("+") or any(ch in candidate for ch in " ()-.")


def no_phone_numbers(target: Target) -> CheckResult:
    """MET when the text holds nothing that looks like a phone number."""
    found = [
        m
        for m in (c.group(0).strip() for c in _PHONE_CANDIDATE.finditer(_text(target)))
        if _is_phone(m)
    ][:10]
    return CheckResult(not found, [f"phone number: {f}" for f in found])


def no_secrets(target: Target) -> CheckResult:
    """MET when the text holds no API key, token, private key or password literal."""
    text = _text(target)
    found = [kind for kind, pattern in _SECRETS.items() if pattern.search(text)]
    return CheckResult(not found, [f"looks like a {kind}" for kind in found])


def contains_any(target: Target, terms: list[str], case_sensitive: bool = False) -> CheckResult:
    """MET when any of `terms` appears (for penalty criteria: the problem is present)."""
    found, _ = _find_terms(_text(target), terms, case_sensitive)
    return CheckResult(bool(found), [f"found: {', '.join(found)}"] if found else [])


def contains_secrets(target: Target) -> CheckResult:
    """MET when the text holds an API key, token, private key or password literal
    (the inverse of `no_secrets`, for penalty criteria)."""
    clean = no_secrets(target)
    return CheckResult(not clean.value, clean.evidence)


STRING_CHECK_OPERATIONS = ("eq", "ne", "like", "ilike")


def _reference_text(target: Target, reference: str | None, reference_key: str | None) -> str:
    """The text to compare with: `reference` as given, else the field `reference_key` of
    the target's reference mapping (or of its metadata), else the target's reference."""
    if reference is not None:
        return reference
    value: Any = target.reference
    if reference_key is not None:
        if isinstance(target.reference, Mapping) and reference_key in target.reference:
            value = target.reference[reference_key]
        elif reference_key in target.metadata:
            value = target.metadata[reference_key]
        else:
            raise ValueError(
                f"the target has no reference field {reference_key!r} (looked in its "
                "reference and its metadata): give each target that field"
            )
    if value is None:
        raise ValueError(
            "string_check needs a reference: set scoring.config.reference, or give the "
            "target a reference"
        )
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def string_check(
    target: Target,
    operation: str,
    reference: str | None = None,
    reference_key: str | None = None,
) -> CheckResult:
    """OpenAI's string check grader: MET when the text and the reference compare as
    `operation` says: `eq` equal, `ne` not equal, `like` the text contains the reference,
    `ilike` the same ignoring case. Nothing is trimmed or normalised."""
    if operation not in STRING_CHECK_OPERATIONS:
        raise ValueError(f"operation {operation!r} is not one of eq, ne, like, ilike")
    text, expected = _text(target), _reference_text(target, reference, reference_key)
    passed = {
        "eq": text == expected,
        "ne": text != expected,
        "like": expected in text,
        "ilike": expected.casefold() in text.casefold(),
    }[operation]
    shown = expected if len(expected) <= 80 else expected[:77] + "..."
    return CheckResult(passed, [f"{operation} {shown!r}: {'yes' if passed else 'no'}"])


def levenshtein_within(target: Target, reference: str, max_distance: int = 5) -> CheckResult:
    """MET when the text is within `max_distance` single-character edits (insertions,
    deletions, substitutions) of `reference` (promptfoo's `levenshtein`). Only a band of
    width 2 * max_distance + 1 is computed, so a long text costs O(length * distance)."""
    text = _text(target)
    distance = _bounded_levenshtein(text, reference, max_distance)
    passed = distance <= max_distance
    found = f"{distance}" if passed else f"above {max_distance}"
    return CheckResult(passed, [f"edit distance {found} (at most {max_distance} allowed)"])


def _bounded_levenshtein(left: str, right: str, bound: int) -> int:
    """The edit distance of `left` and `right`, or `bound + 1` when it is above `bound`."""
    if abs(len(left) - len(right)) > bound:
        return bound + 1
    over = bound + 1
    previous = [j if j <= bound else over for j in range(len(right) + 1)]
    for i in range(1, len(left) + 1):
        low, high = max(1, i - bound), min(len(right), i + bound)
        current = [over] * (len(right) + 1)
        current[0] = i if i <= bound else over
        for j in range(low, high + 1):
            cost = 0 if left[i - 1] == right[j - 1] else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost, over)
        previous = current
    return min(previous[len(right)], over)


_JSON_STARTS = 1000  # candidate openings tried by contains_json (bounds its cost)


def contains_json(target: Target) -> CheckResult:
    """MET when a JSON object or array appears somewhere in the text (promptfoo's
    `contains-json`): each `{` or `[` is tried as the start of one, up to 1,000 of them."""
    text = _text(target)
    decoder = json.JSONDecoder()
    starts = (m.start() for m in re.finditer(r"[{\[]", text))
    for start in itertools.islice(starts, _JSON_STARTS):
        try:
            decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        return CheckResult(True, [f"JSON found at character {start}"])
    return CheckResult(False, ["no JSON object or array found"])


def openai_multi(
    target: Target, graders: Mapping[str, Mapping[str, Any]], calculate_output: str
) -> CheckResult:
    """OpenAI's `multi` grader over string checks and text similarity: each named grader's
    score (a string check 1 or 0, a similarity metric's value), then `calculate_output`
    computed from them by the safe arithmetic of `rubricflow.formats.arithmetic` (never
    `eval`). The result must lie in 0..1 to be a criterion's score."""
    from rubricflow.formats.arithmetic import check_formula, evaluate_formula

    tree = check_formula(calculate_output, graders)
    values: dict[str, float] = {}
    for name, grader in graders.items():
        values[name] = _inner_grade(target, grader)
    score = evaluate_formula(tree, values)
    shown = ", ".join(f"{name}={value:g}" for name, value in values.items())
    if not 0 <= score <= 1:
        raise ValueError(
            f"calculate_output gave {score:g} from {shown}; a criterion's score is 0..1: "
            "scale the formula into that range"
        )
    return CheckResult(score, [shown, f"{calculate_output} = {score:g}"])


def _inner_grade(target: Target, grader: Mapping[str, Any]) -> float:
    if grader.get("type") == "string_check":
        found = string_check(
            target, grader["operation"], grader.get("reference"), grader.get("reference_key")
        )
        return 1.0 if found.value else 0.0
    config = {k: v for k, v in grader.items() if k in ("reference", "reference_key")}
    return _metric_score(str(grader["metric"]), target, config)


def _metric_score(metric: str, target: Target, config: dict[str, Any]) -> float:
    """`metric`'s score of `target` from the installed scorer named `metric` (the metrics
    plugin's), found through the plugin registry as any scorer is."""
    from rubricflow.plugins import default_plugins
    from rubricflow.scoring import ScoringContext
    from rubricflow.sync_bridge import run_sync

    plugins = default_plugins()
    scorer = plugins.scorers.get("metric")
    if scorer is None:
        raise ValueError(
            "text_similarity needs a scorer named 'metric' (the metrics plugin): install "
            "the plugin that provides it"
        )
    rubric = Rubric.model_validate(
        {
            "id": "openai-multi-inner",
            "criteria": [
                {
                    "id": "similarity",
                    "description": f"text similarity by {metric}",
                    "scoring": {"method": "metric", "metric": metric, "config": config},
                }
            ],
        }
    )
    (criterion,) = rubric.criteria
    context = ScoringContext(rubric=rubric, plugins=plugins)
    result = run_sync(scorer.score(criterion, target, context))
    if result.score is None:
        raise ValueError(f"text_similarity {metric}: {result.notes}")
    return float(result.score)


def _target_rubric(target: Target) -> Rubric:
    """The rubric under review: a `Rubric`, or a document (or YAML/JSON text) in any format
    rubricflow loads, detected as a file would be (dataknobs' meta-rubric grades rubrics
    as dataknobs' `to_dict()` writes them, so native-only reading would be no use)."""
    content = target.content
    if isinstance(content, Rubric):
        return content
    source = f"target {target.id!r}" if target.id else "the target"
    if isinstance(content, str):
        loaded = load_text(content, source=source)
    else:
        loaded = load_document(content, source=source)
    if len(loaded.rubrics) != 1:
        ids = ", ".join(rubric.id for rubric in loaded.rubrics)
        raise ValueError(
            f"{source} holds {len(loaded.rubrics)} rubrics ({ids}); "
            "the meta-rubric grades one rubric per target"
        )
    return loaded.rubrics[0]


def _meta(check: str) -> Callable[[Target], str]:
    def run(target: Target) -> str:
        from rubricflow.engine.meta import META_CHECKS

        return META_CHECKS[check](_target_rubric(target)).level

    run.__name__ = f"meta_{check}"
    run.__doc__ = (
        f"The meta-rubric's {check.replace('_', ' ')} check on a rubric in any format "
        "rubricflow loads."
    )
    return run


BUILTIN_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "non_empty": non_empty,
    "word_count_between": word_count_between,
    "char_count_between": char_count_between,
    "contains_all": contains_all,
    "contains_none": contains_none,
    "contains_any": contains_any,
    "matches_regex": matches_regex,
    "no_regex_match": no_regex_match,
    "valid_json": valid_json,
    "json_has_keys": json_has_keys,
    "json_array_length": json_array_length,
    "no_email_addresses": no_email_addresses,
    "no_phone_numbers": no_phone_numbers,
    "no_secrets": no_secrets,
    "contains_secrets": contains_secrets,
    "string_check": string_check,
    "levenshtein_within": levenshtein_within,
    "contains_json": contains_json,
    "openai_multi": openai_multi,
    **{
        f"meta.{name}": _meta(name)
        for name in (
            "criteria_coverage",
            "criteria_independence",
            "weight_distribution",
            "threshold_reasonableness",
            "level_ordering",
        )
    },
}


# -- the options each built-in check takes: `validate` checks a rubric's scoring.config
# against these (a wrong option would otherwise fail only at evaluation, as an error)

_NO_OPTIONS: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "no options: remove scoring.config",
}
_COUNT = {"type": ["integer", "null"], "minimum": 0, "description": "a whole number, 0 or more"}
_TERMS = {"type": "array", "items": {"type": "string"}, "description": "a list of texts"}


def _range(**more: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"min": _COUNT, "max": _COUNT, **more},
        "additionalProperties": False,
        "description": f"options {', '.join(['min', 'max', *more])}",
    }


def _terms(required: bool) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "terms": {**_TERMS, "minItems": 1} if required else _TERMS,
            "case_sensitive": {"type": "boolean", "description": "true or false"},
        },
        "required": ["terms"],
        "additionalProperties": False,
        "description": "options terms (a list of texts) and case_sensitive",
    }


_REGEX = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "description": "a regular expression"},
        "flags": {
            "type": "string",
            "pattern": "^[imsx]*$",
            "description": "flags from i, m, s and x (e.g. im)",
        },
    },
    "required": ["pattern"],
    "additionalProperties": False,
    "description": "options pattern and flags",
}


def _ordered_range(config: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
    low, high = config.get("min"), config.get("max")
    if low is not None and high is not None and low > high:
        yield "min", f"min ({low}) is above max ({high}); nothing could pass, swap them"


def _compiles(config: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
    try:
        _compile(config["pattern"], config.get("flags", ""))
    except ValueError as error:
        yield "pattern", str(error)


_CONFIG_SCHEMAS: dict[str, tuple[dict[str, Any], Any]] = {
    **{
        name: (_NO_OPTIONS, None)
        for name in BUILTIN_FUNCTIONS
        if name.startswith("meta.")
        or name
        in (
            "non_empty",
            "valid_json",
            "no_email_addresses",
            "no_phone_numbers",
            "no_secrets",
            "contains_secrets",
            "contains_json",
        )
    },
    "openai_multi": (
        {
            "type": "object",
            "properties": {
                "graders": {
                    "type": "object",
                    "minProperties": 1,
                    "description": "the inner graders by name",
                },
                "calculate_output": {"type": "string", "description": "an arithmetic formula"},
            },
            "required": ["graders", "calculate_output"],
            "additionalProperties": False,
            "description": "options graders and calculate_output",
        },
        None,
    ),
    "levenshtein_within": (
        {
            "type": "object",
            "properties": {
                "reference": {"type": "string", "description": "the expected text"},
                "max_distance": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "the most edits allowed, 0 or more",
                },
            },
            "required": ["reference"],
            "additionalProperties": False,
            "description": "options reference and max_distance",
        },
        None,
    ),
    "word_count_between": (_range(), _ordered_range),
    "char_count_between": (_range(), _ordered_range),
    "contains_all": (_terms(required=True), None),
    "contains_none": (_terms(required=False), None),
    "contains_any": (_terms(required=False), None),
    "matches_regex": (_REGEX, _compiles),
    "no_regex_match": (_REGEX, _compiles),
    "json_has_keys": (
        {
            "type": "object",
            "properties": {"keys": {**_TERMS, "minItems": 1}},
            "required": ["keys"],
            "additionalProperties": False,
            "description": "option keys (a list of dotted key paths)",
        },
        None,
    ),
    "json_array_length": (_range(path={"type": "string"}), _ordered_range),
    "string_check": (
        {
            "type": "object",
            "properties": {
                "operation": {
                    "enum": list(STRING_CHECK_OPERATIONS),
                    "description": "eq, ne, like or ilike",
                },
                "reference": {"type": "string", "description": "the text to compare with"},
                "reference_key": {
                    "type": "string",
                    "minLength": 1,
                    "description": "a field of the target's reference",
                },
            },
            "required": ["operation"],
            "additionalProperties": False,
            "description": "options operation, and reference or reference_key",
        },
        None,
    ),
}
for _name, (_schema, _check) in _CONFIG_SCHEMAS.items():
    config_schema(_schema, check=_check)(BUILTIN_FUNCTIONS[_name])


@hookimpl
def rubricflow_check_functions() -> Mapping[str, Callable[..., Any]]:
    return BUILTIN_FUNCTIONS

"""The `schema` scorer: validate JSON content against the criterion's JSON Schema.

Valid content scores the highest level (or MET); invalid content the lowest level (or
UNMET) with every validation error, path and message, as evidence.

A schema comes from a rubric, so its regular expressions are untrusted: `pattern`,
`patternProperties` and the `additionalProperties` that depends on them run on bounded
patterns (`rubricflow.scorers.patterns`: RE2, or `regex` with a time limit), not on
Python's backtracking `re`. What else a schema can make expensive (`anyOf`s that refer to
each other, `unevaluatedProperties` beside a backtracking `patternProperties`) is bounded
by the check process pool's budgets (`rubricflow.engine.isolation`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache, lru_cache
from typing import Any

from jsonschema import FormatChecker, ValidationError, validators
from jsonschema.protocols import Validator
from referencing import Registry
from referencing.exceptions import Unresolvable

from rubricflow.model import Criterion
from rubricflow.results import CriterionResult, Target, canonical_json
from rubricflow.scorers.patterns import BoundedPattern, compile_bounded, regex_timeout
from rubricflow.scoring import CheckResult, ScoringContext, error_result, result_from_value

__all__ = ["SchemaScorer", "bounded_validator_class"]


def _json_path(parts: Any) -> str:
    path = "$"
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


#: resolves references within a schema (and the dialects' metaschemas jsonschema adds);
#: anything else is unresolvable: a stranger's schema never makes us read a file or fetch a URL
_NO_RETRIEVAL: Registry[Any] = Registry()


@lru_cache(maxsize=1024)
def _compiled(pattern: str, timeout: float) -> BoundedPattern:
    return compile_bounded(pattern, timeout=timeout, where="the JSON Schema")


def _search(pattern: str, text: str) -> bool:
    return _compiled(pattern, regex_timeout()).search(text) is not None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(original: Any) -> Any:
    """`additionalProperties`, matching `patternProperties` on bounded patterns (jsonschema's
    own matches them with `re`); without `patternProperties` it is the original."""

    def keyword(validator: Any, allowed: Any, instance: Any, schema: Any) -> Any:
        patterns = schema.get("patternProperties")
        if not patterns or not validator.is_type(instance, "object"):
            yield from original(validator, allowed, instance, schema)
            return
        properties = schema.get("properties", {})
        extras = {
            key
            for key in instance
            if key not in properties and not any(_search(p, key) for p in patterns)
        }
        if validator.is_type(allowed, "object"):
            for extra in extras:
                yield from validator.descend(instance[extra], allowed, path=extra)
        elif not allowed and extras:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            listed = ", ".join(repr(each) for each in sorted(patterns))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {listed}")

    return keyword


@cache
def _bounded_validator(cls: Any) -> Any:
    """`cls` with its regex keywords on bounded patterns."""
    keywords = getattr(cls, "VALIDATORS", {})
    replaced: dict[str, Any] = {}
    if "pattern" in keywords:
        replaced["pattern"] = _pattern
    if "patternProperties" in keywords:
        replaced["patternProperties"] = _pattern_properties
    if "additionalProperties" in keywords:
        replaced["additionalProperties"] = _additional_properties(keywords["additionalProperties"])
    return validators.extend(cls, replaced) if replaced else cls  # type: ignore[no-untyped-call]


def bounded_validator_class(schema: dict[str, Any]) -> Any:
    """The jsonschema validator class for `schema`'s dialect, its `pattern`,
    `patternProperties` and `additionalProperties` on bounded patterns: for any schema a
    stranger wrote (a rubric's, an artifact type's content schema)."""
    return _bounded_validator(validators.validator_for(schema))


class SchemaScorer:
    name = "schema"
    description = "validates JSON content against a JSON Schema; every violation is evidence"

    def __init__(self) -> None:
        self._validators: dict[str, Validator] = {}

    def _validator(self, schema: dict[str, Any]) -> Validator:
        key = canonical_json(schema)
        validator = self._validators.get(key)
        if validator is None:
            cls = _bounded_validator(validators.validator_for(schema))
            validator = cls(schema, format_checker=FormatChecker(), registry=_NO_RETRIEVAL)
            self._validators[key] = validator
        return validator

    async def score(
        self, criterion: Criterion, target: Target, context: ScoringContext
    ) -> CriterionResult:
        schema = criterion.scoring.schema_
        if schema is None:
            return error_result(
                criterion,
                self.name,
                "no JSON Schema to validate against; set scoring.schema or scoring.schema_ref",
            )
        content = target.content
        if isinstance(content, str):
            try:
                content = json.loads(content)
            except json.JSONDecodeError as error:
                why = (
                    f"content is not JSON (line {error.lineno}, column {error.colno}: {error.msg})"
                )
                return result_from_value(
                    criterion, context, self.name, CheckResult(False, [why]), what="schema check"
                )
        try:
            errors = sorted(
                self._validator(schema).iter_errors(content), key=lambda e: list(e.absolute_path)
            )
        except Unresolvable as error:
            ref = getattr(error, "ref", str(error))
            return error_result(
                criterion,
                self.name,
                f"the JSON Schema refers to {ref!r}, outside itself; references are never read "
                "nor fetched: put the referred schema under `$defs` (or use scoring.schema_ref)",
            )
        evidence = [f"{_json_path(e.absolute_path)}: {e.message}" for e in errors]
        return result_from_value(
            criterion, context, self.name, CheckResult(not errors, evidence), what="schema check"
        )

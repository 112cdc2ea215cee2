"""The `schema` scorer: validate JSON content against the criterion's JSON Schema.

Valid content scores the highest level (or MET); invalid content the lowest level (or
UNMET) with every validation error, path and message, as evidence.
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema import FormatChecker, validators
from jsonschema.protocols import Validator

from rubricflow.model import Criterion
from rubricflow.results import CriterionResult, Target, canonical_json
from rubricflow.scoring import CheckResult, ScoringContext, error_result, result_from_value

__all__ = ["SchemaScorer"]


def _json_path(parts: Any) -> str:
    path = "$"
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


class SchemaScorer:
    name = "schema"
    description = "validates JSON content against a JSON Schema; every violation is evidence"

    def __init__(self) -> None:
        self._validators: dict[str, Validator] = {}

    def _validator(self, schema: dict[str, Any]) -> Validator:
        key = canonical_json(schema)
        validator = self._validators.get(key)
        if validator is None:
            cls = validators.validator_for(schema)
            validator = cls(schema, format_checker=FormatChecker())
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
        errors = sorted(
            self._validator(schema).iter_errors(content), key=lambda e: list(e.absolute_path)
        )
        evidence = [f"{_json_path(e.absolute_path)}: {e.message}" for e in errors]
        return result_from_value(
            criterion, context, self.name, CheckResult(not errors, evidence), what="schema check"
        )

"""Reading judge answers: JSON (bare, code-fenced, or embedded in prose), XML-style tags
(last match wins), JSON Schema validation with readable errors, and the escaping that
keeps content under review inside its delimiters."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from fractions import Fraction
from functools import lru_cache
from typing import Any

from rubricflow.errors import RubricflowError
from rubricflow.results import canonical_json

__all__ = [
    "DELIMITER_TAGS",
    "AnswerError",
    "escape_delimiters",
    "extract_json",
    "extract_tag",
    "parse_number",
    "reject_placeholders",
    "validate_answer",
]

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\r?\n?(.*?)```", re.DOTALL)
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_MAX_STARTS = 200
_MAX_ERRORS = 5

DELIMITER_TAGS = (
    "content",
    "query",
    "reference",
    "criterion",
    "criteria",
    "example",
    "examples",
    "levels",
    "level",
    "bands",
    "rubric",
    "rationale",
    "score",
    "answer",
    "response",
    "instructions",
    "evaluation",
)
_DELIMITER = re.compile(
    r"<(?=\s*/?\s*(?:" + "|".join(DELIMITER_TAGS) + r")(?![A-Za-z0-9_-]))", re.IGNORECASE
)


class AnswerError(RubricflowError):
    """A judge answer that cannot be used; the message is fit to send back to the judge."""


def escape_delimiters(text: str) -> str:
    """`text` with every `<` that would open or close one of the prompt's delimiter tags
    written as `&lt;`, so content under review cannot close `</content>` (or forge a
    `<score>`) and escape into the instructions. Everything else is left verbatim."""
    return _DELIMITER.sub("&lt;", text)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _loads(text: str) -> Any:
    return json.loads(text, parse_constant=_reject_constant)


def extract_json(text: str) -> Any:
    """The JSON value in a judge's answer: the whole text, else the first code-fenced
    block that parses, else the first `{...}` object embedded in the text.

    Raises `AnswerError` when there is none. NaN and Infinity are refused."""
    stripped = text.strip().lstrip("\ufeff")
    if not stripped:
        raise AnswerError("the answer is empty; reply with a JSON object")
    try:
        return _loads(stripped)
    except ValueError:
        pass
    for match in _FENCE.finditer(stripped):
        body = match.group(2).strip()
        try:
            return _loads(body)
        except ValueError:
            continue
    decoder = json.JSONDecoder(parse_constant=_reject_constant)
    starts = [index for index, char in enumerate(stripped) if char == "{"][:_MAX_STARTS]
    for index in starts:
        try:
            value, _end = decoder.raw_decode(stripped, index)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    shown = " ".join(stripped.split())
    shown = shown if len(shown) <= 120 else shown[:117] + "..."
    raise AnswerError(f"the answer is not JSON (it began: {shown!r}); reply with a JSON object")


@lru_cache(maxsize=256)
def _validator(schema_json: str) -> Any:
    from jsonschema import validators

    schema = json.loads(schema_json)
    cls = validators.validator_for(schema)
    return cls(schema)


_BY_IDENTITY: dict[int, tuple[Mapping[str, Any], Any]] = {}


def _validator_of(schema: Mapping[str, Any]) -> Any:
    """The validator of `schema`, found by the schema object itself before its text: the
    answer schemas are module constants, and serialising one to find its validator cost
    as much as the validation."""
    known = _BY_IDENTITY.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    validator = _validator(canonical_json(schema))
    if len(_BY_IDENTITY) >= 256:
        _BY_IDENTITY.clear()
    _BY_IDENTITY[id(schema)] = (schema, validator)  # the reference keeps the id unique
    return validator


def _where(path: Any) -> str:
    where = "$"
    for part in path:
        where += f"[{part}]" if isinstance(part, int) else f".{part}"
    return where


def validate_answer(value: Any, schema: Mapping[str, Any]) -> None:
    """Raise `AnswerError` listing (up to five) places where `value` breaks `schema`, or
    naming a text that is a prompt's placeholder (`reject_placeholders`)."""
    validator = _validator_of(schema)
    errors = sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))
    if not errors:
        reject_placeholders(value)
        return
    shown = [f"{_where(e.absolute_path)}: {e.message}" for e in errors[:_MAX_ERRORS]]
    more = f" (and {len(errors) - _MAX_ERRORS} more)" if len(errors) > _MAX_ERRORS else ""
    raise AnswerError("the answer does not match the schema: " + "; ".join(shown) + more)


#: the stand-ins the prompts show where the judge's own words go (`<why, citing the
#: content>` in system.j2, `<3 to 5 sentences>` in the feedback prompt, RubricJudgeSpec's
#: `<rationale>...</rationale>`), compared without the angle brackets, quotes, case and a
#: final full stop. An answer that copies one explains nothing: a small model does that.
PLACEHOLDERS = frozenset(
    {
        "why, citing the content",
        "3 to 5 sentences",
        "criterion id",
        "one of the level ids",
        "your explanation",
        "...",
        "\u2026",
    }
)


def _is_placeholder(text: str) -> bool:
    shown = text.strip().strip("\"'`").strip()
    if shown.startswith("<") and shown.endswith(">"):
        shown = shown[1:-1].strip()
    if shown in ("...", "\u2026"):
        return True
    return bool(shown) and shown.rstrip(".").strip().casefold() in PLACEHOLDERS


def reject_placeholders(value: Any, where: str = "$") -> None:
    """Raise `AnswerError` when a text in the (schema-valid) answer `value` is a prompt's
    placeholder rather than the judge's words: such an answer is sent back once, then the
    criterion is `unable_to_evaluate`, never scored on an explanation that is not one."""
    if isinstance(value, str):
        if _is_placeholder(value):
            raise AnswerError(
                f"{where} is the prompt's placeholder {value.strip()!r}, not your own words; "
                "write the actual reasoning, citing the content"
            )
    elif isinstance(value, Mapping):
        for key, item in value.items():
            reject_placeholders(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            reject_placeholders(item, f"{where}[{index}]")


def extract_tag(text: str, name: str) -> str | None:
    """The text inside the LAST `<name>...</name>` in `text` (tag names are matched
    case-insensitively), stripped; None when there is none."""
    pattern = re.compile(
        rf"<\s*{re.escape(name)}\s*>(.*?)<\s*/\s*{re.escape(name)}\s*>", re.IGNORECASE | re.DOTALL
    )
    found = pattern.findall(text)
    return found[-1].strip() if found else None


def parse_number(text: str) -> Fraction:
    """The first number in `text` (`4.5`, `4.5/5`, `Score: 7`), exactly as written (`8.7`
    is 87/10, not the nearest float); `AnswerError` when there is none or it is too large
    to be a score."""
    match = _NUMBER.search(text)
    if match is None:
        raise AnswerError(f"{text[:60]!r} holds no number")
    written = match.group(0)
    _mantissa, _e, exponent = written.lower().partition("e")
    # a huge exponent would make Fraction build a huge power of ten; no score needs one
    if not math.isfinite(float(written)) or (exponent and abs(int(exponent)) > 400):
        raise AnswerError(f"{written!r} is not a finite number")
    return Fraction(written)

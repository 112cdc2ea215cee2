"""The rubric data model: immutable, validated values that know nothing of storage or LLMs.

A `Rubric` holds `Criterion` values; a criterion is binary (MET/UNMET), graded by
`levels` (each with a score in 0..1), or banded by `score_ranges` (AgentV's 0..10
bands). How a criterion is scored is named by its `Scoring` spec; the scorers
themselves are plugins. Every rule break raises `RubricValidationError` listing each
problem with its field path (`criteria[2].score_ranges`) and the fix.
"""

from __future__ import annotations

import datetime
import hashlib
import itertools
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from fractions import Fraction
from functools import cached_property
from typing import Annotated, Any, Literal, NoReturn, SupportsIndex

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from rubricflow.errors import ConfigurationError, Problem, RubricValidationError

__all__ = [
    "SEMVER_PATTERN",
    "Criterion",
    "CriterionGroup",
    "Example",
    "LengthPenalty",
    "Level",
    "Limits",
    "Rubric",
    "Scale",
    "ScoreFormula",
    "ScoreRange",
    "Scoring",
    "Subcriterion",
    "UnscoredPolicy",
    "ZeroWeights",
    "limit_setting",
    "parse_rubric",
    "semver_key",
]

SEMVER_PATTERN = (
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
_SEMVER = re.compile(SEMVER_PATTERN)
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:/-]*$"
BAND_MIN, BAND_MAX = 0, 10

UnscoredPolicy = Literal["fail_closed", "exclude", "count_as_zero"]
ZeroWeights = Literal["mean", "zero"]
"""What a set of criteria (or groups) scores when every weight in it is 0: the plain mean
of their scores (rubricflow's default), or 0 (AgentV: satisfied weight / total weight)."""
ScoreFormula = Literal["clamp", "rar"]
"""How weighted criterion scores become the score (DESIGN decision 3): `clamp` is
clamp(S/P) (else clamp(1 + S/N) with no positive weight), rubricflow's and HealthBench's
formula; `rar` is Rubrics-as-Rewards' S / sum(|w|), clamped to 0..1, where a pitfall's
weight also counts in the denominator."""
GROUP_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_:/-]*$"  # no dot: `group.item` must split one way

# Limits that make every value the model accepts fit the store on both backends (the
# PostgreSQL columns of rubricflow/store/tables.py), so a rubric is refused at validation,
# never by the database. In characters, as PostgreSQL's VARCHAR(n) counts them.
MAX_ID_LENGTH = 200
"""Ids: rubric, criterion (as qualified `group.item`), level, group, artifact, artifact type,
run, rubric target type (VARCHAR(200))."""
MAX_VERSION_LENGTH = 100
"""A rubric version (VARCHAR(100))."""
MAX_NAME_LENGTH = 500
"""Names and titles: a rubric's, criterion's, group's or level's name, an artifact title."""
MAX_METHOD_LENGTH = 100
"""A scoring method (the scorer's name, VARCHAR(100))."""
MAX_TARGET_ID_LENGTH = 500
"""A target id (VARCHAR(500))."""
NUL_MESSAGE = "holds a NUL character (\\u0000), which no store can keep; remove it"


@dataclass(frozen=True)
class Limits:
    """Caps on the size of a rubric and on what rendering its templates may cost, so a
    document from anyone is refused (naming the cap and its setting) before it can hold
    up a process. Each is a setting (`RUBRICFLOW_<NAME>` in docs/settings.md); these are
    the defaults."""

    max_criteria: int = 500
    """criteria in one rubric"""
    max_levels: int = 20
    """levels of one criterion"""
    max_rubric_bytes: int = 2 * 1024 * 1024
    """bytes of one rubric document (UTF-8), checked before it is parsed"""
    template_iterations: int = 1_000_000
    """loop iterations of one render of a criterion's template"""
    template_output: int = 1_000_000
    """characters one render of a template may print"""
    template_built: int = 16_000_000
    """characters one render of a template may build in all (strings, lists, numbers)"""
    template_seconds: float = 5.0
    """seconds one render of a template may take"""

    @classmethod
    def current(cls) -> Limits:
        """The limits of the settings in force (`rubricflow.settings.current()`); a
        setting left unset keeps its default."""
        from rubricflow.settings import current

        try:
            settings = current()
        except ConfigurationError:  # a bad variable: the entry point reports it, not a rubric
            return _DEFAULT_LIMITS
        values = {
            spec.name: value
            for spec in dataclass_fields(cls)
            if (value := getattr(settings, spec.name, None)) is not None
        }
        return cls(**values) if values else _DEFAULT_LIMITS


_DEFAULT_LIMITS = Limits()


def limit_setting(name: str) -> str:
    """The environment variable that sets field `name` of `Limits`, as a message names
    it (the field's name while the settings do not define it)."""
    from rubricflow.settings import env_name

    try:
        return env_name(name)
    except KeyError:
        return name


def _rule(path: str, message: str) -> PydanticCustomError:
    """A model-rule error whose `path` (relative to the value being validated) survives into
    the problem list, so a duplicate level id reports `criteria[1].levels[2].id`."""
    return PydanticCustomError("rubric_rule", "{message}", {"path": path, "message": message})


def _storable(value: str) -> str:
    """Text a store can keep: PostgreSQL refuses NUL in text, so both backends refuse it."""
    if "\x00" in value:
        raise _rule("", NUL_MESSAGE)
    return value


Text = Annotated[str, AfterValidator(_storable)]
"""Free text (descriptions, labels): any length, no NUL."""
Name = Annotated[str, Field(max_length=MAX_NAME_LENGTH), AfterValidator(_storable)]
"""A name or title: at most MAX_NAME_LENGTH characters, no NUL."""
Id = Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH, pattern=ID_PATTERN)]
"""An id: letters, digits and _ . : / -, at most MAX_ID_LENGTH characters."""
Reference = Annotated[str, Field(max_length=MAX_ID_LENGTH), AfterValidator(_storable)]
"""A name that refers to something registered (a function, metric, model, target type)."""


_MAX_INT_BITS = 4000  # well under Python's 4300-digit limit for int <-> str conversion


def _json_key(key: Any, path: str) -> str:
    if isinstance(key, str):
        if "\x00" in key:
            raise _rule(path, f"key {_shown(key)} {NUL_MESSAGE}")
        return key
    if isinstance(key, bool) or key is None:
        return json.dumps(key)
    if (isinstance(key, int) and key.bit_length() <= _MAX_INT_BITS) or (
        isinstance(key, float) and math.isfinite(key)
    ):
        return str(key)
    raise _rule(path, f"key {_shown(key)} is not text; quote it")


def _json_value(value: Any, path: str) -> Any:
    """`value` as plain JSON data (text keys, lists, finite numbers), so a rubric dumps and
    loads back unchanged; anything that has no JSON form is a rule break at `path`."""
    if isinstance(value, str):
        if "\x00" in value:
            raise _rule(path, NUL_MESSAGE)
        return value
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if value.bit_length() > _MAX_INT_BITS:
            raise _rule(path, "whole number too large to write as JSON; use a smaller one")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _rule(path, f"{value} is not a finite number; JSON has no inf or nan")
        return value
    if isinstance(value, Mapping):
        return _json_object(value, path)
    if isinstance(value, list | tuple):
        return [_json_value(item, f"{path}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    raise _rule(
        path,
        f"a {type(value).__name__} has no JSON form; use text, numbers, true/false, null, "
        "lists and mappings",
    )


def _json_object(value: Mapping[Any, Any], path: str) -> dict[str, Any]:
    """A mapping as a JSON object: text keys (each once), JSON values."""
    result: dict[str, Any] = {}
    for key, item in value.items():
        text = _json_key(key, path)
        where = f"{path}.{text}" if path else text
        if text in result:
            raise _rule(where, f"key {text!r} appears twice once keys are text; rename one")
        result[text] = _json_value(item, where)
    return result


def _json_mapping(value: Any) -> Any:
    """Before-validator for free-form mappings (metadata, scorer config, JSON Schemas)."""
    if not isinstance(value, Mapping):
        return value
    try:
        return _json_value(value, "")
    except RecursionError:
        raise _rule("", "nested too deeply; flatten it") from None


_FROZEN_FIX = (
    "rubric data cannot be changed in place (its content hash would go stale); build a "
    "new rubric: parse a changed document, or model_copy(update=...) with a new mapping"
)


class FrozenDict(dict[str, Any]):
    """A mapping inside a rubric (metadata, scorer config, a JSON Schema): a `dict` for
    every reader (json, jsonschema, isinstance checks), but refusing every change."""

    __slots__ = ()

    def _refuse(self) -> NoReturn:
        raise TypeError(_FROZEN_FIX)

    def __setitem__(self, key: str, value: Any) -> NoReturn:
        self._refuse()

    def __delitem__(self, key: str) -> NoReturn:
        self._refuse()

    def __ior__(self, other: Any) -> NoReturn:  # type: ignore[misc]
        self._refuse()

    def clear(self) -> NoReturn:
        self._refuse()

    def pop(self, *args: Any) -> NoReturn:
        self._refuse()

    def popitem(self) -> NoReturn:
        self._refuse()

    def setdefault(self, *args: Any) -> NoReturn:
        self._refuse()

    def update(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._refuse()

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        return self


class FrozenList(list[Any]):
    """A list inside a rubric's free-form mappings: a `list` for every reader, refusing
    every change."""

    __slots__ = ()

    def _refuse(self) -> NoReturn:
        raise TypeError(_FROZEN_FIX)

    def __setitem__(self, index: Any, value: Any) -> NoReturn:
        self._refuse()

    def __delitem__(self, index: Any) -> NoReturn:
        self._refuse()

    def __iadd__(self, other: Any) -> NoReturn:  # type: ignore[misc]
        self._refuse()

    def __imul__(self, count: SupportsIndex) -> NoReturn:
        self._refuse()

    def append(self, value: Any) -> NoReturn:
        self._refuse()

    def extend(self, values: Any) -> NoReturn:
        self._refuse()

    def insert(self, index: SupportsIndex, value: Any) -> NoReturn:
        self._refuse()

    def remove(self, value: Any) -> NoReturn:
        self._refuse()

    def pop(self, index: SupportsIndex = -1) -> NoReturn:
        self._refuse()

    def clear(self) -> NoReturn:
        self._refuse()

    def sort(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._refuse()

    def reverse(self) -> NoReturn:
        self._refuse()

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))

    def __copy__(self) -> FrozenList:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenList:
        return self


def _frozen(value: Any) -> Any:
    if isinstance(value, dict):
        return FrozenDict({key: _frozen(item) for key, item in value.items()})
    if isinstance(value, list):
        return FrozenList(_frozen(item) for item in value)
    return value


JsonMapping = Annotated[dict[str, Any], BeforeValidator(_json_mapping), AfterValidator(_frozen)]


class _Frozen(BaseModel):
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        allow_inf_nan=False,
        populate_by_name=True,
        str_strip_whitespace=False,
    )


class Level(_Frozen):
    """One grade of a graded criterion; `score` is its value on the normalised 0..1 scale."""

    id: Id
    label: Name = ""
    description: Text = ""
    score: Annotated[float, Field(ge=0.0, le=1.0)]
    indicators: tuple[Text, ...] = ()

    @model_validator(mode="after")
    def _default_label(self) -> Level:
        if not self.label:
            object.__setattr__(self, "label", self.id)
        return self


class ScoreRange(_Frozen):
    """An AgentV band: judge scores `min`..`max` (whole numbers, inclusive) mean `description`."""

    min: Annotated[int, Field(ge=BAND_MIN, le=BAND_MAX)]
    max: Annotated[int, Field(ge=BAND_MIN, le=BAND_MAX)]
    description: Text = ""

    @model_validator(mode="after")
    def _ordered(self) -> ScoreRange:
        if self.min > self.max:
            raise _rule("", f"band {self.min}-{self.max} ends before it starts; swap min and max")
        return self


def _expand_band_shorthand(value: Any) -> Any:
    """AgentV's shorthand `{0: "...", 3: "...", 10: "..."}`: keys are lower bounds, each band
    ends one below the next key and the last one ends at 10."""
    if not isinstance(value, Mapping):
        return value
    bounds: list[tuple[int, Any]] = []
    for key, text in value.items():
        shown = _shown(key)
        where = key if isinstance(key, str) else shown
        try:
            number = float(key)
        except OverflowError:
            number = math.inf
        except (TypeError, ValueError):
            raise _rule(
                where, f"band key {shown} is not a number; keys are band lower bounds 0..10"
            ) from None
        if not number.is_integer() or not BAND_MIN <= number <= BAND_MAX:
            raise _rule(where, f"band key {shown} must be a whole number from 0 to 10")
        if any(low == int(number) for low, _text in bounds):
            raise _rule(where, f"band key {shown} repeats lower bound {int(number)}; keep one")
        bounds.append((int(number), text))
    bounds.sort(key=lambda item: item[0])
    bands = []
    for index, (low, text) in enumerate(bounds):
        high = bounds[index + 1][0] - 1 if index + 1 < len(bounds) else BAND_MAX
        bands.append({"min": low, "max": high, "description": text})
    return bands


BandList = Annotated[
    tuple[ScoreRange, ...],
    BeforeValidator(
        _expand_band_shorthand,
        json_schema_input_type=list[ScoreRange] | dict[str, str],
    ),
]


class Example(_Frozen):
    """A few-shot example for judges: an output, and what it earned (a level id or a score)."""

    input: Text | None = None
    output: Text
    score: float | None = None
    level: Text | None = None
    label: Text | None = None
    explanation: Text | None = None


class Subcriterion(_Frozen):
    """An aspect a judge should consider inside its criterion (OpenRubricRL `subcriteria`)."""

    name: Annotated[Name, Field(min_length=1)]
    description: Text = ""


class Scoring(_Frozen):
    """How a criterion is scored: the scorer plugin's `method` name and its options.

    `method="llm"` lets the engine pick the LLM strategy that fits the criterion (verdict
    for binary, level classification for levels, band score for score_ranges).
    """

    method: Annotated[
        str, Field(min_length=1, max_length=MAX_METHOD_LENGTH), AfterValidator(_storable)
    ] = "llm"
    function: Reference | None = None
    schema_: JsonMapping | None = Field(default=None, alias="schema")
    schema_ref: Text | None = None
    template: Text | None = None
    output_schema: JsonMapping | None = None
    metric: Reference | None = None
    model: Reference | None = None
    config: JsonMapping = Field(default_factory=dict)

    @model_validator(mode="after")
    def _options_fit_method(self) -> Scoring:
        if self.method == "deterministic" and not self.function:
            raise _rule(
                "function",
                "the deterministic method needs `function`: a registered check name "
                "(or `module:function`, imported only when the caller allows it)",
            )
        if self.method == "schema" and self.schema_ is None and not self.schema_ref:
            raise _rule(
                "schema",
                "the schema method needs `schema` (an inline JSON Schema) or `schema_ref` "
                "(a file path relative to the rubric file)",
            )
        if self.method == "metric" and not self.metric:
            raise _rule("metric", "the metric method needs `metric`: a metric name such as bleu")
        if self.schema_ is not None:
            _check_json_schema(self.schema_)
        if self.output_schema is not None:
            _check_json_schema(self.output_schema, field="output_schema")
        if self.template is not None:
            _check_template(self.template)
        return self


def _check_json_schema(schema: dict[str, Any], field: str = "schema") -> None:
    from jsonschema import exceptions, validators

    dialect = schema.get("$schema")
    if dialect is not None and not isinstance(dialect, str):
        raise _rule(
            f"{field}.$schema",
            f"`$schema` must be the URI of a JSON Schema dialect (got {_shown(dialect)}); "
            "write e.g. https://json-schema.org/draft/2020-12/schema or leave it out",
        )
    try:
        validators.validator_for(schema).check_schema(schema)
    except exceptions.SchemaError as error:
        where = "/".join(str(part) for part in error.absolute_path) or "(root)"
        raise _rule(
            field,
            f"not a valid JSON Schema at {where}: {error.message}; fix the schema",
        ) from None
    except (RecursionError, ValueError, TypeError, LookupError) as error:
        raise _rule(field, f"cannot check this JSON Schema: {error}; fix the schema") from None


def _check_template(template: str) -> None:
    from jinja2 import TemplateSyntaxError
    from jinja2.sandbox import SandboxedEnvironment

    try:
        SandboxedEnvironment().parse(template)
    except TemplateSyntaxError as error:
        raise _rule(
            "template",
            f"Jinja2 template syntax error at template line {error.lineno}: {error.message}; "
            "fix the template",
        ) from None
    except RecursionError:
        raise _rule("template", "Jinja2 template is nested too deeply; simplify it") from None


class Criterion(_Frozen):
    """One thing a rubric checks. Weight may be negative (a penalty criterion); `required`
    makes a failure of this criterion fail the whole evaluation."""

    id: Id
    name: Name = ""
    description: Text = ""
    weight: float = 1.0
    required: StrictBool = False
    min_score: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    levels: tuple[Level, ...] = ()
    score_ranges: BandList = ()
    examples: tuple[Example, ...] = ()
    subcriteria: tuple[Subcriterion, ...] = ()
    scoring: Scoring = Field(default_factory=Scoring)
    section: Text | None = None
    group: Reference | None = None
    """The criterion group (a rubric's `groups`) this criterion is scored in; its id is
    then qualified as `group.item` (written either way in a document)."""
    scope: Literal["conversation", "each_turn", "last_turn", "turn", "trajectory"] | None = None
    """What of a conversation the criterion judges: the whole (`conversation`, the
    default), every assistant turn (`each_turn`, combined by `aggregation`), the last
    assistant turn, the reply to the `turn`-th user message (`turn`), or the sequence of
    tool calls (`trajectory`). Ignored for text."""
    turn: Annotated[int, Field(ge=1, le=100_000)] | None = None
    """With `scope: turn`: which exchange, counted by user messages from 1; the
    criterion judges the assistant's last message before the next user message."""
    aggregation: Literal["min", "mean", "all"] = "min"
    """How `each_turn` combines the turns' scores: the lowest, the mean, or 1 only when
    every turn passes (else 0)."""

    @property
    def kind(self) -> Literal["binary", "levels", "bands"]:
        """binary (MET/UNMET), levels (graded) or bands (0..10 score ranges)."""
        if self.levels:
            return "levels"
        if self.score_ranges:
            return "bands"
        return "binary"

    def level(self, level_id: str) -> Level | None:
        return next((level for level in self.levels if level.id == level_id), None)

    @property
    def lowest_level(self) -> Level | None:
        return min(self.levels, key=lambda level: level.score) if self.levels else None

    @property
    def highest_level(self) -> Level | None:
        return max(self.levels, key=lambda level: level.score) if self.levels else None

    @model_validator(mode="after")
    def _consistent(self) -> Criterion:
        if not self.name:
            object.__setattr__(self, "name", self.id)
        if self.levels and self.score_ranges:
            raise _rule(
                "score_ranges",
                "a criterion is graded by `levels` or by `score_ranges`, not both; remove one",
            )
        if len(self.levels) == 1:
            raise _rule(
                "levels",
                "a graded criterion needs at least two levels; for pass/fail leave `levels` out",
            )
        seen: dict[str, int] = {}
        for index, level in enumerate(self.levels):
            if level.id in seen:
                raise _rule(
                    f"levels[{index}].id",
                    f"duplicate level id {level.id!r} (also levels[{seen[level.id]}]); "
                    "give every level of a criterion its own id",
                )
            seen[level.id] = index
        for index, example in enumerate(self.examples):
            if example.level is not None and example.level not in seen:
                valid = ", ".join(seen) or "none; this criterion has no levels"
                raise _rule(
                    f"examples[{index}].level",
                    f"example level {example.level!r} is not a level of this criterion "
                    f"(levels: {valid}); use one of its level ids or give a `score`",
                )
        _check_bands(self.score_ranges)
        if (self.scope == "turn") != (self.turn is not None):
            raise _rule(
                "turn",
                "`scope: turn` and `turn: N` go together: give both (the reply to the N-th "
                "user message), or neither",
            )
        return self


def _check_bands(bands: tuple[ScoreRange, ...]) -> None:
    if not bands:
        return
    ordered = sorted(bands, key=lambda band: (band.min, band.max))
    if ordered[0].min != BAND_MIN:
        raise _rule(
            "score_ranges",
            f"bands leave a gap: nothing covers {BAND_MIN}-{ordered[0].min - 1}; "
            "the first band must start at 0",
        )
    for previous, band in itertools.pairwise(ordered):
        if band.min <= previous.max:
            raise _rule(
                "score_ranges",
                f"bands {previous.min}-{previous.max} and {band.min}-{band.max} overlap; "
                "start each band one above the previous band's end",
            )
        if band.min > previous.max + 1:
            raise _rule(
                "score_ranges",
                f"bands leave a gap: nothing covers {previous.max + 1}-{band.min - 1}; "
                "bands must cover 0..10 without gaps",
            )
    if ordered[-1].max != BAND_MAX:
        raise _rule(
            "score_ranges",
            f"bands leave a gap: nothing covers {ordered[-1].max + 1}-{BAND_MAX}; "
            "the last band must end at 10",
        )


class CriterionGroup(_Frozen):
    """A group of criteria scored on its own by the one formula (an AgentV grader).

    A rubric with groups scores the weighted mean of its groups' scores (`weight`, equal
    by default). `required` makes a group whose score is below `min_score` (or, without
    one, the pass threshold) fail the whole evaluation; with `on_failure: zero` it also
    makes the evaluation's score 0 (AgentV's required graders). `zero_weights` says what
    the group scores when all its criteria weigh 0 (unset: the rubric's `zero_weights`).
    """

    id: Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH, pattern=GROUP_ID_PATTERN)]
    name: Name = ""
    description: Text = ""
    weight: Annotated[float, Field(ge=0.0)] = 1.0
    required: StrictBool = False
    min_score: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    on_failure: Literal["fail", "zero"] = "fail"
    zero_weights: ZeroWeights | None = None

    @model_validator(mode="after")
    def _zero_needs_a_gate(self) -> CriterionGroup:
        if self.on_failure == "zero" and not self.required:
            raise _rule(
                "on_failure",
                "on_failure: zero applies to a required group (it zeroes the score when the "
                "group is below its bar): set required: true, or remove on_failure",
            )
        return self

    @model_validator(mode="after")
    def _default_name(self) -> CriterionGroup:
        if not self.name:
            object.__setattr__(self, "name", self.id)
        return self


class Scale(_Frozen):
    """The scale scores are also reported on (e.g. 0..10); `discrete` rounds the scaled score."""

    min: float = 0.0
    max: float = 1.0
    type: Literal["continuous", "discrete"] = "continuous"

    @model_validator(mode="after")
    def _ordered(self) -> Scale:
        if not self.max > self.min:
            raise _rule("max", f"scale max ({self.max}) must be greater than min ({self.min})")
        return self

    def from_unit(self, score: float | Fraction) -> float:
        """Map a normalised 0..1 score onto this scale, exactly, and give the nearest float
        (0.29 on 0..100 is 29.0, not 28.999999999999996). A float is read as the decimal it
        prints as. Discrete scales round halves up, so 0.5 on 0..5 is 3, not Python's
        round-half-to-even 2."""
        if self.min == 0 and self.max == 1 and self.type == "continuous":
            return float(score)  # the usual 0..1 scale: the nearest float, nothing to map
        low, high = Fraction(repr(float(self.min))), Fraction(repr(float(self.max)))
        unit = score if isinstance(score, Fraction) else Fraction(repr(float(score)))
        value = low + unit * (high - low)
        if self.type == "discrete":
            return float(math.floor(value + Fraction(1, 2)))
        return float(value)


def _declare_schema_pointer(schema: dict[str, Any]) -> None:
    properties = schema.setdefault("properties", {})
    properties["$schema"] = {
        "description": "URI of this JSON Schema, for editors; ignored when loading",
        "type": "string",
    }


class LengthPenalty(_Frozen):
    """A penalty for long content, subtracted from the score (the `rubric` package's
    `LengthPenalty`, computed as it computes it).

    The content's words (whitespace-separated, as the package counts by default) past
    `free_budget` cost `penalty_at_cap * ((count - free_budget) / (max_cap -
    free_budget)) ** exponent`, and `penalty_at_cap` from `max_cap` on; the score never
    goes below 0 and the raw score is left as it was. `penalty_type` says what is
    counted: `all` the content, `output_only` what is outside `<thinking>...</thinking>`
    (or inside `<output>...</output>`), `thinking_only` what is inside it. A passing
    evaluation whose penalised score falls below the bar fails."""

    free_budget: Annotated[int, Field(ge=0)] = 6000
    max_cap: Annotated[int, Field(ge=1)] = 8000
    penalty_at_cap: Annotated[float, Field(ge=0.0)] = 0.5
    exponent: Annotated[float, Field(gt=0.0)] = 1.6
    penalty_type: Literal["all", "output_only", "thinking_only"] = "all"

    @model_validator(mode="before")
    @classmethod
    def _package_spelling(cls, data: Any) -> Any:
        """The package writes the penalty type in capitals (`OUTPUT_ONLY`)."""
        if isinstance(data, Mapping) and isinstance(data.get("penalty_type"), str):
            data = {**data, "penalty_type": data["penalty_type"].lower()}
        return data

    @model_validator(mode="after")
    def _cap_after_budget(self) -> LengthPenalty:
        if self.max_cap <= self.free_budget:
            raise _rule(
                "max_cap",
                f"max_cap ({self.max_cap}) must be above free_budget ({self.free_budget}): "
                "the penalty grows from the budget to the cap",
            )
        return self


class Rubric(_Frozen):
    """A versioned rubric: criteria, how they aggregate, and when the result passes."""

    model_config = ConfigDict(json_schema_extra=_declare_schema_pointer)

    id: Id
    name: Name = ""
    version: Annotated[str, Field(max_length=MAX_VERSION_LENGTH)] = "1.0.0"
    description: Text = ""
    target_type: Reference | None = None
    pass_threshold: Annotated[float, Field(ge=0.0, le=1.0)] = 0.7
    scale: Scale = Field(default_factory=Scale)
    unscored_policy: UnscoredPolicy = "fail_closed"
    zero_weights: ZeroWeights = "mean"
    score_formula: ScoreFormula = "clamp"
    length_penalty: LengthPenalty | None = None
    groups: tuple[CriterionGroup, ...] = ()
    criteria: Annotated[tuple[Criterion, ...], Field(min_length=1)]
    metadata: JsonMapping = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _drop_schema_pointer(cls, data: Any) -> Any:
        """A document may name its JSON Schema in `$schema` (editors use it); it is not
        part of the rubric."""
        if isinstance(data, Mapping) and "$schema" in data:
            if not isinstance(data["$schema"], str):
                raise _rule("$schema", "`$schema` must be the URI of the rubric JSON Schema")
            data = {key: value for key, value in data.items() if key != "$schema"}
        return data

    @model_validator(mode="before")
    @classmethod
    def _within_limits(cls, data: Any) -> Any:
        """Refuse more criteria, or levels in a criterion, than `Limits` allows, before
        any of them is validated (a 50,000-criterion document is refused at once)."""
        if not isinstance(data, Mapping):
            return data
        criteria = data.get("criteria")
        if not isinstance(criteria, list | tuple):
            return data
        limits = Limits.current()
        if len(criteria) > limits.max_criteria:
            raise _rule(
                "criteria",
                f"the rubric has {len(criteria):,} criteria; the limit is "
                f"{limits.max_criteria:,} (setting {limit_setting('max_criteria')}): split "
                "it into several rubrics",
            )
        for index, criterion in enumerate(criteria):
            levels = criterion.get("levels") if isinstance(criterion, Mapping) else None
            if isinstance(levels, list | tuple) and len(levels) > limits.max_levels:
                raise _rule(
                    f"criteria[{index}].levels",
                    f"the criterion has {len(levels):,} levels; the limit is "
                    f"{limits.max_levels:,} (setting {limit_setting('max_levels')}): merge "
                    "levels",
                )
        return data

    @field_validator("version")
    @classmethod
    def _semver(cls, value: str) -> str:
        if not _SEMVER.match(value):
            raise _rule(
                "",
                f"version {value!r} is not semantic versioning; write MAJOR.MINOR.PATCH "
                "such as 1.0.0 (optionally -pre.1 or +build)",
            )
        return value

    @model_validator(mode="after")
    def _unique_criteria(self) -> Rubric:
        if not self.name:
            object.__setattr__(self, "name", self.id)
        if self.groups or any(c.group is not None for c in self.criteria):
            object.__setattr__(self, "criteria", self._grouped_criteria())
        seen: dict[str, int] = {}
        for index, criterion in enumerate(self.criteria):
            if len(criterion.id) > MAX_ID_LENGTH:
                raise _rule(
                    f"criteria[{index}].id",
                    f"criterion id {_shown(criterion.id)} is {len(criterion.id)} characters "
                    f"as `group.item`; the limit is {MAX_ID_LENGTH}: shorten it or its group id",
                )
            if criterion.id in seen:
                where = f" in group {criterion.group!r}" if criterion.group else ""
                raise _rule(
                    f"criteria[{index}].id",
                    f"duplicate criterion id {criterion.id!r}{where} "
                    f"(also criteria[{seen[criterion.id]}]); give every criterion its own id",
                )
            seen[criterion.id] = index
        return self

    def _grouped_criteria(self) -> tuple[Criterion, ...]:
        """Check the groups and qualify each grouped criterion's id as `group.item`."""
        declared: dict[str, int] = {}
        for index, declared_group in enumerate(self.groups):
            group_id = declared_group.id
            if group_id in declared:
                raise _rule(
                    f"groups[{index}].id",
                    f"duplicate group id {group_id!r} (also groups[{declared[group_id]}]); "
                    "give every group its own id",
                )
            declared[group_id] = index
        names = ", ".join(declared) or "none"
        criteria = []
        used: set[str] = set()
        for index, criterion in enumerate(self.criteria):
            group = criterion.group
            if group is None:
                raise _rule(
                    f"criteria[{index}].group",
                    f"criterion {criterion.id!r} has no group, but this rubric scores by "
                    f"groups ({names}); give it `group:` one of them",
                )
            if group not in declared:
                raise _rule(
                    f"criteria[{index}].group",
                    f"group {group!r} is not declared under `groups` (declared: {names}); "
                    "add it there or fix the spelling",
                )
            used.add(group)
            if not criterion.id.startswith(f"{group}."):
                criterion = criterion.model_copy(update={"id": f"{group}.{criterion.id}"})
            criteria.append(criterion)
        for group_id, index in declared.items():
            if group_id not in used:
                raise _rule(
                    f"groups[{index}]",
                    f"group {group_id!r} has no criteria; give it some (`group: {group_id}` "
                    "on a criterion) or remove it",
                )
        return tuple(criteria)

    def group(self, group_id: str) -> CriterionGroup | None:
        return next((g for g in self.groups if g.id == group_id), None)

    def criterion(self, criterion_id: str) -> Criterion | None:
        return next((c for c in self.criteria if c.id == criterion_id), None)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Rubric:
        """A changed copy, validated like a new rubric, so its content hash is its own
        (pydantic's copy would keep this rubric's hash and skip every rule)."""
        if not update:
            return self  # immutable: the rubric itself is as good as a copy
        fields = {name: getattr(self, name) for name in type(self).model_fields}
        try:
            return type(self).model_validate({**fields, **update})
        except ValidationError as error:
            raise RubricValidationError(problems_from_validation_error(error)) from None

    def to_dict(self) -> dict[str, Any]:
        """The native document for this rubric (defaults left out, JSON-compatible)."""
        return self.model_dump(mode="json", by_alias=True, exclude_defaults=True)

    @cached_property
    def content_hash(self) -> str:
        """sha256 of the canonical JSON of `to_dict()`; fields left at their defaults do not
        count, so adding an optional field in a later release leaves old hashes unchanged."""
        canonical = json.dumps(
            self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


_FIX_BY_TYPE = {
    "missing": "required field is missing; add it",
    "extra_forbidden": "unknown field; remove it or check its spelling",
    "string_type": "expected text (a string)",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
    "int_type": "expected a whole number",
    "int_parsing": "expected a whole number",
    "int_from_float": "expected a whole number",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "dict_type": "expected a mapping (key: value pairs)",
    "model_type": "expected a mapping (key: value pairs)",
    "model_attributes_type": "expected a mapping (key: value pairs)",
    "list_type": "expected a list",
    "tuple_type": "expected a list",
    "finite_number": "expected a finite number (not inf or nan)",
    "string_too_short": "must not be empty; write some text",
}
_BOUND_TYPES = ("greater_than", "greater_than_equal", "less_than", "less_than_equal")


def _format_loc(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def problems_from_validation_error(error: ValidationError) -> list[Problem]:
    """Turn pydantic's errors into `Problem`s with native field paths and a fix each."""
    problems: list[Problem] = []
    details = error.errors(include_url=False)
    for detail in details:
        # pydantic puts the failing member of a union or a before-validator in the loc; drop it
        loc = tuple(
            part
            for part in detail["loc"]
            if not (isinstance(part, str) and ("[" in part or part.startswith("function-")))
        )
        path = _format_loc(loc)
        kind = detail["type"]
        ctx = detail.get("ctx") or {}
        if kind == "rubric_rule":
            extra = str(ctx.get("path", ""))
            if extra:
                path = f"{path}{'' if extra.startswith('[') or not path else '.'}{extra}"
            message = str(ctx.get("message", detail["msg"]))
        elif kind == "too_short":
            if any(
                other["loc"][: len(detail["loc"])] == detail["loc"] and other is not detail
                for other in details
            ):
                continue  # the items themselves failed; their problems say why
            what = "criterion" if path == "criteria" else "item"
            message = f"needs at least one {what}; add one under `{path.split('.')[-1]}`"
        elif kind in _FIX_BY_TYPE:
            got = detail.get("input")
            shown = "" if kind in ("missing", "extra_forbidden") else f" (got {_shown(got)})"
            message = f"{_FIX_BY_TYPE[kind]}{shown}"
            if kind == "string_type" and isinstance(got, bool):
                message += "; YAML reads yes/no/on/off/true/false as booleans, so quote it"
        elif kind == "string_too_long":
            got = detail.get("input")
            size = f"{len(got)} characters" if isinstance(got, str) else "too long"
            message = (
                f"too long ({size}); the limit is {ctx.get('max_length')} characters, "
                "so that every store can keep it: shorten it"
            )
        elif kind in _BOUND_TYPES:
            message = f"{detail['msg']} (got {_shown(detail.get('input'))})"
        else:
            message = detail["msg"]
            if message.startswith("Value error, "):
                message = message[len("Value error, ") :]
            if kind == "string_pattern_mismatch" and path.endswith("id"):
                message = (
                    f"id {_shown(detail.get('input'))} may use letters, digits and _ . : / - "
                    "and must start with a letter or digit"
                )
        problems.append(Problem(path, message))
    return problems


def _shown(value: Any) -> str:
    if isinstance(value, int) and value.bit_length() > _MAX_INT_BITS:
        return "a whole number too large to show"
    try:
        text = repr(value)
    except (ValueError, RecursionError):
        return f"a {type(value).__name__}"
    if isinstance(value, float) and not math.isfinite(value):
        return text
    return text if len(text) <= 60 else text[:57] + "..."


def parse_rubric(data: Any, source: str | None = None) -> Rubric:
    """Validate a native rubric document (a mapping) into a `Rubric`.

    Raises `RubricValidationError` naming each problem's field path and fix.
    """
    if not isinstance(data, Mapping):
        raise RubricValidationError(
            [Problem("", f"a rubric is a mapping of fields, got {type(data).__name__}")], source
        )
    try:
        return Rubric.model_validate(dict(data))
    except ValidationError as error:
        raise RubricValidationError(problems_from_validation_error(error), source) from None


def semver_key(version: str) -> tuple[Any, ...]:
    """A sort key ordering versions as semver does (pre-releases before the release,
    numeric identifiers numerically, build metadata ignored)."""
    match = _SEMVER.match(version)
    if not match:
        raise ValueError(f"not a semantic version: {version!r}")
    major, minor, patch, pre, _build = match.groups()
    if pre is None:
        pre_key: tuple[Any, ...] = (1,)
    else:
        parts = tuple(
            (0, int(part), "") if part.isdigit() else (1, 0, part) for part in pre.split(".")
        )
        pre_key = (0, parts)
    return (int(major), int(minor), int(patch), pre_key)

"""Plain, serialisable values for what goes into and comes out of an evaluation."""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal
from fractions import Fraction
from functools import cached_property, lru_cache
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError

from rubricflow.model import MAX_TARGET_ID_LENGTH, NUL_MESSAGE

__all__ = [
    "CallOutcome",
    "CriterionResult",
    "CriterionStatus",
    "Evaluation",
    "LLMCall",
    "Target",
    "Verdict",
    "exact_number",
]

CriterionStatus = Literal["scored", "error", "unable_to_evaluate"]
Verdict = Literal["pass", "fail", "incomplete"]


@lru_cache(maxsize=65536)
def _decimal_of(value: float | int) -> Fraction:
    if type(value) is int:
        return Fraction(value)
    return Fraction(repr(float(value)))


def exact_number(value: float | int | Fraction | Decimal | str) -> Fraction:
    """A number as the rational it stands for: a Fraction as it is, a Decimal or decimal
    text exactly, and a float as the decimal it prints as (0.1 -> 1/10, not the binary
    approximation), so a rubric's 0.87 is 87/100.

    Floats are cached: weights, bars and level scores repeat across every evaluation."""
    kind = type(value)
    if kind is float or kind is int:  # the hot path: no ABC isinstance checks
        return _decimal_of(value)
    if kind is Fraction:
        return value  # type: ignore[return-value]
    if isinstance(value, Decimal | str):
        return Fraction(value)
    if isinstance(value, Fraction):
        return value
    return _decimal_of(value)


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _storable_target_id(value: str) -> str:
    """A target id the store can keep on both backends (VARCHAR(500), no NUL)."""
    if len(value) > MAX_TARGET_ID_LENGTH:
        raise PydanticCustomError(
            "target_id",
            "target id is {size} characters; the limit is {limit}: shorten it",
            {"size": len(value), "limit": MAX_TARGET_ID_LENGTH},
        )
    if "\x00" in value:
        raise PydanticCustomError("target_id", f"target id {NUL_MESSAGE}")
    return value


class Target(BaseModel):
    """What is under review: `content` (text or JSON) plus optional context for judges."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    content: Any
    id: Annotated[str, AfterValidator(_storable_target_id)] | None = None
    query: str | None = None
    reference: Any = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @cached_property
    def content_hash(self) -> str:
        """sha256 of the content (text as is, JSON canonicalised)."""
        text = self.content if isinstance(self.content, str) else canonical_json(self.content)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    @property
    def text(self) -> str:
        """The content as text (JSON content is serialised)."""
        if isinstance(self.content, str):
            return self.content
        return json.dumps(self.content, ensure_ascii=False, indent=2)


CallOutcome = Literal[
    "ok",
    "cached",
    "invalid_answer",
    "timeout",
    "connection_error",
    "rate_limited",
    "http_error",
    "error",
]


class LLMCall(BaseModel):
    """One judge request in the call ledger. Prompts and answers are stored as hashes
    (sha256 hex) only; API keys never appear here."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str
    model: str
    prompt_hash: str
    response_hash: str | None = None
    criterion_ids: tuple[str, ...] = ()
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: float = 0.0
    attempt: int = 1
    outcome: CallOutcome = "ok"
    error: str | None = None
    cost: float | None = None
    created_at: str = ""
    judge: str | None = Field(default=None, max_length=500)
    """The judge that made the call, by its spec label, when it was one of a panel."""
    verdict: str | None = Field(default=None, max_length=200)
    """What the call's answer said (MET, a level id, a score), when it gave a usable one."""


class CriterionResult(BaseModel):
    """The outcome for one criterion. A failure to score is `error` or `unable_to_evaluate`,
    never a score: `score`, `verdict` and `level` are then empty."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    criterion_id: str
    status: CriterionStatus
    score: float | None = None
    verdict: Literal["MET", "UNMET"] | None = None
    level: str | None = None
    judge_score: float | None = None
    passed: bool | None = None
    weight: float = 1.0
    required: bool = False
    evidence: tuple[str, ...] = ()
    notes: str = ""
    reasoning: str | None = None
    scorer: str = ""
    duration_ms: float = 0.0
    llm_calls: tuple[LLMCall, ...] = ()
    confidence: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    """How sure the judge is of this result, in [0, 1]: None where nothing measures it (a
    deterministic check, a single judge answer without log-probabilities)."""
    confidence_source: str | None = Field(default=None, max_length=50)
    """What `confidence` was measured from: "panel" (agreement within a judge panel),
    "samples" (agreement among samples of one judge), "logprobs" (the judge's token
    log-probabilities)."""
    exact: Fraction | None = Field(default=None, exclude=True, repr=False)
    """The exact score when `score`, read as the decimal it prints as, is not it (5/6, say);
    None otherwise. Not stored: evaluations keep their JSON shape. Use `exact_score`."""

    @property
    def scored(self) -> bool:
        return self.status == "scored"

    @property
    def exact_score(self) -> Fraction | None:
        """The score as an exact rational: the value the scorer worked out (a judge's 8.7 on
        0..10 is 87/100 exactly, and 5/6 stays 5/6), else `score` read as the decimal it
        prints as. `score` itself is the nearest float, for storage and display."""
        score = self.score
        if score is None:
            return None
        held = self.exact
        if held is not None and float(held) == score:  # not stale after a model_copy
            return held
        return exact_number(score)

    def with_exact_score(self, value: Fraction) -> CriterionResult:
        """A copy scored `value` exactly: `score` is its nearest float, `exact_score` it."""
        score = float(value)
        held = None if exact_number(score) == value else value
        return self.model_copy(update={"score": score, "exact": held})


class Evaluation(BaseModel):
    """A complete, explainable evaluation of one target against one rubric."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    rubric_id: str
    rubric_version: str
    rubric_hash: str
    target_id: str | None
    target_hash: str
    verdict: Verdict
    passed: bool
    score: float
    scaled_score: float
    raw_score: float
    coverage: float
    threshold: float
    unscored_policy: str
    criteria: tuple[CriterionResult, ...]
    gating_failures: tuple[str, ...] = ()
    feedback: str = ""
    created_at: str = ""
    duration_ms: float = 0.0
    metadata: dict[str, Any] = Field(default_factory=dict)
    feedback_llm_calls: tuple[LLMCall, ...] = ()
    margin: float | None = None
    """The score minus the pass threshold (worked out exactly, then the nearest float):
    negative below the bar, 0 on it. None only on evaluations stored before it existed."""

    def criterion(self, criterion_id: str) -> CriterionResult | None:
        return next((r for r in self.criteria if r.criterion_id == criterion_id), None)

    @property
    def llm_calls(self) -> tuple[LLMCall, ...]:
        """Every judge call made for this evaluation, in criterion order, then the calls
        for the LLM feedback summary (`feedback_llm_calls`), if one was asked for."""
        criteria = tuple(call for result in self.criteria for call in result.llm_calls)
        return criteria + self.feedback_llm_calls

    def usage(self) -> dict[str, Any]:
        """Totals for the call ledger: calls (cache hits excluded), cache hits, tokens, cost."""
        calls = self.llm_calls
        priced = [c.cost for c in calls if c.cost is not None]
        return {
            "llm_calls": sum(c.outcome != "cached" for c in calls),
            "cache_hits": sum(c.outcome == "cached" for c in calls),
            "input_tokens": sum(c.input_tokens or 0 for c in calls if c.outcome != "cached"),
            "output_tokens": sum(c.output_tokens or 0 for c in calls if c.outcome != "cached"),
            "cost": sum(priced) if priced else None,
        }

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

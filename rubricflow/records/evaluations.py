"""What the evaluation queries hand back: per-criterion pass rates and judge usage.
Plain values: no database in here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["CriterionPassRate", "JudgeUsage"]


@dataclass(frozen=True)
class CriterionPassRate:
    """How one criterion of one rubric version did over the evaluations a query chose
    (in one time bucket, when asked for buckets). `scored` counts results with a pass or
    fail; `unscored` those that could not be scored (`error`, `unable_to_evaluate`)."""

    rubric_id: str
    rubric_version: str
    criterion_id: str
    scored: int
    passed: int
    unscored: int
    #: the first day of the bucket (a Monday for weeks; UTC) as YYYY-MM-DD, or None
    bucket: str | None = None

    @property
    def failed(self) -> int:
        return self.scored - self.passed

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.scored if self.scored else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rubric_id": self.rubric_id,
            "rubric_version": self.rubric_version,
            "criterion_id": self.criterion_id,
            "bucket": self.bucket,
            "scored": self.scored,
            "passed": self.passed,
            "failed": self.failed,
            "unscored": self.unscored,
            "pass_rate": self.pass_rate,
        }


@dataclass(frozen=True)
class JudgeUsage:
    """The judge calls of one run (None: evaluations stored outside a run, e.g. reviews),
    per provider and model unless the query was asked for totals. `calls`, the tokens
    and `cost` count what was sent (cache hits excluded, as `Evaluation.usage` does);
    `cache_hits` the answers the judge cache gave."""

    run_id: str | None
    provider: str | None
    model: str | None
    calls: int
    cache_hits: int
    input_tokens: int
    output_tokens: int
    cost: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "provider": self.provider,
            "model": self.model,
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost": self.cost,
        }


@dataclass(frozen=True)
class Spend:
    """Judge spend of one run, artifact type or day (`key`; None: evaluations of no run,
    or of no artifact). Calls, tokens and cost count what was sent; `cache_hits` what the
    judge cache answered."""

    key: str | None
    calls: int
    cache_hits: int
    input_tokens: int
    output_tokens: int
    cost: float | None

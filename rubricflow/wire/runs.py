"""Batch runs over HTTP: a run with its figures, a page of its evaluations, two runs
compared, and the judge's usage."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from rubricflow.results import Evaluation
from rubricflow.wire.trust import PassRateEstimateOut

if TYPE_CHECKING:
    from rubricflow.compare import RunComparison
    from rubricflow.records.evaluations import JudgeUsage
    from rubricflow.runs import RunInfo, RunSummary

__all__ = [
    "CriterionDeltaOut",
    "CriterionSummaryOut",
    "DeltaOut",
    "EvaluationPage",
    "FlipOut",
    "JudgeUsageList",
    "JudgeUsageOut",
    "RegressionOut",
    "RunComparisonOut",
    "RunInfoOut",
    "RunList",
    "RunOut",
    "RunSummaryOut",
    "ScoreDeltaOut",
    "SideOut",
    "SpendList",
    "SpendOut",
    "TargetCounts",
]


class RunInfoOut(BaseModel):
    """A batch run: its rubric, where its targets came from, and how it ended."""

    id: str
    rubric_id: str
    rubric_version: str
    source: str | None
    status: str = Field(description="running, interrupted or finished")
    started_at: str
    finished_at: str | None
    options: dict[str, Any] = Field(description="The run's options; credentials masked")

    @classmethod
    def of(cls, info: RunInfo) -> RunInfoOut:
        return cls.model_validate(info.to_dict())


class CriterionSummaryOut(BaseModel):
    id: str
    scored: int
    passed: int
    unscored: int
    pass_rate: float | None
    mean_score: float | None


class RunSummaryOut(BaseModel):
    """A run's figures, over the latest evaluation of each target."""

    total: int
    passed: int
    failed: int
    incomplete: int
    pass_rate: float | None
    mean_score: float | None
    median_score: float | None
    histogram: list[int] = Field(description="Ten bins over the 0..1 score")
    criteria: list[CriterionSummaryOut]
    llm_calls: int
    cache_hits: int
    input_tokens: int
    output_tokens: int
    cost: float | None
    duration_ms: float

    @classmethod
    def of(cls, summary: RunSummary) -> RunSummaryOut:
        return cls.model_validate(summary.to_dict())


class RunOut(RunInfoOut):
    summary: RunSummaryOut
    pass_rate_estimate: PassRateEstimateOut | None = Field(
        default=None,
        description="The naive pass rate and the one corrected with people's decisions on "
        "the run's rubric, each with a 95% CI; null when nobody labelled the rubric",
    )


class RunList(BaseModel):
    runs: list[RunOut] = Field(description="The newest first")


class EvaluationPage(BaseModel):
    """Stored evaluations of a run, newest first (a retried target appears each time)."""

    run_id: str
    total: int
    offset: int
    limit: int
    next_offset: int | None = Field(description="The offset of the next page; null at the end")
    evaluations: list[Evaluation]


class SideOut(RunInfoOut):
    summary: RunSummaryOut


class TargetCounts(BaseModel):
    shared: int
    only_a: list[str]
    only_b: list[str]


class DeltaOut(BaseModel):
    a: float | None
    b: float | None
    delta: float | None


class FlipOut(BaseModel):
    target_id: str
    verdict_a: str
    verdict_b: str
    score_a: float
    score_b: float


class CriterionDeltaOut(BaseModel):
    id: str
    pass_rate_a: float | None
    pass_rate_b: float | None
    pass_rate_delta: float | None
    mean_score_a: float | None
    mean_score_b: float | None
    mean_score_delta: float | None


class ScoreDeltaOut(BaseModel):
    target_id: str
    score_a: float
    score_b: float
    delta: float


class RegressionOut(BaseModel):
    kind: str = Field(description="pass_rate (the run's) or criterion")
    name: str
    before: float
    after: float
    drop: float


class RunComparisonOut(BaseModel):
    """Run B against run A over the targets both evaluated (matched by target id); every
    delta is B - A. With `threshold`, the pass rates that fell by more than it."""

    a: SideOut
    b: SideOut
    targets: TargetCounts
    pass_rate: DeltaOut
    mean_score: DeltaOut
    flips: list[FlipOut]
    criteria: list[CriterionDeltaOut]
    score_deltas: list[ScoreDeltaOut]
    warnings: list[str]
    threshold: float | None = None
    regressions: list[RegressionOut] | None = None
    regressed: bool | None = None

    @classmethod
    def of(cls, comparison: RunComparison, threshold: float | None) -> RunComparisonOut:
        return cls.model_validate(comparison.to_dict(threshold))


class JudgeUsageOut(BaseModel):
    """Judge calls of one run (null: evaluations of no run, such as reviews), per provider
    and model unless totals were asked for. Calls, tokens and cost count what was sent;
    `cache_hits` what the judge cache answered."""

    run_id: str | None
    provider: str | None
    model: str | None
    calls: int
    cache_hits: int
    input_tokens: int
    output_tokens: int
    cost: float | None

    @classmethod
    def of(cls, usage: JudgeUsage) -> JudgeUsageOut:
        return cls.model_validate(usage.to_dict())


class SpendOut(BaseModel):
    """Judge spend of one run, artifact type or day (`key`; null: evaluations of no run,
    or of no artifact). Calls, tokens and cost count what was sent; `cache_hits` what the
    judge cache answered; `cost` at the judge's price (batch calls at the batch price)."""

    key: str | None
    calls: int
    cache_hits: int
    input_tokens: int
    output_tokens: int
    cost: float | None


class SpendList(BaseModel):
    by: str = Field(description="run, type or day (UTC)")
    spend: list[SpendOut] = Field(description="In key order, no key last")


class JudgeUsageList(BaseModel):
    usage: list[JudgeUsageOut] = Field(description="Runs in id order, no run last")

"""Trust over HTTP: a pass rate corrected with people's labels, the judge's reliability
over time, and a drafted next version of a rubric learned from the labels."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from rubricflow.calibration import PassRateEstimate, RateInterval
    from rubricflow.calibration.reliability import ReliabilityPoint

__all__ = [
    "MAX_PROPOSAL_EXAMPLES",
    "PassRateEstimateOut",
    "ProposalOut",
    "ProposalRequest",
    "RateIntervalOut",
    "ReliabilityOut",
    "ReliabilityPointOut",
]

#: labelled examples one proposal request may carry
MAX_PROPOSAL_EXAMPLES = 2000


class RateIntervalOut(BaseModel):
    """A pass rate and its confidence interval (not clipped to 0..1), from `n` items."""

    estimate: float
    low: float
    high: float
    confidence: float
    n: int

    @classmethod
    def of(cls, interval: RateInterval) -> RateIntervalOut:
        return cls.model_validate(interval.to_dict())


class PassRateEstimateOut(BaseModel):
    """The judge's pass rate (`naive`) and the one corrected with people's decisions on
    the rubric by prediction-powered inference (`corrected`; null with fewer than two
    labels). `power` is the weight the data gave the judge's verdicts."""

    naive: RateIntervalOut
    corrected: RateIntervalOut | None
    labelled: int = Field(description="Decisions by people used as labels")
    unlabelled: int = Field(description="Verdicts without a label (the run's)")
    power: float | None

    @classmethod
    def of(cls, estimate: PassRateEstimate) -> PassRateEstimateOut:
        return cls.model_validate(estimate.to_dict())


class ReliabilityPointOut(BaseModel):
    criterion_id: str
    period: str = Field(description="The period's first day, YYYY-MM-DD")
    n: int
    agreed: int
    agreement: float
    kappa: float | None
    kappa_undefined_reason: str | None

    @classmethod
    def of(cls, point: ReliabilityPoint) -> ReliabilityPointOut:
        return cls.model_validate(point.to_dict())


class ReliabilityOut(BaseModel):
    """How often people agreed with the judge, per criterion and period."""

    rubric_id: str
    period: Literal["day", "week", "month"]
    points: list[ReliabilityPointOut]


class ProposalRequest(BaseModel):
    """Draft the rubric's next version from labelled examples (as `rubricflow calibrate`
    reads them: `content` and `labels`) and, with `from_store`, people's decisions on it.
    With `register`, the draft is registered only when its held-out kappa improved
    beyond the interval of the difference."""

    version: str | None = Field(
        default=None, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$", description="Default: latest"
    )
    examples: list[dict[str, Any]] = Field(default_factory=list, max_length=MAX_PROPOSAL_EXAMPLES)
    model_config = ConfigDict(populate_by_name=True)

    from_store: bool = True
    register_draft: bool = Field(default=False, alias="register")
    folds: int = Field(default=5, ge=2, le=20)
    per_criterion: int = Field(default=4, ge=0, le=20)
    resamples: int = Field(default=1000, ge=0, le=10_000)
    seed: int = Field(default=0, ge=0, le=2**31 - 1)
    confidence: float = Field(default=0.95, gt=0.0, lt=1.0)


class ProposalOut(BaseModel):
    """The proposal's figures (as `calibrate --propose --json` prints them), the draft
    rubric's document, and whether it was registered."""

    proposal: dict[str, Any]
    draft: dict[str, Any]
    registered: bool

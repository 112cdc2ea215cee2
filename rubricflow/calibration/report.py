"""Compare human labels with what evaluations decided, and summarise the agreement.

`build_report` pairs each labelled example with its evaluation. For every criterion a
human labelled it takes the judge's decision in the criterion's `LabelScale` (the
verdict, the level, or pass/fail for bands); a criterion the evaluation did not score
(`error`, `unable_to_evaluate`, or scored without a level) is counted as `unscored`, not
as a disagreement. Accuracy and kappa come with percentile bootstrap intervals that
resample examples, so every criterion's and the overall interval come from the same
resamples.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rubricflow.calibration.labels import MET, UNMET, LabelledExample, LabelScale, label_scale
from rubricflow.calibration.stats import (
    ConfusionMatrix,
    Interval,
    UndefinedStatisticError,
    Weights,
    accuracy,
    bootstrap_intervals,
    kappa_from_matrix,
    pooled_kappa,
)
from rubricflow.model import Criterion, Rubric
from rubricflow.results import CriterionResult, Evaluation

__all__ = [
    "CalibrationReport",
    "CriterionAgreement",
    "Decision",
    "Estimate",
    "OverallAgreement",
    "build_report",
    "judge_label",
]


@dataclass(frozen=True)
class Estimate:
    """A figure with its bootstrap interval. `value` is None when the figure is undefined
    (`reason` says why); `interval` is None when bootstrapping was off or the figure was
    undefined on every resample."""

    value: float | None
    interval: Interval | None = None
    reason: str | None = None

    @property
    def defined(self) -> bool:
        return self.value is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "ci": None if self.interval is None else self.interval.to_dict(),
            "undefined_reason": self.reason,
        }


@dataclass(frozen=True)
class Decision:
    """One (example, criterion) pair a human labelled: the human's label and the judge's
    (None when the evaluation did not score it; `status` and `notes` say why)."""

    example_id: str
    criterion_id: str
    human: str
    judge: str | None
    status: str
    notes: str = ""

    @property
    def scored(self) -> bool:
        return self.judge is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "example_id": self.example_id,
            "criterion_id": self.criterion_id,
            "human": self.human,
            "judge": self.judge,
            "status": self.status,
            "notes": self.notes,
        }


@dataclass(frozen=True)
class CriterionAgreement:
    """Agreement on one criterion. `labelled` = `n` compared + `unscored`. Weighted kappas
    are None for criteria without ordered levels."""

    criterion_id: str
    name: str
    scale: LabelScale
    labelled: int
    n: int
    unscored: int
    confusion: ConfusionMatrix
    accuracy: Estimate
    kappa: Estimate
    weighted_kappa_linear: Estimate | None = None
    weighted_kappa_quadratic: Estimate | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.criterion_id,
            "name": self.name,
            "kind": self.scale.kind,
            "compared": self.scale.compared,
            "labels": list(self.scale.labels),
            "labelled": self.labelled,
            "n": self.n,
            "unscored": self.unscored,
            "accuracy": self.accuracy.to_dict(),
            "kappa": self.kappa.to_dict(),
            "weighted_kappa": None
            if self.weighted_kappa_linear is None or self.weighted_kappa_quadratic is None
            else {
                "linear": self.weighted_kappa_linear.to_dict(),
                "quadratic": self.weighted_kappa_quadratic.to_dict(),
            },
            "confusion_matrix": self.confusion.to_dict(),
        }


@dataclass(frozen=True)
class OverallAgreement:
    """Every criterion decision pooled: accuracy over all compared pairs, and the pooled
    kappa (p_o and p_e averaged over criteria, weighted by each criterion's n)."""

    labelled: int
    n: int
    unscored: int
    accuracy: Estimate
    kappa: Estimate

    def to_dict(self) -> dict[str, Any]:
        return {
            "labelled": self.labelled,
            "n": self.n,
            "unscored": self.unscored,
            "accuracy": self.accuracy.to_dict(),
            "kappa": self.kappa.to_dict(),
            "kappa_method": "pooled (De Vries et al. 2008), criteria weighted by n",
        }


@dataclass(frozen=True)
class CalibrationReport:
    """How well the judge agrees with the human labels, per criterion and overall."""

    rubric_id: str
    rubric_version: str
    rubric_hash: str
    examples: int
    criteria: tuple[CriterionAgreement, ...]
    overall: OverallAgreement
    decisions: tuple[Decision, ...]
    resamples: int
    confidence: float
    seed: int
    usage: Mapping[str, Any] = field(default_factory=dict)

    def criterion(self, criterion_id: str) -> CriterionAgreement | None:
        return next((c for c in self.criteria if c.criterion_id == criterion_id), None)

    @property
    def disagreements(self) -> tuple[Decision, ...]:
        return tuple(d for d in self.decisions if d.scored and d.judge != d.human)

    @property
    def unscored(self) -> tuple[Decision, ...]:
        return tuple(d for d in self.decisions if not d.scored)

    def kappa_below(self, minimum: float) -> list[str]:
        """Ids of criteria whose (Cohen's) kappa is defined and below `minimum`."""
        return [
            c.criterion_id
            for c in self.criteria
            if c.kappa.value is not None and c.kappa.value < minimum
        ]

    def kappa_undefined(self) -> list[str]:
        """Ids of criteria whose kappa is undefined (no pairs, or chance agreement of 1)."""
        return [c.criterion_id for c in self.criteria if c.kappa.value is None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "rubric": {
                "id": self.rubric_id,
                "version": self.rubric_version,
                "hash": self.rubric_hash,
            },
            "examples": self.examples,
            "bootstrap": {
                "resamples": self.resamples,
                "confidence": self.confidence,
                "seed": self.seed,
                "method": "percentile, resampling examples",
            },
            "criteria": [c.to_dict() for c in self.criteria],
            "overall": self.overall.to_dict(),
            "disagreements": [d.to_dict() for d in self.disagreements],
            "unscored": [d.to_dict() for d in self.unscored],
            "usage": dict(self.usage),
        }


def judge_label(scale: LabelScale, criterion: Criterion, result: CriterionResult) -> str | None:
    """The judge's decision in the criterion's label scale, or None when not scored."""
    if result.status != "scored":
        return None
    if scale.kind == "levels":
        return result.level if result.level in scale.labels else None
    if scale.kind == "bands":
        return None if result.passed is None else (MET if result.passed else UNMET)
    if result.verdict is not None:
        return result.verdict
    if result.passed is None:
        return None
    # a continuous score on a binary criterion: `passed` is "reached the bar", which for
    # a penalty criterion (negative weight) means the fault was NOT found
    met = result.passed if criterion.weight >= 0 else not result.passed
    return MET if met else UNMET


def _unscored_note(result: CriterionResult | None, scale: LabelScale) -> str:
    if result is None:
        return "the evaluation has no result for this criterion"
    if result.status == "scored":
        return f"scored {result.score!r} without a {scale.compared} to compare"
    return result.notes


def _decisions(
    rubric: Rubric,
    scales: Mapping[str, LabelScale],
    examples: Sequence[LabelledExample],
    evaluations: Sequence[Evaluation],
) -> list[dict[str, Decision]]:
    rows: list[dict[str, Decision]] = []
    for example, evaluation in zip(examples, evaluations, strict=True):
        row: dict[str, Decision] = {}
        example_id = example.target.id or evaluation.target_id or ""
        for criterion in rubric.criteria:
            human = example.labels.get(criterion.id)
            if human is None:
                continue
            scale = scales[criterion.id]
            result = evaluation.criterion(criterion.id)
            judge = None if result is None else judge_label(scale, criterion, result)
            status = "missing" if result is None else result.status
            notes = "" if judge is not None else _unscored_note(result, scale)
            row[criterion.id] = Decision(example_id, criterion.id, human, judge, status, notes)
        rows.append(row)
    return rows


def _matrix(
    scale: LabelScale, rows: Sequence[Mapping[str, Decision]], weights: Sequence[int] | None
) -> ConfusionMatrix:
    """The criterion's confusion matrix, each example counted `weights[i]` times."""
    index = {label: position for position, label in enumerate(scale.labels)}
    counts = [[0] * len(scale.labels) for _ in scale.labels]
    for position, row in enumerate(rows):
        decision = row.get(scale.criterion_id)
        if decision is None or decision.judge is None:
            continue
        times = 1 if weights is None else weights[position]
        if times:
            counts[index[decision.human]][index[decision.judge]] += times
    return ConfusionMatrix(scale.labels, tuple(tuple(row) for row in counts))


def _value(compute: Any, *args: Any) -> tuple[float | None, str | None]:
    try:
        return float(compute(*args)), None
    except UndefinedStatisticError as error:
        return None, str(error)


_KAPPAS: tuple[tuple[str, Weights | None], ...] = (
    ("kappa", None),
    ("linear", "linear"),
    ("quadratic", "quadratic"),
)


def _pooled_accuracy(matrices: Sequence[ConfusionMatrix]) -> float:
    """Agreements over every criterion's compared pairs."""
    total = sum(matrix.n for matrix in matrices)
    if total == 0:
        raise UndefinedStatisticError("no labelled decision was scored, so nothing to compare")
    return sum(matrix.agreements for matrix in matrices) / total


def _figures(scales: Sequence[LabelScale], matrices: Sequence[ConfusionMatrix]) -> dict[str, Any]:
    """Every point figure for these matrices: `{criterion id}/{figure}` and `overall/...`,
    each (value, reason)."""
    figures: dict[str, Any] = {}
    for scale, matrix in zip(scales, matrices, strict=True):
        key = scale.criterion_id
        figures[f"{key}/accuracy"] = _value(accuracy, matrix)
        for name, weights in _KAPPAS:
            if weights is None or scale.ordered:
                figures[f"{key}/{name}"] = _value(kappa_from_matrix, matrix, weights)
    figures["overall/accuracy"] = _value(_pooled_accuracy, matrices)
    figures["overall/kappa"] = _value(pooled_kappa, matrices)
    return figures


def build_report(
    rubric: Rubric,
    examples: Sequence[LabelledExample],
    evaluations: Sequence[Evaluation],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> CalibrationReport:
    """Agreement between `examples`' human labels and `evaluations` (one per example, in
    the same order). `resamples=0` turns the bootstrap intervals off."""
    if len(examples) != len(evaluations):
        raise ValueError(f"{len(examples)} examples but {len(evaluations)} evaluations")
    scales = [label_scale(criterion) for criterion in rubric.criteria]
    by_id = {scale.criterion_id: scale for scale in scales}
    rows = _decisions(rubric, by_id, examples, evaluations)
    matrices = [_matrix(scale, rows, None) for scale in scales]
    figures = _figures(scales, matrices)

    intervals: dict[str, Interval] = {}
    if resamples > 0:

        def resampled(picked: Sequence[int]) -> dict[str, float | None]:
            times = [0] * len(rows)
            for index in picked:
                times[index] += 1
            again = [_matrix(scale, rows, times) for scale in scales]
            return {name: value for name, (value, _why) in _figures(scales, again).items()}

        intervals = bootstrap_intervals(
            len(rows), resampled, resamples=resamples, confidence=confidence, seed=seed
        )
    elif not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1 (exclusive), got {confidence}")

    def estimate(name: str) -> Estimate:
        value, reason = figures[name]
        return Estimate(value, intervals.get(name) if value is not None else None, reason)

    criteria: list[CriterionAgreement] = []
    for criterion, scale, matrix in zip(rubric.criteria, scales, matrices, strict=True):
        key = criterion.id
        decided = [row[key] for row in rows if key in row]
        criteria.append(
            CriterionAgreement(
                criterion_id=key,
                name=criterion.name,
                scale=scale,
                labelled=len(decided),
                n=matrix.n,
                unscored=sum(not d.scored for d in decided),
                confusion=matrix,
                accuracy=estimate(f"{key}/accuracy"),
                kappa=estimate(f"{key}/kappa"),
                weighted_kappa_linear=estimate(f"{key}/linear") if scale.ordered else None,
                weighted_kappa_quadratic=estimate(f"{key}/quadratic") if scale.ordered else None,
            )
        )
    decisions = tuple(decision for row in rows for decision in row.values())
    overall = OverallAgreement(
        labelled=len(decisions),
        n=sum(m.n for m in matrices),
        unscored=sum(not d.scored for d in decisions),
        accuracy=estimate("overall/accuracy"),
        kappa=estimate("overall/kappa"),
    )
    return CalibrationReport(
        rubric_id=rubric.id,
        rubric_version=rubric.version,
        rubric_hash=rubric.content_hash,
        examples=len(examples),
        criteria=tuple(criteria),
        overall=overall,
        decisions=decisions,
        resamples=resamples,
        confidence=confidence,
        seed=seed,
        usage=_usage(evaluations),
    )


def _usage(evaluations: Sequence[Evaluation]) -> dict[str, Any]:
    """LLM calls, cache hits, tokens and cost summed over the evaluations."""
    total: dict[str, Any] = {
        "llm_calls": 0,
        "cache_hits": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost": None,
    }
    for evaluation in evaluations:
        usage = evaluation.usage()
        for key in ("llm_calls", "cache_hits", "input_tokens", "output_tokens"):
            total[key] += usage.get(key) or 0
        if usage.get("cost") is not None:
            total["cost"] = (total["cost"] or 0.0) + usage["cost"]
    return total

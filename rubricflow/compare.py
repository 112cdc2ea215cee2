"""Compare two runs: which targets flipped verdict, how pass rates and scores moved, and
whether anything regressed beyond a threshold (a CI gate).

Targets are matched by target id (a target without an id by its content hash, as a run
keys them). Every delta is B - A and is computed over the targets both runs evaluated,
so targets added or dropped between the runs do not move the figures; they are listed
as `only_a` / `only_b`. Criteria are matched by criterion id, even across rubrics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from rubricflow.results import Evaluation
from rubricflow.runs import RunData, RunInfo, RunSummary, summarize

__all__ = [
    "CriterionDelta",
    "Regression",
    "RunComparison",
    "ScoreDelta",
    "VerdictFlip",
    "compare_runs",
]


def _key(evaluation: Evaluation) -> str:
    return evaluation.target_id or evaluation.target_hash


def _delta(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


@dataclass(frozen=True)
class VerdictFlip:
    """A target whose verdict differs between the runs."""

    target_id: str
    verdict_a: str
    verdict_b: str
    score_a: float
    score_b: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "target_id": self.target_id,
            "verdict_a": self.verdict_a,
            "verdict_b": self.verdict_b,
            "score_a": self.score_a,
            "score_b": self.score_b,
        }


@dataclass(frozen=True)
class ScoreDelta:
    """How one target's score moved (B - A)."""

    target_id: str
    score_a: float
    score_b: float

    @property
    def delta(self) -> float:
        return self.score_b - self.score_a

    def to_dict(self) -> dict[str, Any]:
        return {
            "target_id": self.target_id,
            "score_a": self.score_a,
            "score_b": self.score_b,
            "delta": self.delta,
        }


@dataclass(frozen=True)
class CriterionDelta:
    """How one criterion's pass rate and mean score moved over the shared targets. A
    side where the criterion was never scored has None, and so has the delta."""

    criterion_id: str
    pass_rate_a: float | None
    pass_rate_b: float | None
    mean_score_a: float | None
    mean_score_b: float | None

    @property
    def pass_rate_delta(self) -> float | None:
        return _delta(self.pass_rate_a, self.pass_rate_b)

    @property
    def mean_score_delta(self) -> float | None:
        return _delta(self.mean_score_a, self.mean_score_b)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.criterion_id,
            "pass_rate_a": self.pass_rate_a,
            "pass_rate_b": self.pass_rate_b,
            "pass_rate_delta": self.pass_rate_delta,
            "mean_score_a": self.mean_score_a,
            "mean_score_b": self.mean_score_b,
            "mean_score_delta": self.mean_score_delta,
        }


@dataclass(frozen=True)
class Regression:
    """A pass rate that fell by more than the threshold: the run's (`kind` "pass_rate",
    `name` "overall") or one criterion's (`kind` "criterion", `name` its id)."""

    kind: Literal["pass_rate", "criterion"]
    name: str
    before: float
    after: float

    @property
    def drop(self) -> float:
        return self.before - self.after

    def __str__(self) -> str:
        what = "pass rate" if self.kind == "pass_rate" else f"criterion {self.name!r} pass rate"
        return (
            f"{what} fell {self.drop * 100:.1f} points "
            f"({self.before * 100:.1f}% -> {self.after * 100:.1f}%)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "before": self.before,
            "after": self.after,
            "drop": self.drop,
        }


@dataclass(frozen=True)
class RunComparison:
    """Run B against run A (see the module docstring). `summary_a` / `summary_b` cover
    the shared targets only."""

    a: RunInfo
    b: RunInfo
    shared: list[str]
    only_a: list[str]
    only_b: list[str]
    summary_a: RunSummary
    summary_b: RunSummary
    flips: list[VerdictFlip]
    criteria: list[CriterionDelta]
    score_deltas: list[ScoreDelta]
    warnings: list[str] = field(default_factory=list)

    @property
    def pass_rate_delta(self) -> float | None:
        return _delta(self.summary_a.pass_rate, self.summary_b.pass_rate)

    @property
    def mean_score_delta(self) -> float | None:
        return _delta(self.summary_a.mean_score, self.summary_b.mean_score)

    @property
    def same_rubric(self) -> bool:
        return (self.a.rubric_id, self.a.rubric_version) == (
            self.b.rubric_id,
            self.b.rubric_version,
        )

    def regressions(self, threshold: float = 0.0) -> list[Regression]:
        """Pass rates (overall, then each criterion's) that fell by more than `threshold`,
        a fraction: 0.05 lets a drop of up to 5 points through; 0.0 counts any drop."""
        found: list[Regression] = []
        before, after = self.summary_a.pass_rate, self.summary_b.pass_rate
        if before is not None and after is not None and before - after > threshold:
            found.append(Regression("pass_rate", "overall", before, after))
        for criterion in self.criteria:
            before, after = criterion.pass_rate_a, criterion.pass_rate_b
            if before is not None and after is not None and before - after > threshold:
                found.append(Regression("criterion", criterion.criterion_id, before, after))
        return found

    def to_dict(self, threshold: float | None = None) -> dict[str, Any]:
        """The comparison as JSON; with `threshold`, its regressions too."""
        document: dict[str, Any] = {
            "a": {**self.a.to_dict(), "summary": self.summary_a.to_dict()},
            "b": {**self.b.to_dict(), "summary": self.summary_b.to_dict()},
            "targets": {
                "shared": len(self.shared),
                "only_a": self.only_a,
                "only_b": self.only_b,
            },
            "pass_rate": {
                "a": self.summary_a.pass_rate,
                "b": self.summary_b.pass_rate,
                "delta": self.pass_rate_delta,
            },
            "mean_score": {
                "a": self.summary_a.mean_score,
                "b": self.summary_b.mean_score,
                "delta": self.mean_score_delta,
            },
            "flips": [flip.to_dict() for flip in self.flips],
            "criteria": [criterion.to_dict() for criterion in self.criteria],
            "score_deltas": [delta.to_dict() for delta in self.score_deltas],
            "warnings": list(self.warnings),
        }
        if threshold is not None:
            found = self.regressions(threshold)
            document["threshold"] = threshold
            document["regressions"] = [regression.to_dict() for regression in found]
            document["regressed"] = bool(found)
        return document


def compare_runs(a: RunData, b: RunData) -> RunComparison:
    """Run B against run A, over the targets both evaluated (matched by target id)."""
    in_a = {_key(e): e for e in a.evaluations}
    in_b = {_key(e): e for e in b.evaluations}
    shared = [key for key in in_a if key in in_b]
    only_a = [key for key in in_a if key not in in_b]
    only_b = [key for key in in_b if key not in in_a]
    pairs = [(in_a[key], in_b[key]) for key in shared]
    summary_a = summarize([ea for ea, _ in pairs])
    summary_b = summarize([eb for _, eb in pairs])
    flips = [
        VerdictFlip(key, ea.verdict, eb.verdict, ea.score, eb.score)
        for key, (ea, eb) in zip(shared, pairs, strict=True)
        if ea.verdict != eb.verdict
    ]
    deltas = [
        ScoreDelta(key, ea.score, eb.score) for key, (ea, eb) in zip(shared, pairs, strict=True)
    ]
    deltas.sort(key=lambda d: (d.delta, d.target_id))
    by_a = {c.criterion_id: c for c in summary_a.criteria}
    by_b = {c.criterion_id: c for c in summary_b.criteria}
    names = list(by_a) + [name for name in by_b if name not in by_a]
    criteria = [
        CriterionDelta(
            criterion_id=name,
            pass_rate_a=by_a[name].pass_rate if name in by_a else None,
            pass_rate_b=by_b[name].pass_rate if name in by_b else None,
            mean_score_a=by_a[name].mean_score if name in by_a else None,
            mean_score_b=by_b[name].mean_score if name in by_b else None,
        )
        for name in names
    ]
    warnings = []
    rubric_a = f"{a.info.rubric_id}@{a.info.rubric_version}"
    rubric_b = f"{b.info.rubric_id}@{b.info.rubric_version}"
    if rubric_a != rubric_b:
        warnings.append(
            f"the runs used different rubrics (A: {rubric_a}, B: {rubric_b}); criteria are "
            "compared by criterion id"
        )
    if not shared:
        warnings.append(
            "the runs share no target ids, so there is nothing to compare; targets are "
            "matched by target id"
        )
    return RunComparison(
        a=a.info,
        b=b.info,
        shared=shared,
        only_a=only_a,
        only_b=only_b,
        summary_a=summary_a,
        summary_b=summary_b,
        flips=flips,
        criteria=criteria,
        score_deltas=deltas,
        warnings=warnings,
    )

"""Per-criterion judge reliability over time: how often people agreed with the judge on
each criterion, period by period (a week by default), with Cohen's kappa where defined.

The input is one row per human label of a criterion: (criterion id, when it was decided,
judge passed, person holds it passed). A falling agreement says the judge (or the content
it sees) drifted; a rising one after a new rubric version says the version helped.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from rubricflow.calibration.stats import (
    UndefinedStatisticError,
    confusion_matrix,
    kappa_from_matrix,
)

__all__ = ["Period", "ReliabilityPoint", "judge_reliability", "period_start"]

Period = Literal["day", "week", "month"]


@dataclass(frozen=True)
class ReliabilityPoint:
    """One criterion in one period: `n` labels, `agreed` of them agreeing with the judge,
    and Cohen's kappa (None, with `reason`, where undefined)."""

    criterion_id: str
    period: str
    n: int
    agreed: int
    kappa: float | None
    reason: str | None = None

    @property
    def agreement(self) -> float:
        return self.agreed / self.n if self.n else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "criterion_id": self.criterion_id,
            "period": self.period,
            "n": self.n,
            "agreed": self.agreed,
            "agreement": self.agreement,
            "kappa": self.kappa,
            "kappa_undefined_reason": self.reason,
        }


def period_start(when: datetime, period: Period) -> str:
    """The first day of the period holding `when`, as YYYY-MM-DD (weeks start Monday)."""
    day = when.date()
    if period == "week":
        day -= timedelta(days=day.weekday())
    elif period == "month":
        day = day.replace(day=1)
    elif period != "day":
        raise ValueError(f"period is 'day', 'week' or 'month', got {period!r}")
    return day.isoformat()


def judge_reliability(
    labels: Iterable[tuple[str, datetime, bool, bool]], *, period: Period = "week"
) -> list[ReliabilityPoint]:
    """Agreement per (criterion, period) from `(criterion_id, decided_at, judge_passed,
    human_passed)` rows; sorted by criterion, then period."""
    pairs: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
    for criterion_id, when, judge, human in labels:
        key = (criterion_id, period_start(when, period))
        humans, judges = pairs.setdefault(key, ([], []))
        humans.append("pass" if human else "fail")
        judges.append("pass" if judge else "fail")
    points: list[ReliabilityPoint] = []
    for (criterion_id, start), (humans, judges) in sorted(pairs.items()):
        matrix = confusion_matrix(humans, judges, ["fail", "pass"])
        try:
            kappa: float | None = kappa_from_matrix(matrix)
            reason = None
        except UndefinedStatisticError as error:
            kappa, reason = None, str(error)
        points.append(
            ReliabilityPoint(criterion_id, start, matrix.n, matrix.agreements, kappa, reason)
        )
    return points

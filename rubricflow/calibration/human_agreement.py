"""Agreement between people: how often the reviewers who decide the same artifact agree.

A unit is one decision several people made (an artifact's revision sent to people, or one
criterion of it): its labels, in the order the reviewers gave them. Units where every one
has exactly two labels are measured with Cohen's kappa between the first and the second
reviewer (or, for a type of two reviewers, the first two labels of every unit); units
with more (or a mix) with Krippendorff's alpha (nominal), which takes any
number of reviewers per unit. Units with fewer than two labels are not comparable and are
left out. The 95% interval is a percentile bootstrap over the units (a fixed seed, so the
same data gives the same interval).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rubricflow.calibration.alpha import krippendorff_alpha
from rubricflow.calibration.stats import (
    Interval,
    UndefinedStatisticError,
    bootstrap_interval,
    cohen_kappa,
)

__all__ = ["HumanAgreement", "human_agreement"]

Statistic = Literal["cohen_kappa", "krippendorff_alpha"]


@dataclass(frozen=True)
class HumanAgreement:
    """The agreement figure of some units, with its bootstrap interval; `value` None (and
    `why` set) when it is undefined (no comparable unit, or one label used throughout)."""

    statistic: Statistic
    value: float | None
    interval: Interval | None
    units: int
    agreeing: int
    why: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "statistic": self.statistic,
            "value": self.value,
            "interval": self.interval.to_dict() if self.interval is not None else None,
            "units": self.units,
            "agreeing": self.agreeing,
            "why": self.why,
        }


def _figure(statistic: Statistic, units: Sequence[Sequence[Hashable]]) -> float:
    if statistic == "cohen_kappa":
        return cohen_kappa([str(u[0]) for u in units], [str(u[1]) for u in units])
    return krippendorff_alpha([list(u) for u in units], level="nominal")


def human_agreement(
    units: Sequence[Sequence[Hashable]],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    reviewers: int | None = None,
) -> HumanAgreement:
    """Cohen's kappa (every unit has two labels) or Krippendorff's alpha (otherwise) of
    `units`, each the labels its reviewers gave in order, with a bootstrap interval.
    `reviewers=2`: kappa between the first two labels of each unit (a third label, the
    one that settled a split, is not one of the two reviewers')."""
    comparable = [list(unit) for unit in units if len(unit) >= 2]
    if reviewers == 2:
        comparable = [unit[:2] for unit in comparable]
    statistic: Statistic = (
        "cohen_kappa"
        if comparable and all(len(u) == 2 for u in comparable)
        else "krippendorff_alpha"
    )
    agreeing = sum(len(set(unit)) == 1 for unit in comparable)
    try:
        value = _figure(statistic, comparable)
    except UndefinedStatisticError as error:
        return HumanAgreement(statistic, None, None, len(comparable), agreeing, str(error))
    try:
        interval: Interval | None = bootstrap_interval(
            comparable,
            lambda picked: _figure(statistic, picked),
            resamples=resamples,
            confidence=confidence,
            seed=seed,
        )
    except UndefinedStatisticError:
        interval = None
    return HumanAgreement(statistic, value, interval, len(comparable), agreeing)

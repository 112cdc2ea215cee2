"""Pass rates people can trust: the judge's naive pass rate, and the same rate corrected
with the human labels by prediction-powered inference (PPI++, Angelopoulos, Duchi and
Zrnic 2023, arXiv:2311.01453), each with a confidence interval.

A judge's raw pass rate inherits the judge's bias, and its interval only measures the
sampling noise of a biased figure (the CJE study found naive intervals on raw judge scores
covering the truth 0% of the time). PPI uses the artifacts people labelled to measure the
judge's error (the *rectifier*, mean(human - lambda * judge)) and adds it to the judge's
rate over the artifacts nobody labelled; its interval counts both sources of noise. The
power-tuning weight lambda in [0, 1] is chosen from the data to make the interval as
narrow as it can be: a good judge earns lambda near 1 (the many machine verdicts count), a
useless one lambda near 0 (the estimate falls back to the human labels alone).

The figures are those of `ppi-python`'s `ppi_mean_pointestimate` and `ppi_mean_ci` (with
their default power tuning, clipped to [0, 1]), computed in plain Python: the test suite
checks them against that package on the same data. As there, the corrected estimate is not
clipped to [0, 1]: a value outside it says the labels and the verdicts disagree more than
the sample can settle.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist, fmean

from rubricflow.calibration.stats import UndefinedStatisticError

__all__ = ["PassRateEstimate", "RateInterval", "estimate_pass_rate", "estimate_with_labelled"]


@dataclass(frozen=True)
class RateInterval:
    """A pass rate with its two-sided confidence interval, from `n` observations."""

    estimate: float
    low: float
    high: float
    confidence: float
    n: int

    def to_dict(self) -> dict[str, float | int]:
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "n": self.n,
        }


@dataclass(frozen=True)
class PassRateEstimate:
    """The judge's pass rate over every verdict (`naive`), and the rate corrected with the
    human labels (`corrected`; None when nothing is labelled). `labelled` artifacts have a
    verdict and a label, `unlabelled` a verdict only; `power` is PPI++'s lambda."""

    naive: RateInterval
    corrected: RateInterval | None
    labelled: int
    unlabelled: int
    power: float | None

    def to_dict(self) -> dict[str, object]:
        return {
            "naive": self.naive.to_dict(),
            "corrected": self.corrected.to_dict() if self.corrected else None,
            "labelled": self.labelled,
            "unlabelled": self.unlabelled,
            "power": self.power,
        }


def _std(values: Sequence[float]) -> float:
    """The population standard deviation (numpy's default, ddof=0)."""
    mean = fmean(values)
    return math.sqrt(fmean([(v - mean) ** 2 for v in values]))


def _z(confidence: float) -> float:
    return NormalDist().inv_cdf(1 - (1 - confidence) / 2)


def _interval(estimate: float, error: float, confidence: float, n: int) -> RateInterval:
    half = _z(confidence) * error
    return RateInterval(estimate, estimate - half, estimate + half, confidence, n)


def _power(human: Sequence[float], judge: Sequence[float], rest: Sequence[float]) -> float:
    """PPI++'s variance-minimising lambda for a mean, clipped to [0, 1] (ppi-python's
    `_calc_lam_glm` for one dimension, with the gradients taken at the lambda = 1
    estimate; they are shifted copies of the data, so the shift cancels)."""
    n, big_n = len(human), len(rest)
    mean_h, mean_j = fmean(human), fmean(judge)
    covariance = sum((h - mean_h) * (j - mean_j) for h, j in zip(human, judge, strict=True)) / n
    pooled = [*judge, *rest]
    mean_p = fmean(pooled)
    variance = sum((p - mean_p) ** 2 for p in pooled) / (len(pooled) - 1)
    if variance == 0:
        return 0.0  # the judge said the same everywhere: it carries no information
    return min(1.0, max(0.0, covariance / ((1 + n / big_n) * variance)))


def _as_number(value: bool | float, what: str, key: str) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    number = float(value)
    if not 0.0 <= number <= 1.0 or math.isnan(number):
        raise ValueError(
            f"{what} for {key!r} is {value!r}; give a verdict as true/false (or a number "
            "from 0 to 1)"
        )
    return number


def estimate_pass_rate(
    machine_verdicts: Mapping[str, bool | float],
    human_labels: Mapping[str, bool | float],
    *,
    confidence: float = 0.95,
) -> PassRateEstimate:
    """The naive and the corrected pass rate of `machine_verdicts` (the judge's verdict per
    artifact or evaluation id: True for a pass), corrected with `human_labels` (a person's
    verdict for some of the same ids). Every labelled id must have a verdict; the ids with a
    verdict and no label are the unlabelled set. The corrected rate needs at least two
    labels and one unlabelled verdict (else it is None).

    Raises `ValueError` for a label without a verdict, a confidence outside (0, 1), or no
    verdicts at all."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1 (e.g. 0.95); got {confidence}")
    if not machine_verdicts:
        raise UndefinedStatisticError("no machine verdicts: a pass rate needs at least one")
    unknown = sorted(set(human_labels) - set(machine_verdicts))
    if unknown:
        raise ValueError(
            f"{len(unknown)} human label(s) have no machine verdict (first: {unknown[0]!r}); "
            "label only artifacts the judge gave a verdict on"
        )
    verdicts = {k: _as_number(v, "the machine verdict", k) for k, v in machine_verdicts.items()}
    every = list(verdicts.values())
    naive = _interval(fmean(every), _std(every) / math.sqrt(len(every)), confidence, len(every))
    labelled = sorted(human_labels)
    human = [_as_number(human_labels[k], "the human label", k) for k in labelled]
    judge = [verdicts[k] for k in labelled]
    rest = [v for k, v in verdicts.items() if k not in human_labels]
    if len(human) < 2 or not rest:
        return PassRateEstimate(naive, None, len(human), len(rest), None)
    power = _power(human, judge, rest)
    rectifier = [h - power * j for h, j in zip(human, judge, strict=True)]
    estimate = power * fmean(rest) + fmean(rectifier)
    error = math.hypot(
        power * _std(rest) / math.sqrt(len(rest)), _std(rectifier) / math.sqrt(len(human))
    )
    corrected = _interval(estimate, error, confidence, len(human) + len(rest))
    return PassRateEstimate(naive, corrected, len(human), len(rest), power)


def estimate_with_labelled(
    verdicts: Sequence[bool],
    labelled: Sequence[tuple[bool, bool]],
    *,
    confidence: float = 0.95,
) -> PassRateEstimate:
    """The pass rate of a set of machine `verdicts` (a run, say), naive and corrected
    with `labelled` (judge verdict, person's verdict) pairs taken elsewhere from the same
    judge and rubric (the store's human decisions): PPI with the pairs as the labelled set
    and `verdicts` as the unlabelled one. The naive rate is the verdicts' own."""
    if not verdicts:
        raise UndefinedStatisticError("no machine verdicts: a pass rate needs at least one")
    own = {f"v{index}": verdict for index, verdict in enumerate(verdicts)}
    naive = estimate_pass_rate(own, {}, confidence=confidence).naive
    if len(labelled) < 2:
        return PassRateEstimate(naive, None, len(labelled), len(verdicts), None)
    pooled: dict[str, bool | float] = dict(own)
    humans: dict[str, bool | float] = {}
    for index, (judge, human) in enumerate(labelled):
        pooled[f"l{index}"] = judge
        humans[f"l{index}"] = human
    both = estimate_pass_rate(pooled, humans, confidence=confidence)
    return PassRateEstimate(naive, both.corrected, both.labelled, both.unlabelled, both.power)

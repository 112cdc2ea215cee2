"""Agreement statistics between two raters, stdlib only and exact.

- `confusion_matrix`: counts of (rater A, rater B) label pairs over fixed, ordered labels.
- `accuracy`: observed agreement p_o, the share of items both raters labelled alike.
- `cohen_kappa`: Cohen (1960), kappa = (p_o - p_e) / (1 - p_e), where p_e = sum_i
  (r_i / n) (c_i / n) is the agreement expected by chance from the raters' marginals.
- `weighted_kappa`: Cohen (1968) for ordered labels, with agreement weights
  w_ij = 1 - |i - j| / (k - 1) (linear) or 1 - (i - j)^2 / (k - 1)^2 (quadratic) over
  the k labels in their order: kappa_w = (p_o(w) - p_e(w)) / (1 - p_e(w)).
- `pooled_kappa`: one kappa over several items with different labels (De Vries et al.
  2008): (mean p_o - mean p_e) / (1 - mean p_e), the means weighted by each item's n.
- `bootstrap_interval` / `bootstrap_intervals`: percentile bootstrap intervals that
  resample items with replacement from a seeded `random.Random`.

Every kappa is computed in integers (weights are scaled to whole numbers), so it is the
textbook figure exactly up to the final division. A kappa with no defined value (no items,
or chance agreement of 1 because both raters used one and the same label) raises
`UndefinedStatisticError` with the reason instead of returning a made-up number.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal, TypeVar

from rubricflow.errors import RubricflowError

__all__ = [
    "ConfusionMatrix",
    "Interval",
    "UndefinedStatisticError",
    "Weights",
    "accuracy",
    "bootstrap_interval",
    "bootstrap_intervals",
    "cohen_kappa",
    "confusion_matrix",
    "kappa_from_matrix",
    "percentile",
    "pooled_kappa",
    "weighted_kappa",
]

T = TypeVar("T")
Weights = Literal["linear", "quadratic"]


class UndefinedStatisticError(RubricflowError, ValueError):
    """A statistic has no value for these data; the message says why (e.g. both raters
    used a single, identical label, so chance agreement is 1 and kappa is 0/0)."""


@dataclass(frozen=True)
class ConfusionMatrix:
    """`counts[i][j]`: items rater A (rows; the human) labelled `labels[i]` and rater B
    (columns; the judge) labelled `labels[j]`."""

    labels: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]

    @property
    def n(self) -> int:
        return sum(map(sum, self.counts))

    @property
    def agreements(self) -> int:
        return sum(self.counts[i][i] for i in range(len(self.labels)))

    @property
    def row_totals(self) -> tuple[int, ...]:
        return tuple(sum(row) for row in self.counts)

    @property
    def column_totals(self) -> tuple[int, ...]:
        size = len(self.labels)
        return tuple(sum(row[j] for row in self.counts) for j in range(size))

    def to_dict(self) -> dict[str, Any]:
        return {
            "labels": list(self.labels),
            "rows": "human",
            "columns": "judge",
            "counts": [list(row) for row in self.counts],
        }


def confusion_matrix(
    rater_a: Sequence[Hashable], rater_b: Sequence[Hashable], labels: Sequence[str] | None = None
) -> ConfusionMatrix:
    """Count label pairs; `labels` fixes the rows/columns and their order (default: every
    label seen, sorted). A label outside `labels` is a `ValueError`."""
    if len(rater_a) != len(rater_b):
        raise ValueError(f"the raters labelled {len(rater_a)} and {len(rater_b)} items")
    order = (
        tuple(labels)
        if labels is not None
        else tuple(sorted({*map(str, rater_a), *map(str, rater_b)}))
    )
    if len(set(order)) != len(order):
        raise ValueError(f"labels repeat: {list(order)}")
    index = {label: position for position, label in enumerate(order)}
    counts = [[0] * len(order) for _ in order]
    for a, b in zip(rater_a, rater_b, strict=True):
        try:
            counts[index[str(a)]][index[str(b)]] += 1
        except KeyError:
            missing = str(a) if str(a) not in index else str(b)
            raise ValueError(f"label {missing!r} is not one of {list(order)}") from None
    return ConfusionMatrix(order, tuple(tuple(row) for row in counts))


def accuracy(matrix: ConfusionMatrix) -> float:
    """Observed agreement p_o: agreements / n."""
    if matrix.n == 0:
        raise UndefinedStatisticError("no items to compare")
    return matrix.agreements / matrix.n


def _integer_weights(size: int, weights: Weights | None) -> tuple[list[list[int]], int]:
    """Agreement weights scaled to integers: (W, D) with w_ij = W[i][j] / D."""
    if weights is None or size <= 1:
        return [[int(i == j) for j in range(size)] for i in range(size)], 1
    span = size - 1
    if weights == "linear":
        return [[span - abs(i - j) for j in range(size)] for i in range(size)], span
    if weights == "quadratic":
        return [[span * span - (i - j) ** 2 for j in range(size)] for i in range(size)], span**2
    raise ValueError(f"weights are 'linear' or 'quadratic', got {weights!r}")


def _chance(matrix: ConfusionMatrix, weights: Weights | None) -> tuple[int, int, int, int]:
    """(sum W_ij n_ij, sum W_ij r_i c_j, D, n) in integers."""
    table, scale = _integer_weights(len(matrix.labels), weights)
    rows, columns = matrix.row_totals, matrix.column_totals
    size = len(matrix.labels)
    observed = sum(table[i][j] * matrix.counts[i][j] for i in range(size) for j in range(size))
    expected = sum(table[i][j] * rows[i] * columns[j] for i in range(size) for j in range(size))
    return observed, expected, scale, matrix.n


def _why_undefined(matrix: ConfusionMatrix) -> str:
    used_a = [label for label, total in zip(matrix.labels, matrix.row_totals, strict=True) if total]
    used_b = [
        label for label, total in zip(matrix.labels, matrix.column_totals, strict=True) if total
    ]
    if used_a == used_b and len(used_a) == 1:
        return (
            f"both raters labelled all {matrix.n} item(s) {used_a[0]!r}, so chance agreement "
            "is 1 and kappa is 0/0; add examples of the other labels"
        )
    return "chance agreement is 1, so kappa is 0/0"


def kappa_from_matrix(matrix: ConfusionMatrix, weights: Weights | None = None) -> float:
    """Cohen's kappa (`weights=None`) or weighted kappa of a confusion matrix whose labels
    are in order. kappa = (n * sum W n_ij - sum W r_i c_j) / (D n^2 - sum W r_i c_j),
    which is (p_o - p_e) / (1 - p_e) with both sides multiplied by D n^2."""
    observed, expected, scale, n = _chance(matrix, weights)
    if n == 0:
        raise UndefinedStatisticError("no items to compare")
    denominator = scale * n * n - expected
    if denominator == 0:
        raise UndefinedStatisticError(_why_undefined(matrix))
    return (n * observed - expected) / denominator


def cohen_kappa(
    rater_a: Sequence[Hashable], rater_b: Sequence[Hashable], labels: Sequence[str] | None = None
) -> float:
    """Cohen's kappa between two raters' labels of the same items (order of `labels`
    does not matter for it)."""
    return kappa_from_matrix(confusion_matrix(rater_a, rater_b, labels))


def weighted_kappa(
    rater_a: Sequence[Hashable],
    rater_b: Sequence[Hashable],
    labels: Sequence[str],
    weights: Weights = "linear",
) -> float:
    """Cohen's weighted kappa for ordered labels (`labels` lowest to highest; every label
    of the scale counts for the distances, used or not)."""
    return kappa_from_matrix(confusion_matrix(rater_a, rater_b, labels), weights)


def pooled_kappa(matrices: Sequence[ConfusionMatrix]) -> float:
    """One kappa for several items (criteria), each with its own labels: (p̄_o - p̄_e) /
    (1 - p̄_e) with p_o and p_e averaged over the items weighted by their n, so p̄_o is the
    pooled accuracy. Items with n = 0 do not count."""
    total = 0
    observed = Fraction(0)
    expected = Fraction(0)
    for matrix in matrices:
        agree, chance, scale, n = _chance(matrix, None)
        if n == 0:
            continue
        total += n
        observed += Fraction(agree)  # n * p_o
        expected += Fraction(chance, scale * n)  # n * p_e
    if total == 0:
        raise UndefinedStatisticError("no items to compare")
    p_o, p_e = observed / total, expected / total
    if p_e == 1:
        raise UndefinedStatisticError(
            "on every criterion both raters used one and the same label, so chance "
            "agreement is 1 and kappa is 0/0"
        )
    return float((p_o - p_e) / (1 - p_e))


@dataclass(frozen=True)
class Interval:
    """A percentile bootstrap interval: `low`..`high` at `confidence`, from `used` of
    `resamples` resamples (a resample where the statistic is undefined is left out)."""

    low: float
    high: float
    confidence: float
    resamples: int
    used: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "resamples": self.resamples,
            "used": self.used,
        }


def percentile(ordered: Sequence[float], fraction: float) -> float:
    """The `fraction` quantile of sorted values, interpolating linearly between order
    statistics (Hyndman & Fan type 7, numpy's default): h = (m - 1) q."""
    if not ordered:
        raise UndefinedStatisticError("no values")
    position = (len(ordered) - 1) * fraction
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (position - below) * (ordered[above] - ordered[below])


def _check(resamples: int, confidence: float) -> None:
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1 (exclusive), got {confidence}")


def bootstrap_intervals(
    size: int,
    statistics: Callable[[Sequence[int]], Mapping[str, float | None]],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Interval]:
    """Percentile intervals for several statistics of the same `size` items from the same
    resamples. Each resample draws `size` item indices with replacement (from
    `random.Random(seed)`, so the same seed gives the same intervals); `statistics` maps
    those indices to named values, None (or raising `UndefinedStatisticError`) where a
    value is undefined on that resample. A name with no value on any resample is left out
    of the result."""
    _check(resamples, confidence)
    draws: dict[str, list[float]] = {}
    if size > 0:
        generator = random.Random(seed)
        population = range(size)
        for _ in range(resamples):
            picked = generator.choices(population, k=size)
            try:
                values = statistics(picked)
            except UndefinedStatisticError:
                continue
            for name, value in values.items():
                if value is not None:
                    draws.setdefault(name, []).append(value)
    tail = (1.0 - confidence) / 2
    intervals: dict[str, Interval] = {}
    for name, found in draws.items():
        found.sort()
        low, high = percentile(found, tail), percentile(found, 1.0 - tail)
        intervals[name] = Interval(low, high, confidence, resamples, len(found))
    return intervals


def bootstrap_interval(
    items: Sequence[T],
    statistic: Callable[[Sequence[T]], float],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap interval of `statistic` over `items`, resampled with
    replacement `resamples` times from `random.Random(seed)` (the same seed gives the
    same interval). Resamples where the statistic raises `UndefinedStatisticError` are
    left out (`Interval.used` counts the rest); if none is left, that error is raised."""

    def value(picked: Sequence[int]) -> dict[str, float | None]:
        return {"value": statistic([items[index] for index in picked])}

    found = bootstrap_intervals(
        len(items), value, resamples=resamples, confidence=confidence, seed=seed
    )
    if "value" not in found:
        raise UndefinedStatisticError("the statistic is undefined on every resample")
    return found["value"]

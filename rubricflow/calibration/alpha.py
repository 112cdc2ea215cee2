"""Krippendorff's alpha: agreement among any number of reviewers, with missing values.

Reliability data is one row per unit (an artifact, or one criterion of it), one value per
reviewer, None where that reviewer gave none. Following Krippendorff (2011, "Computing
Krippendorff's Alpha-Reliability"):

- each unit with m >= 2 values adds every ordered pair (c, k) of its values, from
  different reviewers, to the coincidence matrix with weight 1 / (m - 1); units with fewer
  than two values are not pairable and are left out;
- n_c is the total of value c's coincidences, n their sum;
- alpha = 1 - (n - 1) * sum o_ck delta(c, k) / sum n_c n_k delta(c, k), with the squared
  distance delta of the level of measurement: nominal (0 for equal values, else 1),
  ordinal (the values' ranks: (sum of n_g for g from c to k, minus (n_c + n_k) / 2)
  squared), interval ((c - k) squared) or ratio (((c - k) / (c + k)) squared).

The coincidences are kept as exact fractions, so alpha equals the `krippendorff` package's
figure (which the tests check to 1e-9) up to the final division. Alpha is undefined
(`UndefinedStatisticError`) with no pairable unit, or when every pairable value is the
same (no expected disagreement: 0 / 0).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from fractions import Fraction
from itertools import permutations
from typing import Literal

from rubricflow.calibration.stats import UndefinedStatisticError

__all__ = ["LevelOfMeasurement", "krippendorff_alpha"]

LevelOfMeasurement = Literal["nominal", "ordinal", "interval", "ratio"]


def _coincidences(units: Sequence[Sequence[Hashable | None]]) -> Counter[tuple[Hashable, Hashable]]:
    matrix: Counter[tuple[Hashable, Hashable]] = Counter()
    for unit in units:
        values = [value for value in unit if value is not None]
        if len(values) < 2:
            continue
        weight = Fraction(1, len(values) - 1)
        for c, k in permutations(values, 2):
            matrix[(c, k)] += weight  # type: ignore[assignment]
    return matrix


def _distance(
    level: LevelOfMeasurement, totals: dict[Hashable, Fraction]
) -> dict[tuple[Hashable, Hashable], Fraction | float]:
    values = list(totals)
    if level == "nominal":
        return {(c, k): Fraction(c != k) for c in values for k in values}
    numbers = {value: _number(value) for value in values}
    if level == "interval":
        return {(c, k): (numbers[c] - numbers[k]) ** 2 for c in values for k in values}
    if level == "ratio":
        return {
            (c, k): ((numbers[c] - numbers[k]) / (numbers[c] + numbers[k])) ** 2
            if numbers[c] + numbers[k]
            else 0.0
            for c in values
            for k in values
        }
    ordered = sorted(values, key=lambda value: numbers[value])
    rank = {value: index for index, value in enumerate(ordered)}
    distances: dict[tuple[Hashable, Hashable], Fraction | float] = {}
    for c in values:
        for k in values:
            low, high = sorted((rank[c], rank[k]))
            between = sum((totals[ordered[g]] for g in range(low, high + 1)), Fraction(0))
            distances[(c, k)] = (between - (totals[c] + totals[k]) / 2) ** 2
    return distances


def _number(value: Hashable) -> Fraction | float:
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
        raise ValueError(
            f"value {value!r} is not a number; ordinal, interval and ratio alpha need "
            "numeric values (use level='nominal' for labels)"
        )
    return Fraction(value) if isinstance(value, int) else value


def krippendorff_alpha(
    units: Sequence[Sequence[Hashable | None]], level: LevelOfMeasurement = "nominal"
) -> float:
    """Krippendorff's alpha of `units` (one row per unit, one value or None per
    reviewer) at the given level of measurement. 1 is perfect agreement, 0 what chance
    gives, below 0 systematic disagreement."""
    if level not in ("nominal", "ordinal", "interval", "ratio"):
        raise ValueError(f"level must be nominal, ordinal, interval or ratio; got {level!r}")
    matrix = _coincidences(units)
    if not matrix:
        raise UndefinedStatisticError(
            "no unit has values from two reviewers: alpha needs pairable values"
        )
    totals: dict[Hashable, Fraction] = {}
    for (c, _), weight in matrix.items():
        totals[c] = totals.get(c, Fraction(0)) + weight
    n = sum(totals.values(), Fraction(0))
    delta = _distance(level, totals)
    observed = sum(weight * delta[pair] for pair, weight in matrix.items())
    expected = sum(totals[c] * totals[k] * delta[(c, k)] for c in totals for k in totals)
    if expected == 0:
        raise UndefinedStatisticError(
            "every value given is the same, so no disagreement is expected by chance and "
            "alpha is 0/0"
        )
    return float(1 - (n - 1) * observed / expected)

"""One aggregation formula for every source system, computed exactly.

Each criterion yields s_i in [0, 1]. With P = sum of positive weights, N = sum of
|negative weights| and S = sum of w_i * s_i: score = clamp(S / P) when P > 0, else
clamp(1 + S / N); raw_score = S. All arithmetic is rational: each criterion's s_i is its
exact score (`CriterionResult.exact_score`: a judge's 8.7 on 0..10 is 87/100, not the
float 0.8699999999999999), and each float weight or bar is read as the decimal it prints
as. So 0.6/0.4 weights at 1.0/0.7 give exactly 0.88 and scores of 7 and 10 out of 10 with
weights 2 and 1 reach a 0.8 bar.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from rubricflow.model import Criterion, Rubric, ScoreFormula, UnscoredPolicy, ZeroWeights
from rubricflow.results import CriterionResult, Verdict, exact_number

__all__ = [
    "Aggregate",
    "Number",
    "aggregate",
    "criterion_passed",
    "exact",
    "grouped_score",
    "weighted_score",
]


Number = float | int | Fraction | Decimal
"""A score, weight or bar: floats are read as the decimal they print as; a Fraction or a
Decimal is taken exactly (a scorer's exact value, a caller's exact threshold)."""


exact = exact_number
"""The rational number a value stands for (0.1 -> 1/10, not the binary approximation; a
Fraction as it is): `rubricflow.results.exact_number`."""


def _clamp(value: Fraction) -> Fraction:
    return min(Fraction(1), max(Fraction(0), value))


def exact_sum(values: Sequence[Fraction]) -> Fraction:
    """The exact sum of `values`, over their common denominator: one normalisation, where
    adding Fractions one by one reduces (two gcds) at every step."""
    if not values:
        return Fraction(0)
    denominator = math.lcm(*(v.denominator for v in values))
    return Fraction(sum(v.numerator * (denominator // v.denominator) for v in values), denominator)


def _sum_of_products(pairs: Sequence[tuple[Fraction, Fraction]]) -> Fraction:
    """The exact sum of w * s over `pairs`, without a Fraction per product."""
    if not pairs:
        return Fraction(0)
    terms = [(w.numerator * s.numerator, w.denominator * s.denominator) for w, s in pairs]
    denominator = math.lcm(*(d for _, d in terms))
    return Fraction(sum(n * (denominator // d) for n, d in terms), denominator)


def weighted_score(
    pairs: Sequence[tuple[Number, Number]],
    *,
    zero_weights: ZeroWeights = "mean",
    formula: ScoreFormula = "clamp",
) -> tuple[Fraction, Fraction]:
    """(score, raw_score) for (weight, s) pairs by the rubric's formula.

    With every weight zero the score is the plain mean of s (nothing to weigh by), or 0
    under `zero_weights="zero"` (AgentV: satisfied weight / total weight, total 0).
    `formula="rar"` divides S by the sum of |w| (Rubrics as Rewards), clamped to 0..1.
    """
    exact_pairs = [(exact(w), exact(s)) for w, s in pairs]
    positive = exact_sum([w for w, _ in exact_pairs if w.numerator > 0])
    negative = -exact_sum([w for w, _ in exact_pairs if w.numerator < 0])
    total = _sum_of_products(exact_pairs)
    if formula == "rar" and positive + negative > 0:
        return _clamp(total / (positive + negative)), total
    if positive > 0:
        return _clamp(total / positive), total
    if negative > 0:
        return _clamp(1 + total / negative), total
    if exact_pairs and zero_weights == "mean":
        return _clamp(exact_sum([s for _, s in exact_pairs]) / len(exact_pairs)), total
    return Fraction(0), total


def grouped_score(
    rubric: Rubric,
    pairs_by_group: dict[str | None, list[tuple[Number, Number]]],
) -> tuple[Fraction, tuple[tuple[str, Fraction], ...]]:
    """The rubric's score from its criteria's (weight, s) pairs, keyed by group id.

    Without groups: the one formula over every pair. With groups: each group that has a
    scored pair is scored by the formula on its own, and the rubric's score is the mean
    of those group scores weighted by the groups' weights (a group with nothing scored
    drops out, as AgentV drops a grader that gave no answer). Returns the score and each
    group's (id, score).
    """
    if not rubric.groups:
        return _ungrouped(rubric, pairs_by_group.get(None, []))[0], ()
    scores: list[tuple[str, Fraction]] = []
    weighted: list[tuple[Fraction, Fraction]] = []
    for group in rubric.groups:
        group_pairs = pairs_by_group.get(group.id)
        if not group_pairs:
            continue
        policy = group.zero_weights or rubric.zero_weights
        score = weighted_score(group_pairs, zero_weights=policy, formula=rubric.score_formula)[0]
        scores.append((group.id, score))
        weighted.append((exact(group.weight), score))
    total = exact_sum([weight for weight, _ in weighted])  # group weights are >= 0
    if total > 0:
        mean = _sum_of_products(weighted) / total
    elif weighted and rubric.zero_weights == "mean":
        mean = exact_sum([score for _, score in weighted]) / len(weighted)
    else:
        mean = Fraction(0)
    return mean, tuple(scores)


def _ungrouped(rubric: Rubric, pairs: Sequence[tuple[Number, Number]]) -> tuple[Fraction, Fraction]:
    """(score, raw_score) of a rubric without groups: its formula over every pair."""
    return weighted_score(pairs, zero_weights=rubric.zero_weights, formula=rubric.score_formula)


def criterion_passed(
    criterion: Criterion, score: Number, level: str | None, threshold: Number
) -> bool:
    """Whether one scored criterion met its bar.

    A penalty criterion (negative weight) passes when its penalty is not incurred.
    Otherwise: `min_score` when set; else MET for binary, any level but the lowest for
    graded criteria, and the rubric's threshold for numeric (band, metric) scores.
    """
    value = exact(score)
    goodness = value if criterion.weight >= 0 else 1 - value
    if criterion.min_score is not None:
        return goodness >= exact(criterion.min_score)
    if criterion.kind == "levels" and level is not None:
        scores = [lvl.score for lvl in criterion.levels]  # reading as decimals keeps order
        if criterion.weight >= 0:
            return value > exact(min(scores))  # every level tied for lowest fails
        return value < exact(max(scores))
    if criterion.kind == "binary" and value in (0, 1):
        return goodness == 1
    return goodness >= exact(threshold)


@dataclass(frozen=True)
class Aggregate:
    """The evaluation-level outcome of a set of criterion results."""

    verdict: Verdict
    score: Fraction
    raw_score: Fraction
    coverage: Fraction
    gating_failures: tuple[str, ...]
    unscored: tuple[str, ...]
    group_scores: tuple[tuple[str, Fraction], ...] = ()
    """(group id, score) for each group that had a scored criterion; empty without groups."""

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"


def _failed_groups(
    rubric: Rubric, group_scores: Sequence[tuple[str, Fraction]], bar: Number
) -> tuple[list[str], bool]:
    """The required groups below their bar (`min_score`, else the threshold), and whether
    one of them zeroes the score (`on_failure: zero`)."""
    failed: list[str] = []
    zeroed = False
    for group_id, group_score in group_scores:
        group = rubric.group(group_id)
        assert group is not None
        group_bar = bar if group.min_score is None else group.min_score
        if group.required and group_score < exact(group_bar):
            failed.append(group_id)
            zeroed = zeroed or group.on_failure == "zero"
    return failed, zeroed


def aggregate(
    rubric: Rubric,
    results: Sequence[CriterionResult],
    *,
    threshold: Number | None = None,
    policy: UnscoredPolicy | None = None,
) -> Aggregate:
    """Combine criterion results into a verdict (DESIGN.md decisions 2-5).

    - A required criterion that was scored and failed makes the verdict `fail`.
    - Under `fail_closed` (the default) any unscored criterion makes it `incomplete`;
      `exclude` drops unscored criteria from the formula (a required one still makes
      the verdict `incomplete`); `count_as_zero` gives them zero credit (a penalty
      criterion counts as incurred, a required one as failed).
    - A required group whose score is below its `min_score` (else the threshold) makes
      the verdict `fail`; its id is listed among the gating failures. When that group
      says `on_failure: zero`, the score is 0 too (AgentV's required graders).
    - Otherwise `pass` exactly when score >= threshold. With groups, the score is the
      weighted mean of the group scores (see `grouped_score`).
    """
    bar = rubric.pass_threshold if threshold is None else threshold
    mode = policy or rubric.unscored_policy
    by_id = {c.id: c for c in rubric.criteria}
    pairs: list[tuple[Number, Number]] = []
    by_group: dict[str | None, list[tuple[Number, Number]]] = {}
    gating: list[str] = []
    unscored: list[str] = []
    unscored_required = False
    scored_weights: list[Fraction] = []
    weights: list[Fraction] = []
    for result in results:
        criterion = by_id[result.criterion_id]
        magnitude = abs(exact(criterion.weight))
        weights.append(magnitude)
        value = result.exact_score if result.status == "scored" else None
        if value is not None:
            scored_weights.append(magnitude)
            pairs.append((criterion.weight, value))
            by_group.setdefault(criterion.group, []).append(pairs[-1])
            if criterion.required and result.passed is False:
                gating.append(criterion.id)
            continue
        unscored.append(criterion.id)
        if mode == "count_as_zero":
            pairs.append((criterion.weight, 0.0 if criterion.weight >= 0 else 1.0))
            by_group.setdefault(criterion.group, []).append(pairs[-1])
            if criterion.required:
                gating.append(criterion.id)
        elif criterion.required:
            unscored_required = True
    total_weight = exact_sum(weights)
    if total_weight > 0:
        coverage = exact_sum(scored_weights) / total_weight
    else:
        count = len(results)
        coverage = Fraction(count - len(unscored), count) if count else Fraction(0)
    if rubric.groups:
        raw = weighted_score(pairs)[1]
        score, group_scores = grouped_score(rubric, by_group)
    else:  # one pass of the formula gives both
        score, raw = _ungrouped(rubric, pairs)
        group_scores = ()
    failed_groups, zeroed = _failed_groups(rubric, group_scores, bar)
    gating.extend(failed_groups)
    if zeroed:
        score = Fraction(0)
    verdict: Verdict
    if gating:
        verdict = "fail"
    elif (unscored and (mode == "fail_closed" or unscored_required)) or not pairs:
        verdict = "incomplete"
    else:
        verdict = "pass" if score >= exact(bar) else "fail"
    return Aggregate(verdict, score, raw, coverage, tuple(gating), tuple(unscored), group_scores)

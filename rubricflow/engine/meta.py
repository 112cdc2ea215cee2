"""The meta-rubric: five structural checks on a rubric itself (dataknobs' design).

Each check is a deterministic function returning a level id; the checks are also
registered as check functions (`meta.criteria_coverage`, ...) so the meta-rubric is an
ordinary rubric the engine can evaluate. `assess_rubric` runs them directly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise
from typing import Any

from rubricflow.engine.aggregate import (
    Number,
    aggregate,
    criterion_passed,
    exact,
    grouped_score,
)
from rubricflow.model import Criterion, Rubric, parse_rubric
from rubricflow.results import CriterionResult
from rubricflow.settings import Settings, use

__all__ = [
    "META_CHECKS",
    "META_RUBRIC",
    "MetaFinding",
    "MetaReport",
    "assess_rubric",
    "score_bounds",
]

WEIGHT_TOLERANCE = Fraction(1, 100)


def _pass_fail(check_id: str, name: str, description: str, fail: str) -> dict[str, object]:
    return {
        "id": check_id,
        "name": name,
        "description": description,
        "weight": 0.2,
        "required": True,
        "levels": [
            {"id": "fail", "label": "Fail", "description": fail, "score": 0.0},
            {"id": "pass", "label": "Pass", "description": "Meets the check", "score": 1.0},
        ],
        "scoring": {"method": "deterministic", "function": f"meta.{check_id}"},
    }


def _own_rubric(data: dict[str, Any]) -> Rubric:
    """rubricflow's own rubric, parsed under the default settings: made when the package
    is imported, it must not depend on (nor fail for) the environment's."""
    with use(Settings()):
        return parse_rubric(data)


META_RUBRIC = _own_rubric(
    {
        "id": "meta_rubric",
        "name": "Meta-Rubric",
        "version": "1.0.0",
        "description": "Structural quality of a rubric definition",
        "target_type": "rubric",
        "pass_threshold": 0.7,
        "criteria": [
            _pass_fail(
                "criteria_coverage", "Criteria Coverage", "At least one criterion", "No criteria"
            ),
            {
                **_pass_fail(
                    "criteria_independence",
                    "Criteria Independence",
                    "No duplicate criterion names or descriptions",
                    "Duplicate criterion names",
                ),
                "levels": [
                    {"id": "fail", "label": "Fail", "description": "Duplicate names", "score": 0.0},
                    {
                        "id": "partial",
                        "label": "Partial",
                        "description": "Unique names but duplicate descriptions",
                        "score": 0.5,
                    },
                    {"id": "pass", "label": "Pass", "description": "Independent", "score": 1.0},
                ],
            },
            _pass_fail(
                "weight_distribution",
                "Weight Distribution",
                "Criterion weights sum to 1 (within 0.01)",
                "Weights do not sum to 1",
            ),
            {
                **_pass_fail(
                    "threshold_reasonableness",
                    "Threshold Reasonableness",
                    "The pass threshold is reachable and not trivially met",
                    "Unreasonable threshold",
                ),
                "levels": [
                    {
                        "id": "too_low",
                        "label": "Too Low",
                        "description": "Trivially passing",
                        "score": 0.0,
                    },
                    {
                        "id": "too_high",
                        "label": "Too High",
                        "description": "Unreachable",
                        "score": 0.0,
                    },
                    {"id": "pass", "label": "Pass", "description": "Reasonable", "score": 1.0},
                ],
            },
            _pass_fail(
                "level_ordering",
                "Level Ordering",
                "Each criterion's levels are listed in score order",
                "Levels out of order",
            ),
        ],
    }
)


def _outcome_range(criterion: Criterion) -> tuple[Fraction, Fraction]:
    """The lowest and highest s a criterion can produce, exactly (band 8.7 is 87/100)."""
    if criterion.levels:
        scores = [exact(level.score) for level in criterion.levels]
        return min(scores), max(scores)
    if criterion.score_ranges:
        bands = criterion.score_ranges
        return min(exact(b.min) for b in bands) / 10, max(exact(b.max) for b in bands) / 10
    return Fraction(0), Fraction(1)


def score_bounds(rubric: Rubric) -> tuple[Fraction, Fraction]:
    """The worst and best normalised score the rubric's criteria can produce, scored as
    an evaluation is: per group when the rubric groups its criteria."""
    best: dict[str | None, list[tuple[Number, Number]]] = {}
    worst: dict[str | None, list[tuple[Number, Number]]] = {}
    for c in rubric.criteria:
        low, high = _outcome_range(c)
        weight = exact(c.weight)
        group = c.group if rubric.groups else None
        best.setdefault(group, []).append((weight, high if c.weight >= 0 else low))
        worst.setdefault(group, []).append((weight, low if c.weight >= 0 else high))
    return grouped_score(rubric, worst)[0], grouped_score(rubric, best)[0]


@dataclass(frozen=True)
class MetaFinding:
    check: str
    level: str
    message: str


def check_criteria_coverage(rubric: Rubric) -> MetaFinding:
    if rubric.criteria:
        return MetaFinding("criteria_coverage", "pass", f"{len(rubric.criteria)} criteria")
    return MetaFinding("criteria_coverage", "fail", "the rubric has no criteria; add at least one")


def check_criteria_independence(rubric: Rubric) -> MetaFinding:
    names: dict[str, str] = {}
    descriptions: dict[str, str] = {}
    duplicate_description = None
    for criterion in rubric.criteria:
        name = criterion.name.strip().casefold()
        if name in names:
            return MetaFinding(
                "criteria_independence",
                "fail",
                f"criteria {names[name]!r} and {criterion.id!r} share the name "
                f"{criterion.name!r}; give each criterion a distinct name",
            )
        names[name] = criterion.id
        text = criterion.description.strip().casefold()
        if text and text in descriptions and duplicate_description is None:
            duplicate_description = (descriptions[text], criterion.id)
        descriptions.setdefault(text, criterion.id)
    if duplicate_description:
        first, second = duplicate_description
        return MetaFinding(
            "criteria_independence",
            "partial",
            f"criteria {first!r} and {second!r} have the same description; "
            "say what distinguishes them",
        )
    return MetaFinding("criteria_independence", "pass", "criteria are distinct")


def check_weight_distribution(rubric: Rubric) -> MetaFinding:
    """Positive weights sum to 1 (within 0.01); for an all-penalty rubric, the penalties do.

    dataknobs sums the signed weights, which no rubric with penalty criteria can satisfy
    without padding; the positive total is what the score is normalised by.
    """
    positive = sum((exact(c.weight) for c in rubric.criteria if c.weight > 0), Fraction(0))
    negative = sum((-exact(c.weight) for c in rubric.criteria if c.weight < 0), Fraction(0))
    total, what = (positive, "positive weights") if positive > 0 else (negative, "penalty weights")
    if abs(total - 1) <= WEIGHT_TOLERANCE:
        return MetaFinding("weight_distribution", "pass", f"{what} sum to 1")
    return MetaFinding(
        "weight_distribution",
        "fail",
        f"{what} sum to {_shown(total)}, not 1; scores are normalised by that total either "
        "way, but weights summing to 1 read as shares",
    )


def _shown(value: Fraction) -> str:
    try:
        return f"{float(value):g}"
    except OverflowError:
        return f"{value.numerator // value.denominator:.3e}"


def check_threshold_reasonableness(rubric: Rubric) -> MetaFinding:
    worst, best = score_bounds(rubric)
    bar = exact(rubric.pass_threshold)
    if bar > best:
        return MetaFinding(
            "threshold_reasonableness",
            "too_high",
            f"pass_threshold {rubric.pass_threshold:g} is above the best achievable score "
            f"{float(best):g}; no outcome can pass; lower it",
        )
    if bar <= worst:
        return MetaFinding(
            "threshold_reasonableness",
            "too_low",
            f"pass_threshold {rubric.pass_threshold:g} is at or below the worst possible "
            f"score {float(worst):g}; every outcome passes; raise it",
        )
    return MetaFinding("threshold_reasonableness", "pass", "threshold is reachable")


def check_level_ordering(rubric: Rubric) -> MetaFinding:
    for index, criterion in enumerate(rubric.criteria):
        scores = [level.score for level in criterion.levels]
        ascending = all(a <= b for a, b in pairwise(scores))
        descending = all(a >= b for a, b in pairwise(scores))
        if not (ascending or descending):
            return MetaFinding(
                "level_ordering",
                "fail",
                f"criteria[{index}] ({criterion.id}) lists its levels out of score order "
                f"({', '.join(f'{s:g}' for s in scores)}); list them from lowest to highest",
            )
    return MetaFinding("level_ordering", "pass", "levels are ordered")


META_CHECKS: dict[str, Callable[[Rubric], MetaFinding]] = {
    "criteria_coverage": check_criteria_coverage,
    "criteria_independence": check_criteria_independence,
    "weight_distribution": check_weight_distribution,
    "threshold_reasonableness": check_threshold_reasonableness,
    "level_ordering": check_level_ordering,
}


@dataclass(frozen=True)
class MetaReport:
    score: float
    passed: bool
    findings: tuple[MetaFinding, ...]

    def to_dict(self) -> dict[str, object]:
        return {
            "score": self.score,
            "passed": self.passed,
            "findings": [
                {"check": f.check, "level": f.level, "message": f.message} for f in self.findings
            ],
        }


def assess_rubric(rubric: Rubric) -> MetaReport:
    """Run the five checks and aggregate them as the meta-rubric says: weights 0.2 each,
    threshold 0.7, and every check required (a failed check fails the meta-rubric)."""
    findings = tuple(check(rubric) for check in META_CHECKS.values())
    results = []
    for finding in findings:
        criterion = META_RUBRIC.criterion(finding.check)
        assert criterion is not None
        level = criterion.level(finding.level)
        assert level is not None
        results.append(
            CriterionResult(
                criterion_id=criterion.id,
                status="scored",
                score=level.score,
                level=level.id,
                passed=criterion_passed(
                    criterion, level.score, level.id, META_RUBRIC.pass_threshold
                ),
            )
        )
    outcome = aggregate(META_RUBRIC, results)
    return MetaReport(float(outcome.score), outcome.passed, findings)

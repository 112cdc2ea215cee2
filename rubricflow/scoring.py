"""The scorer contract: what a scorer is, what it is given, and how a plain value becomes a
criterion result.

A scorer turns (criterion, target) into a `CriterionResult`. Scorers never let a failure
become a score: a problem is a result with status `error` (or `unable_to_evaluate` for
a judge that gave no usable answer), carrying the reason in `notes`.

This module sits in the plugins layer, below the scorers and the LLM judges that both use
it; plugin authors reach it as `rubricflow.scorers.base` (or from `rubricflow`). It names
no plugin-manager type: `ScoringContext.plugins` is anything with the registry's lookups
(`PluginSet`), which `rubricflow.plugins.PluginRegistry` is.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from rubricflow.model import Criterion, Rubric
from rubricflow.results import CriterionResult, Target, exact_number
from rubricflow.settings import Settings, current

if TYPE_CHECKING:
    from rubricflow.formats.base import RubricFormat

__all__ = [
    "CheckResult",
    "PluginSet",
    "Scorer",
    "ScoringContext",
    "error_result",
    "result_from_value",
    "scored_result",
]


class PluginSet(Protocol):
    """What scorers and judges look up in the plugin registry, by name: scorers, check
    functions, rubric formats and LLM provider factories. `PluginRegistry` is one."""

    @property
    def scorers(self) -> Mapping[str, Scorer]: ...

    @property
    def functions(self) -> Mapping[str, Callable[..., Any]]: ...

    @property
    def formats(self) -> Mapping[str, RubricFormat]: ...

    @property
    def providers(self) -> Mapping[str, Callable[..., Any]]: ...


@dataclass
class ScoringContext:
    """What a scorer may use besides the criterion and target."""

    rubric: Rubric
    plugins: PluginSet
    allow_import: bool = False
    threshold: float | Fraction | Decimal | None = None
    options: dict[str, Any] = field(default_factory=dict)
    #: the settings of the evaluation's entry point (limits, isolation, the judge's)
    settings: Settings = field(default_factory=current)

    @property
    def bar(self) -> float | Fraction | Decimal:
        """The pass threshold: the caller's (which may be exact: a Fraction or a Decimal),
        else the rubric's."""
        return self.rubric.pass_threshold if self.threshold is None else self.threshold


@runtime_checkable
class Scorer(Protocol):
    """A scoring method, registered through `rubricflow_scorers` under its `name`."""

    name: str
    description: str

    async def score(
        self, criterion: Criterion, target: Target, context: ScoringContext
    ) -> CriterionResult:
        """Score one criterion for one target; report failures as `error` results."""
        ...


@dataclass(frozen=True)
class CheckResult:
    """A check function's answer with its reasons: `value` is a level id, a bool or a number
    in 0..1 (a float, or exactly: a Fraction or a Decimal); `evidence` lists what was found;
    `notes` says why. With `scale=(low, high)` the number is on that scale instead and is
    mapped onto 0..1 exactly: `CheckResult(Decimal("8.7"), scale=(0, 10))` scores 0.87."""

    value: Any
    evidence: Sequence[str] = ()
    notes: str = ""
    scale: tuple[float | Fraction | Decimal, float | Fraction | Decimal] | None = None


def error_result(
    criterion: Criterion, scorer: str, notes: str, evidence: Sequence[str] = ()
) -> CriterionResult:
    """A result saying this criterion could not be scored, and why."""
    return CriterionResult(
        criterion_id=criterion.id,
        status="error",
        weight=criterion.weight,
        required=criterion.required,
        scorer=scorer,
        notes=notes,
        evidence=tuple(evidence),
    )


def scored_result(
    criterion: Criterion,
    context: ScoringContext,
    scorer: str,
    score: float | Fraction,
    *,
    level: str | None = None,
    verdict: str | None = None,
    judge_score: float | Fraction | None = None,
    evidence: Sequence[str] = (),
    notes: str = "",
    reasoning: str | None = None,
) -> CriterionResult:
    """A scored result; the engine works out the criterion-level `passed` afterwards.

    Give `score` as a Fraction when it was worked out exactly (a judge's 8.7 on 0..10 is
    87/100): the result's `score` is then its nearest float and `exact_score` the Fraction,
    which is what the threshold comparison and the aggregation use."""
    if verdict is None and criterion.kind == "binary" and score in (0, 1):
        verdict = "MET" if score == 1 else "UNMET"
    number = float(score)
    # kept only when the float, read as the decimal it prints as, is not the exact value
    held = score if type(score) is Fraction and exact_number(number) != score else None
    return CriterionResult(
        criterion_id=criterion.id,
        status="scored",
        score=number,
        exact=held,
        level=level,
        verdict=verdict,
        judge_score=None if judge_score is None else float(judge_score),
        weight=criterion.weight,
        required=criterion.required,
        scorer=scorer,
        evidence=tuple(evidence),
        notes=notes,
        reasoning=reasoning,
    )


def result_from_value(
    criterion: Criterion, context: ScoringContext, scorer: str, value: Any, *, what: str
) -> CriterionResult:
    """Interpret what a check returned: a level id, a bool (MET/UNMET, or highest/lowest
    level), a number in 0..1 (a Fraction or a Decimal is kept exact), or a `CheckResult`
    wrapping one of those (or a number on its `scale`). `what` names the check in error
    messages."""
    evidence: Sequence[str] = ()
    notes = ""
    scale: tuple[Any, Any] | None = None
    if isinstance(value, CheckResult):
        evidence, notes, scale, value = value.evidence, value.notes, value.scale, value.value
    if isinstance(value, bool):
        if criterion.levels:
            level = criterion.highest_level if value else criterion.lowest_level
            assert level is not None
            return scored_result(
                criterion,
                context,
                scorer,
                level.score,
                level=level.id,
                evidence=evidence,
                notes=notes,
            )
        return scored_result(
            criterion,
            context,
            scorer,
            1.0 if value else 0.0,
            verdict="MET" if value else "UNMET",
            evidence=evidence,
            notes=notes,
        )
    if isinstance(value, str):
        level = criterion.level(value)
        if level is not None:
            return scored_result(
                criterion,
                context,
                scorer,
                level.score,
                level=level.id,
                evidence=evidence,
                notes=notes,
            )
        if not criterion.levels and value.upper() in ("MET", "UNMET"):
            met = value.upper() == "MET"
            return scored_result(
                criterion, context, scorer, 1.0 if met else 0.0, evidence=evidence, notes=notes
            )
        valid = [lvl.id for lvl in criterion.levels] or ["MET", "UNMET"]
        return error_result(
            criterion,
            scorer,
            f"{what} returned unknown level id {value!r}; valid ids: {', '.join(valid)}",
            evidence,
        )
    if isinstance(value, int | float | Fraction | Decimal):
        if scale is not None:
            return _on_scale(criterion, context, scorer, value, scale, what, evidence, notes)
        if isinstance(value, float | Decimal) and not math.isfinite(value):
            number: Fraction | None = None
        else:
            number = exact_number(value)
        if number is None or not 0 <= number <= 1:
            return error_result(
                criterion,
                scorer,
                f"{what} returned {value!r}; a numeric score must be within 0..1 (or give "
                "its scale: CheckResult(value, scale=(low, high)))",
                evidence,
            )
        exact = number if isinstance(value, Fraction | Decimal) else float(value)
        return scored_result(criterion, context, scorer, exact, evidence=evidence, notes=notes)
    return error_result(
        criterion,
        scorer,
        f"{what} returned {type(value).__name__} {value!r:.60}; return a level id, "
        "a bool or a number in 0..1",
        evidence,
    )


def _on_scale(
    criterion: Criterion,
    context: ScoringContext,
    scorer: str,
    value: float | Fraction | Decimal,
    scale: Sequence[Any],
    what: str,
    evidence: Sequence[str],
    notes: str,
) -> CriterionResult:
    """A number on the check's own scale (low..high), mapped onto 0..1 exactly."""
    numbers = (value, *scale)
    if (
        len(scale) != 2
        or any(
            isinstance(n, bool) or not isinstance(n, int | float | Fraction | Decimal)
            for n in numbers
        )
        or any(isinstance(n, float | Decimal) and not math.isfinite(n) for n in numbers)
    ):
        return error_result(
            criterion,
            scorer,
            f"{what} returned {value!r} on scale {tuple(scale)!r}; a scale is two finite "
            "numbers (low, high)",
            evidence,
        )
    number, low, high = (exact_number(n) for n in numbers)
    shown = f"{float(low):g}..{float(high):g}"
    if not high > low:
        return error_result(
            criterion,
            scorer,
            f"{what} gave the scale {shown}; its high must exceed its low",
            evidence,
        )
    if not low <= number <= high:
        return error_result(
            criterion,
            scorer,
            f"{what} returned {value!r}, outside its scale {shown}",
            evidence,
        )
    return scored_result(
        criterion,
        context,
        scorer,
        (number - low) / (high - low),
        judge_score=number,
        evidence=evidence,
        notes=notes,
    )

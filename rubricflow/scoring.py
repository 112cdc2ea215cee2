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
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from rubricflow.model import Criterion, Rubric
from rubricflow.results import CriterionResult, Target

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
    threshold: float | None = None
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def bar(self) -> float:
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
    """A check function's answer with its reasons: `value` is a level id, a bool or a float
    in 0..1; `evidence` lists what was found; `notes` says why."""

    value: Any
    evidence: Sequence[str] = ()
    notes: str = ""


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
    score: float,
    *,
    level: str | None = None,
    verdict: str | None = None,
    judge_score: float | None = None,
    evidence: Sequence[str] = (),
    notes: str = "",
    reasoning: str | None = None,
) -> CriterionResult:
    """A scored result; the engine works out the criterion-level `passed` afterwards."""
    if verdict is None and criterion.kind == "binary" and score in (0.0, 1.0):
        verdict = "MET" if score == 1.0 else "UNMET"
    return CriterionResult(
        criterion_id=criterion.id,
        status="scored",
        score=score,
        level=level,
        verdict=verdict,
        judge_score=judge_score,
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
    level), a float in 0..1, or a `CheckResult` wrapping one of those. `what` names the
    check in error messages."""
    evidence: Sequence[str] = ()
    notes = ""
    if isinstance(value, CheckResult):
        evidence, notes, value = value.evidence, value.notes, value.value
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
    if isinstance(value, int | float):
        number = float(value)
        if not math.isfinite(number) or not 0.0 <= number <= 1.0:
            return error_result(
                criterion,
                scorer,
                f"{what} returned {value!r}; a numeric score must be within 0..1",
                evidence,
            )
        return scored_result(criterion, context, scorer, number, evidence=evidence, notes=notes)
    return error_result(
        criterion,
        scorer,
        f"{what} returned {type(value).__name__} {value!r:.60}; return a level id, "
        "a bool or a float in 0..1",
        evidence,
    )

"""A deterministic, human-readable summary of an evaluation, with what to fix.

For each criterion below its bar the summary names the next level up and its
description, or the requirement it failed, so a bot (or its author) knows what to change.
"""

from __future__ import annotations

from rubricflow.model import Criterion, Rubric
from rubricflow.results import CriterionResult, Verdict

__all__ = ["build_feedback", "next_level_hint"]

_VERDICT_WORD = {"pass": "PASSED", "fail": "FAILED", "incomplete": "INCOMPLETE"}


def _percent(value: float) -> str:
    return f"{value * 100:.0f}%"


def _outcome(criterion: Criterion, result: CriterionResult) -> str:
    if result.status != "scored":
        label = "error" if result.status == "error" else "unable to evaluate"
        return f"{label}: {result.notes}" if result.notes else label
    score = f"score: {result.score:.2f}"
    if result.level is not None:
        level = criterion.level(result.level)
        return f"{level.label if level else result.level} ({score})"
    if result.verdict is not None:
        return f"{result.verdict} ({score})"
    if result.judge_score is not None:
        return f"{result.judge_score:g}{_out_of(criterion)} ({score})"
    return score


def _out_of(criterion: Criterion) -> str:
    """ " on 1..4" for the scale the judge wrote its number on (not always 0..10)."""
    from rubricflow.llm.judges import judge_scale

    bounds = judge_scale(criterion)
    if bounds is None:
        return ""
    low, high = bounds
    return f"/{float(high):g}" if low == 0 else f" on {float(low):g}..{float(high):g}"


def next_level_hint(criterion: Criterion, result: CriterionResult) -> str:
    """What would lift this criterion: the next level up, or the requirement it failed."""
    if criterion.weight < 0:
        what = criterion.description or criterion.name
        return f"remove what triggered this penalty: {what}"
    if criterion.levels and result.score is not None:
        higher = sorted(
            (level for level in criterion.levels if level.score > result.score),
            key=lambda level: level.score,
        )
        if higher:
            target = higher[0]
            detail = f": {target.description}" if target.description else ""
            return f"reach '{target.label}'{detail}"
    if criterion.score_ranges and result.score is not None:
        current = round(result.score * 10)
        for band in sorted(criterion.score_ranges, key=lambda b: b.min):
            if band.min > current:
                detail = f": {band.description}" if band.description else ""
                return f"reach {band.min}-{band.max}/10{detail}"
    requirement = criterion.description or criterion.name
    return f"meet the requirement: {requirement}"


def build_feedback(
    rubric: Rubric,
    results: tuple[CriterionResult, ...],
    *,
    verdict: Verdict,
    score: float,
    scaled_score: float,
    coverage: float,
    threshold: float,
    gating_failures: tuple[str, ...],
) -> str:
    """The summary text: verdict, score, a line per criterion, then what to fix: every
    criterion that failed its own bar or scored below the pass threshold."""
    lines = [
        f"Evaluation {_VERDICT_WORD[verdict]} for rubric '{rubric.name}' "
        f"({rubric.id}@{rubric.version}).",
        f"Overall score: {_percent(score)} (pass mark {_percent(threshold)}; "
        f"{scaled_score:g} on the {rubric.scale.min:g}..{rubric.scale.max:g} scale).",
    ]
    if coverage < 1:
        lines.append(
            f"Coverage: {_percent(coverage)} of the criteria weight was scored; "
            "the rest could not be evaluated."
        )
    by_id = {c.id: c for c in rubric.criteria}
    for result in results:
        criterion = by_id[result.criterion_id]
        flag = " [required]" if criterion.required else ""
        lines.append(f"- {criterion.name}{flag}: {_outcome(criterion, result)}")
    fixes = []
    for result in results:
        criterion = by_id[result.criterion_id]
        if result.status != "scored" or result.score is None:
            continue
        below_bar = criterion.weight >= 0 and result.score < threshold
        if result.passed is False or below_bar:
            prefix = "REQUIRED " if result.criterion_id in gating_failures else ""
            found = f" (evidence: {'; '.join(result.evidence[:3])})" if result.evidence else ""
            fixes.append(f"- {prefix}{criterion.name}: {next_level_hint(criterion, result)}{found}")
    unscored = [r for r in results if r.status != "scored"]
    if fixes:
        lines.append("What to fix:")
        lines.extend(fixes)
    if unscored:
        lines.append("Not scored (fix the cause and re-run):")
        lines.extend(f"- {by_id[r.criterion_id].name}: {r.notes or r.status}" for r in unscored)
    return "\n".join(lines)

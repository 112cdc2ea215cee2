"""A criterion decided by a judge panel: each judge's vote (its samples' majority or
mean), the panel's policy over the votes (`rubricflow.llm.panel.decide`), and a result
whose evidence lists every judge's verdict, reasoning, tokens and cost, with the panel's
agreement as the confidence (source `panel`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from rubricflow.llm.ballots import Tally, Vote, majority, mean
from rubricflow.llm.base import redact
from rubricflow.llm.budget import BUDGET_REASON
from rubricflow.llm.panel import PanelDecision, PanelVote, decide
from rubricflow.model import Criterion
from rubricflow.results import CriterionResult, LLMCall
from rubricflow.scoring import ScoringContext, result_from_value, scored_result

__all__ = ["decide_panel"]

_EXCERPT = 200


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _EXCERPT else text[: _EXCERPT - 3] + "..."


def _shown(value: Any) -> str:
    return f"{float(value):g}" if isinstance(value, Fraction | int | float) else str(value)


@dataclass
class _Judged:
    """One judge of the panel: its vote (None when it abstained) and why it abstained."""

    tally: Tally
    vote: Vote | None
    panel_vote: PanelVote | None
    reason: str = ""


class _Context:
    """What deciding one criterion needs: the criterion, the scorer, the kind of answer
    (verdict, level, score) and the judge's scale for scores."""

    def __init__(
        self,
        criterion: Criterion,
        context: ScoringContext,
        scorer: str,
        kind: str,
        to_unit: Callable[[Fraction], Fraction] | None,
    ) -> None:
        self.criterion, self.context, self.scorer = criterion, context, scorer
        self.kind, self.to_unit = kind, to_unit

    def result(self, value: Any) -> CriterionResult:
        """The result a judge's categorical value gives (MET/UNMET, a level id)."""
        given = value == "MET" if self.kind == "verdict" else value
        return result_from_value(self.criterion, self.context, self.scorer, given, what="the panel")

    def unit(self, value: Any) -> Fraction:
        if self.kind == "score":
            unit = self.to_unit(value) if self.to_unit else Fraction(value)
            return min(Fraction(1), max(Fraction(0), unit))
        return self.result(value).exact_score or Fraction(0)

    def panel_vote(self, value: Any) -> PanelVote:
        unit = self.unit(value)
        goodness = unit if self.criterion.weight >= 0 else 1 - unit
        binary = self.kind == "verdict" and self.criterion.kind == "binary"
        return PanelVote(value, unit, goodness, binary)


def _judge(tally: Tally, how: _Context) -> _Judged:
    """One judge's vote: the majority (or mean score) of its samples, or an abstention."""
    if not tally.votes:
        return _Judged(tally, None, None, "; ".join(dict.fromkeys(tally.abstained)) or "no answer")
    if how.kind == "score":
        number, vote, _ = mean(tally)
        return _Judged(tally, vote, how.panel_vote(number))
    decided = majority(tally, str)
    if isinstance(decided, str):
        return _Judged(tally, None, None, decided)
    winner, vote, _ = decided
    return _Judged(tally, vote, how.panel_vote(winner))


def _usage(calls: Sequence[LLMCall]) -> str:
    fresh = [call for call in calls if call.outcome != "cached"]
    tokens = sum((call.input_tokens or 0) + (call.output_tokens or 0) for call in fresh)
    priced = [call.cost for call in fresh if call.cost is not None]
    cached = len(calls) - len(fresh)
    parts = [f"{len(fresh)} call{'s' * (len(fresh) != 1)}", f"{tokens} tokens"]
    if priced:
        parts.append(f"cost {sum(priced):.6g}")
    if cached:
        parts.append(f"{cached} cached")
    return ", ".join(parts)


def _line(judged: _Judged) -> str:
    label = judged.tally.judge or "judge"
    usage = _usage(judged.tally.calls)
    if judged.panel_vote is None or judged.vote is None:
        return redact(f"judge {label}: abstained ({judged.reason}) [{usage}]")
    said = _shown(judged.panel_vote.value)
    reasoning = f": {_excerpt(judged.vote.reasoning)}" if judged.vote.reasoning else ""
    return redact(f"judge {label}: {said} [{usage}]{reasoning}")


def _decided_result(decision: PanelDecision, how: _Context) -> CriterionResult:
    if how.kind == "score":
        return scored_result(
            how.criterion, how.context, how.scorer, decision.unit, judge_score=decision.value
        )
    if decision.value is not None and how.unit(decision.value) == decision.unit:
        return how.result(decision.value)
    # a mean or median between the judges' values: the score on 0..1, no single verdict
    return scored_result(how.criterion, how.context, how.scorer, decision.unit)


def decide_panel(
    criterion: Criterion,
    context: ScoringContext,
    scorer: str,
    policy: str,
    tallies: Sequence[Tally],
    calls: Sequence[LLMCall],
    *,
    kind: str,
    notes: Sequence[str] = (),
    to_unit: Callable[[Fraction], Fraction] | None = None,
) -> CriterionResult:
    """The criterion's result from the panel's `tallies` (one per judge) under `policy`."""
    how = _Context(criterion, context, scorer, kind, to_unit)
    judged = [_judge(tally, how) for tally in tallies]
    votes = [j.panel_vote for j in judged if j.panel_vote is not None]
    decision = decide(policy, votes, len(judged))
    lines = [_line(j) for j in judged]
    abstained = len(judged) - len(votes)
    if isinstance(decision, str):
        # a judge stopped by the budget: the criterion's reason is the budget (fail closed)
        if any(a.startswith(BUDGET_REASON) for t in tallies for a in t.abstained):
            decision = f"{BUDGET_REASON}: {decision} (the judge budget refused a call)"
        return CriterionResult(
            criterion_id=criterion.id,
            status="unable_to_evaluate",
            weight=criterion.weight,
            required=criterion.required,
            scorer=scorer,
            notes=redact(
                decision if decision.startswith(BUDGET_REASON) else f"panel ({policy}): {decision}"
            ),
            evidence=(f"panel ({policy}): {decision}", *lines),
            llm_calls=tuple(calls),
        )
    result = _decided_result(decision, how)
    shown = _shown(decision.value) if decision.value is not None else f"{float(decision.unit):.4g}"
    summary = (
        f"panel ({policy}): {shown}; {decision.agreeing} of {len(judged)} judges gave it"
        + (f", {abstained} abstained" if abstained else "")
        + f" (confidence {float(decision.confidence):.2f})"
    )
    agreeing = [
        j.vote for j in judged if j.vote and j.panel_vote and j.panel_vote.unit == decision.unit
    ]
    representative = (agreeing or [j.vote for j in judged if j.vote])[0]
    return result.model_copy(
        update={
            "reasoning": representative.reasoning if representative else None,
            "evidence": (summary, *lines),
            "notes": "; ".join(note for note in notes if note),
            "llm_calls": tuple(calls),
            "confidence": float(decision.confidence),
            "confidence_source": "panel",
        }
    )

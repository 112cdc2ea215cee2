"""The length penalty (`Rubric.length_penalty`): long content loses score, as the
`rubric` package's `LengthPenalty` takes it off.

The penalty is computed as the package computes it (a float curve), and taken off the
exact score as the decimal it prints as; the score stays at or above 0, the raw score is
left alone, and a pass whose penalised score is below the bar becomes a fail."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from fractions import Fraction
from typing import Any

from rubricflow.engine.aggregate import Aggregate, Number, exact
from rubricflow.model import LengthPenalty, Rubric
from rubricflow.results import Target

__all__ = ["PenaltyApplied", "apply_length_penalty", "counted_words", "penalty_for"]

_THINKING = re.compile(r"<thinking>(.*?)</thinking>", re.DOTALL | re.IGNORECASE)
_OUTPUT = re.compile(r"<output>(.*?)</output>", re.DOTALL | re.IGNORECASE)

#: what an evaluation's metadata records of a penalty: the words counted and the penalty
PenaltyApplied = dict[str, Any]


def _sections(content: Any) -> tuple[str, str]:
    """(thinking, output) of the content: a `{thinking, output}` mapping as it is, text
    split at `<thinking>` / `<output>` markers as the package splits it (no markers: all
    output), anything else as its text."""
    if isinstance(content, Mapping) and ({"thinking", "output"} & set(content)):
        thinking, output = content.get("thinking", ""), content.get("output", "")
        if isinstance(thinking, str) and isinstance(output, str):
            return thinking, output
    text = content if isinstance(content, str) else Target(content=content).text
    thought = _THINKING.search(text)
    said = _OUTPUT.search(text)
    thinking = thought.group(1).strip() if thought else ""
    if said:
        return thinking, said.group(1).strip()
    if thought:
        return thinking, _THINKING.sub("", text).strip()
    return "", text


def counted_words(content: Any, penalty: LengthPenalty) -> int:
    """The whitespace-separated words of the part of `content` the penalty counts."""
    thinking, output = _sections(content)
    if penalty.penalty_type == "output_only":
        text = output
    elif penalty.penalty_type == "thinking_only":
        text = thinking
    else:
        text = f"{thinking} {output}"
    return len(text.split())


def penalty_for(count: int, penalty: LengthPenalty) -> float:
    """The package's curve: 0 up to the budget, `penalty_at_cap` from the cap on, and
    `penalty_at_cap * fraction ** exponent` between."""
    if count <= penalty.free_budget:
        return 0.0
    if count >= penalty.max_cap:
        return penalty.penalty_at_cap
    fraction = (count - penalty.free_budget) / float(penalty.max_cap - penalty.free_budget)
    return float(penalty.penalty_at_cap * fraction**penalty.exponent)


def apply_length_penalty(
    rubric: Rubric, subject: Target, outcome: Aggregate, bar: Number
) -> tuple[Aggregate, PenaltyApplied | None]:
    """`outcome` with the rubric's length penalty taken off its score (None: the rubric
    has none), and what was counted and taken, for the evaluation's metadata."""
    configured = rubric.length_penalty
    if configured is None:
        return outcome, None
    count = counted_words(subject.content, configured)
    taken = penalty_for(count, configured)
    applied: PenaltyApplied = {"words": count, "penalty": taken}
    if taken == 0:
        return outcome, applied
    score = max(Fraction(0), outcome.score - exact(taken))
    verdict = outcome.verdict
    if verdict == "pass" and score < exact(bar):
        verdict = "fail"
    return replace(outcome, score=score, verdict=verdict), applied

"""Votes from a judge's answers: asking every judge of a panel at once, reading each
answer's vote (and, from log-probabilities, how sure it was), marking the call ledger
with who answered what, and how much samples agree.

A single judge's criterion is decided in `rubricflow.llm.judges`; a panel's in
`rubricflow.llm.panel_verdict` (policies and abstention in `rubricflow.llm.panel`).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from rubricflow.llm.logprobs import value_probability
from rubricflow.llm.session import Answer, LLMSession, Question
from rubricflow.results import LLMCall, exact_number

__all__ = [
    "Ballot",
    "Tally",
    "Vote",
    "ask_all",
    "calls_of",
    "majority",
    "mean",
    "sample_confidence",
    "tally",
]


@dataclass
class Vote:
    """One usable answer's value, its reasoning, and the probability the judge's tokens
    gave that value (None without log-probabilities)."""

    value: Any
    reasoning: str
    probability: float | None = None


@dataclass
class Tally:
    """The votes of one judge's samples, and why the others abstained; `judge` names the
    judge within a panel."""

    votes: list[Vote]
    abstained: list[str]
    judge: str | None = None
    calls: list[LLMCall] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.votes) + len(self.abstained)

    def abstention_note(self) -> str | None:
        if not self.abstained:
            return None
        count = len(self.abstained)
        return (
            f"{count} of {self.total} samples gave no usable answer and abstained "
            f"({self.abstained[0]})"
        )


@dataclass
class Ballot:
    """One judge's answers to a question (all its samples)."""

    answers: list[Answer]
    judge: str | None = None


async def _ask_samples(
    session: LLMSession, question: Question, samples: int, temperature: float | None
) -> list[Answer]:
    questions = [
        replace(question, sample=index, temperature=temperature) for index in range(samples)
    ]
    if len(questions) == 1:  # the usual case: no task to gather
        return [await session.ask(questions[0])]
    return list(await asyncio.gather(*(session.ask(q) for q in questions)))


def _marked(answers: list[Answer], judge: str) -> list[Answer]:
    for answer in answers:
        answer.calls = [call.model_copy(update={"judge": judge}) for call in answer.calls]
    return answers


async def ask_all(
    session: LLMSession, question: Question, samples: int, temperature: float | None
) -> list[Ballot]:
    """Every judge's answers: one ballot for a single judge; for a panel, one per judge,
    asked at the same time (their calls marked with the judge's label)."""
    if session.panel is None:
        return [Ballot(await _ask_samples(session, question, samples, temperature))]
    members = session.members()
    answered = await asyncio.gather(
        *(_ask_samples(member, question, samples, temperature) for member in members)
    )
    labels = [member.member_label or f"judge {index + 1}" for index, member in enumerate(members)]
    return [
        Ballot(_marked(answers, label), label)
        for answers, label in zip(answered, labels, strict=True)
    ]


def calls_of(ballots: Sequence[Ballot]) -> list[LLMCall]:
    return [call for ballot in ballots for answer in ballot.answers for call in answer.calls]


def _shown(value: Any) -> str:
    return f"{float(value):g}" if isinstance(value, Fraction | int | float) else str(value)


def _mark_verdict(answer: Answer, value: Any) -> None:
    """The ledger record of the call that gave the answer says what it said."""
    for index in range(len(answer.calls) - 1, -1, -1):
        call = answer.calls[index]
        if call.outcome in ("ok", "cached"):
            answer.calls[index] = call.model_copy(update={"verdict": _shown(value)[:200]})
            return


def tally(
    ballot: Ballot,
    pick: Callable[[Any], Vote | str],
    *,
    key: str,
    scope: str | None = None,
) -> Tally:
    """The votes among one judge's answers: `pick` reads a vote (or why there is none)
    from an answer's value; `key` is the answer field holding the value (and `scope` the
    criterion of a one-shot answer), for its log-probability. Outside a one-shot answer,
    the ledger record of each usable call says what it answered."""
    counted = Tally([], [], judge=ballot.judge)
    for answer in ballot.answers:
        counted.calls.extend(answer.calls)
        if answer.value is None:
            counted.abstained.append(answer.error or "no answer")
            continue
        picked = pick(answer.value)
        if isinstance(picked, str):
            counted.abstained.append(picked)
            continue
        if answer.text is not None:
            written = picked.value if isinstance(picked.value, str) else None
            picked.probability = value_probability(
                answer.text, answer.logprobs, key, written, scope
            )
        if scope is None:
            _mark_verdict(answer, picked.value)
        counted.votes.append(picked)
    if scope is None:
        counted.calls = [call for answer in ballot.answers for call in answer.calls]
    return counted


def majority(tally: Tally, shown: Callable[[Any], str]) -> tuple[Any, Vote, list[str]] | str:
    """(winner, a vote for it, evidence) or the reason there is no majority."""
    counts = Counter(vote.value for vote in tally.votes)
    ranked = counts.most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        split = ", ".join(f"{shown(value)} {count}" for value, count in ranked)
        return f"the {len(tally.votes)} usable samples split evenly ({split}); no majority"
    winner, count = ranked[0]
    representative = next(vote for vote in tally.votes if vote.value == winner)
    evidence = []
    if tally.total > 1:
        split = ", ".join(f"{shown(value)} {n}" for value, n in ranked)
        evidence.append(
            f"samples: {count} of {len(tally.votes)} usable answers agree on {shown(winner)} "
            f"(agreement {count / len(tally.votes):.0%}; {split})"
        )
    return winner, representative, evidence


def mean(tally: Tally) -> tuple[Fraction, Vote, list[str]]:
    """The exact mean of the samples' scores (8.6, 8.7 and 8.8 have the mean 8.7)."""
    values = [exact_number(vote.value) for vote in tally.votes]
    average = sum(values, Fraction(0)) / len(values)
    representative = min(tally.votes, key=lambda vote: abs(exact_number(vote.value) - average))
    evidence = []
    if tally.total > 1:
        spread = max(values) - min(values)
        shown = ", ".join(f"{float(value):g}" for value in values)
        evidence.append(
            f"samples: scores {shown}; mean {float(average):.4g}, spread {float(spread):g} "
            f"({len(values)} of {tally.total} usable)"
        )
    return average, representative, evidence


def sample_confidence(
    tally: Tally, decided: Any, to_unit: Callable[[Fraction], Fraction] | None = None
) -> Fraction:
    """How much a judge's samples agree on what was decided: the share of its samples
    (abstaining ones included) that voted `decided`; for scores, 1 minus the mean
    distance of the votes from the decided score on 0..1, times the share that voted."""
    if to_unit is None:
        agreeing = sum(1 for vote in tally.votes if vote.value == decided)
        return Fraction(agreeing, tally.total)
    centre = to_unit(exact_number(decided))
    units = [to_unit(exact_number(vote.value)) for vote in tally.votes]
    spread = sum((abs(unit - centre) for unit in units), Fraction(0)) / len(units)
    return max(Fraction(0), 1 - spread) * Fraction(len(units), tally.total)

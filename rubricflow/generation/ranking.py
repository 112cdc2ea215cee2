"""Group-aware scoring: one judge call ranks a prompt's G completions against each other
(as GRPO samples them), and ranks map to rewards.

Rewards: completions are ordered by the judge's rank (1 is best); tied completions share
the mean of the positions they occupy, and a position p of G (1-based) maps to
(G - p) / (G - 1): the best gets 1.0, the worst 0.0, evenly spaced between. A group of
one needs no judge and gets 0.5 (nothing to compare it with). A judge failure (no
valid ranking after the session's re-ask) gives every completion `None` with the
reason, never a guessed number.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from rubricflow.errors import ConfigurationError
from rubricflow.generation.contract import ranking_schema, read_ranking
from rubricflow.generation.prompts import RANK_SYSTEM, rank_prompt
from rubricflow.generation.session import JudgeOption, judge_scope
from rubricflow.generation.usage import call_usage
from rubricflow.llm.session import Question
from rubricflow.model import Rubric
from rubricflow.results import LLMCall
from rubricflow.sync_bridge import run_sync

__all__ = [
    "BatchRanking",
    "GroupRanking",
    "RankedCompletion",
    "rank_batch",
    "rank_group",
    "rank_group_sync",
    "rank_rewards",
]

CONTRACT_VERSION = "rubricflow-rank/1"


@dataclass(frozen=True)
class RankedCompletion:
    """One completion's place: its `rank` from the judge (None on failure), its
    `reward` in 0..1 (None on failure) and the judge's `reasoning` (the evidence)."""

    index: int
    rank: int | None
    reward: float | None
    reasoning: str


@dataclass
class GroupRanking:
    """A group's ranking. With a swapped pass, `flips` are the pairs of completions (by
    index, the better in the first pass first) whose order the second pass reversed."""

    completions: list[RankedCompletion]
    error: str | None = None
    calls: list[LLMCall] = field(default_factory=list)
    flips: list[tuple[int, int]] = field(default_factory=list)
    swapped: bool = False

    @property
    def rewards(self) -> list[float | None]:
        return [c.reward for c in self.completions]

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rewards": self.rewards,
            "error": self.error,
            "completions": [
                {"index": c.index, "rank": c.rank, "reward": c.reward, "reasoning": c.reasoning}
                for c in self.completions
            ],
            "usage": call_usage(self.calls),
            **(
                {"swapped_pass": True, "flips": [list(pair) for pair in self.flips]}
                if self.swapped
                else {}
            ),
        }


def rank_rewards(ranks: Sequence[int]) -> list[float]:
    """Rewards for judge ranks (1 is best; equal ranks tie), exact then rounded to floats:
    ties share the mean of their positions; position p of G maps to (G - p) / (G - 1)."""
    size = len(ranks)
    if size == 1:
        return [0.5]
    order = sorted(range(size), key=lambda i: (ranks[i], i))
    position: dict[int, Fraction] = {}
    start = 0
    while start < size:
        end = start
        while end + 1 < size and ranks[order[end + 1]] == ranks[order[start]]:
            end += 1
        shared = Fraction(start + 1 + end + 1, 2)
        for slot in range(start, end + 1):
            position[order[slot]] = shared
        start = end + 1
    return [float((size - position[i]) / (size - 1)) for i in range(size)]


def _standard(rubric: Rubric | str | None) -> str | None:
    if rubric is None or isinstance(rubric, str):
        return rubric
    lines = [rubric.description] if rubric.description else []
    for criterion in rubric.criteria:
        text = criterion.description or criterion.name or criterion.id
        lines.append(f"- ({criterion.weight:g}) {criterion.name or criterion.id}: {text}")
    return "\n".join(lines)


def _shown_order(texts: Sequence[str]) -> list[int]:
    """A permutation of the completions fixed by their content (and position, so equal
    texts still get distinct slots)."""

    def key(index: int) -> str:
        return hashlib.sha256(f"{index}\0{texts[index]}".encode()).hexdigest()

    return sorted(range(len(texts)), key=key)


async def rank_group(
    prompt: str,
    completions: Sequence[str],
    *,
    judge: JudgeOption = None,
    rubric: Rubric | str | None = None,
    reference: str | None = None,
    shuffle: bool = False,
    swap: bool = False,
    cache: Any = "default",
) -> GroupRanking:
    """Rank `completions` (all answers to `prompt`) with one judge call and map the ranks
    to rewards. `rubric` (a `Rubric` or plain text) is the standard they are compared
    against; `reference` a reference answer. `shuffle` shows the judge the completions
    in an order fixed by their content (against a judge's position bias: the sampler's
    order no longer decides who comes first; the same group is shown the same way, so
    the cache still answers a repeat). `swap` asks a second time with the completions
    shown in reversed order: each completion's ranks from the two passes are added (ties
    share) and the pairs whose order flipped are recorded. Never raises for a judge
    failure: the ranking's `error` says why and every reward is None."""
    texts = [str(c) for c in completions]
    if not texts:
        return GroupRanking([])
    if len(texts) == 1:
        return GroupRanking([RankedCompletion(0, 1, 0.5, "a group of one: nothing to compare")])
    size = len(texts)
    order = _shown_order(texts) if shuffle else list(range(size))  # shown slot -> index
    orders = [order, list(reversed(order))] if swap else [order]
    async with judge_scope(judge, cache) as session:
        passes = await asyncio.gather(
            *(_one_pass(session, prompt, texts, shown, reference, rubric) for shown in orders)
        )
    calls = [call for _, found_calls in passes for call in found_calls]
    failed = next((found for found, _ in passes if isinstance(found, str)), None)
    if failed is not None:
        which = "" if len(passes) == 1 else " (in one of the two passes)"
        return GroupRanking(
            [RankedCompletion(i, None, None, "") for i in range(size)],
            failed + which,
            calls,
            swapped=swap,
        )
    found = [value for value, _ in passes if not isinstance(value, str)]
    ranks = [sum(value[i][0] for value in found) for i in range(size)]
    rewards = rank_rewards(ranks)
    # one pass: the judge's rank; two: the place by the sum of both passes' ranks
    place = {total: n for n, total in enumerate(sorted(set(ranks)), start=1)}
    ranked = [
        RankedCompletion(i, place[ranks[i]] if swap else ranks[i], rewards[i], found[0][i][1])
        for i in range(size)
    ]
    return GroupRanking(ranked, None, calls, _flips(found), swapped=swap)


async def _one_pass(
    session: Any,
    prompt: str,
    texts: Sequence[str],
    order: Sequence[int],
    reference: str | None,
    rubric: Rubric | str | None,
) -> tuple[dict[int, tuple[int, str]] | str, list[LLMCall]]:
    """One ranking question with the completions shown in `order`: each completion's
    (rank, reasoning) by index, or why there is none."""
    size = len(texts)
    user = rank_prompt(prompt, [texts[i] for i in order], reference, _standard(rubric))
    question = Question(
        user=user,
        system=RANK_SYSTEM,
        read=lambda text: read_ranking(text, size),
        rubric_hash=hashlib.sha256(f"{CONTRACT_VERSION}\0{user}".encode()).hexdigest(),
        schema=ranking_schema(size),
        schema_name="group_ranking",
        temperature=0.0,
    )
    answer = await session.ask(question)
    if not answer.ok:
        return answer.error or "the judge gave no usable ranking", answer.calls
    shown: dict[int, tuple[int, str]] = answer.value
    return {order[slot]: entry for slot, entry in shown.items()}, answer.calls


def _flips(passes: Sequence[dict[int, tuple[int, str]]]) -> list[tuple[int, int]]:
    """Pairs (a, b) the first pass ranks a above b and a later pass b above a."""
    if len(passes) < 2:
        return []
    first, other = passes[0], passes[1]
    size = len(first)
    return [
        (a, b)
        for a in range(size)
        for b in range(size)
        if first[a][0] < first[b][0] and other[b][0] < other[a][0]
    ]


@dataclass
class BatchRanking:
    """A trainer batch ranked group by group: `groups` pairs each group's rows (a range of
    batch positions) with its ranking; `rewards` are in batch order."""

    groups: list[tuple[range, GroupRanking]]

    @property
    def rewards(self) -> list[float | None]:
        rewards: list[float | None] = []
        for _rows, ranking in self.groups:
            rewards.extend(ranking.rewards)
        return rewards


def _column(values: Sequence[Any] | None, size: int, name: str) -> list[Any]:
    if values is None:
        return [None] * size
    if len(values) != size:
        raise ConfigurationError(
            f"{name} has {len(values)} entries for {size} completions; give one per completion"
        )
    return list(values)


async def rank_batch(
    prompts: Sequence[str],
    completions: Sequence[str],
    *,
    judge: JudgeOption = None,
    rubrics: Sequence[Rubric | str | None] | None = None,
    references: Sequence[str | None] | None = None,
    concurrency: int = 16,
    shuffle: bool = False,
    swap: bool = False,
    cache: Any = "default",
) -> BatchRanking:
    """Rank a GRPO batch: consecutive rows with the same prompt (and rubric and
    reference) form a group, each group is ranked by one judge call (two with `swap`;
    `concurrency` groups at once, over one session), and the rewards come back in batch
    order."""
    size = len(completions)
    prompt_column = _column(prompts, size, "prompts")
    rubric_column = _column(rubrics, size, "rubrics")
    reference_column = _column(references, size, "references")
    spans: list[range] = []
    start = 0
    for row in range(1, size + 1):
        if row == size or (
            prompt_column[row] != prompt_column[start]
            or rubric_column[row] != rubric_column[start]
            or reference_column[row] != reference_column[start]
        ):
            spans.append(range(start, row))
            start = row
    gate = asyncio.Semaphore(concurrency)
    async with judge_scope(judge, cache) as session:

        async def one(rows: range) -> GroupRanking:
            async with gate:
                return await rank_group(
                    str(prompt_column[rows.start]),
                    [completions[i] for i in rows],
                    judge=session,
                    rubric=rubric_column[rows.start],
                    reference=reference_column[rows.start],
                    shuffle=shuffle,
                    swap=swap,
                )

        rankings = await asyncio.gather(*(one(rows) for rows in spans))
    return BatchRanking(list(zip(spans, rankings, strict=True)))


def rank_group_sync(prompt: str, completions: Sequence[str], **options: Any) -> GroupRanking:
    """`rank_group` from synchronous code, also inside a running event loop (see
    `rubricflow.sync_bridge`)."""
    return run_sync(rank_group(prompt, completions, **options))

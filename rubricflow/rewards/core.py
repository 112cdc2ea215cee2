"""The reward engine every trainer shape shares: score a batch of completions against a
rubric (one for the batch, or one per prompt) through the judge, and turn each evaluation
into a reward.

A complete evaluation's reward is its score (0..1, by the rubric's `score_formula`). An
incomplete one (a judge that answered garbage, 429, 500 or timed out after its retries; a
rubric cell that cannot be read) has no reward: `None`, with the reason logged on the
`rubricflow.rewards` logger, never a guessed 0 and never an exception that ends a training
step, unless `on_failure="raise"`. Identical (rubric, completion, judge) questions are
answered from the judge cache, so a reward is reproducible from its stored evidence.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rubricflow.engine.executor import evaluate_cases, resolve_method
from rubricflow.errors import RewardError, RubricflowError
from rubricflow.formats import load_rubric
from rubricflow.generation.ranking import rank_batch
from rubricflow.llm.session import LLMSession
from rubricflow.llm.specs import default_spec
from rubricflow.model import Rubric, parse_rubric
from rubricflow.results import Evaluation, Target
from rubricflow.rewards.columns import (
    RubricColumnCache,
    completion_content,
    completion_text,
    prompt_text,
)
from rubricflow.rewards.holistic import holistic_rubric
from rubricflow.scorers.llm import LLM_SCORER_NAMES
from rubricflow.targets import as_target

__all__ = [
    "Aggregation",
    "OnFailure",
    "Ranking",
    "RewardOutcome",
    "RubricReward",
    "as_rubric",
    "criterion_means",
]

logger = logging.getLogger("rubricflow.rewards")

Aggregation = Literal["explicit", "implicit"]
OnFailure = Literal["none", "raise"]
Ranking = Literal["criteria", "group"]
DEFAULT_CONCURRENCY = 32


@dataclass(frozen=True)
class RewardOutcome:
    """One completion's reward (None when the evaluation is incomplete), the evaluation
    behind it (its evidence), and why there is no reward when there is none."""

    reward: float | None
    evaluation: Evaluation | None = None
    reason: str | None = None


def as_rubric(rubric: Rubric | str | Path | Mapping[str, Any]) -> Rubric:
    """A rubric from a `Rubric`, a rubric file (any supported format) or a native mapping."""
    if isinstance(rubric, Rubric):
        return rubric
    if isinstance(rubric, Mapping):
        return parse_rubric(dict(rubric))
    return load_rubric(rubric)


def _check_columns(count: int, **columns: Sequence[Any] | None) -> None:
    """Every column given holds one entry per completion."""
    for name, column in columns.items():
        if column is not None and len(column) != count:
            raise RewardError(
                f"{name} has {len(column)} entries for {count} completions; give one per completion"
            )


def _why(evaluation: Evaluation) -> str:
    unscored = [r for r in evaluation.criteria if r.status != "scored"]
    parts = [f"{r.criterion_id}: {r.status} ({r.notes or 'no reason given'})" for r in unscored]
    return "incomplete evaluation; " + ("; ".join(parts) or "nothing was scored")


class RubricReward:
    """Rewards for completions, judged against a rubric.

    - `rubric`: the batch's rubric (a `Rubric`, a file path, a native mapping); optional
      when every prompt brings its own in a `rubric` column.
    - `judge`: the LLM spec (`openai:gpt-4o-mini`, `ollama:qwen2.5@http://...`), a provider
      or an async callable `(system, user) -> str`; None reads `RUBRICFLOW_LLM`.
    - `judge_settings`: provider settings (`max_concurrency`, `timeout`, `max_attempts`...).
    - `cache`: the judge cache (`"default"`: the user's cache file; a path; a `JudgeCache`;
      None or False for none).
    - `aggregation`: `explicit` (a verdict per item, combined by the rubric's formula) or
      `implicit` (one holistic judge call over every item).
    - `concurrency`: completions evaluated at once.
    - `on_failure`: `none` (the default: None for that completion, reason logged) or
      `raise` (`RewardError`).
    - `ranking`: `criteria` (the default: each completion scored on its own against the
      rubric) or `group` (group-aware: consecutive completions with the same prompt,
      rubric and reference form a GRPO group, one judge call ranks the group against the
      rubric, and ranks map to rewards: best 1.0, worst 0.0, ties share the mean; see
      `rubricflow.generation.rank_batch`). A failed group ranking gives each of its
      completions None with the reason.
    - `shuffle` (group ranking only): show the judge each group in an order fixed by
      content, not by the sampler, against position bias.
    - `swap` (group ranking only): rank each group a second time shown in reversed
      order; ranks from both passes are added and flips recorded (twice the calls).
    """

    def __init__(
        self,
        rubric: Rubric | str | Path | Mapping[str, Any] | None = None,
        *,
        judge: Any = None,
        judge_settings: Mapping[str, Any] | None = None,
        cache: Any = "default",
        aggregation: Aggregation = "explicit",
        concurrency: int = DEFAULT_CONCURRENCY,
        on_failure: OnFailure = "none",
        rubric_cache: RubricColumnCache | None = None,
        ranking: Ranking = "criteria",
        shuffle: bool = True,
        swap: bool = False,
    ) -> None:
        if aggregation not in ("explicit", "implicit"):
            raise RewardError(
                f"aggregation {aggregation!r} is not known; use 'explicit' or 'implicit'"
            )
        if on_failure not in ("none", "raise"):
            raise RewardError(f"on_failure {on_failure!r} is not known; use 'none' or 'raise'")
        if ranking not in ("criteria", "group"):
            raise RewardError(f"ranking {ranking!r} is not known; use 'criteria' or 'group'")
        if ranking == "group" and aggregation == "implicit":
            raise RewardError(
                "ranking='group' judges a whole group in one call; aggregation='implicit' "
                "does not apply to it: leave aggregation at its default"
            )
        self.rubric = None if rubric is None else as_rubric(rubric)
        self.judge = judge
        self.judge_settings = dict(judge_settings or {})
        self.cache = cache
        self.aggregation = aggregation
        self.concurrency = concurrency
        self.on_failure = on_failure
        self.rubrics = rubric_cache or RubricColumnCache()
        self.ranking = ranking
        self.shuffle = shuffle
        self.swap = swap
        self._judged_rubrics: set[str] = set()
        if ranking == "group" or aggregation == "implicit":
            self._require_judge(f"ranking={ranking!r}, aggregation={aggregation!r}")
        elif self.rubric is not None:
            self._check_judge(self.rubric)

    def _require_judge(self, why: str) -> None:
        """Refuse, when this reward is built (not at every completion), to judge without a
        judge: no `judge` and no RUBRICFLOW_LLM."""
        if self.judge is None and default_spec() is None:
            raise RewardError(
                f"this reward needs an LLM judge ({why}) and none is configured: pass "
                "judge='openai:gpt-4o-mini' (or another spec, see docs/llm.md), or set "
                "RUBRICFLOW_LLM"
            )

    def _check_judge(self, rubric: Rubric) -> None:
        if rubric.content_hash in self._judged_rubrics:
            return
        judged = [c.id for c in rubric.criteria if resolve_method(c) in LLM_SCORER_NAMES]
        if judged:
            shown = ", ".join(judged[:3]) + (" ..." if len(judged) > 3 else "")
            self._require_judge(f"rubric {rubric.id!r} has LLM criteria: {shown}")
        self._judged_rubrics.add(rubric.content_hash)

    def _options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"llm": self.judge, "llm_cache": self.cache}
        if self.judge_settings:
            options["llm_settings"] = self.judge_settings
        return options

    def _rubric_for(self, cell: Any, index: int) -> Rubric:
        if cell is None:
            if self.rubric is None:
                raise RewardError(
                    f"completion {index} has no rubric: give RubricReward a rubric or the "
                    "dataset a `rubric` column"
                )
            rubric = self.rubric
        else:
            rubric = self.rubrics.rubric(cell)
        return holistic_rubric(rubric) if self.aggregation == "implicit" else rubric

    def _fail(self, index: int, reason: str) -> RewardOutcome:
        if self.on_failure == "raise":
            raise RewardError(f"completion {index}: {reason}")
        logger.warning("no reward for completion %d: %s", index, reason)
        return RewardOutcome(None, None, reason)

    async def score(
        self,
        prompts: Sequence[Any] | None,
        completions: Sequence[Any],
        *,
        references: Sequence[Any] | None = None,
        rubrics: Sequence[Any] | None = None,
    ) -> list[RewardOutcome]:
        """One outcome per completion, in order."""
        count = len(completions)
        _check_columns(count, prompts=prompts, references=references, rubrics=rubrics)
        if self.ranking == "group":
            return await self._rank_groups(prompts, completions, references, rubrics)
        outcomes: list[RewardOutcome | None] = [None] * count
        cases: list[tuple[Rubric, Target]] = []
        indices: list[int] = []
        for index, completion in enumerate(completions):
            try:
                rubric = self._rubric_for(None if rubrics is None else rubrics[index], index)
            except RewardError:
                raise
            except (RubricflowError, TypeError, ValueError) as error:
                outcomes[index] = self._fail(index, f"its rubric cannot be read: {error}")
                continue
            self._check_judge(rubric)
            reference = None if references is None else references[index]
            prompt = None if prompts is None else prompts[index]
            try:
                target = as_target(
                    {
                        "content": completion_content(completion, prompt),
                        "query": prompt_text(prompt),
                        "reference": None if reference is None else completion_text(reference),
                    }
                )
            except (RubricflowError, ValueError) as error:  # a conversation out of shape
                outcomes[index] = self._fail(index, f"its completion cannot be read: {error}")
                continue
            cases.append((rubric, target))
            indices.append(index)
        if cases:
            await self._evaluate(cases, indices, outcomes)
        return [outcome or RewardOutcome(None) for outcome in outcomes]

    async def _evaluate(
        self,
        cases: list[tuple[Rubric, Target]],
        indices: list[int],
        outcomes: list[RewardOutcome | None],
    ) -> None:
        """Evaluate `cases`, setting the outcome of each (at its completion's index in
        `indices`); an evaluation that stops short leaves the rest without a reward."""
        stream = evaluate_cases(cases, target_concurrency=self.concurrency, options=self._options())
        position = 0
        try:
            async for evaluation in stream:
                index = indices[position]
                position += 1
                if evaluation.verdict == "incomplete":
                    failed = self._fail(index, _why(evaluation))
                    outcomes[index] = RewardOutcome(None, evaluation, failed.reason)
                else:
                    outcomes[index] = RewardOutcome(evaluation.score, evaluation)
        except RewardError:
            raise
        except Exception as error:  # never end a training step: the rest get None
            reason = f"the evaluation stopped: {type(error).__name__}: {error}"
            if self.on_failure == "raise":
                raise RewardError(reason) from error
            for index in indices[position:]:
                outcomes[index] = self._fail(index, reason)

    async def _rank_groups(
        self,
        prompts: Sequence[Any] | None,
        completions: Sequence[Any],
        references: Sequence[Any] | None,
        rubrics: Sequence[Any] | None,
    ) -> list[RewardOutcome]:
        """Group-aware rewards: one judge call per GRPO group (consecutive rows with one
        prompt, rubric and reference)."""
        count = len(completions)
        outcomes: list[RewardOutcome | None] = [None] * count
        rows: list[int] = []
        row_rubrics: list[Rubric | None] = []
        for index in range(count):
            cell = None if rubrics is None else rubrics[index]
            try:
                rubric = self.rubric if cell is None else self.rubrics.rubric(cell)
            except (RubricflowError, TypeError, ValueError) as error:
                outcomes[index] = self._fail(index, f"its rubric cannot be read: {error}")
                continue
            rows.append(index)
            row_rubrics.append(rubric)
        if rows:
            session = LLMSession(self.judge, settings=self.judge_settings or None, cache=self.cache)
            try:
                batch = await rank_batch(
                    ["" if prompts is None else prompt_text(prompts[i]) or "" for i in rows],
                    [completion_text(completions[i]) for i in rows],
                    judge=session,
                    rubrics=row_rubrics,
                    references=[
                        None
                        if references is None or references[i] is None
                        else completion_text(references[i])
                        for i in rows
                    ],
                    concurrency=self.concurrency,
                    shuffle=self.shuffle,
                    swap=self.swap,
                )
            finally:
                await session.aclose()
            for span, ranking in batch.groups:
                for position, ranked in zip(span, ranking.completions, strict=True):
                    index = rows[position]
                    if ranked.reward is None:
                        reason = f"the group ranking failed: {ranking.error}"
                        outcomes[index] = self._fail(index, reason)
                    else:
                        outcomes[index] = RewardOutcome(ranked.reward)
        return [outcome or RewardOutcome(None) for outcome in outcomes]


def criterion_means(outcomes: Sequence[RewardOutcome]) -> dict[str, float]:
    """The mean score of each criterion over the outcomes that scored it, keyed
    `rubricflow/<criterion id>`; and the share of completions without a reward."""
    sums: dict[str, list[float]] = {}
    for outcome in outcomes:
        if outcome.evaluation is None:
            continue
        for result in outcome.evaluation.criteria:
            if result.status == "scored" and result.score is not None:
                sums.setdefault(result.criterion_id, []).append(result.score)
    means = {f"rubricflow/{cid}": sum(v) / len(v) for cid, v in sorted(sums.items())}
    if outcomes:
        missing = sum(1 for o in outcomes if o.reward is None)
        means["rubricflow/incomplete"] = missing / len(outcomes)
    return means

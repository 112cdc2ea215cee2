"""Rewards inside Ray-based trainers (verl, OpenRLHF): a reward function whose judging is
done by a pool of Ray actors, under the cluster-wide judge budget of `rubricflow.ray`.

    reward = ray_reward("rubrics/answer-quality.yaml", judge="openai:judge@http://judge/v1",
                        actors=8, judge_concurrency=32)
    compute_score = reward.compute_score   # verl (batch or per-sample reward manager)
    reward_func = reward.reward_func       # OpenRLHF (--remote_rm_url reward.py)

The call shapes served (verl and OpenRLHF are not dependencies; these are the calls they
make):

- verl's `batch` reward manager: `compute_score(data_sources=[...], solution_strs=[...],
  ground_truths=[...], extra_infos=[...])` -> one float per sample;
- verl's `naive`/`prime` managers: `compute_score(data_source, solution_str,
  ground_truth, extra_info=None)` -> a float;
- OpenRLHF's custom reward file: `reward_func(queries, prompts, labels, **kwargs)` ->
  `{"rewards", "scores", "extra_logs"}` (torch tensors when torch is importable, as the
  trainer wants them; lists otherwise). Each query is the prompt followed by the response.

The function object is light: the actors are made (or found, by name, in namespace
`rubricflow`) on the first call, in whichever process calls, so every trainer worker that
builds the same reward shares one pool and one judge budget. A batch is split between the
actors whole GRPO groups at a time (consecutive rows with one prompt, reference and
rubric), so `ranking="group"` ranks each group with one judge call, as `trl_reward` does.
A completion without a reward gets `fallback` (logged), never an exception into the
training step.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rubricflow.errors import RewardError
from rubricflow.model import Rubric
from rubricflow.rewards.core import RubricReward, as_rubric

__all__ = ["RayReward", "RewardActor", "ray_reward"]

logger = logging.getLogger("rubricflow.rewards")
NAMESPACE = "rubricflow"


class RewardActor:
    """One actor of the pool: a `RubricReward` judging through the cluster's budget."""

    def __init__(
        self,
        rubric: Rubric | None,
        options: Mapping[str, Any],
        budget: tuple[str, int, float | None] | None,
        cache: str | None,
    ) -> None:
        from rubricflow.llm.admission import Admission

        self._rubric = rubric
        self._options = dict(options)
        self._cache = cache
        self._gate: Admission | None = None
        if budget is not None:
            from rubricflow.ray.budget import budget_admission, find_budget

            self._gate = budget_admission(find_budget(*budget))
        self._reward: RubricReward | None = None
        self._ready = asyncio.Lock()

    async def _scorer(self) -> RubricReward:
        async with self._ready:
            if self._reward is None:
                from rubricflow.ray.caching import open_cache

                cache, _ = await open_cache(self._cache)
                self._reward = RubricReward(self._rubric, cache=cache, **self._options)
        return self._reward

    async def score(
        self,
        prompts: list[Any] | None,
        completions: list[Any],
        references: list[Any] | None,
        rubrics: list[Any] | None,
    ) -> list[tuple[float | None, str | None]]:
        """(reward, reason when there is none) per completion, in order."""
        from rubricflow.llm.admission import admit_with

        scorer = await self._scorer()
        with admit_with(self._gate):
            outcomes = await scorer.score(
                prompts, completions, references=references, rubrics=rubrics
            )
        return [(outcome.reward, outcome.reason) for outcome in outcomes]

    async def ready(self) -> bool:
        return True


def _groups(keys: Sequence[str]) -> list[tuple[int, int]]:
    """(start, end) of each run of equal consecutive keys."""
    spans: list[tuple[int, int]] = []
    start = 0
    for index in range(1, len(keys) + 1):
        if index == len(keys) or keys[index] != keys[start]:
            spans.append((start, index))
            start = index
    return spans


def _parts(spans: list[tuple[int, int]], count: int) -> list[tuple[int, int]]:
    """`spans` (whole groups) gathered into at most `count` runs of rows of about equal
    size, in order."""
    total = spans[-1][1] if spans else 0
    size = max(1, -(-total // max(1, count)))
    parts: list[tuple[int, int]] = []
    start = 0
    for _, end in spans:
        if end - start >= size:
            parts.append((start, end))
            start = end
    if start < total:
        parts.append((start, total))
    return parts


def _key(*cells: Any) -> str:
    return json.dumps(cells, sort_keys=True, default=str)


class RayReward:
    """A reward function for Ray-based trainers, judged by a pool of `actors` Ray actors
    (see the module's docstring for the call shapes). `options` are `RubricReward`'s
    (`ranking`, `aggregation`, `judge_settings`, `concurrency` per actor, ...)."""

    def __init__(
        self,
        rubric: Rubric | str | Path | Mapping[str, Any] | None = None,
        *,
        judge: str | None = None,
        actors: int = 4,
        judge_concurrency: int = 32,
        judge_rpm: float | None = None,
        cache: str | None = "memory",
        fallback: float = 0.0,
        address: str | None = None,
        actor_cpus: float = 0.25,
        **options: Any,
    ) -> None:
        if actors < 1:
            raise RewardError(f"actors must be at least 1, got {actors}")
        if judge is not None and not isinstance(judge, str):
            raise RewardError(
                "a reward on Ray needs the judge as a spec string (e.g. "
                "'openai:judge@http://judge:8000/v1'): each actor builds its own from it"
            )
        self.rubric = None if rubric is None else as_rubric(rubric)
        if "cache" in options:
            raise RewardError("pass cache= as a spec: 'memory', a PostgreSQL URL, a path or None")
        judge_settings = dict(options.pop("judge_settings", None) or {})
        judge_settings.setdefault("max_concurrency", judge_concurrency)
        self.options = {"judge": judge, "judge_settings": judge_settings, **options}
        # checks the options (and that a judge is configured) here, not on a worker
        RubricReward(self.rubric, cache=None, **self.options)
        self.judge = judge
        self.actors = actors
        self.budget = None if judge is None else (judge, judge_concurrency, judge_rpm)
        self.cache = cache
        self.fallback = fallback
        self.address = address
        self.actor_cpus = actor_cpus
        self._pool: list[Any] | None = None
        self.__name__ = "compute_score"

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_pool"] = None  # handles are found again, by name, where it lands
        return state

    @property
    def pool_name(self) -> str:
        """The actors' name prefix: the same reward built in two workers names one pool."""
        what = _key(
            None if self.rubric is None else self.rubric.content_hash,
            self.options,
            self.budget,
            self.cache,
        )
        return "rubricflow-reward-" + hashlib.sha256(what.encode("utf-8")).hexdigest()[:16]

    def pool(self) -> list[Any]:
        """The pool's actor handles, made (or found) on first use."""
        if self._pool is None:
            import ray

            from rubricflow.ray.budget import budget_actor
            from rubricflow.ray.driver import connect

            if not ray.is_initialized():  # inside a trainer's Ray worker it is
                connect(self.address or "auto")
            if self.budget is not None:
                budget_actor(*self.budget)
            remote: Any = ray.remote(RewardActor)
            handles = [
                remote.options(
                    name=f"{self.pool_name}-{index}",
                    namespace=NAMESPACE,
                    get_if_exists=True,
                    num_cpus=self.actor_cpus,
                    max_concurrency=64,
                    max_restarts=-1,
                    max_task_retries=-1,
                    scheduling_strategy="SPREAD",
                ).remote(self.rubric, self.options, self.budget, self.cache)
                for index in range(self.actors)
            ]
            ray.get([handle.ready.remote() for handle in handles])
            self._pool = handles
        return self._pool

    def rewards(
        self,
        prompts: Sequence[Any] | None,
        completions: Sequence[Any],
        *,
        references: Sequence[Any] | None = None,
        rubrics: Sequence[Any] | None = None,
    ) -> list[tuple[float | None, str | None]]:
        """(reward, reason when there is none) per completion, judged by the pool; whole
        groups go to one actor."""
        import ray

        count = len(completions)
        if count == 0:
            return []
        keys = [
            _key(
                None if prompts is None else prompts[i],
                None if references is None else references[i],
                None if rubrics is None else rubrics[i],
            )
            for i in range(count)
        ]
        pool = self.pool()
        parts = _parts(_groups(keys), len(pool))

        def cut(column: Sequence[Any] | None, start: int, end: int) -> list[Any] | None:
            return None if column is None else list(column[start:end])

        pending = [
            pool[n % len(pool)].score.remote(
                cut(prompts, start, end),
                list(completions[start:end]),
                cut(references, start, end),
                cut(rubrics, start, end),
            )
            for n, (start, end) in enumerate(parts)
        ]
        try:
            answers = ray.get(pending)
        except ray.exceptions.RayError as error:
            if self.options.get("on_failure") == "raise":
                raise RewardError(f"the reward actors failed: {error}") from None
            reason = f"the reward actors failed: {type(error).__name__}"
            logger.warning("no reward for %d completion(s): %s", count, reason)
            return [(None, reason)] * count
        return [pair for answer in answers for pair in answer]

    def _number(self, reward: float | None, reason: str | None, where: str) -> float:
        if reward is None:
            logger.warning("reward for %s is the fallback %s: %s", where, self.fallback, reason)
            return self.fallback
        return reward

    def compute_score(self, *args: Any, **kwargs: Any) -> Any:
        """verl's call: the batch manager's `compute_score(data_sources=, solution_strs=,
        ground_truths=, extra_infos=)` gives a list of floats; the per-sample
        `compute_score(data_source, solution_str, ground_truth, extra_info=None)` a float.
        `extra_info["prompt"]` (or `question`) is the prompt, `extra_info["rubric"]` the
        sample's own rubric, `ground_truth` the reference."""
        if "solution_strs" in kwargs:
            return self._verl_batch(**kwargs)
        return self._verl_sample(*args, **kwargs)

    __call__ = compute_score

    def _verl_batch(
        self,
        *,
        solution_strs: Sequence[str],
        data_sources: Sequence[Any] | None = None,
        ground_truths: Sequence[Any] | None = None,
        extra_infos: Sequence[Any] | None = None,
        **_: Any,
    ) -> list[float]:
        count = len(solution_strs)
        infos = [
            info if isinstance(info, Mapping) else {}
            for info in (extra_infos if extra_infos is not None else [None] * count)
        ]
        prompts = [info.get("prompt", info.get("question")) for info in infos]
        rubrics = [info.get("rubric") for info in infos]
        pairs = self.rewards(
            prompts if any(p is not None for p in prompts) else None,
            list(solution_strs),
            references=None if ground_truths is None else list(ground_truths),
            rubrics=rubrics if any(r is not None for r in rubrics) else None,
        )
        sources = data_sources if data_sources is not None else [None] * count
        return [
            self._number(reward, reason, f"a {sources[i]} sample")
            for i, (reward, reason) in enumerate(pairs)
        ]

    def _verl_sample(
        self,
        data_source: Any = None,
        solution_str: str = "",
        ground_truth: Any = None,
        extra_info: Mapping[str, Any] | None = None,
        **_: Any,
    ) -> float:
        return self._verl_batch(
            solution_strs=[solution_str],
            data_sources=[data_source],
            ground_truths=[ground_truth],
            extra_infos=[extra_info],
        )[0]

    def reward_func(
        self,
        queries: Sequence[str],
        prompts: Sequence[str] | None = None,
        labels: Sequence[Any] | None = None,
        **_: Any,
    ) -> dict[str, Any]:
        """OpenRLHF's call: `reward_func(queries, prompts, labels)`, each query the prompt
        and the response as one string; `{"rewards", "scores", "extra_logs"}` back."""
        responses = []
        for index, query in enumerate(queries):
            prompt = None if prompts is None else prompts[index]
            cut = isinstance(prompt, str) and prompt and query.startswith(prompt)
            responses.append(query[len(prompt) :] if cut and prompt else query)
        pairs = self.rewards(
            None if prompts is None else list(prompts),
            responses,
            references=None if labels is None else list(labels),
        )
        rewards = [
            self._number(reward, reason, f"query {i}") for i, (reward, reason) in enumerate(pairs)
        ]
        missing = [1.0 if reward is None else 0.0 for reward, _ in pairs]
        return {
            "rewards": _tensor(rewards),
            "scores": _tensor(rewards),
            "extra_logs": {"rubricflow/incomplete": _tensor(missing)},
        }


def _tensor(values: list[float]) -> Any:
    """A float tensor when torch is there (what OpenRLHF wants), else the list."""
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        return values
    return torch.tensor(values, dtype=torch.float32)


def ray_reward(
    rubric: Rubric | str | Path | Mapping[str, Any] | None = None, **options: Any
) -> RayReward:
    """A reward function for verl and OpenRLHF judged by a pool of Ray actors; `options`
    are `RayReward`'s and `RubricReward`'s."""
    return RayReward(rubric, **options)

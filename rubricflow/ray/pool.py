"""A pool of evaluation actors that outlives one Dataset, and the Ray Data step that hands
it batches.

Ray Data's own actor pools start their actors for each Dataset and stop them at its end:
each run paid a worker process's start, Ray Data's and rubricflow's imports and a judge
session's opening (2-3 s on a 2-core node) before its first judge call. Here the actors
are named Ray actors (`BatchEvaluator`, in namespace `rubricflow`) that the driver's
first run starts and its later runs find, as the judge budget is: a notebook's or a
trainer's second Dataset starts scoring at once. A run of `rubricflow eval --ray` has a
pool of its own, reused by each chunk of its input and stopped at its end.

The Dataset's batches go through `map_batches` tasks (`score_batches`), each handing a
few batches to the least loaded actors, two at a time, and yielding their evaluations in
order; the actors do the judging.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator, Mapping
from typing import Any

import ray
import ray.data

from rubricflow.model import Rubric
from rubricflow.ray.actors import BatchEvaluator, JudgeConfig, RubricSet

__all__ = [
    "EvaluatorPool",
    "evaluator_pool",
    "release_pools",
    "rubric_key",
    "score_batches",
]

NAMESPACE = "rubricflow"
#: CPUs each evaluation actor asks of Ray (judge-bound work: mostly waiting)
ACTOR_CPUS = 0.5
#: batches in flight on each actor: the next batch's calls fill the judge slots the last
#: criteria of the one before leave empty (one at a time, an actor's slots were 78% busy
#: against the 100 ms benchmark judge; two at a time, 95%)
BATCHES_PER_ACTOR = 2
#: forwarding tasks at once, each keeping `BATCHES_PER_ACTOR` batches per actor in flight:
#: while one hands out its last batches and ends, the other keeps every actor busy. They
#: run on the driver's node, whose idle workers (Ray Data imported) Ray keeps between
#: runs; spread over the nodes, a run's task often landed where none was and waited
#: 1.5 s for a worker to start
TASKS = 2
#: a task's batches, in turns of its window: a task's end leaves its share of the actors
#: idle until the next one starts, so a task serves several turns
TURNS_PER_TASK = 4
#: CPUs a forwarding task asks of Ray: none, as it only waits on the actors (and so it
#: runs on a driver's node that offers no CPU to Ray, as large clusters' heads often do)
TASK_CPUS = 0

#: the pools this driver started, by name: a named actor lives while its owner holds a
#: handle on it, so the driver keeps them for its life (or until `release_pools`)
_pools: dict[str, EvaluatorPool] = {}


class EvaluatorPool:
    """Evaluation actors (named `NAME-JOB-0`, `NAME-JOB-1`, ...) sharing one judge
    configuration, started by this driver (its Ray job)."""

    def __init__(self, name: str, judge: JudgeConfig, handles: list[Any]) -> None:
        self.name = name
        self.judge = judge
        self.handles = handles
        #: the driver's job: a driver that left its cluster and joined another (or the
        #: same one again) starts its pools afresh
        self.job = ray.get_runtime_context().get_job_id()
        self._joined = _joined()

    def scored(
        self,
        dataset: ray.data.Dataset,
        rubrics: Mapping[str, Rubric],
        options: Mapping[str, Any],
        *,
        batch_size: int,
        actors: int | None = None,
    ) -> ray.data.Dataset:
        """`dataset`'s rows scored by the first `actors` of the pool (all by default),
        `batch_size` targets to a batch."""
        handles = self.handles[: actors or len(self.handles)]
        window = BATCHES_PER_ACTOR * len(handles)
        forward: Any = score_batches  # a generator of batches, which Ray Data's types omit
        return dataset.map_batches(
            forward,
            fn_kwargs={
                "actors": handles,
                # by value: Ray Data ships these with the task, and an ObjectRef among
                # them lost its owner on the way in one benchmark run of ten
                "rubrics": (rubric_key(rubrics), dict(rubrics)),
                "options": dict(options),
                "batch_size": batch_size,
                "window": window,
            },
            batch_size=batch_size * window * TURNS_PER_TASK,
            batch_format="pyarrow",
            num_cpus=TASK_CPUS,
            compute=ray.data.TaskPoolStrategy(size=TASKS),
            # on the driver's node: its idle workers, which have imported Ray Data for the
            # last run's tasks, take the next run's (Ray spreads tasks over the nodes
            # otherwise, and a node without one starts a worker: a second of imports)
            label_selector={"ray.io/node-id": ray.get_runtime_context().get_node_id()},
            fallback_strategy=[{"label_selector": {}}],  # any node, if not that one
        )

    def close(self) -> None:
        """Stop the pool's actors (a run's own pool, at its end)."""
        _pools.pop(self.name, None)
        for handle in self.handles:
            try:
                ray.kill(handle, no_restart=True)
            except Exception:  # already gone with its cluster
                continue


def pool_name(judge: JudgeConfig, allow_import: bool, actor_cpus: float) -> str:
    """The actors' name prefix for a judge configuration: the runs of one driver against
    the same judge, settings, cache and budget share one pool."""
    what = json.dumps(
        [judge.spec, judge.settings, judge.cache, judge.budget, allow_import, actor_cpus],
        sort_keys=True,
        default=str,
    )
    return "rubricflow-eval-" + hashlib.sha256(what.encode("utf-8")).hexdigest()[:16]


def evaluator_pool(
    judge: JudgeConfig,
    *,
    actors: int,
    allow_import: bool = False,
    actor_cpus: float = ACTOR_CPUS,
    name: str | None = None,
) -> EvaluatorPool:
    """The driver's pool for `judge` with at least `actors` actors: found when an earlier
    run started it (and grown when it has fewer), else started. The actors are spread
    over the nodes (Ray's SPREAD strategy) and restarted when they die (a killed actor's
    batch runs again on its restart, from the start)."""
    name = name or pool_name(judge, allow_import, actor_cpus)
    pool = _pools.get(name)
    if pool is not None and pool._joined != _joined():
        pool = None
    if pool is None:
        pool = _pools[name] = EvaluatorPool(name, judge, [])
    remote: Any = ray.remote(BatchEvaluator)
    for index in range(len(pool.handles), actors):
        pool.handles.append(
            remote.options(
                # the job in the name: a name is the cluster's, a pool this driver's
                name=f"{name}-{pool.job}-{index}",
                namespace=NAMESPACE,
                num_cpus=actor_cpus,
                max_restarts=-1,
                max_task_retries=-1,
                scheduling_strategy="SPREAD",
            ).remote(pool.judge, allow_import)
        )
    return pool


def _joined() -> tuple[str, str]:
    """This driver's job and node: a new cluster numbers its jobs from 1 again, so the
    node (new with every cluster) tells two joins apart."""
    context = ray.get_runtime_context()
    return context.get_job_id(), context.get_node_id()


def release_pools() -> None:
    """Stop every evaluation actor this driver started (they hold `actor_cpus` each)."""
    for pool in list(_pools.values()):
        pool.close()


def rubric_key(rubrics: Mapping[str, Rubric]) -> str:
    """The key of a set of rubrics (by their content hashes): an actor fetches a set once."""
    return hashlib.sha256("\n".join(sorted(rubrics)).encode("utf-8")).hexdigest()


def score_batches(
    batch: Any,
    *,
    actors: list[Any],
    rubrics: tuple[str, dict[str, Rubric]],
    options: Mapping[str, Any],
    batch_size: int,
    window: int,
) -> Iterator[dict[str, list[Any]]]:
    """A Ray Data task: `batch`'s rows, `batch_size` at a time, each handed to the least
    loaded actor (`window` batches in flight), their evaluation columns yielded in the
    rows' order. The rubrics go to the object store once per task; an actor fetches them
    the first time it sees their key."""
    key, values = rubrics
    carried: RubricSet = (key, [ray.put(values)])
    rows = batch.to_pylist()
    parts = [rows[start : start + batch_size] for start in range(0, len(rows), batch_size)]
    #: batch in flight -> (its index, the actor it went to)
    pending: dict[Any, tuple[int, int]] = {}
    landed: dict[int, Any] = {}
    sent = yielded = 0
    while yielded < len(parts):
        while sent < len(parts) and len(pending) < window:
            mine = [0] * len(actors)
            for index, actor in pending.values():
                mine[actor] += len(parts[index])
            actor = _least_loaded(actors, mine)
            pending[actors[actor].evaluate.remote(parts[sent], carried, options)] = (sent, actor)
            sent += 1
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            landed[pending.pop(ref)[0]] = ref
        while yielded in landed:
            yield ray.get(landed.pop(yielded))
            yielded += 1


def _least_loaded(actors: list[Any], mine: list[int]) -> int:
    """The index of the actor scoring the fewest targets now, counting again those this
    task sent it (so a task's own batches spread even before the actors report them);
    ties broken at random, so tasks that ask at the same moment spread too."""
    if len(actors) == 1:
        return 0
    loads = ray.get([actor.load.remote() for actor in actors])
    totals = [load + own for load, own in zip(loads, mine, strict=True)]
    best = min(totals)
    return random.choice([i for i, total in enumerate(totals) if total == best])

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

import collections
import hashlib
import json
import random
import time
from collections.abc import Iterator, Mapping
from typing import Any

import ray
import ray.data

from rubricflow.errors import ConfigurationError
from rubricflow.model import Rubric
from rubricflow.ray.actors import BatchEvaluator, JudgeConfig, RubricSet
from rubricflow.ray.budget import close_run

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
#: batches each forwarding task keeps in flight per actor: the next batch's calls fill
#: the judge slots the last criteria of the one before leave empty (one at a time, an
#: actor's slots were 78% busy against the 100 ms benchmark judge; two, 95%). With both
#: tasks running an actor has up to twice this; three per task was slower
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

#: pools a driver keeps: starting another stops the one least recently used (each
#: holds `actor_cpus` per actor, and a cluster whose CPUs are all held leaves a new
#: pool's actors waiting)
POOLS_KEPT = 4
#: how long a batch waits for an actor that has not started (nor restarted) before the
#: run stops, naming the likely cause
START_WAIT = 300.0

#: the pools this driver started, by name, least recently used first: a named actor lives
#: while its owner holds a handle on it, so the driver keeps them for its life (or until
#: `release_pools`, or until `POOLS_KEPT` others are used after it)
_pools: collections.OrderedDict[str, EvaluatorPool] = collections.OrderedDict()


class EvaluatorPool:
    """Evaluation actors (named `NAME-JOB-0`, `NAME-JOB-1`, ...) sharing one judge
    configuration, started by this driver (its Ray job)."""

    def __init__(
        self, name: str, judge: JudgeConfig, handles: list[Any], budget: Any = None
    ) -> None:
        self.name = name
        self.judge = judge
        self.handles = handles
        #: the budget actor the pool's actors enter (a new one, after it died, means a
        #: new pool: the actors hold a handle on the one they started with)
        self.budget = budget
        #: the driver's job and node: a driver that left its cluster and joined another
        #: (or the same one again) starts its pools afresh
        self.joined = _joined()
        #: actors started so far (each actor's name has its own number)
        self.started = 0

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
        """Stop the pool's actors (a run's own pool, at its end), and give back the
        budget slots they held (batches still running when they were stopped)."""
        if _pools.get(self.name) is self:
            del _pools[self.name]
        for handle in self.handles:
            try:
                ray.kill(handle, no_restart=True)
            except Exception:  # already gone with its cluster
                continue
        if self.judge.budget is not None:
            close_run(self.judge.budget, self.judge.run)

    def start_actors(self, count: int, allow_import: bool, actor_cpus: float) -> None:
        """Start actors until the pool has `count`, replacing any that died for good (a
        constructor that raised, a `ray.kill`): a pool found again must not hand batches
        to an actor that will never answer."""
        if self.handles:
            checks = [handle.ready.remote() for handle in self.handles]
            answered, _ = ray.wait(checks, num_returns=len(checks), timeout=1.0)
            alive = []
            for handle, check in zip(self.handles, checks, strict=True):
                if check in answered:
                    try:
                        ray.get(check)
                    except ray.exceptions.RayActorError:
                        continue  # dead for good: replaced below
                alive.append(handle)  # answered, or (re)starting
            self.handles = alive
        remote: Any = ray.remote(BatchEvaluator)
        while len(self.handles) < count:
            self.handles.append(
                remote.options(
                    # the job in the name: a name is the cluster's, a pool this driver's
                    name=f"{self.name}-{self.joined[0]}-{self.started}",
                    namespace=NAMESPACE,
                    num_cpus=actor_cpus,
                    max_restarts=-1,
                    max_task_retries=-1,
                    scheduling_strategy="SPREAD",
                ).remote(self.judge, allow_import)
            )
            self.started += 1


def pool_name(judge: JudgeConfig, allow_import: bool, actor_cpus: float) -> str:
    """The actors' name prefix for a judge configuration: the runs of one driver against
    the same judge, settings, cache and budget share one pool."""
    what = json.dumps(
        # the whole cache option (password too, hashed): a new password, a new pool
        [judge.spec, judge.settings, judge.cache_option(), judge.budget, allow_import, actor_cpus],
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
    budget: Any = None,
) -> EvaluatorPool:
    """The driver's pool for `judge` with at least `actors` live actors: found when an
    earlier run started it (grown when it has fewer, its dead actors replaced), else
    started. `budget` is the judge budget's actor, when there is one. The actors are
    spread over the nodes (Ray's SPREAD strategy) and restarted when they die (a killed
    actor's batch runs again on its restart, from the start)."""
    name = name or pool_name(judge, allow_import, actor_cpus)
    joined = _joined()
    pool = _pools.get(name)
    if pool is not None and (pool.joined != joined or pool.budget is not budget):
        if pool.joined == joined:
            pool.close()  # its actors enter a budget that is gone
        _pools.pop(name, None)
        pool = None
    if pool is None:
        pool = _pools[name] = EvaluatorPool(name, judge, [], budget)
        while len(_pools) > POOLS_KEPT:
            next(iter(_pools.values())).close()
    _pools.move_to_end(name)
    pool.start_actors(actors, allow_import, actor_cpus)
    return pool


def _joined() -> tuple[str, str]:
    """This driver's job and node: a new cluster numbers its jobs from 1 again, so the
    node (new with every cluster) tells two joins apart."""
    context = ray.get_runtime_context()
    return context.get_job_id(), context.get_node_id()


def release_pools() -> None:
    """Stop every evaluation actor this driver started (they hold `actor_cpus` each)."""
    joined = _joined()
    for pool in list(_pools.values()):
        if pool.joined == joined:
            pool.close()
    _pools.clear()


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
    deadline = time.monotonic() + START_WAIT
    #: batch in flight -> (its index, the actor it went to)
    pending: dict[Any, tuple[int, int]] = {}
    landed: dict[int, Any] = {}
    sent = yielded = 0
    try:
        while yielded < len(parts):
            while sent < len(parts) and len(pending) < window:
                mine = [0] * len(actors)
                for index, actor in pending.values():
                    mine[actor] += len(parts[index])
                actor = _least_loaded(actors, mine, deadline)
                call = actors[actor].evaluate.remote(parts[sent], carried, options)
                pending[call] = (sent, actor)
                sent += 1
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                landed[pending.pop(ref)[0]] = ref
            while yielded in landed:
                yield ray.get(landed.pop(yielded))
                yielded += 1
    finally:
        # a batch that failed, a run stopped or a read cut short: the batches still on
        # the actors stop asking the judge
        for ref in pending:
            ray.cancel(ref)


def _least_loaded(actors: list[Any], mine: list[int], deadline: float) -> int:
    """The index of the live actor scoring the fewest targets now, counting again those
    this task sent it (so a task's own batches spread even before the actors report
    them); ties broken at random, so tasks that ask at the same moment spread too. An
    actor that does not answer within a second (restarting, or not started) is passed
    over while another answers; none answering by `deadline` stops the run."""
    checks = [actor.load.remote() for actor in actors]
    loads: dict[int, int] = {}
    waiting = list(checks)
    timeout = 1.0
    while True:
        left = max(0.0, min(timeout, deadline - time.monotonic()))
        answered, waiting = ray.wait(waiting, num_returns=len(waiting), timeout=left)
        died: ray.exceptions.RayActorError | None = None
        for ref in answered:
            try:
                loads[checks.index(ref)] = ray.get(ref)
            except ray.exceptions.RayActorError as error:
                died = error
        if loads:
            break
        if died is not None and not waiting:
            raise died  # every actor of the pool has died for good
        if time.monotonic() >= deadline:
            raise ConfigurationError(
                f"no evaluation actor started within {START_WAIT:.0f} s: the cluster may "
                "have no CPU left for them (each holds its actor_cpus; `ray status` shows "
                "what is held). Stop pools no longer needed (rubricflow.ray.release_pools()), "
                "ask for fewer actors, or add nodes"
            )
        timeout = 5.0
    totals = {i: load + mine[i] for i, load in loads.items()}
    best = min(totals.values())
    return random.choice([i for i, total in totals.items() if total == best])

"""The driver's side: connecting to a cluster, scoring a Ray Dataset of targets, and the
evaluator a batch run (`rubricflow eval --ray`) hands its targets to."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncGenerator, AsyncIterable, Iterable
from typing import Any

import ray
import ray.data

from rubricflow.errors import ConfigurationError, RubricflowError
from rubricflow.model import Rubric
from rubricflow.ray.actors import JudgeConfig
from rubricflow.ray.budget import budget_actor, close_run
from rubricflow.ray.pool import ACTOR_CPUS, EvaluatorPool, evaluator_pool
from rubricflow.results import Evaluation, Target

__all__ = ["RayEvaluator", "RayRunError", "connect", "evaluate_dataset"]

#: targets per Ray Dataset in a batch run: results stream back in order while the next
#: chunk is read, and the driver never holds a whole input file
CHUNK = 4096
DEFAULT_BATCH = 16


def connect(address: str | None = "auto") -> None:
    """Join the Ray cluster at `address` (`auto`: the one `ray start` runs here or
    RAY_ADDRESS names; `local`: start one in this process) unless already joined."""
    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = {
        "log_to_driver": False,
        "logging_level": logging.WARNING,
        "include_dashboard": False,
    }
    try:
        if address in (None, "local"):
            ray.init(**kwargs)
        else:
            ray.init(address=address, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as error:
        raise ConfigurationError(
            f"cannot join the Ray cluster at {address!r}: {error}. Start one with "
            "`ray start --head`, pass its address (--ray HOST:PORT), or --ray local"
        ) from None


def _quiet_context(preserve_order: bool) -> Any:
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = preserve_order
    context.enable_progress_bars = False
    return context


def _rows(
    cases: Iterable[tuple[Rubric, Target]], start: int = 0
) -> tuple[list[dict[str, Any]], dict[str, Rubric]]:
    rows: list[dict[str, Any]] = []
    rubrics: dict[str, Rubric] = {}
    for position, (rubric, target) in enumerate(cases, start):
        rubrics.setdefault(rubric.content_hash, rubric)
        rows.append(
            {
                "position": position,
                "rubric": rubric.content_hash,
                "target": target.model_dump_json(),
            }
        )
    return rows, rubrics


def evaluate_dataset(
    ds: ray.data.Dataset,
    rubric: Rubric,
    *,
    judge: str | None = None,
    concurrency: int = 2,
    judge_concurrency: int = 8,
    cluster_judge_limit: int | None = None,
    judge_rpm: float | None = None,
    judge_settings: dict[str, Any] | None = None,
    cache: str | None = "memory",
    batch_size: int = DEFAULT_BATCH,
    target_concurrency: int = 8,
    allow_import: bool = False,
    options: dict[str, Any] | None = None,
    actor_cpus: float = ACTOR_CPUS,
) -> ray.data.Dataset:
    """A Dataset of evaluations of `ds`'s targets against `rubric`, scored by `concurrency`
    actors, each holding one judge session (`judge`, a spec) with `judge_concurrency` calls
    in flight. The actors outlive the Dataset: this driver's later Datasets against the
    same judge configuration find them started (`rubricflow.ray.pool`; they end with the
    driver, or at `rubricflow.ray.release_pools()`). `cluster_judge_limit` caps the
    calls in flight across the whole cluster (one named actor holds the count; default:
    `judge_concurrency`), and `judge_rpm` the judge requests started per minute across
    the cluster (none by default).

    `cache`: `memory` (each actor keeps its answers while it lives), a PostgreSQL URL (the
    store's judge cache, one for the whole cluster and for later runs), a file path (a
    SQLite cache on each node), or None. Each actor asks Ray for `actor_cpus` CPUs.

    `ds`'s rows are targets (`content`, and optional `id`, `query`, `reference`,
    `metadata`), or a `target` column of target JSON. The result's rows are `id`,
    `rubric_id`, `verdict`, `passed`, `score` and `evaluation` (the whole record, as
    `evaluate_many` gives it, as JSON), ready for `write_json` or `write_parquet`; in
    `ds`'s order when the DataContext preserves order. Lazy, as every Dataset: no target
    is scored until it is read (the actors start at once).
    """
    if concurrency < 1:
        raise ConfigurationError(f"concurrency (actors) must be at least 1, got {concurrency}")
    settings = {"max_concurrency": judge_concurrency, **(judge_settings or {})}
    budget = None
    if judge is not None:
        budget = (judge, cluster_judge_limit or judge_concurrency, judge_rpm)
    if not ray.is_initialized():
        connect(None)  # as Ray Data would: RAY_ADDRESS, a cluster started here, or a new one
    config = JudgeConfig(judge, settings, cache, budget)
    held = None if budget is None else budget_actor(*budget)
    run_options = {"target_concurrency": target_concurrency, "options": dict(options or {})}
    pool = evaluator_pool(
        config,
        actors=concurrency,
        allow_import=allow_import,
        actor_cpus=actor_cpus,
        budget=held,
    )
    return pool.scored(
        ds, {rubric.content_hash: rubric}, run_options, batch_size=batch_size, actors=concurrency
    )


class RayEvaluator:
    """What a batch run (`BatchRun.run(evaluator=...)`) evaluates its cases with when they
    go to a Ray cluster: the same evaluations, in the same order, as `evaluate_cases`,
    scored by `actors` Ray actors. The judge is rebuilt on each actor from `judge` (its
    spec); calls in flight across the cluster are capped at `judge_concurrency`, and
    their starts at `rpm` a minute when given. `cache` is each actor's judge cache
    (`rubricflow.ray.caching`: a PostgreSQL URL shares the store's across the cluster)."""

    def __init__(
        self,
        *,
        address: str | None,
        actors: int,
        judge: str | None,
        judge_concurrency: int = 8,
        rpm: float | None = None,
        cache: str | None = "memory",
        batch_size: int = DEFAULT_BATCH,
        actor_cpus: float = ACTOR_CPUS,
    ) -> None:
        if actors < 1:
            raise ConfigurationError(f"--ray-actors must be at least 1, got {actors}")
        self.address = address
        self.actors = actors
        self.judge = judge
        self.judge_concurrency = judge_concurrency
        self.rpm = rpm
        self.cache = cache
        self.batch_size = batch_size
        self.actor_cpus = actor_cpus

    async def __call__(
        self,
        cases: AsyncIterable[tuple[Rubric, Target]] | Iterable[tuple[Rubric, Target]],
        *,
        target_concurrency: int,
        **options: Any,
    ) -> AsyncGenerator[Evaluation, None]:
        await asyncio.to_thread(connect, self.address)
        options.pop("plugins", None)  # each actor finds its own, through entry points
        inner = dict(options.pop("options", None) or {})
        inner.pop("llm", None)  # a session cannot travel: each actor builds its own
        run_options = {
            "target_concurrency": max(1, target_concurrency // self.actors),
            "options": inner,
            **options,
        }
        judge = JudgeConfig(
            self.judge,
            {"max_concurrency": self.judge_concurrency},
            self.cache,
            (self.judge, self.judge_concurrency, self.rpm) if self.judge else None,
        )
        held = None
        if judge.budget is not None:
            held = await asyncio.to_thread(budget_actor, *judge.budget)
        pool: EvaluatorPool | None = None
        try:
            start = 0
            async for chunk in _chunks(cases, CHUNK):
                rows, rubrics = _rows(chunk, start)
                start += len(rows)
                _quiet_context(preserve_order=True)
                if pool is None:
                    # the run's own pool, used by each chunk and stopped at the end; no
                    # more actors than the first chunk has batches
                    pool = evaluator_pool(
                        judge,
                        actors=min(self.actors, max(1, -(-len(rows) // self.batch_size))),
                        allow_import=bool(options.get("allow_import")),
                        actor_cpus=self.actor_cpus,
                        name=f"rubricflow-eval-run-{judge.run}",
                        budget=held,
                    )
                dataset = pool.scored(
                    ray.data.from_items(rows), rubrics, run_options, batch_size=self.batch_size
                )
                async for batch in _batches_of(dataset):
                    for text in batch.column("evaluation").to_pylist():
                        yield Evaluation.model_validate_json(text)
        finally:
            # an interrupted run's actors are stopped holding slots: give them back, or
            # the next run against this judge waits on them for ever (closing the pool
            # stops its actors and gives their slots back)
            if pool is not None:
                await asyncio.to_thread(pool.close)
            elif judge.budget is not None:
                close_run(judge.budget, judge.run)


class RayRunError(RubricflowError):
    """The Ray cluster could not finish a run's batches (actors that keep dying, a lost
    cluster): the evaluations that landed are written, and `--resume` continues."""


async def _batches_of(dataset: ray.data.Dataset) -> AsyncGenerator[Any, None]:
    """`dataset`'s batches, read by a daemon thread of their own: a driver that stops
    early (Ctrl-C twice, an error) leaves at once, not when the next batch lands."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(maxsize=0)
    stop = threading.Event()

    def put(kind: str, value: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody reads
            loop.call_soon_threadsafe(queue.put_nowait, (kind, value))

    def read() -> None:
        try:
            for batch in dataset.iter_batches(batch_size=None, batch_format="pyarrow"):
                if stop.is_set():
                    return
                put("batch", batch)
            put("end", None)
        except BaseException as error:  # handed to the reader
            put("error", error)

    threading.Thread(target=read, name="rubricflow-ray-results", daemon=True).start()
    try:
        while True:
            kind, value = await queue.get()
            if kind == "end":
                return
            if kind == "error":
                raise _run_error(value)
            yield value
    finally:
        stop.set()


def _run_error(error: BaseException) -> BaseException:
    """A Ray failure as a RayRunError saying what happened and what to do."""
    if isinstance(error, RubricflowError) or not isinstance(error, Exception):
        return error
    cause: Any = error
    for _ in range(8):  # Ray wraps an actor's error in the task's that waited on it
        cause = getattr(cause, "cause", None)
        if cause is None:
            break
        if isinstance(cause, RubricflowError):  # e.g. a worker without a plugin
            return cause
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return RayRunError(
        f"the Ray cluster could not finish the run ({type(error).__name__}: {first[:300]}). "
        "The evaluations that landed are written; check the cluster (`ray status`) and "
        "continue with --resume, or run without --ray"
    )


async def _chunks(
    cases: AsyncIterable[tuple[Rubric, Target]] | Iterable[tuple[Rubric, Target]], size: int
) -> AsyncGenerator[list[tuple[Rubric, Target]], None]:
    chunk: list[tuple[Rubric, Target]] = []
    if isinstance(cases, AsyncIterable):
        async for case in cases:
            chunk.append(case)
            if len(chunk) >= size:
                yield chunk
                chunk = []
    else:
        for case in cases:
            chunk.append(case)
            if len(chunk) >= size:
                yield chunk
                chunk = []
    if chunk:
        yield chunk

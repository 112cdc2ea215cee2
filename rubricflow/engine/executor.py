"""Evaluate a rubric against a target: score criteria concurrently, aggregate, explain.

`evaluate` never raises for a scoring failure: a scorer that raises or is missing gives
an `error` result, and the aggregation decides what that means for the verdict. The
result does not depend on which criterion finished first.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import inspect
import sys
import time
import uuid
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Iterable,
    Mapping,
)
from datetime import datetime, timezone
from decimal import Decimal
from fractions import Fraction
from typing import Any

import rubricflow.instrumentation as instrumentation
from rubricflow.engine.aggregate import aggregate, criterion_passed
from rubricflow.engine.feedback import build_feedback
from rubricflow.engine.isolation import (
    TIMEOUT_ENV,
    IsolationPlan,
    IsolationSettings,
    isolation_plan,
    isolation_settings,
    score_isolated,
)
from rubricflow.engine.length_penalty import apply_length_penalty
from rubricflow.engine.scopes import score_scoped
from rubricflow.errors import ConfigurationError
from rubricflow.model import Criterion, Rubric, UnscoredPolicy
from rubricflow.plugins import PluginRegistry, default_plugins
from rubricflow.results import CriterionResult, Evaluation, Target, exact_number
from rubricflow.scorers.deterministic import resolve_function
from rubricflow.scoring import ScoringContext, error_result
from rubricflow.settings import Settings, use
from rubricflow.settings import current as current_settings
from rubricflow.sync_bridge import run_sync
from rubricflow.targets import as_target

__all__ = [
    "DEFAULT_CONCURRENCY",
    "as_target",
    "evaluate",
    "evaluate_cases",
    "evaluate_many",
    "evaluate_sync",
    "resolve_method",
]

# completed evaluations may wait for a slower one before them, up to this many times the
# number of targets in flight
READY_WINDOW = 4
DEFAULT_CONCURRENCY = 8
_LLM_BY_KIND = {"binary": "llm_verdict", "levels": "llm_decode", "bands": "llm_score"}


def resolve_method(criterion: Criterion) -> str:
    """The scorer name for a criterion; `llm` picks the strategy that fits its kind."""
    method = criterion.scoring.method
    return _LLM_BY_KIND[criterion.kind] if method == "llm" else method


async def _score_one(
    criterion: Criterion,
    target: Target,
    context: ScoringContext,
    limit: asyncio.Semaphore,
    budget: float | None = None,
) -> CriterionResult:
    method = resolve_method(criterion)
    scorer = context.plugins.scorers.get(method)
    if scorer is None:
        installed = ", ".join(sorted(context.plugins.scorers)) or "none"
        return error_result(
            criterion,
            method,
            f"no scorer {method!r} is installed (installed: {installed}); "
            "install the plugin that provides it",
        )
    async with limit:
        with instrumentation.current().criteria((criterion,), method) as probe:
            started = time.perf_counter()
            try:
                scoped = score_scoped(
                    criterion, target, lambda c, t: scorer.score(c, t, context), context.bar
                )
                if budget is None:
                    result = await scoped
                else:  # an in-process check: bounded while it awaits (a sync one cannot be)
                    result = await _within(budget, scoped)
                    if result is None:
                        result = error_result(
                            criterion,
                            method,
                            f"check {criterion.scoring.function!r} exceeded its wall-clock "
                            f"budget of {budget:g} s ({TIMEOUT_ENV}); raise it or fix the check",
                        )
            except (Exception, SystemExit) as error:
                result = error_result(
                    criterion, method, f"scorer {method!r} raised {type(error).__name__}: {error}"
                )
            elapsed = (time.perf_counter() - started) * 1000
            finished = _finish(criterion, result, method, context, elapsed)
            probe.finish([finished])
    return finished


async def _within(budget: float, scoring: Awaitable[Any]) -> Any:
    """What `scoring` gives, or None when it ran past `budget` seconds (a TimeoutError of
    its own, such as the regex limit's, is its own)."""
    if sys.version_info >= (3, 11):
        deadline = asyncio.timeout(budget)
        try:
            async with deadline:
                return await scoring
        except TimeoutError:
            if deadline.expired():
                return None
            raise
    task = asyncio.ensure_future(scoring)
    done, _ = await asyncio.wait({task}, timeout=budget)
    if not done:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return None
    return task.result()


def _awaits(criterion: Criterion, context: ScoringContext) -> bool:
    """Whether a deterministic criterion's check is a coroutine function (which the
    wall-clock budget can stop while it awaits)."""
    if criterion.scoring.method != "deterministic":
        return False
    function, _ = resolve_function(criterion.scoring.function or "", context)
    return function is not None and inspect.iscoroutinefunction(function)


async def _score_isolated(
    plan: IsolationPlan,
    target: Target,
    context: ScoringContext,
    limit: asyncio.Semaphore,
    settings: IsolationSettings,
) -> list[CriterionResult]:
    """The criteria that run in the check process pool: one hop for all of them, taking
    one concurrency slot."""
    async with limit:
        with instrumentation.current().criteria(
            [route.criterion for route in plan.routes], "isolated"
        ) as probe:
            started = time.perf_counter()
            produced = await score_isolated(plan, target, settings)
            elapsed = (time.perf_counter() - started) * 1000
            finished = [
                _finish(
                    route.criterion, produced[route.criterion.id], route.method, context, elapsed
                )
                for route in plan.routes
            ]
            probe.finish(finished)
    return finished


async def _score_group(
    method: str,
    criteria: list[Criterion],
    target: Target,
    context: ScoringContext,
    limit: asyncio.Semaphore,
) -> list[CriterionResult]:
    """Score criteria whose scorer judges them together (`score_group`, e.g. `llm_oneshot`:
    one LLM call for all of a rubric's one-shot criteria). Takes one concurrency slot."""
    scorer: Any = context.plugins.scorers[method]
    async with limit:
        with instrumentation.current().criteria(criteria, method) as probe:
            started = time.perf_counter()
            try:
                produced = list(await scorer.score_group(criteria, target, context))
            except (Exception, SystemExit) as error:
                why = f"scorer {method!r} raised {type(error).__name__}: {error}"
                produced = [error_result(criterion, method, why) for criterion in criteria]
            elapsed = (time.perf_counter() - started) * 1000
            by_id = {r.criterion_id: r for r in produced if isinstance(r, CriterionResult)}
            finished = [
                _finish(
                    criterion,
                    by_id.get(criterion.id)
                    or error_result(
                        criterion, method, f"scorer {method!r} returned no result for it"
                    ),
                    method,
                    context,
                    elapsed,
                )
                for criterion in criteria
            ]
            probe.finish(finished)
    return finished


async def _score_all(
    rubric: Rubric,
    target: Target,
    context: ScoringContext,
    limit: asyncio.Semaphore,
    kept: Mapping[str, CriterionResult] | None = None,
) -> tuple[CriterionResult, ...]:
    """Every criterion's result, in rubric order; criteria of a group scorer are scored
    in one `score_group` call per scorer; those in `kept` are not scored again (a check
    run in the isolation pool may be), their results kept as given."""
    kept = kept or {}
    settings = isolation_settings(context.settings)
    plan = isolation_plan(rubric, context, settings.mode)
    isolated = plan.ids if plan is not None else frozenset()
    budget = None if settings.mode == "off" else settings.timeout
    groups: dict[str, list[Criterion]] = {}
    singles: list[Criterion] = []
    for criterion in rubric.criteria:
        if criterion.id in isolated or criterion.id in kept:
            continue
        method = resolve_method(criterion)
        scorer = context.plugins.scorers.get(method)
        scoped = criterion.scope not in (None, "conversation")  # scored on its own part
        if scorer is not None and callable(getattr(scorer, "score_group", None)) and not scoped:
            groups.setdefault(method, []).append(criterion)
        else:
            singles.append(criterion)
    batches = await asyncio.gather(
        *(
            _score_one(
                criterion,
                target,
                context,
                limit,
                budget if budget is not None and _awaits(criterion, context) else None,
            )
            for criterion in singles
        ),
        *(
            _score_group(method, members, target, context, limit)
            for method, members in groups.items()
        ),
        *([_score_isolated(plan, target, context, limit, settings)] if plan is not None else []),
    )
    by_id: dict[str, CriterionResult] = {}
    for batch in batches:
        for result in batch if isinstance(batch, list) else [batch]:
            assert isinstance(result, CriterionResult)
            by_id[result.criterion_id] = result
    by_id.update(kept)
    return tuple(by_id[criterion.id] for criterion in rubric.criteria)


def _finish(
    criterion: Criterion,
    result: Any,
    method: str,
    context: ScoringContext,
    elapsed: float,
) -> CriterionResult:
    """Check a scorer's result and settle whether the criterion met its bar."""
    if not isinstance(result, CriterionResult) or result.criterion_id != criterion.id:
        return error_result(
            criterion, method, f"scorer {method!r} returned {type(result).__name__}, not a result"
        )
    update: dict[str, Any] = {"duration_ms": result.duration_ms or elapsed}
    if result.status == "scored":
        if result.score is None or not 0.0 <= result.score <= 1.0:
            return error_result(
                criterion, method, f"scorer {method!r} reported score {result.score!r} outside 0..1"
            ).model_copy(update={"llm_calls": result.llm_calls})
        exact = result.exact_score
        assert exact is not None
        update["passed"] = criterion_passed(criterion, exact, result.level, context.bar)
    else:
        update.update(score=None, verdict=None, level=None, passed=None)
    return result.model_copy(update=update)


async def evaluate(
    rubric: Rubric,
    target: Target | Mapping[str, Any] | str | list[Any],
    *,
    plugins: PluginRegistry | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    allow_import: bool = False,
    threshold: float | Fraction | Decimal | None = None,
    policy: UnscoredPolicy | None = None,
    options: Mapping[str, Any] | None = None,
    settings: Settings | None = None,
    kept: Mapping[str, CriterionResult] | None = None,
) -> Evaluation:
    """Score every criterion of `rubric` for `target` and aggregate the results.

    `kept`: results already made for some criteria (by id), used as they are; only the
    others are scored (a cascade re-judges the criteria a first judge was unsure of).

    `concurrency` bounds how many criteria are scored at once; `allow_import` lets a
    rubric's deterministic criteria import `module:function` code; `threshold` and
    `policy` override the rubric's pass threshold and unscored-criteria policy (a
    Fraction or Decimal threshold is compared exactly as given). `settings` (default:
    the caller's, else the environment's) hold the limits, isolation and judge settings.
    """
    if concurrency < 1:
        raise ConfigurationError(f"concurrency must be at least 1, got {concurrency}")
    subject = as_target(target)
    context = ScoringContext(
        rubric=rubric,
        plugins=plugins or default_plugins(),
        allow_import=allow_import,
        threshold=threshold,
        options=dict(options or {}),
        settings=settings if settings is not None else current_settings(),
    )
    started_at = datetime.now(timezone.utc)
    clock = time.perf_counter()
    limit = asyncio.Semaphore(concurrency)
    from rubricflow.llm.session import llm_scope

    with (
        use(context.settings),
        instrumentation.current().evaluation(rubric, subject) as probe,
    ):
        async with llm_scope(context) as session:
            results = await _score_all(rubric, subject, context, limit, kept)
            outcome = aggregate(rubric, results, threshold=threshold, policy=policy)
            outcome, penalised = apply_length_penalty(rubric, subject, outcome, context.bar)
            evaluation = _assemble(rubric, subject, context, results, outcome, policy, started_at)
            if penalised is not None:
                evaluation = evaluation.model_copy(
                    update={"metadata": {**evaluation.metadata, "length_penalty": penalised}}
                )
            if context.options.get("llm_feedback"):
                from rubricflow.llm.feedback import llm_feedback

                summary, calls = await llm_feedback(
                    session, rubric, subject, results, evaluation.feedback
                )
                evaluation = evaluation.model_copy(
                    update={
                        "metadata": {**evaluation.metadata, "llm_feedback": summary},
                        "feedback_llm_calls": calls,
                    }
                )
        evaluation = evaluation.model_copy(
            update={"duration_ms": (time.perf_counter() - clock) * 1000}
        )
        probe.finish(evaluation)
    return evaluation


def _assemble(
    rubric: Rubric,
    subject: Target,
    context: ScoringContext,
    results: tuple[CriterionResult, ...],
    outcome: Any,
    policy: UnscoredPolicy | None,
    started_at: datetime,
) -> Evaluation:
    score = float(outcome.score)
    scaled = rubric.scale.from_unit(outcome.score)  # exact, then the nearest float
    bar = float(context.bar)
    feedback = build_feedback(
        rubric,
        results,
        verdict=outcome.verdict,
        score=score,
        scaled_score=scaled,
        coverage=float(outcome.coverage),
        threshold=bar,
        gating_failures=outcome.gating_failures,
    )
    return Evaluation(
        id=uuid.uuid4().hex,
        rubric_id=rubric.id,
        rubric_version=rubric.version,
        rubric_hash=rubric.content_hash,
        target_id=subject.id,
        target_hash=subject.content_hash,
        verdict=outcome.verdict,
        passed=outcome.passed,
        score=score,
        scaled_score=scaled,
        raw_score=float(outcome.raw_score),
        coverage=float(outcome.coverage),
        threshold=bar,
        unscored_policy=policy or rubric.unscored_policy,
        criteria=results,
        gating_failures=outcome.gating_failures,
        feedback=feedback,
        created_at=started_at.isoformat(),
        margin=float(outcome.score - exact_number(context.bar)),
    )


async def evaluate_many(
    rubric: Rubric,
    targets: Iterable[Target | Mapping[str, Any] | str]
    | AsyncIterable[Target | Mapping[str, Any] | str],
    *,
    target_concurrency: int = DEFAULT_CONCURRENCY,
    **options: Any,
) -> AsyncGenerator[Evaluation, None]:
    """Evaluate a stream of targets, yielding evaluations in input order.

    At most `target_concurrency` targets are in flight, so memory stays flat however
    long the stream is.
    """

    async def pairs() -> AsyncIterator[tuple[Rubric, Any]]:
        if isinstance(targets, AsyncIterable):
            async for item in targets:
                yield rubric, item
        else:
            for item in targets:
                yield rubric, item

    # closed here, not by the garbage collector, when the caller stops early
    async with contextlib.aclosing(
        evaluate_cases(pairs(), target_concurrency=target_concurrency, **options)
    ) as evaluations:
        async for evaluation in evaluations:
            yield evaluation


async def evaluate_cases(
    cases: Iterable[tuple[Rubric, Target | Mapping[str, Any] | str]]
    | AsyncIterable[tuple[Rubric, Target | Mapping[str, Any] | str]],
    *,
    target_concurrency: int = DEFAULT_CONCURRENCY,
    **options: Any,
) -> AsyncGenerator[Evaluation, None]:
    """`evaluate_many` for (rubric, target) pairs: a suite whose cases add criteria of
    their own grades each case with its own rubric. Yields in input order.

    Up to `target_concurrency` targets are evaluated at once. A slow target does not hold
    the others up: while it runs, targets after it keep starting as others finish, their
    evaluations waiting to be yielded in order, up to `READY_WINDOW` times
    `target_concurrency` targets in all (so memory stays bounded)."""
    if target_concurrency < 1:
        raise ConfigurationError(f"target concurrency must be at least 1, got {target_concurrency}")
    window = READY_WINDOW * target_concurrency
    pending: collections.deque[asyncio.Task[Evaluation]] = collections.deque()

    from rubricflow.llm.session import shared_llm_session
    from rubricflow.llm.slots import next_rank, ranked

    async with shared_llm_session(options) as shared:
        source = _async_items(cases)
        exhausted = False
        broken: Exception | None = None
        try:
            while True:
                running = [task for task in pending if not task.done()]
                while not exhausted and len(running) < target_concurrency and len(pending) < window:
                    try:
                        case_rubric, item = await anext(source)
                    except StopAsyncIteration:
                        exhausted = True
                        break
                    except Exception as error:
                        # bad input (a malformed line, say): the targets read before it
                        # are still evaluated and yielded, then the error is raised
                        broken, exhausted = error, True
                        break
                    # numbered so the judge serves the oldest target first (see slots.py)
                    with ranked(next_rank()):
                        task = asyncio.ensure_future(evaluate(case_rubric, item, **shared))
                    pending.append(task)
                    running.append(task)
                if not pending:
                    break
                if pending[0].done():
                    yield pending.popleft().result()
                    continue
                await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in pending:
                task.cancel()
            await source.aclose()
        if broken is not None:
            raise broken


async def _async_items(items: Iterable[Any] | AsyncIterable[Any]) -> AsyncGenerator[Any, None]:
    """`items` one by one, whether they come from a plain or an async iterable."""
    if isinstance(items, AsyncIterable):
        async for item in items:
            yield item
    else:
        for item in items:
            yield item


def evaluate_sync(
    rubric: Rubric, target: Target | Mapping[str, Any] | str | list[Any], **options: Any
) -> Evaluation:
    """`evaluate` for synchronous callers, also inside a running event loop (a notebook):
    see `rubricflow.sync_bridge`."""
    return run_sync(evaluate(rubric, target, **options))

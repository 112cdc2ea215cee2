"""A check pool process (started by `rubricflow.engine.check_pool`): it reads jobs from
its pipe, scores each criterion under rlimits (address space for the process, CPU seconds
per criterion), notes in shared memory which criterion it is on since when, answers each
job with all its results, and exits when the parent's end of the pipe closes."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import math
import mmap
import os
import pickle
import signal
import sys
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rubricflow.engine.isolation import MEMORY_ENV
from rubricflow.engine.pool_wire import HEADER, PROGRESS, read_exact, write_all
from rubricflow.engine.scopes import score_scoped
from rubricflow.model import Criterion, Rubric
from rubricflow.results import CriterionResult, Target
from rubricflow.scorers.deterministic import DeterministicScorer
from rubricflow.scorers.schema import SchemaScorer
from rubricflow.scoring import ScoringContext, error_result

if TYPE_CHECKING:
    from rubricflow.formats.base import RubricFormat
    from rubricflow.scoring import Scorer

__all__ = ["child_main"]


class _ChildPlugins:
    """The registry lookups a scorer makes, in a pool process: only the checks it was sent."""

    def __init__(self, functions: Mapping[str, Callable[..., Any]]) -> None:
        self.functions = dict(functions)
        self.scorers: dict[str, Scorer] = {}
        self.formats: dict[str, RubricFormat] = {}
        self.providers: dict[str, Callable[..., Any]] = {}


@dataclass
class _ChildSpec:
    context: ScoringContext
    routes: list[tuple[Criterion, str, str | None]]
    broken: dict[str, str]  # criterion id -> why its function could not be imported
    sync: bool  # no check is a coroutine function (schemas never wait)


def _child_import(path: str) -> Callable[..., Any]:
    import importlib

    module_name, _, attribute = path.partition(":")
    found: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        found = getattr(found, part)
    return found  # type: ignore[no-any-return]


def _child_spec(rubric: Rubric, routes: list[Any], path: list[str]) -> _ChildSpec:
    for entry in path:
        if entry not in sys.path:
            sys.path.append(entry)
    functions: dict[str, Callable[..., Any]] = {}
    broken: dict[str, str] = {}
    for criterion, method, where in routes:
        if method != "deterministic" or where is None:
            continue
        try:
            functions[criterion.scoring.function] = _child_import(where)
        except (Exception, SystemExit) as error:
            broken[criterion.id] = (
                f"the check process cannot import {where!r}: {type(error).__name__}: {error}"
            )
    context = ScoringContext(rubric=rubric, plugins=_ChildPlugins(functions))
    sync = not any(inspect.iscoroutinefunction(f) for f in functions.values())
    return _ChildSpec(context, routes, broken, sync)


def _child_limits(memory_mb: int) -> None:
    import resource

    for limit, value in ((resource.RLIMIT_CORE, 0), (resource.RLIMIT_AS, memory_mb << 20)):
        with contextlib.suppress(ValueError, OSError):
            _, hard = resource.getrlimit(limit)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(limit, (value, hard))


class _CpuBudget:
    """Before each criterion, lets this process use `seconds` more CPU time from now
    (SIGXCPU past it). RLIMIT_CPU counts the whole process's time in whole seconds, so
    the limit set for one criterion still holds for the next while it leaves between
    `seconds` and `seconds` + 1 from now: it is set again (three system calls, a good
    share of a fast check's cost) only about once per CPU second used."""

    def __init__(self) -> None:
        self.limit: float | None = None  # the soft limit set last, in CPU seconds

    def allow(self, seconds: float) -> None:
        used = time.process_time()  # the process's user + system time, as RLIMIT_CPU counts
        limit = self.limit
        if limit is not None and seconds <= limit - used <= seconds + 1:
            return
        import resource

        soft = math.ceil(used + seconds)
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        try:
            resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        except (ValueError, OSError):
            self.limit = None
        else:
            self.limit = soft


async def _child_score(
    spec: _ChildSpec, criterion: Criterion, method: str, target: Target, memory_mb: int
) -> CriterionResult:
    broken = spec.broken.get(criterion.id)
    if broken is not None:
        return error_result(criterion, method, broken)
    scorer: Any = _DETERMINISTIC if method == "deterministic" else _SCHEMA
    name = (
        f"check {criterion.scoring.function!r}"
        if method == "deterministic"
        else f"the schema check of {criterion.id!r}"
    )
    out_of_memory = (
        f"{name} exceeded its memory limit of {memory_mb} MB ({MEMORY_ENV}); "
        "raise it or fix the check"
    )
    started = time.perf_counter()
    try:
        result: Any = await score_scoped(
            criterion, target, lambda c, t: scorer.score(c, t, spec.context), spec.context.bar
        )
    except MemoryError:
        return error_result(criterion, method, out_of_memory)
    except (Exception, SystemExit) as error:
        return error_result(
            criterion, method, f"scorer {method!r} raised {type(error).__name__}: {error}"
        )
    if not isinstance(result, CriterionResult):
        return result  # type: ignore[no-any-return]  # the parent says what is wrong
    if result.status == "error" and result.notes.startswith(f"{name} raised MemoryError"):
        return error_result(criterion, method, out_of_memory)
    if result.duration_ms is None:
        result = result.model_copy(update={"duration_ms": (time.perf_counter() - started) * 1000})
    return result


_Answer = list[tuple[int, CriterionResult]]


async def _child_job(
    spec: _ChildSpec,
    job: int,
    indices: list[int] | None,
    target: Target,
    cpu_seconds: float,
    memory_mb: int,
    progress: mmap.mmap,
    budget: _CpuBudget,
) -> _Answer:
    """Score a job's criteria one after another, each under its CPU budget, noting in
    `progress` which one runs since when."""
    answer = []
    for index in range(len(spec.routes)) if indices is None else indices:
        criterion, method, _ = spec.routes[index]
        PROGRESS.pack_into(progress, 0, job, index, time.monotonic())
        budget.allow(cpu_seconds)
        answer.append((index, await _child_score(spec, criterion, method, target, memory_mb)))
    return answer


_SCHEMA = SchemaScorer()
_DETERMINISTIC = DeterministicScorer()


def child_main(argv: list[str]) -> None:
    """A pool process: read jobs, score, answer; exit when the pipe closes."""
    job_fd, result_fd, progress_fd, memory_mb = (int(arg) for arg in argv)
    # the parent decides when a check stops: Ctrl-C or a group SIGTERM is for it
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _child_limits(memory_mb)
    progress = mmap.mmap(progress_fd, PROGRESS.size)
    loop = asyncio.new_event_loop()
    specs: dict[str, _ChildSpec] = {}
    budget = _CpuBudget()
    write_all(result_fd, pickle.dumps(("ready", os.getpid())))
    try:
        with contextlib.suppress(BrokenPipeError):  # the parent closed its end: stop
            while True:
                header = read_exact(job_fd, 4)
                payload = None if header is None else read_exact(job_fd, HEADER.unpack(header)[0])
                if payload is None:
                    return
                job, key, spec_data, forget, indices, target, cpu_seconds = pickle.loads(payload)
                if forget is not None:
                    specs.pop(forget, None)
                if spec_data is not None:
                    specs[key] = _child_spec(*spec_data)
                spec = specs[key]
                arguments = (spec, job, indices, target, cpu_seconds, memory_mb, progress, budget)
                answer = _finish_now(_child_job(*arguments), loop) if spec.sync else None
                if answer is None:
                    answer = loop.run_until_complete(_child_job(*arguments))
                try:
                    message = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
                except Exception:  # an unpicklable value in some evidence, say: find which
                    message = pickle.dumps([_sendable(spec, entry) for entry in answer])
                write_all(result_fd, message)
    finally:
        loop.close()  # here, not in a finaliser at exit (which fails, its pipes gone)


def _finish_now(
    job: Coroutine[Any, Any, _Answer], loop: asyncio.AbstractEventLoop
) -> _Answer | None:
    """A job whose checks are all sync never waits: run it to its end in one step, not
    through the event loop (a loop's turn costs more than the checks); None if it waits
    after all (a sync check that returned an awaitable): the caller runs it again, on
    the loop."""
    asyncio.events._set_running_loop(loop)  # what a check may ask for is there
    try:
        job.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    finally:
        asyncio.events._set_running_loop(None)
    job.close()
    return None


def _sendable(spec: _ChildSpec, entry: tuple[int, Any]) -> tuple[int, Any]:
    try:
        pickle.dumps(entry)
    except Exception as error:
        criterion, method, _ = spec.routes[entry[0]]
        why = f"its result cannot be sent back from the check process: {error}"
        return entry[0], error_result(criterion, method, why)
    return entry

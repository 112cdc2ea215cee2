"""Isolated checks: a pre-started pool of worker processes, with limits, for the criteria
that could run away.

A check function rubricflow did not write (a plugin's, or one a rubric imports with
`allow_import`) and a JSON Schema are code or data that can spin forever: a `while True`,
a backtracking `re` (which holds the GIL, so no thread can stop it), a schema whose
`anyOf`s refer to each other exponentially. In the event loop's process such a check would
pin the loop: no lease renewal, no SIGTERM. So those criteria run in a pool of worker
processes, started before they are needed and reused:

- one hop per evaluation: the parent sends one message carrying the target and every
  criterion of that evaluation that needs isolation (a rubric's criteria are sent to a
  process once and cached there by key), and the child streams each criterion's result
  back as it finishes;
- the parent waits for the next result at most the per-criterion wall-clock budget
  (`RUBRICFLOW_CHECK_TIMEOUT`); past it the process is killed and replaced, that
  criterion is an `error` naming the budget, and the criteria after it go to the
  replacement;
- each process runs under rlimits: CPU seconds per criterion (`RUBRICFLOW_CHECK_CPU_SECONDS`;
  RLIMIT_CPU counts for the whole process, so the child raises its soft limit to the time
  used so far plus the budget before each criterion) and address space
  (`RUBRICFLOW_CHECK_MEMORY_MB`); a criterion that runs past one is an `error` naming it;
- the parent waits on pipes with the event loop's own readers (no thread per call), so the
  event loop, lease renewal and signals stay responsive while a poison check spins.

What goes to the pool (`RUBRICFLOW_CHECK_ISOLATION`): `auto` (the default) sends schema
criteria, check functions of entry-point plugins, and `module:function` checks a rubric
imports (only with `allow_import`). rubricflow's own built-in checks are proven linear and
stay in-process; so do checks of a plugin object registered in-process only
(`create_plugin_manager(plugins=[...])`), which a fresh process could not rebuild the
same way; and so do async checks (coroutine functions): they wait on I/O, which runs
concurrently in-process and would queue behind one another in a pool process, and the
wall-clock budget stops them there while they await. A child imports a function by its
module and qualified name, which the parent has imported already, so it never imports
code the parent did not; one it cannot import (a closure, a bound method, a lambda,
anything in `__main__`) runs in-process. `process` sends every check a child can
import, built-ins and async ones too; `off` runs everything in-process. A sync check
in-process cannot be stopped. Other scorers (LLM judges, third-party scorers) always run
in-process: they wait on I/O, under their own timeouts.

The pool is created on first use, shared by the process, and shut down when the last
`Application` holding it closes, and at exit; its children also exit when the parent's end
of their pipe closes, so none outlives it.

This module is the public face: the settings, which criteria go to the pool, and one
evaluation's hop (`score_isolated`). The pool's parent side is
`rubricflow.engine.check_pool`, a pool process's side `rubricflow.engine.check_process`,
and the wire both share `rubricflow.engine.pool_wire`.
"""

from __future__ import annotations

import collections
import functools
import inspect
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from rubricflow.engine.check_pool import (
    CheckPool,
    PoolHold,
    PoolProcess,
    ProcessDied,
    shared_pool,
    shutdown_check_pool,
)
from rubricflow.model import Criterion, Rubric
from rubricflow.plugins import BUILTIN_PLUGINS
from rubricflow.results import CriterionResult, Target
from rubricflow.scorers.deterministic import DeterministicScorer, resolve_function
from rubricflow.scorers.schema import SchemaScorer
from rubricflow.scoring import ScoringContext, error_result
from rubricflow.settings import Settings, current, env_name

__all__ = [
    "CPU_ENV",
    "ISOLATION_ENV",
    "MEMORY_ENV",
    "TIMEOUT_ENV",
    "WORKERS_ENV",
    "CheckPool",
    "IsolationPlan",
    "IsolationSettings",
    "PoolHold",
    "hold_check_pool",
    "isolation_plan",
    "isolation_settings",
    "score_isolated",
    "shutdown_check_pool",
    "uses_pool",
]

ISOLATION_ENV = env_name("check_isolation")
TIMEOUT_ENV = env_name("check_timeout")
CPU_ENV = env_name("check_cpu_seconds")
MEMORY_ENV = env_name("check_memory_mb")
WORKERS_ENV = env_name("check_workers")

DEFAULT_TIMEOUT = 10.0
DEFAULT_MEMORY_MB = 2048
# how long a new process may take to import rubricflow and say it is ready
STARTUP_TIMEOUT = 60.0
# rubric specs a parent remembers having sent to one process (and the process keeps)
SPEC_CACHE = 256

Mode = Literal["auto", "process", "off"]
_MODES: tuple[Mode, ...] = ("auto", "process", "off")
_ISOLATED_METHODS = ("deterministic", "schema")
_BUILTIN_PLUGIN_NAMES = frozenset(name for name, _ in BUILTIN_PLUGINS)
_SUPPORTED = sys.platform != "win32"  # rlimits, and event-loop readers on pipes


@dataclass(frozen=True)
class IsolationSettings:
    """Where checks run and their limits; see the module docstring."""

    mode: Mode = "auto"
    timeout: float = DEFAULT_TIMEOUT  # wall-clock seconds per criterion
    cpu_seconds: float = DEFAULT_TIMEOUT  # CPU seconds per criterion
    memory_mb: int = DEFAULT_MEMORY_MB  # address space of a pool process
    workers: int = 2  # pool processes


def isolation_settings(settings: Settings | None = None) -> IsolationSettings:
    """Where checks run and their limits, from `settings` (default: `current()`): its
    `check_isolation`, `check_timeout`, `check_cpu_seconds` (default the timeout),
    `check_memory_mb` and `check_workers` (default min(2, CPUs))."""
    return _isolation(settings if settings is not None else current())


@functools.lru_cache(maxsize=16)
def _isolation(settings: Settings) -> IsolationSettings:
    timeout = settings.check_timeout
    return IsolationSettings(
        mode=settings.check_isolation if _SUPPORTED else "off",
        timeout=timeout,
        cpu_seconds=settings.check_cpu_seconds or timeout,
        memory_mb=settings.check_memory_mb,
        workers=settings.check_workers or max(1, min(2, os.cpu_count() or 1)),
    )


# -- which criteria go to the pool ----------------------------------------------------


@dataclass(frozen=True)
class _Route:
    criterion: Criterion
    method: str  # "deterministic" or "schema"
    path: str | None  # where the child imports the check function from


@dataclass
class IsolationPlan:
    """The criteria of one rubric that run in the pool (in rubric order), and the key a
    pool process caches them by."""

    key: str
    rubric: Rubric
    routes: tuple[_Route, ...]
    ids: frozenset[str] = field(default_factory=frozenset)


_MISSING = object()


def _resolves_to(path: str, function: object) -> bool:
    """Whether `path` (module:qualified.name) names `function` in a module already imported."""
    module_name, _, attribute = path.partition(":")
    found: object = sys.modules.get(module_name, _MISSING)
    for part in attribute.split("."):
        if found is _MISSING:
            return False
        found = getattr(found, part, _MISSING)
    return found is function


def _import_path(name: str, function: Callable[..., Any]) -> str | None:
    """Where a fresh process finds `function`, or None when it cannot (closures, bound
    methods, lambdas, `__main__`)."""
    candidates = [name] if ":" in name else []
    module, qualname = (
        getattr(function, "__module__", None),
        getattr(function, "__qualname__", None),
    )
    if isinstance(module, str) and isinstance(qualname, str) and "<" not in qualname:
        candidates.append(f"{module}:{qualname}")
    for path in candidates:
        if not path.startswith("__main__:") and _resolves_to(path, function):
            return path
    return None


def _owner(plugins: Any, name: str) -> tuple[bool, bool]:
    """(registered by one of rubricflow's built-in plugins, registered by an entry-point
    plugin) for check function `name`; both False for an unregistered name or a plugin
    object registered in-process only."""
    for info in getattr(plugins, "plugins", list)():
        if name in info.functions:
            builtin = info.name in _BUILTIN_PLUGIN_NAMES
            return builtin, not builtin and info.distribution is not None
    return False, False


def _route(criterion: Criterion, context: ScoringContext, mode: Mode) -> _Route | None:
    method = criterion.scoring.method
    if method not in _ISOLATED_METHODS:
        return None
    scorer = context.plugins.scorers.get(method)
    if method == "schema":
        if type(scorer) is not SchemaScorer or criterion.scoring.schema_ is None:
            return None
        return _Route(criterion, method, None)
    if type(scorer) is not DeterministicScorer:
        return None
    name = criterion.scoring.function or ""
    function, _ = resolve_function(name, context)
    if function is None:
        return None  # refused or missing: in-process says why
    path = _import_path(name, function)
    if path is None:
        return None  # nothing a fresh process could import
    if mode == "auto":
        if inspect.iscoroutinefunction(function):
            return None  # waits on I/O, concurrently in-process, under the budget
        if name in context.plugins.functions:
            builtin, from_entry_point = _owner(context.plugins, name)
            if builtin or not from_entry_point:
                return None  # proven linear, or a plugin object given in-process only
    return _Route(criterion, method, path)


_plans: collections.OrderedDict[tuple[Any, ...], tuple[object, IsolationPlan | None]] = (
    collections.OrderedDict()
)


def isolation_plan(rubric: Rubric, context: ScoringContext, mode: Mode) -> IsolationPlan | None:
    """The criteria of `rubric` that run in the pool under `mode`, or None when none do.
    Cached per rubric, registry and `allow_import`."""
    if mode == "off":
        return None
    cache_key = (rubric.content_hash, id(context.plugins), context.allow_import, mode)
    cached = _plans.get(cache_key)
    if cached is not None and cached[0] is context.plugins:
        return cached[1]
    routes = tuple(
        route
        for route in (_route(criterion, context, mode) for criterion in rubric.criteria)
        if route is not None
    )
    plan = None
    if routes:
        key = f"{rubric.content_hash}:" + ",".join(
            f"{r.criterion.id}={r.path or ''}" for r in routes
        )
        plan = IsolationPlan(key, rubric, routes, frozenset(r.criterion.id for r in routes))
    _plans[cache_key] = (context.plugins, plan)
    if len(_plans) > SPEC_CACHE:
        _plans.popitem(last=False)
    return plan


def uses_pool(
    rubric: Rubric, plugins: Any, *, allow_import: bool = False, settings: Settings | None = None
) -> bool:
    """Whether evaluating `rubric` with `plugins` sends any criterion to the pool under
    `settings` (default: the current ones): what a caller asks before overlapping an
    evaluation's hop with other work (cached, as `isolation_plan` is)."""
    mode = isolation_settings(settings).mode
    if mode == "off":
        return False
    cached = _plans.get((rubric.content_hash, id(plugins), allow_import, mode))
    if cached is not None and cached[0] is plugins:
        return cached[1] is not None
    context = ScoringContext(rubric=rubric, plugins=plugins, allow_import=allow_import)
    return isolation_plan(rubric, context, mode) is not None


# -- holding the shared pool ---------------------------------------------------------


def hold_check_pool(*, prestart: bool = False) -> PoolHold:
    """Hold the shared pool open until `release()`; see `PoolHold`. With `prestart`, start
    its processes now (unless isolation is off), so that a long-running reviewer's first
    isolated check does not wait for them to start."""
    hold = PoolHold()
    if prestart:
        settings = isolation_settings()
        if settings.mode != "off":
            shared_pool(settings.workers, settings.memory_mb)
    return hold


# -- one evaluation's hop -------------------------------------------------------------


def _limit_message(route: _Route, what: str, setting: str) -> str:
    name = _check_name(route)
    return f"{name} exceeded {what} ({setting}); raise it or fix the check"


def _check_name(route: _Route) -> str:
    if route.method == "schema":
        return f"the schema check of {route.criterion.id!r}"
    return f"check {route.criterion.scoring.function!r}"


def _death_message(route: _Route, code: int, settings: IsolationSettings) -> str:
    if code == -signal.SIGXCPU:
        return _limit_message(route, f"its CPU-time limit of {settings.cpu_seconds:g} s", CPU_ENV)
    why = f"signal {-code}" if code < 0 else f"exit code {code}"
    return (
        f"{_check_name(route)} killed its check process ({why}), perhaps out of memory "
        f"(limit {settings.memory_mb} MB, {MEMORY_ENV}); raise it or fix the check"
    )


async def score_isolated(
    plan: IsolationPlan, target: Target, settings: IsolationSettings
) -> dict[str, CriterionResult]:
    """The plan's criteria scored in the pool, by criterion id: one message out and one
    result back per criterion, each within the per-criterion budgets."""
    results: dict[str, CriterionResult] = {}
    pending = list(range(len(plan.routes)))
    fresh_failures = 0
    while pending:
        try:
            pool = shared_pool(settings.workers, settings.memory_mb)
            process = await pool.acquire()
        except ProcessDied:
            continue  # the pool was shut down under us: the next one
        healthy = False
        try:
            if not process.ready:
                try:
                    await process.receive(time.monotonic() + STARTUP_TIMEOUT)  # "ready"
                    process.ready = True
                except (ProcessDied, TimeoutError):
                    fresh_failures += 1
                    if fresh_failures >= 2:  # it cannot start: say so, do not loop
                        code = process.popen.poll()
                        why = f"exit code {code}" if code is not None else "no answer"
                        for index in pending:
                            route = plan.routes[index]
                            results[route.criterion.id] = error_result(
                                route.criterion,
                                route.method,
                                f"the check process could not start ({why}); its memory "
                                f"limit ({settings.memory_mb} MB, {MEMORY_ENV}) may be too "
                                "small, see its error output",
                            )
                        pending = []
                    continue
            before = len(pending)
            pending, healthy = await _run(pool, process, plan, pending, target, settings, results)
            if not healthy and len(pending) == before:  # it died before taking the job
                fresh_failures += 1
                if fresh_failures >= 2:
                    for index in pending:
                        route = plan.routes[index]
                        results[route.criterion.id] = error_result(
                            route.criterion,
                            route.method,
                            "the check process stopped before it took the job; "
                            "see its error output",
                        )
                    pending = []
        finally:
            if healthy:
                pool.release(process)
            else:
                pool.replace(process)
    return results


async def _run(
    pool: CheckPool,
    process: PoolProcess,
    plan: IsolationPlan,
    pending: list[int],
    target: Target,
    settings: IsolationSettings,
    results: dict[str, CriterionResult],
) -> tuple[list[int], bool]:
    """Send one job and collect its results; (criteria still to score, process healthy).

    The child answers once, with every result of the job; meanwhile it notes in shared
    memory which criterion it is scoring since when, which is all the parent reads to hold
    each criterion to its wall-clock budget (and to know which one a dead process was on)."""
    spec: tuple[Any, ...] | None = None
    if plan.key in process.specs:
        process.specs.move_to_end(plan.key)
    else:
        spec = (
            plan.rubric,
            [(r.criterion, r.method, r.path) for r in plan.routes],
            list(sys.path),
        )
    forget = None
    if spec is not None:
        process.specs[plan.key] = None
        if len(process.specs) > SPEC_CACHE:
            forget, _ = process.specs.popitem(last=False)
    process.jobs += 1
    job = process.jobs
    indices = None if len(pending) == len(plan.routes) else pending
    sent = time.monotonic()
    try:
        await process.send((job, plan.key, spec, forget, indices, target, settings.cpu_seconds))
    except ProcessDied:
        return pending, False
    deadline = sent + settings.timeout
    while True:
        try:
            answer = await process.receive(deadline)
            break
        except TimeoutError:
            index, since = _on(process, job, pending, sent)
            deadline = since + settings.timeout
            if deadline > time.monotonic():
                continue  # an earlier criterion took a while; this one has time left
            route = plan.routes[index]
            results[route.criterion.id] = error_result(
                route.criterion,
                route.method,
                _limit_message(
                    route, f"its wall-clock budget of {settings.timeout:g} s", TIMEOUT_ENV
                ),
            )
            return [i for i in pending if i != index], False
        except ProcessDied:
            index, _ = _on(process, job, pending, sent)
            process.close_pipes()
            code = await process.reaped()
            route = plan.routes[index]
            why = (
                "the check process pool was shut down while it ran"
                if pool.closed
                else _death_message(route, code, settings)
            )
            results[route.criterion.id] = error_result(route.criterion, route.method, why)
            return [i for i in pending if i != index], False
    for index, result in answer:
        results[plan.routes[index].criterion.id] = result
    return [], True


def _on(process: PoolProcess, job: int, pending: list[int], sent: float) -> tuple[int, float]:
    """The criterion the child is on and since when (the first, from the moment the job was
    sent, if it has not started on any: it is still reading the job or importing)."""
    running, index, since = process.running()
    if running != job or index not in pending:
        return pending[0], sent
    return index, since

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
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import contextlib
import inspect
import math
import mmap
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from rubricflow.errors import ConfigurationError
from rubricflow.model import Criterion, Rubric
from rubricflow.plugins import BUILTIN_PLUGINS
from rubricflow.results import CriterionResult, Target
from rubricflow.scorers.deterministic import DeterministicScorer, resolve_function
from rubricflow.scorers.schema import SchemaScorer
from rubricflow.scoring import ScoringContext, error_result

if TYPE_CHECKING:
    from rubricflow.formats.base import RubricFormat
    from rubricflow.scoring import Scorer

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
]

ISOLATION_ENV = "RUBRICFLOW_CHECK_ISOLATION"
TIMEOUT_ENV = "RUBRICFLOW_CHECK_TIMEOUT"
CPU_ENV = "RUBRICFLOW_CHECK_CPU_SECONDS"
MEMORY_ENV = "RUBRICFLOW_CHECK_MEMORY_MB"
WORKERS_ENV = "RUBRICFLOW_CHECK_WORKERS"

DEFAULT_TIMEOUT = 10.0
DEFAULT_MEMORY_MB = 2048
# how long a new process may take to import rubricflow and say it is ready
STARTUP_TIMEOUT = 60.0
# rubric specs a parent remembers having sent to one process (and the process keeps)
SPEC_CACHE = 256

Mode = Literal["auto", "process", "off"]
_MODES: tuple[Mode, ...] = ("auto", "process", "off")
_ISOLATED_METHODS = ("deterministic", "schema")
_HEADER = struct.Struct("!I")
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


def _number(name: str, raw: str, what: str, *, whole: bool = False) -> float:
    try:
        value = int(raw) if whole else float(raw)
    except ValueError:
        value = math.nan
    if not value > 0 or math.isinf(value):
        kind = "a whole number" if whole else "a number"
        raise ConfigurationError(f"{name}={raw!r} is not {kind} above 0; set it to {what}")
    return value


_settings_cache: tuple[tuple[str, ...], IsolationSettings] | None = None


def isolation_settings() -> IsolationSettings:
    """The settings from the environment ($RUBRICFLOW_CHECK_ISOLATION: auto, process or
    off; $RUBRICFLOW_CHECK_TIMEOUT: wall-clock seconds per criterion, default 10;
    $RUBRICFLOW_CHECK_CPU_SECONDS: CPU seconds per criterion, default the timeout;
    $RUBRICFLOW_CHECK_MEMORY_MB: a pool process's address space, default 2048;
    $RUBRICFLOW_CHECK_WORKERS: pool processes, default min(2, CPUs)). A value that is
    not usable is a `ConfigurationError` naming it."""
    global _settings_cache
    env = os.environ
    raw = tuple(
        env.get(name, "").strip()
        for name in (ISOLATION_ENV, TIMEOUT_ENV, CPU_ENV, MEMORY_ENV, WORKERS_ENV)
    )
    cached = _settings_cache
    if cached is not None and cached[0] == raw:
        return cached[1]
    mode_raw, timeout_raw, cpu_raw, memory_raw, workers_raw = raw
    mode = mode_raw.lower() or "auto"
    if mode not in _MODES:
        raise ConfigurationError(
            f"{ISOLATION_ENV}={mode_raw!r} is not one of auto, process, off; auto runs "
            "plugin and imported checks and schemas in the check process pool"
        )
    timeout = (
        _number(TIMEOUT_ENV, timeout_raw, "the wall-clock seconds a check may run (e.g. 10)")
        if timeout_raw
        else DEFAULT_TIMEOUT
    )
    cpu = (
        _number(CPU_ENV, cpu_raw, "the CPU seconds a check may use (e.g. 10)")
        if cpu_raw
        else timeout
    )
    memory = (
        int(
            _number(
                MEMORY_ENV, memory_raw, "a check process's memory in MB (e.g. 2048)", whole=True
            )
        )
        if memory_raw
        else DEFAULT_MEMORY_MB
    )
    workers = (
        int(
            _number(
                WORKERS_ENV, workers_raw, "how many check processes to run (e.g. 2)", whole=True
            )
        )
        if workers_raw
        else max(1, min(2, os.cpu_count() or 1))
    )
    settings = IsolationSettings(
        mode=mode if _SUPPORTED else "off",
        timeout=timeout,
        cpu_seconds=cpu,
        memory_mb=memory,
        workers=workers,
    )
    _settings_cache = (raw, settings)
    return settings


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


# -- the parent's side of one pool process --------------------------------------------


# what a pool process is scoring, in memory both processes map: job number, criterion
# index, and when it started (time.monotonic, one clock for every process)
_PROGRESS = struct.Struct("=qqd")


def _shared_file(size: int) -> int:
    """A file descriptor of `size` zero bytes, to map in two processes."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("rubricflow-check-progress", 0)  # close-on-exec; pass_fds opens it
    else:  # pragma: no cover - not Linux
        import tempfile

        with tempfile.TemporaryFile() as handle:
            fd = os.dup(handle.fileno())
    os.ftruncate(fd, size)
    return fd


class _Died(Exception):
    """The pool process's pipe closed: it died (or was killed)."""


_CHILD_BOOT = (
    "import sys; from rubricflow.engine.isolation import _child_main; _child_main(sys.argv[1:])"
)


class _Process:
    """One pool process and the two pipes to it; the parent's ends are non-blocking."""

    def __init__(self, memory_mb: int) -> None:
        job_read, job_write = os.pipe()
        result_read, result_write = os.pipe()
        progress_fd = _shared_file(_PROGRESS.size)
        try:
            self.popen = subprocess.Popen(
                [
                    *(sys.executable, "-c", _CHILD_BOOT),
                    *(str(job_read), str(result_write), str(progress_fd), str(memory_mb)),
                ],
                pass_fds=(job_read, result_write, progress_fd),
                stdin=subprocess.DEVNULL,
                close_fds=True,
            )
        except BaseException:
            for fd in (job_write, result_read):
                os.close(fd)
            raise
        finally:
            os.close(job_read)
            os.close(result_write)
            self.progress = mmap.mmap(progress_fd, _PROGRESS.size)
            os.close(progress_fd)
        self.to_child: int | None = job_write
        self.from_child: int | None = result_read
        os.set_blocking(job_write, False)
        os.set_blocking(result_read, False)
        self.buffer = bytearray()
        self.ready = False
        self.jobs = 0
        self.specs: collections.OrderedDict[str, None] = collections.OrderedDict()
        self.memory_mb = memory_mb

    def poll_ready(self) -> bool:
        """Whether it has said it is ready (read without waiting)."""
        if not self.ready:
            with contextlib.suppress(_Died):
                if self._take() is not None or (self._fill() and self._take() is not None):
                    self.ready = True
        return self.ready

    def running(self) -> tuple[int, int, float]:
        """What the child says it is scoring: (job number, criterion index, since when on
        the monotonic clock)."""
        while True:  # the child may be writing it: read until two reads agree
            first = _PROGRESS.unpack_from(self.progress)
            if _PROGRESS.unpack_from(self.progress) == first:
                job, index, since = first
                return job, index, since

    # framing ------------------------------------------------------------------------
    def _take(self) -> bytes | None:
        buffer = self.buffer
        if len(buffer) < 4:
            return None
        (size,) = _HEADER.unpack_from(buffer)
        if len(buffer) < 4 + size:
            return None
        frame = bytes(buffer[4 : 4 + size])
        del buffer[: 4 + size]
        return frame

    def _fill(self) -> bool:
        """Read what the pipe holds; False when nothing was there."""
        fd = self.from_child
        if fd is None:
            raise _Died
        got = False
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                return got
            except OSError:
                raise _Died from None
            if not chunk:
                raise _Died
            self.buffer += chunk
            got = True
            if len(chunk) < 1 << 16:
                return got

    async def receive(self, deadline: float | None = None) -> Any:
        """The next message from the child (waits on the event loop's reader); TimeoutError
        past `deadline` (on the monotonic clock)."""
        while True:
            frame = self._take()
            if frame is not None:
                return pickle.loads(frame)
            if self._fill():
                continue
            assert self.from_child is not None
            await _wait_fd(self.from_child, writable=False, deadline=deadline)

    async def send(self, message: Any) -> None:
        payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        data = memoryview(_HEADER.pack(len(payload)) + payload)
        while data:
            fd = self.to_child
            if fd is None:
                raise _Died
            try:
                written = os.write(fd, data)
            except BlockingIOError:
                await _wait_fd(fd, writable=True)
                continue
            except OSError:  # BrokenPipeError: the child is gone
                raise _Died from None
            data = data[written:]

    # life -----------------------------------------------------------------------------
    def close_pipes(self) -> None:
        for name in ("to_child", "from_child"):
            fd = getattr(self, name)
            if fd is not None:
                setattr(self, name, None)
                with contextlib.suppress(OSError):
                    os.close(fd)
        with contextlib.suppress(BufferError):
            self.progress.close()

    def kill(self) -> None:
        self.close_pipes()
        if self.popen.poll() is None:
            with contextlib.suppress(OSError):
                self.popen.kill()

    async def reaped(self) -> int:
        """Its exit status, once it has exited (killing it first if it lingers)."""
        deadline = time.monotonic() + 5
        while (code := self.popen.poll()) is None:
            if time.monotonic() > deadline:
                self.popen.kill()
                return self.popen.wait()
            await asyncio.sleep(0.005)
        return code


async def _wait_fd(fd: int, *, writable: bool, deadline: float | None = None) -> None:
    """Until `fd` is ready, on the running loop's own selector; TimeoutError past
    `deadline` (time.monotonic)."""
    loop = asyncio.get_running_loop()
    waiter = loop.create_future()

    def wake() -> None:
        if not waiter.done():
            waiter.set_result(True)

    def expire() -> None:
        if not waiter.done():
            waiter.set_result(False)

    timer = None if deadline is None else loop.call_later(deadline - time.monotonic(), expire)
    if writable:
        loop.add_writer(fd, wake)
    else:
        loop.add_reader(fd, wake)
    try:
        ready = await waiter
    finally:
        if timer is not None:
            timer.cancel()
        if writable:
            loop.remove_writer(fd)
        else:
            loop.remove_reader(fd)
    if not ready:
        raise TimeoutError


# -- the pool -------------------------------------------------------------------------


class CheckPool:
    """A fixed number of pool processes, started at once; `acquire` lends an idle one.
    Safe to use from several event loops (a waiter is woken on its own loop)."""

    def __init__(self, size: int, memory_mb: int) -> None:
        self.size = size
        self.memory_mb = memory_mb
        self.pid = os.getpid()
        self.closed = False
        self._lock = threading.Lock()
        self._idle: list[_Process] = []
        self._busy: set[_Process] = set()
        self._waiters: collections.deque[asyncio.Future[_Process]] = collections.deque()
        self._dead: list[_Process] = []
        for _ in range(size):
            self._idle.append(_Process(memory_mb))

    async def acquire(self) -> _Process:
        with self._lock:
            if self.closed:
                raise _Died
            if self._idle:
                # one that is up already, rather than a replacement still starting
                ready = [p for p in self._idle if p.poll_ready()]
                process = ready[-1] if ready else self._idle[-1]
                self._idle.remove(process)
                self._busy.add(process)
                return process
            waiter: asyncio.Future[_Process] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            with self._lock, contextlib.suppress(ValueError):
                self._waiters.remove(waiter)
            if waiter.done() and not waiter.cancelled():
                self.release(waiter.result())
            raise

    def release(self, process: _Process) -> None:
        """Give a healthy process back (to the next waiter, else the idle list)."""
        with self._lock:
            closed = self.closed
            if not closed:
                self._hand_on(process)
        if closed:  # the pool stopped while it worked: it exits when its pipe closes
            process.close_pipes()
            try:
                process.popen.wait(timeout=1)
            except subprocess.TimeoutExpired:
                process.kill()
                process.popen.wait()

    def _hand_on(self, process: _Process) -> None:
        """To the first live waiter (on its own loop), else the idle list; under the lock."""
        while self._waiters:
            waiter = self._waiters.popleft()
            loop = waiter.get_loop()
            if waiter.done() or loop.is_closed():
                continue
            try:
                running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if loop is running:
                waiter.set_result(process)
            else:
                loop.call_soon_threadsafe(self._hand, waiter, process)
            return
        self._busy.discard(process)
        self._idle.append(process)

    def _hand(self, waiter: asyncio.Future[_Process], process: _Process) -> None:
        if waiter.done():
            self.release(process)
        else:
            waiter.set_result(process)

    def replace(self, process: _Process) -> None:
        """Kill `process` (stuck, dead or interrupted) and put a fresh one in its place."""
        process.kill()
        with self._lock:
            self._busy.discard(process)
            self._dead.append(process)
            fresh = None if self.closed else _Process(self.memory_mb)
            if fresh is not None:
                self._busy.add(fresh)
        if fresh is not None:
            self.release(fresh)
        self._reap_dead()

    def _reap_dead(self) -> None:
        """Collect the exit status of killed processes (no zombies), checking again soon
        for those still exiting."""
        with self._lock:
            self._dead = [p for p in self._dead if p.popen.poll() is None]
            lingering = bool(self._dead)
        if lingering:
            with contextlib.suppress(RuntimeError):  # no loop: shutdown reaps them
                asyncio.get_running_loop().call_later(0.02, self._reap_dead)

    def shutdown(self, *, wait: float = 2.0) -> None:
        """Stop every process: idle ones exit when their pipe closes; busy ones (and any
        still there after `wait` seconds) are killed. Reaps them all."""
        with self._lock:
            self.closed = True
            busy = set(self._busy)
            processes = [*self._idle, *self._busy, *self._dead]
            self._idle, self._busy, self._dead = [], set(), []
            waiters = list(self._waiters)
            self._waiters.clear()
        for waiter in waiters:
            loop = waiter.get_loop()
            if not waiter.done() and not loop.is_closed():
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(_fail_waiter, waiter)
        for process in processes:
            if process in busy or not process.ready:
                process.kill()  # a check may be spinning: it will not see the pipe close
            else:
                process.close_pipes()
        deadline = time.monotonic() + wait
        for process in processes:
            try:
                process.popen.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.popen.wait()
            process.close_pipes()


def _fail_waiter(waiter: asyncio.Future[_Process]) -> None:
    if not waiter.done():
        waiter.set_exception(_Died())


_pool: CheckPool | None = None
_pool_lock = threading.Lock()
_holds = 0


def _shared_pool(settings: IsolationSettings) -> CheckPool:
    global _pool
    with _pool_lock:
        pool = _pool
        if (
            pool is not None
            and not pool.closed
            and pool.pid == os.getpid()
            and (pool.size, pool.memory_mb) == (settings.workers, settings.memory_mb)
        ):
            return pool
        old, _pool = pool, CheckPool(settings.workers, settings.memory_mb)
        new = _pool
    if old is not None and old.pid == os.getpid() and not old.closed:
        old.shutdown(wait=0.5)  # its settings changed
    return new


def shutdown_check_pool() -> None:
    """Stop the shared pool's processes now (a later isolated check starts a new pool)."""
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is not None and pool.pid == os.getpid():
        pool.shutdown()


atexit.register(shutdown_check_pool)


class PoolHold:
    """A user of the shared pool (an `Application`, a running `Worker`); when the last hold
    is released, the pool shuts down. Releasing twice is harmless."""

    def __init__(self) -> None:
        global _holds
        with _pool_lock:
            _holds += 1
        self._held = True

    def release(self) -> None:
        global _holds
        with _pool_lock:
            if not self._held:
                return
            self._held = False
            _holds -= 1
            last = _holds == 0
        if last:
            shutdown_check_pool()


def hold_check_pool(*, prestart: bool = False) -> PoolHold:
    """Hold the shared pool open until `release()`; see `PoolHold`. With `prestart`, start
    its processes now (unless isolation is off), so that a long-running reviewer's first
    isolated check does not wait for them to start."""
    hold = PoolHold()
    if prestart:
        settings = isolation_settings()
        if settings.mode != "off":
            _shared_pool(settings)
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
            pool = _shared_pool(settings)
            process = await pool.acquire()
        except _Died:
            continue  # the pool was shut down under us: the next one
        healthy = False
        try:
            if not process.ready:
                try:
                    await process.receive(time.monotonic() + STARTUP_TIMEOUT)  # "ready"
                    process.ready = True
                except (_Died, TimeoutError):
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
    process: _Process,
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
    except _Died:
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
        except _Died:
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


def _on(process: _Process, job: int, pending: list[int], sent: float) -> tuple[int, float]:
    """The criterion the child is on and since when (the first, from the moment the job was
    sent, if it has not started on any: it is still reading the job or importing)."""
    running, index, since = process.running()
    if running != job or index not in pending:
        return pending[0], sent
    return index, since


# -- the child ------------------------------------------------------------------------


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


def _cpu_budget(seconds: float) -> None:
    """Let this process use `seconds` more CPU time from now (SIGXCPU past it)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(usage.ru_utime + usage.ru_stime + seconds)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _read_exact(fd: int, size: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = os.read(fd, size - len(chunks))
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


def _write_all(fd: int, payload: bytes) -> None:
    data = memoryview(_HEADER.pack(len(payload)) + payload)
    while data:
        data = data[os.write(fd, data) :]


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
        result: Any = await scorer.score(criterion, target, spec.context)
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
) -> _Answer:
    """Score a job's criteria one after another, each under its CPU budget, noting in
    `progress` which one runs since when."""
    answer = []
    for index in range(len(spec.routes)) if indices is None else indices:
        criterion, method, _ = spec.routes[index]
        _PROGRESS.pack_into(progress, 0, job, index, time.monotonic())
        _cpu_budget(cpu_seconds)
        answer.append((index, await _child_score(spec, criterion, method, target, memory_mb)))
    return answer


_SCHEMA = SchemaScorer()
_DETERMINISTIC = DeterministicScorer()


def _child_main(argv: list[str]) -> None:
    """A pool process: read jobs, score, answer; exit when the pipe closes."""
    job_fd, result_fd, progress_fd, memory_mb = (int(arg) for arg in argv)
    # the parent decides when a check stops: Ctrl-C or a group SIGTERM is for it
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _child_limits(memory_mb)
    progress = mmap.mmap(progress_fd, _PROGRESS.size)
    loop = asyncio.new_event_loop()
    specs: dict[str, _ChildSpec] = {}
    _write_all(result_fd, pickle.dumps(("ready", os.getpid())))
    with contextlib.suppress(BrokenPipeError):  # the parent closed its end: stop
        while True:
            header = _read_exact(job_fd, 4)
            payload = None if header is None else _read_exact(job_fd, _HEADER.unpack(header)[0])
            if payload is None:
                return
            job, key, spec_data, forget, indices, target, cpu_seconds = pickle.loads(payload)
            if forget is not None:
                specs.pop(forget, None)
            if spec_data is not None:
                specs[key] = _child_spec(*spec_data)
            spec = specs[key]
            arguments = (spec, job, indices, target, cpu_seconds, memory_mb, progress)
            answer = _finish_now(_child_job(*arguments), loop) if spec.sync else None
            if answer is None:
                answer = loop.run_until_complete(_child_job(*arguments))
            try:
                message = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # an unpicklable value in some evidence, say: find which
                message = pickle.dumps([_sendable(spec, entry) for entry in answer])
            _write_all(result_fd, message)


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

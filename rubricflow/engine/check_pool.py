"""The check process pool, the parent's side: pool processes started before they are needed
(`PoolProcess`, two pipes and a shared progress record each, waited on with the event
loop's own readers), a fixed-size `CheckPool` that lends them out, and the one pool a
process shares (`shared_pool`), held open by `PoolHold`s and stopped with the last.
What runs in a pool process is `rubricflow.engine.check_process`; what is sent to it and
which criteria go is `rubricflow.engine.isolation`."""

from __future__ import annotations

import asyncio
import atexit
import collections
import contextlib
import mmap
import os
import pickle
import subprocess
import sys
import threading
import time
from typing import Any

from rubricflow.engine.pool_wire import HEADER, PROGRESS, shared_file

__all__ = [
    "CheckPool",
    "PoolHold",
    "PoolProcess",
    "ProcessDied",
    "shared_pool",
    "shutdown_check_pool",
]


# -- one pool process -----------------------------------------------------------------


class ProcessDied(Exception):
    """The pool process's pipe closed: it died (or was killed)."""


# what a pool process runs: `rubricflow.engine.check_process`
_CHILD_BOOT = (
    "import sys; from rubricflow.engine.check_process import child_main; child_main(sys.argv[1:])"
)


class PoolProcess:
    """One pool process and the two pipes to it; the parent's ends are non-blocking."""

    def __init__(self, memory_mb: int) -> None:
        job_read, job_write = os.pipe()
        result_read, result_write = os.pipe()
        progress_fd = shared_file(PROGRESS.size)
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
            self.progress = mmap.mmap(progress_fd, PROGRESS.size)
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
            with contextlib.suppress(ProcessDied):
                if self._take() is not None or (self._fill() and self._take() is not None):
                    self.ready = True
        return self.ready

    def running(self) -> tuple[int, int, float]:
        """What the child says it is scoring: (job number, criterion index, since when on
        the monotonic clock)."""
        while True:  # the child may be writing it: read until two reads agree
            first = PROGRESS.unpack_from(self.progress)
            if PROGRESS.unpack_from(self.progress) == first:
                job, index, since = first
                return job, index, since

    # framing ------------------------------------------------------------------------
    def _take(self) -> bytes | None:
        buffer = self.buffer
        if len(buffer) < 4:
            return None
        (size,) = HEADER.unpack_from(buffer)
        if len(buffer) < 4 + size:
            return None
        frame = bytes(buffer[4 : 4 + size])
        del buffer[: 4 + size]
        return frame

    def _fill(self) -> bool:
        """Read what the pipe holds; False when nothing was there."""
        fd = self.from_child
        if fd is None:
            raise ProcessDied
        got = False
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                return got
            except OSError:
                raise ProcessDied from None
            if not chunk:
                raise ProcessDied
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
        data = memoryview(HEADER.pack(len(payload)) + payload)
        while data:
            fd = self.to_child
            if fd is None:
                raise ProcessDied
            try:
                written = os.write(fd, data)
            except BlockingIOError:
                await _wait_fd(fd, writable=True)
                continue
            except OSError:  # BrokenPipeError: the child is gone
                raise ProcessDied from None
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
        self._idle: list[PoolProcess] = []
        self._busy: set[PoolProcess] = set()
        self._waiters: collections.deque[asyncio.Future[PoolProcess]] = collections.deque()
        self._dead: list[PoolProcess] = []
        for _ in range(size):
            self._idle.append(PoolProcess(memory_mb))

    async def acquire(self) -> PoolProcess:
        with self._lock:
            if self.closed:
                raise ProcessDied
            if self._idle:
                # one that is up already, rather than a replacement still starting
                ready = [p for p in self._idle if p.poll_ready()]
                process = ready[-1] if ready else self._idle[-1]
                self._idle.remove(process)
                self._busy.add(process)
                return process
            waiter: asyncio.Future[PoolProcess] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            with self._lock, contextlib.suppress(ValueError):
                self._waiters.remove(waiter)
            if waiter.done() and not waiter.cancelled():
                self.release(waiter.result())
            raise

    def release(self, process: PoolProcess) -> None:
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

    def _hand_on(self, process: PoolProcess) -> None:
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

    def _hand(self, waiter: asyncio.Future[PoolProcess], process: PoolProcess) -> None:
        if waiter.done():
            self.release(process)
        else:
            waiter.set_result(process)

    def replace(self, process: PoolProcess) -> None:
        """Kill `process` (stuck, dead or interrupted) and put a fresh one in its place."""
        process.kill()
        with self._lock:
            self._busy.discard(process)
            self._dead.append(process)
            fresh = None if self.closed else PoolProcess(self.memory_mb)
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


def _fail_waiter(waiter: asyncio.Future[PoolProcess]) -> None:
    if not waiter.done():
        waiter.set_exception(ProcessDied())


# -- the process's shared pool --------------------------------------------------------


_pool: CheckPool | None = None
_pool_lock = threading.Lock()
_holds = 0


def shared_pool(workers: int, memory_mb: int) -> CheckPool:
    """The process's shared pool, started now if there is none (or it has other sizes)."""
    global _pool
    with _pool_lock:
        pool = _pool
        if (
            pool is not None
            and not pool.closed
            and pool.pid == os.getpid()
            and (pool.size, pool.memory_mb) == (workers, memory_mb)
        ):
            return pool
        old, _pool = pool, CheckPool(workers, memory_mb)
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

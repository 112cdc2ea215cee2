"""`run_sync`, the one bridge from synchronous code to coroutines: the same answer with
and without a running event loop, exceptions unchanged, context variables carried, and
an interrupted wait leaves nothing running."""

from __future__ import annotations

import asyncio
import contextvars
import signal
import sys
import threading
import time

import pytest

from rubricflow.sync_bridge import run_sync

REQUEST = contextvars.ContextVar("REQUEST", default="none")


class Refused(Exception):
    pass


async def _answer(value: int) -> tuple[int, str, str]:
    await asyncio.sleep(0)
    return value * 2, REQUEST.get(), threading.current_thread().name


def test_without_a_running_loop_it_runs_in_the_calling_thread() -> None:
    REQUEST.set("outer")
    value, seen, thread = run_sync(_answer(21))
    assert (value, seen) == (42, "outer")
    assert thread == threading.current_thread().name


async def test_inside_a_running_loop_it_runs_on_a_thread_of_its_own() -> None:
    REQUEST.set("from-the-async-caller")
    value, seen, thread = run_sync(_answer(21))
    assert (value, seen) == (42, "from-the-async-caller")  # the context went with it
    assert thread != threading.current_thread().name


async def test_what_the_coroutine_sets_does_not_leak_back() -> None:
    async def set_it() -> None:
        REQUEST.set("inner")

    REQUEST.set("outer")
    run_sync(set_it())
    assert REQUEST.get() == "outer"


@pytest.mark.parametrize("in_loop", [False, True], ids=["no-loop", "in-loop"])
def test_the_coroutines_exception_reaches_the_caller_unchanged(in_loop: bool) -> None:
    error = Refused("no")

    async def fail() -> None:
        await asyncio.sleep(0)
        raise error

    async def call_from_a_loop() -> None:
        run_sync(fail())

    with pytest.raises(Refused) as raised:
        if in_loop:
            asyncio.run(call_from_a_loop())
        else:
            run_sync(fail())
    assert raised.value is error


def test_a_keyboard_interrupt_while_waiting_cancels_the_coroutine_first() -> None:
    """Ctrl-C while a caller inside a running loop waits: the coroutine is cancelled and
    has wound down (its `finally` ran, its thread ended) before the KeyboardInterrupt
    reaches the caller."""
    started, wound_down = threading.Event(), threading.Event()

    async def forever() -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        finally:
            wound_down.set()

    async def caller() -> None:
        run_sync(forever())

    def waiting_in_run_sync() -> bool:
        frame = sys._current_frames().get(threading.main_thread().ident or 0)
        names = []
        while frame is not None:
            names.append(frame.f_code.co_name)
            frame = frame.f_back
        return names[:1] == ["wait"] and "result" in names and "run_sync" in names

    def interrupt() -> None:
        assert started.wait(60)
        deadline = time.monotonic() + 60
        while not waiting_in_run_sync():  # Ctrl-C while the caller waits, as the name says
            assert time.monotonic() < deadline
            time.sleep(0.01)
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    assert threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    loop = asyncio.new_event_loop()  # no asyncio.Runner: its own SIGINT handler stays out
    interrupter = threading.Thread(target=interrupt)
    began = time.monotonic()
    try:
        interrupter.start()
        with pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(caller())
    finally:
        interrupter.join()
        loop.close()
        signal.signal(signal.SIGINT, previous)
    assert wound_down.is_set()
    assert time.monotonic() - began < 600  # it did not sit out the hour
    assert not [t for t in threading.enumerate() if t.name == "rubricflow-sync-bridge"]

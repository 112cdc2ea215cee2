"""A judge's slots go to the oldest target first (`rubricflow.llm.slots`).

Targets evaluated together used to share the judge call by call, so they finished
together and the judge idled through each group's tail. Served oldest first, a target
takes the slots it can use and the next one fills the rest."""

from __future__ import annotations

import asyncio
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm.fixtures import clean_llm_env
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, verdict
from rubricflow import evaluate_many, parse_rubric
from rubricflow.llm.slots import OrderedSlots, current_rank, ranked

__all__ = ["clean_llm_env"]


async def _hold(
    slots: OrderedSlots, rank: int, woken: list[tuple[int, int]], number: int = 0
) -> None:
    """Take a slot with `rank` and note (rank, number) when served; free it at once."""
    with ranked(rank):
        async with slots:
            woken.append((rank, number))


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_waiters_are_served_by_rank_then_by_arrival() -> None:
    slots = OrderedSlots(1)
    await slots.acquire()
    woken: list[tuple[int, int]] = []
    ranks = (5, 2, 9, 2, 0, 2)
    tasks = [
        asyncio.ensure_future(_hold(slots, rank, woken, number))
        for number, rank in enumerate(ranks)
    ]
    await _settle()
    assert woken == [] and slots.locked()
    slots.release()
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=10)
    assert woken == [(0, 4), (2, 1), (2, 3), (2, 5), (5, 0), (9, 2)]
    assert slots.available == 1


async def _two_waiters(
    woken: list[tuple[int, int]],
) -> tuple[OrderedSlots, asyncio.Future[None], asyncio.Future[None]]:
    """Two slots, both taken, and two calls waiting for one (ranks 0 and 1)."""
    slots = OrderedSlots(2)
    await slots.acquire()
    await slots.acquire()
    first = asyncio.ensure_future(_hold(slots, 0, woken))
    second = asyncio.ensure_future(_hold(slots, 1, woken))
    await _settle()
    return slots, first, second


async def test_a_cancelled_waiter_gives_up_its_place_and_no_slot_is_lost() -> None:
    woken: list[tuple[int, int]] = []
    slots, first, second = await _two_waiters(woken)
    first.cancel()
    await _settle()
    slots.release()
    await asyncio.wait_for(second, timeout=10)
    slots.release()
    assert woken == [(1, 0)]
    assert slots.available == 2


async def test_a_waiter_cancelled_after_it_was_handed_the_slot_passes_it_on() -> None:
    woken: list[tuple[int, int]] = []
    slots, first, second = await _two_waiters(woken)
    slots.release()  # hands the slot to `first`, which has not run yet
    first.cancel()
    await asyncio.wait_for(second, timeout=10)
    with pytest.raises(asyncio.CancelledError):
        await first
    slots.release()
    assert woken == [(1, 0)]
    assert slots.available == 2


def test_a_judge_needs_a_slot() -> None:
    with pytest.raises(ValueError, match="at least one slot"):
        OrderedSlots(0)


async def test_a_rank_is_set_for_the_tasks_created_inside_only() -> None:
    async def inside() -> int | None:
        await asyncio.sleep(0)
        return current_rank()

    with ranked(7):
        task = asyncio.ensure_future(inside())
    after = asyncio.ensure_future(inside())
    assert current_rank() is None
    assert await task == 7 and await after is None


def test_slots_waited_on_from_another_event_loop_are_refused() -> None:
    slots = OrderedSlots(1)

    async def wait_once() -> None:
        await slots.acquire()
        try:
            await asyncio.wait_for(slots.acquire(), timeout=0.05)  # waits: the slot is taken
        except asyncio.TimeoutError:
            pass
        finally:
            slots.release()

    asyncio.run(wait_once())
    with pytest.raises(RuntimeError, match="different event loop"):
        asyncio.run(wait_once())


@settings(max_examples=60, deadline=None)
@given(
    slots=st.integers(1, 4),
    plan=st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=25),
)
def test_never_more_holders_than_slots_and_every_live_waiter_is_served(
    slots: int, plan: list[tuple[int, bool]]
) -> None:
    async def scenario() -> None:
        limit = OrderedSlots(slots)
        holding = 0
        most = 0
        served: list[int] = []

        async def call(number: int, rank: int) -> None:
            nonlocal holding, most

            async def work() -> None:
                nonlocal holding, most
                async with limit:
                    holding += 1
                    most = max(most, holding)
                    served.append(number)
                    try:
                        await asyncio.sleep(0)
                    finally:
                        holding -= 1

            with ranked(rank):
                await work()

        tasks = [asyncio.ensure_future(call(n, rank)) for n, (rank, _) in enumerate(plan)]
        await asyncio.sleep(0)
        cancelled = {n for n, (_, cancel) in enumerate(plan) if cancel and not tasks[n].done()}
        for n in cancelled:
            tasks[n].cancel()
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), timeout=30)
        assert most <= slots
        live = {n for n in range(len(plan)) if not tasks[n].cancelled()}
        assert set(served) >= live
        assert limit.available == slots

    asyncio.run(scenario())


def _chat(number: int, turns: int) -> list[dict[str, str]]:
    messages = []
    for turn in range(turns):
        messages.append({"role": "user", "content": f"Question {turn} of chat {number}?"})
        messages.append({"role": "assistant", "content": f"Answer {turn} of chat {number}."})
    return messages


async def test_the_judge_finishes_the_oldest_conversation_before_serving_the_next() -> None:
    """Three 6-turn conversations at once on a judge with two slots: the judge hears every
    turn of the first before any of the third (call by call they would interleave, and
    all three would end together)."""

    def met(request: Recorded) -> Reply:
        return openai_reply(verdict("MET"))

    rubric = parse_rubric(
        {
            "id": "turns",
            "criteria": [
                {
                    "id": "polite",
                    "description": "This reply is polite.",
                    "scope": "each_turn",
                    "scoring": {"method": "llm_verdict"},
                }
            ],
        }
    )
    targets = [{"id": f"c{n}", "content": _chat(n, 6)} for n in range(3)]
    with ScriptedServer(met) as server:
        options = {
            "llm": f"openai:judge@{server.url}/v1",
            "llm_settings": {"max_concurrency": 2},
            "llm_cache": None,
        }
        results = [
            e async for e in evaluate_many(rubric, targets, target_concurrency=3, options=options)
        ]
        heard = [
            int(re.findall(r"of chat (\d)", request.text)[-1])
            for request in server.requests
            if request.path.endswith("/chat/completions")
        ]
    assert [e.passed for e in results] == [True, True, True]
    assert sorted(heard) == [0] * 6 + [1] * 6 + [2] * 6
    last_of_first = max(i for i, chat in enumerate(heard) if chat == 0)
    first_of_third = heard.index(2)
    assert last_of_first < first_of_third, heard

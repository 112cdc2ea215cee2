"""Criteria with a scope: what part of a conversation a criterion is scored on.

`conversation` (the default) scores the whole; `last_turn` the last assistant message;
`turn` (with `turn: N`) the assistant's reply to the N-th user message;
`trajectory` the sequence of tool calls; `each_turn` every assistant message, one by
one, combined exactly (`min`, `mean` as a Fraction, or `all`: 1 only when every turn
passes), the failing turn named in the evidence. A per-turn target holds the turn's text
as content and the user message before it as its query; its metadata says which turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from fractions import Fraction
from typing import Any

from rubricflow.conversation import Conversation, conversation_of
from rubricflow.engine.aggregate import Number, criterion_passed
from rubricflow.model import Criterion
from rubricflow.results import CriterionResult, Target

__all__ = [
    "aggregate_turns",
    "exchange_reply",
    "score_scoped",
    "trajectory_target",
    "turn_target",
]

Score = Callable[[Criterion, Target], Awaitable[Any]]


def _turn_content(conversation: Conversation, index: int) -> Any:
    """The turn's text; when the turn or the user message it answers holds images, the
    messages from that user message to the turn (a short conversation), so a judge of the
    turn sees its images."""
    messages = conversation.messages
    start = next((i for i in range(index - 1, -1, -1) if messages[i].role == "user"), index)
    window = messages[start : index + 1]
    if not any(m.images for m in window):
        return messages[index].text
    return [m.model_dump(mode="json", exclude_none=True) for m in window]


def _part(target: Target, content: Any, **update: Any) -> Target:
    """A new target for part of `target` (not a copy: nothing read from the whole, such
    as its content hash, carries over)."""
    fields = {
        "content": content,
        "id": target.id,
        "query": target.query,
        "reference": target.reference,
        "metadata": target.metadata,
    }
    return Target(**{**fields, **update})


def turn_target(target: Target, conversation: Conversation, index: int, turn: int) -> Target:
    """The target for assistant turn `turn` (1-based), message `index`."""
    query = next(
        (m.text for m in reversed(conversation.messages[:index]) if m.role == "user"), None
    )
    return _part(
        target,
        _turn_content(conversation, index),
        query=query if query is not None else target.query,
        metadata={**target.metadata, "turn": turn, "message_index": index},
    )


def trajectory_target(target: Target, conversation: Conversation) -> Target:
    """The target whose content is the tool calls in order (name, arguments, id, message)."""
    calls = [
        {"message": index, "name": call.name, "arguments": call.arguments, "id": call.id}
        for index, call in conversation.tool_calls()
    ]
    return _part(target, calls)


async def score_scoped(criterion: Criterion, target: Target, score: Score, bar: Number) -> Any:
    """Score `criterion` on the part of `target` its scope names (all of it for text)."""
    scope = criterion.scope
    if scope in (None, "conversation"):
        return await score(criterion, target)
    conversation = conversation_of(target)
    if conversation is None:
        return await score(criterion, target)
    if scope == "trajectory":
        return await score(criterion, trajectory_target(target, conversation))
    if scope == "turn":
        return await _score_exchange(criterion, target, conversation, score)
    turns = conversation.assistant_turns()
    if not turns:
        return _unable(criterion, "the conversation has no assistant turn to judge")
    if scope == "last_turn":
        index, _ = turns[-1]
        result = await score(criterion, turn_target(target, conversation, index, len(turns)))
        return _noted(result, f"last assistant turn {len(turns)} (message {index})")
    # the turns are judged at once (the judge's own limit paces them), so one long
    # conversation keeps a judge as busy as many single targets do
    results = await _all(
        [
            score(criterion, turn_target(target, conversation, index, turn))
            for turn, (index, _) in enumerate(turns, start=1)
        ]
    )
    return aggregate_turns(criterion, results, [index for index, _ in turns], bar)


#: turns whose judgments start in one event-loop turn. Each start renders a prompt and
#: sends a request (a few ms of CPU): fifty at once held the loop for tens of ms, while
#: the judge's answers waited unread and their slots stayed taken
START_WAVE = 1


async def _all(asked: list[Awaitable[Any]]) -> list[Any]:
    """Every answer, in order, started `START_WAVE` at a time with a loop turn between
    waves; when one raises, the others are cancelled (and awaited), and those not yet
    started closed, before the error goes on."""
    tasks: list[asyncio.Future[Any]] = []
    failed: list[asyncio.Future[Any]] = []

    def note(task: asyncio.Future[Any]) -> None:
        if not task.cancelled() and task.exception() is not None:
            failed.append(task)

    try:
        for start in range(0, len(asked), START_WAVE):
            if start:
                await asyncio.sleep(0)
                if failed:
                    break  # gather raises it: no more turns start
            for one in asked[start : start + START_WAVE]:
                tasks.append(asyncio.ensure_future(one))
                tasks[-1].add_done_callback(note)
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for unstarted in asked[len(tasks) :]:
            if isinstance(unstarted, Coroutine):
                unstarted.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def exchange_reply(conversation: Conversation, number: int) -> int | None:
    """The index of the assistant's last message answering the `number`-th user message
    (before the next user message), or None when there is none. A message that only
    calls tools is a step, not a reply (`Conversation.assistant_turns`)."""
    users = [i for i, m in enumerate(conversation.messages) if m.role == "user"]
    if number > len(users):
        return None
    start = users[number - 1]
    end = users[number] if number < len(users) else len(conversation.messages)
    replies = [i for i, _ in conversation.assistant_turns() if start < i < end]
    return replies[-1] if replies else None


async def _score_exchange(
    criterion: Criterion, target: Target, conversation: Conversation, score: Score
) -> Any:
    number = criterion.turn or 1
    index = exchange_reply(conversation, number)
    if index is None:
        users = sum(m.role == "user" for m in conversation.messages)
        return _unable(
            criterion,
            f"the conversation has no assistant reply to user message {number} "
            f"({users} user messages)",
        )
    turn = sum(1 for i, _ in conversation.assistant_turns() if i <= index)
    result = await score(criterion, turn_target(target, conversation, index, turn))
    return _noted(result, f"reply to user message {number} (message {index})")


def _noted(result: Any, where: str) -> Any:
    if not isinstance(result, CriterionResult):
        return result
    return result.model_copy(update={"evidence": (f"{where}", *result.evidence)})


def _unable(criterion: Criterion, why: str) -> CriterionResult:
    return CriterionResult(
        criterion_id=criterion.id,
        status="unable_to_evaluate",
        weight=criterion.weight,
        required=criterion.required,
        notes=why,
        scorer="scope",
    )


def aggregate_turns(
    criterion: Criterion, results: list[Any], indexes: list[int], bar: Number
) -> CriterionResult | Any:
    """One result from the turns' results: the first turn not scored stands for all;
    else the scores combined by the criterion's `aggregation`, exactly."""
    for turn, (result, index) in enumerate(zip(results, indexes, strict=True), start=1):
        if not isinstance(result, CriterionResult) or result.status != "scored":
            return _noted(result, f"assistant turn {turn} (message {index}) was not scored")
    exacts = [r.exact_score for r in results]
    if any(e is None for e in exacts):
        return _unable(criterion, "a turn was scored without a score")
    scores: list[Fraction] = [e for e in exacts if e is not None]
    passed = [
        criterion_passed(criterion, s, r.level, bar) for s, r in zip(scores, results, strict=True)
    ]
    failing = [turn for turn, ok in enumerate(passed, start=1) if not ok]
    if criterion.aggregation == "all":
        value = Fraction(1) if not failing else Fraction(0)
    elif criterion.aggregation == "mean":
        value = sum(scores, Fraction(0)) / len(scores)
    else:
        value = min(scores)
    evidence = [f"{len(results)} assistant turns, {criterion.aggregation} {float(value):g}"]
    for turn in failing:
        result, index = results[turn - 1], indexes[turn - 1]
        said = "; ".join(result.evidence[:2]) or result.notes or "below the bar"
        evidence.append(f"assistant turn {turn} (message {index}) failed: {said}")
    base = min(results, key=lambda r: r.exact_score)  # the worst turn's verdict and level
    return base.model_copy(
        update={
            "score": float(value),
            "exact": value,
            "judge_score": None,
            "verdict": None if base.verdict is None else ("UNMET" if failing else "MET"),
            "evidence": tuple(evidence),
            "llm_calls": tuple(call for r in results for call in r.llm_calls),
        }
    )

"""The executor: concurrent, bounded, deterministic, and never raising for a failed scorer."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from rubricflow import ConfigurationError, hookimpl, parse_rubric
from rubricflow.engine import evaluate, evaluate_many, evaluate_sync
from rubricflow.plugins import PluginRegistry, create_plugin_manager
from rubricflow.results import Evaluation, Target
from rubricflow.scorers.base import result_from_value

from .conftest import crit


async def test_result_order_follows_the_rubric_not_completion(scripted: PluginRegistry) -> None:
    r = parse_rubric(
        {"id": "r", "criteria": [crit(f"c{i}", True, delay=(5 - i) * 0.01) for i in range(5)]}
    )
    evaluation = await evaluate(r, "x", plugins=scripted)
    assert [c.criterion_id for c in evaluation.criteria] == [f"c{i}" for i in range(5)]


async def test_same_inputs_give_the_same_evaluation(scripted: PluginRegistry) -> None:
    r = parse_rubric(
        {
            "id": "r",
            "criteria": [
                crit("a", 0.3, 2, delay=0.02),
                crit("b", True, 1),
                crit("c", status="error"),
            ],
        }
    )
    first, second = await asyncio.gather(
        evaluate(r, "x", plugins=scripted), evaluate(r, "x", plugins=scripted)
    )
    strip = {"id", "created_at", "duration_ms"}
    a = first.model_dump(exclude=strip)
    b = second.model_dump(exclude=strip)
    for result in a["criteria"] + b["criteria"]:
        result.pop("duration_ms")
    assert a == b


class Gauge:
    def __init__(self) -> None:
        self.now = 0
        self.peak = 0


def gauge_plugin(gauge: Gauge) -> Any:
    class GaugeScorer:
        name = "gauge"
        description = "records how many scorings run at once"

        async def score(self, criterion: Any, target: Any, context: Any) -> Any:
            gauge.now += 1
            gauge.peak = max(gauge.peak, gauge.now)
            await asyncio.sleep(0.01)
            gauge.now -= 1
            return result_from_value(criterion, context, self.name, True, what="gauge")

    class Plugin:
        @hookimpl
        def rubricflow_scorers(self) -> list[Any]:
            return [GaugeScorer()]

    return Plugin()


@pytest.mark.parametrize("limit", [1, 3, 20])
async def test_concurrency_is_bounded(limit: int) -> None:
    gauge = Gauge()
    registry = create_plugin_manager(plugins=[gauge_plugin(gauge)], load_entry_points=False)
    r = parse_rubric(
        {
            "id": "r",
            "criteria": [{"id": f"c{i}", "scoring": {"method": "gauge"}} for i in range(12)],
        }
    )
    evaluation = await evaluate(r, "x", plugins=registry, concurrency=limit)
    assert evaluation.verdict == "pass"
    assert gauge.peak == min(limit, 12)


async def test_unknown_scorer_is_an_error_result_naming_the_installed_ones(
    scripted: PluginRegistry,
) -> None:
    r = parse_rubric({"id": "r", "criteria": [{"id": "a", "scoring": {"method": "nonesuch"}}]})
    evaluation = await evaluate(r, "x", plugins=scripted)
    result = evaluation.criteria[0]
    assert result.status == "error"
    assert "nonesuch" in result.notes and "scripted" in result.notes
    assert evaluation.verdict == "incomplete"


async def test_evaluation_records_what_was_evaluated(scripted: PluginRegistry) -> None:
    r = parse_rubric({"id": "r", "version": "2.1.0", "criteria": [crit("a", True)]})
    target = Target(id="t-1", content={"b": 1, "a": [1, 2]})
    evaluation = await evaluate(r, target, plugins=scripted)
    assert (evaluation.rubric_id, evaluation.rubric_version) == ("r", "2.1.0")
    assert evaluation.rubric_hash == r.content_hash
    assert evaluation.target_id == "t-1"
    assert evaluation.target_hash == Target(content={"a": [1, 2], "b": 1}).content_hash
    again = Evaluation.model_validate(json.loads(json.dumps(evaluation.to_dict())))
    assert again == evaluation


async def test_targets_may_be_text_or_mappings(scripted: PluginRegistry) -> None:
    r = parse_rubric({"id": "r", "criteria": [crit("a", True)]})
    assert (await evaluate(r, {"content": "x", "id": "m"}, plugins=scripted)).target_id == "m"
    with pytest.raises(ConfigurationError, match="content"):
        await evaluate(r, {"text": "x"}, plugins=scripted)


async def test_threshold_override(scripted: PluginRegistry) -> None:
    r = parse_rubric({"id": "r", "criteria": [crit("a", 0.6)], "pass_threshold": 0.5})
    assert (await evaluate(r, "x", plugins=scripted)).verdict == "pass"
    assert (await evaluate(r, "x", plugins=scripted, threshold=0.7)).verdict == "fail"


async def test_evaluate_many_keeps_input_order_with_bounded_window(
    scripted: PluginRegistry,
) -> None:
    r = parse_rubric({"id": "r", "criteria": [crit("a", True, delay=0.005)]})
    targets = (Target(id=str(i), content=str(i)) for i in range(40))
    ids = [
        e.target_id async for e in evaluate_many(r, targets, target_concurrency=7, plugins=scripted)
    ]
    assert ids == [str(i) for i in range(40)]


async def test_a_stream_that_breaks_yields_what_was_read_then_raises(
    scripted: PluginRegistry,
) -> None:
    r = parse_rubric({"id": "r", "criteria": [crit("a", True, delay=0.005)]})

    def targets() -> Any:
        for i in range(12):
            yield Target(id=str(i), content=str(i))
        raise ValueError("line 13 is not JSON")

    seen: list[str | None] = []
    with pytest.raises(ValueError, match="line 13"):
        async for evaluation in evaluate_many(r, targets(), target_concurrency=5, plugins=scripted):
            seen.append(evaluation.target_id)
    assert seen == [str(i) for i in range(12)]


async def test_a_slow_target_does_not_hold_up_the_ones_after_it() -> None:
    """With two targets in flight, the first waits until five later targets have been
    judged: only possible if targets keep starting while it runs (they are still yielded
    in input order, and the window of finished ones waiting is bounded)."""
    finished: list[str] = []
    enough = asyncio.Event()

    class Gate:
        name = "gate"
        description = "the target 'slow' waits for five others"

        async def score(self, criterion: Any, target: Target, context: Any) -> Any:
            if target.id == "slow":
                await asyncio.wait_for(enough.wait(), timeout=5)
            else:
                await asyncio.sleep(0)
                finished.append(str(target.id))
                if len(finished) >= 5:
                    enough.set()
            return result_from_value(criterion, context, self.name, True, what="gate")

    class GatePlugin:
        @hookimpl
        def rubricflow_scorers(self) -> list[Any]:
            return [Gate()]

    plugins = create_plugin_manager(plugins=[GatePlugin()], load_entry_points=False)
    r = parse_rubric({"id": "r", "criteria": [{"id": "a", "scoring": {"method": "gate"}}]})
    targets = [Target(id="slow", content="x")] + [
        Target(id=f"t{i}", content="x") for i in range(12)
    ]
    evaluations = [
        e async for e in evaluate_many(r, targets, target_concurrency=2, plugins=plugins)
    ]
    assert [e.target_id for e in evaluations] == ["slow"] + [f"t{i}" for i in range(12)]
    assert evaluations[0].criteria[0].status == "scored"  # it did not give up waiting
    assert finished[:5] == [f"t{i}" for i in range(5)]


def test_sync_wrapper(scripted: PluginRegistry) -> None:
    r = parse_rubric({"id": "r", "criteria": [crit("a", True)]})
    assert evaluate_sync(r, "x", plugins=scripted).passed


async def test_sync_wrapper_inside_a_running_event_loop(scripted: PluginRegistry) -> None:
    """A notebook or an async app calls `evaluate_sync` with its own loop running (it used
    to raise "asyncio.run() cannot be called from a running event loop")."""
    asyncio.get_running_loop()  # this test runs inside one
    r = parse_rubric({"id": "r", "criteria": [crit("a", True), crit("b", False)]})
    evaluation = evaluate_sync(r, "x", plugins=scripted)
    assert [(c.criterion_id, c.score) for c in evaluation.criteria] == [("a", 1.0), ("b", 0.0)]
    assert not evaluation.passed

"""Issue 28, item 8: how much trust routing, cascades, corrected estimates and panels buy,
on a simulated world with a known ground truth (benchmarks/trust_judges.py holds every
parameter of it; docs/performance.md repeats them).

Judges are scripted models served over HTTP on 127.0.0.1 and judged through rubricflow
like any judge (one `llm_verdict` criterion per item). The benchmark reports:

1. routing: decision accuracy against the share of items sent to people (who decide
   right), routing by the cheap judge's confidence (an item goes to a person when its
   confidence is below X, X set so the share is met) against random routing of the same
   share; goal: at 20%, confidence routing catches >= 2x the errors random routing does;
2. the cascade: the cheap judge first, the strong judge only where the cheap one's
   confidence is below ESCALATE_BELOW, against always using the strong judge: accuracy
   and cost (tokens at PRICES); goal: within 1 point of its accuracy at <= 0.5 of its cost;
3. coverage of the naive and the corrected (PPI) 95% intervals of the pass rate over
   DATASETS simulated datasets (computed in process, no HTTP); goal: corrected >= 93%;
4. a 3-judge panel's wall time against one judge's on the same items; goal: <= 1.3x.

Routing and escalation are decided here by the rules of issue 28 (route below a
confidence X; escalate the uncertain criteria), on the confidence each evaluation
carries (`CriterionResult.confidence`, read from the judge's log-probabilities); where a
rubricflow build does not yet fill it, the scripted confidence is used and the figures
say `confidence_from: script`. The panel is rubricflow's own (`rubricflow.llm.panel`)
when present, else the three judges are asked concurrently and `panel_from` says so.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import random
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.trust_judges import (
    PREVALENCE,
    PRICES,
    Item,
    RunningJudges,
    cheap_verdict,
    script,
)
from rubricflow import estimate_pass_rate, evaluate_many, parse_rubric
from rubricflow.results import Evaluation

SEED = 28
ITEMS, QUICK_ITEMS = 2000, 200
DELAY = 0.02  # seconds each judge answer takes
CONCURRENCY = 64
ROUTE_SHARES = (0.05, 0.1, 0.2, 0.3, 0.5)
ESCALATE_BELOW = 0.8
DATASETS, QUICK_DATASETS = 1000, 100
DATASET_SIZE, LABELLED = 1000, 200
PANEL_ITEMS, QUICK_PANEL_ITEMS = 60, 20
PANEL_DELAY, QUICK_PANEL_DELAY = 1.0, 0.2  # seconds: about what a hosted judge takes

RUBRIC = parse_rubric(
    {
        "id": "trust-bench",
        "criteria": [
            {
                "id": "acceptable",
                "description": "The item is acceptable.",
                "scoring": {"method": "llm_verdict"},
            }
        ],
    }
)


def _settings() -> dict[str, Any]:
    """Provider settings: wide concurrency, and log-probabilities where rubricflow can
    ask for them."""
    from rubricflow.llm import ProviderSettings

    settings: dict[str, Any] = {"max_concurrency": CONCURRENCY}
    if "logprobs" in {field.name for field in dataclasses.fields(ProviderSettings)}:
        settings["logprobs"] = True
    return settings


async def _judge(
    llm: str, items: Sequence[Item], *, settings: dict[str, Any] | None = None
) -> dict[int, Evaluation]:
    """Each item's evaluation by `llm` (a judge spec), keyed by item index."""
    targets = [
        {"id": f"i{item.index}", "content": f"item-{item.index}: an artifact to review"}
        for item in items
    ]
    found: dict[int, Evaluation] = {}
    async for evaluation in evaluate_many(
        RUBRIC,
        targets,
        target_concurrency=CONCURRENCY,
        options={"llm": llm, "llm_settings": settings or _settings(), "llm_cache": None},
    ):
        found[int((evaluation.target_id or "i0")[1:])] = evaluation
    return found


def _verdict(evaluation: Evaluation) -> bool | None:
    result = evaluation.criteria[0]
    return None if result.verdict is None else result.verdict == "MET"


def _cost(evaluations: Sequence[Evaluation], model: str) -> float:
    price_in, price_out = PRICES[model]
    tokens_in = sum(e.usage()["input_tokens"] or 0 for e in evaluations)
    tokens_out = sum(e.usage()["output_tokens"] or 0 for e in evaluations)
    return (tokens_in * price_in + tokens_out * price_out) / 1e6


def _confidences(world: Sequence[Item], cheap: dict[int, Evaluation]) -> tuple[list[float], str]:
    """The cheap judge's confidence per item, as rubricflow read it, else the script's."""
    read = [getattr(cheap[item.index].criteria[0], "confidence", None) for item in world]
    if all(value is not None for value in read):
        return [float(value) for value in read if value is not None], "judge (logprobs)"
    return [item.cheap[1] for item in world], "script"


def routing(
    world: Sequence[Item], verdicts: Sequence[bool], confidence: Sequence[float]
) -> dict[str, Any]:
    """Accuracy against the share routed to people, by confidence and at random."""
    n = len(world)
    wrong = [verdicts[i] != world[i].truth for i in range(n)]
    errors = sum(wrong)
    order = sorted(range(n), key=lambda i: confidence[i])
    generator = random.Random(SEED)
    rows: dict[str, Any] = {}
    for share in ROUTE_SHARES:
        count = round(share * n)
        threshold = confidence[order[count]] if count < n else 1.0
        routed = {i for i in range(n) if confidence[i] < threshold}  # the policy's rule
        shuffled = generator.sample(range(n), count)
        caught = sum(wrong[i] for i in routed)
        caught_random = sum(wrong[i] for i in shuffled)
        rows[f"{share:.0%}"] = {
            "route_confidence_below": round(threshold, 4),
            "routed": len(routed),
            "accuracy_confidence": 1 - (errors - caught) / n,
            "accuracy_random": 1 - (errors - caught_random) / n,
            "errors_caught_confidence": caught,
            "errors_caught_random": caught_random,
        }
    at20 = rows["20%"]
    return {
        "cheap_errors": errors,
        "cheap_accuracy": 1 - errors / n,
        "by_share": rows,
        "errors_caught_at_20 (confidence / random, bar >= 2)": at20["errors_caught_confidence"]
        / max(1, at20["errors_caught_random"]),
    }


async def cascade(
    judges: RunningJudges,
    world: Sequence[Item],
    cheap: dict[int, Evaluation],
    confidence: Sequence[float],
) -> dict[str, Any]:
    """The cheap judge, then the strong one where the cheap one was unsure; against the
    strong judge on everything."""
    unsure = [item for item in world if confidence[item.index] < ESCALATE_BELOW]
    escalated = await _judge(judges.spec("strong"), unsure)
    strong = await _judge(judges.spec("strong"), world)
    n = len(world)
    final = {
        item.index: _verdict(
            escalated[item.index] if item.index in escalated else cheap[item.index]
        )
        for item in world
    }
    cascade_right = sum(final[item.index] == item.truth for item in world)
    strong_right = sum(_verdict(strong[item.index]) == item.truth for item in world)
    cascade_cost = _cost(list(cheap.values()), "cheap") + _cost(list(escalated.values()), "strong")
    strong_cost = _cost(list(strong.values()), "strong")
    return {
        "escalate_below": ESCALATE_BELOW,
        "escalated": len(unsure),
        "cascade_accuracy": cascade_right / n,
        "strong_accuracy": strong_right / n,
        "accuracy_gap_points (bar <= 1)": 100 * (strong_right - cascade_right) / n,
        "cascade_cost_usd": cascade_cost,
        "strong_cost_usd": strong_cost,
        "cost cascade / strong (bar <= 0.5)": cascade_cost / strong_cost,
    }


def coverage(datasets: int) -> dict[str, Any]:
    """How often the naive and the corrected 95% intervals hold the true pass rate
    (PREVALENCE) over `datasets` simulated datasets of DATASET_SIZE verdicts, LABELLED of
    them labelled by people at random."""
    generator = random.Random(SEED + 1)
    naive = corrected = 0
    widths: list[float] = []
    for _ in range(datasets):
        verdicts: dict[str, bool | float] = {}
        labels: dict[str, bool | float] = {}
        picked = set(generator.sample(range(DATASET_SIZE), LABELLED))
        for index in range(DATASET_SIZE):
            truth = generator.random() < PREVALENCE
            verdicts[str(index)] = cheap_verdict(generator, truth)[0]
            if index in picked:
                labels[str(index)] = truth
        estimate = estimate_pass_rate(verdicts, labels)
        naive += estimate.naive.low <= PREVALENCE <= estimate.naive.high
        assert estimate.corrected is not None
        corrected += estimate.corrected.low <= PREVALENCE <= estimate.corrected.high
        widths.append(estimate.corrected.high - estimate.corrected.low)
    return {
        "datasets": datasets,
        "dataset_size": DATASET_SIZE,
        "labelled": LABELLED,
        "naive_coverage": naive / datasets,
        "corrected_coverage (bar >= 0.93)": corrected / datasets,
        "corrected_mean_width": sum(widths) / len(widths),
    }


def _panel_llm(specs: Sequence[str]) -> str | None:
    """rubricflow's panel of `specs` (majority), where this build has one."""
    try:
        module = importlib.import_module("rubricflow.llm.panel")
    except ImportError:
        return None
    make = getattr(module, "panel_spec", None)
    return None if make is None else make(list(specs), "majority")


async def _timed(llm: str | None, members: Sequence[str], world: Sequence[Item]) -> float:
    """Seconds to judge `world` with `llm` (rubricflow's panel), or with the three
    `members` asked concurrently when there is none."""
    started = time.perf_counter()
    if llm is not None:
        await _judge(llm, world)
    else:  # the panel's calls go out in parallel, as issue 28 states it
        await asyncio.gather(*(_judge(spec, world) for spec in members))
    return time.perf_counter() - started


async def panel(items: int, seed: int, delay: float, rounds: int) -> dict[str, Any]:
    """One judge against a 3-judge panel on the same items (the server answers after
    `delay`): the best of `rounds` wall times of each, after a one-item warm-up of each,
    and their ratio."""
    world = script(items, seed)
    with RunningJudges(items, seed, delay) as judges:
        members = [judges.spec(f"panel-{name}") for name in "abc"]
        llm = _panel_llm(members)
        await _timed(members[0], [], world[:1])
        await _timed(llm, members, world[:1])
        ones: list[float] = []
        threes: list[float] = []
        for _ in range(rounds):
            ones.append(await _timed(members[0], [], world))
            threes.append(await _timed(llm, members, world))
    source = (
        "rubricflow.llm.panel (majority)"
        if llm is not None
        else "three judges asked concurrently (no rubricflow panel in this build)"
    )
    return {
        "panel_items": items,
        "panel_delay_s": delay,
        "panel_rounds": rounds,
        "one_judge_s": min(ones),
        "panel_s": min(threes),
        "panel_from": source,
        "panel / one judge wall time (bar <= 1.3)": min(threes) / min(ones),
    }


async def run(quick: bool = False) -> dict[str, Any]:
    items = QUICK_ITEMS if quick else ITEMS
    world = script(items, SEED)
    high = [i for i in world if i.cheap[1] >= 0.9]
    with RunningJudges(items, SEED, DELAY) as judges:
        cheap = await _judge(judges.spec("cheap"), world)
        verdicts = [_verdict(cheap[item.index]) for item in world]
        if any(verdict is None for verdict in verdicts):
            raise RuntimeError("the cheap judge left an item without a verdict")
        confidence, source = _confidences(world, cheap)
        routed = routing(world, [bool(v) for v in verdicts], confidence)
        cascaded = await cascade(judges, world, cheap, confidence)
    figures: dict[str, Any] = {
        "items": items,
        "seed": SEED,
        "confidence_from": source,
        "cheap_errors_at_confidence_>=_0.9": sum(i.cheap[0] != i.truth for i in high),
        "items_at_confidence_>=_0.9": len(high),
    }
    figures.update(routed)
    figures.update(cascaded)
    figures.update(coverage(QUICK_DATASETS if quick else DATASETS))
    if quick:
        figures.update(await panel(QUICK_PANEL_ITEMS, SEED, QUICK_PANEL_DELAY, rounds=1))
    else:
        figures.update(await panel(PANEL_ITEMS, SEED, PANEL_DELAY, rounds=3))
    return figures

"""Issue 9, workload 3: against the `rubric` package, 1.3.2 and 2.0.x (each in its own venv;
re-baselined for issue 31: under 2.x the package's `generate_fn` returns its
`PerCriterionOutput` model, and rubricflow's judge function returns the same shape, as a
dict, read by its callable provider).

50 targets x 10 criteria (eight requirements, two penalty criteria; the package's own
`[{weight, requirement}]` format, which rubricflow imports) = 500 per-criterion
judgments, each answered by a judge that waits 100 ms (`benchmarks/keyword_judge.py`): the
package's `generate_fn` and rubricflow's callable provider run the same judge.

The package grades targets one after another, as its README shows (`rubric.grade` per
target; `PerCriterionGrader` judges a target's criteria in parallel). rubricflow runs
`evaluate_many` with 10 targets in flight and provider concurrency 100. Bar: rubricflow
at least 5x faster end to end, with the same score for every target. The two sides run
back to back, alternating, for `ROUNDS` rounds; each side's figure is its best round.
"""

from __future__ import annotations

import json
import time
from typing import Any

from benchmarks import keyword_judge, peers
from rubricflow import evaluate_many, load_document

TARGETS = 50
QUICK_TARGETS = 10
ROUNDS = 3
QUICK_ROUNDS = 1
SEED = 3
TARGET_CONCURRENCY = 10
PROVIDER_CONCURRENCY = 100


async def rubricflow_run(texts: list[str], *, structured: bool = False) -> dict[str, Any]:
    """rubricflow over `texts`; `structured`: the judge function answers as the package's
    2.x `generate_fn` does (a `PerCriterionOutput`-shaped dict), not with text."""
    calls = 0

    async def judge(system_prompt: str, user_prompt: str) -> Any:
        nonlocal calls
        calls += 1
        text = await keyword_judge.rubricflow_generate(system_prompt, user_prompt)
        if not structured:
            return text
        answer = json.loads(text)
        return {"criterion_status": answer["verdict"], "explanation": answer["reasoning"]}

    started = time.perf_counter()
    (rubric,) = load_document(keyword_judge.RUBRIC, format="rubric-pkg").rubrics
    scores = [
        evaluation.score
        async for evaluation in evaluate_many(
            rubric,
            [{"id": f"t{i}", "content": text} for i, text in enumerate(texts)],
            target_concurrency=TARGET_CONCURRENCY,
            concurrency=len(rubric.criteria),
            options={
                "llm": judge,
                "llm_settings": {"max_concurrency": PROVIDER_CONCURRENCY},
                "llm_cache": None,
            },
        )
    ]
    return {"seconds": time.perf_counter() - started, "scores": scores, "calls": calls}


def reference(texts: list[str]) -> list[float]:
    """The `rubric` package's score formula (SEMANTICS.md) over the judge's verdicts."""
    scores = []
    for text in texts:
        weights = [float(str(c["weight"])) for c in keyword_judge.RUBRIC]
        met = [keyword_judge.verdict(str(c["requirement"]), text) for c in keyword_judge.RUBRIC]
        positive = sum(w for w in weights if w > 0)
        negative = sum(-w for w in weights if w < 0)
        achieved = sum(w for w, hit in zip(weights, met, strict=True) if hit)
        score = achieved / positive if positive > 0 else 1 + achieved / negative
        scores.append(min(1.0, max(0.0, score)))
    return scores


#: the package versions compared, each a peer environment (`benchmarks/peers.py`)
PEER_VERSIONS = ("rubric", "rubric2")


async def run(quick: bool = False, peers_enabled: bool = True) -> dict[str, Any]:
    count = QUICK_TARGETS if quick else TARGETS
    rounds = QUICK_ROUNDS if quick else ROUNDS
    texts = keyword_judge.targets(count, SEED)
    figures: dict[str, Any] = {
        "targets": count,
        "criteria": len(keyword_judge.RUBRIC),
        "judge_delay_s": keyword_judge.DELAY,
        "rubricflow_settings": f"evaluate_many, {TARGET_CONCURRENCY} targets in flight, "
        f"provider concurrency {PROVIDER_CONCURRENCY}",
    }
    await rubricflow_run(texts[:2])  # warm-up: imports and first-use caches
    if not peers_enabled:
        ours = min([await rubricflow_run(texts) for _ in range(rounds)], key=_seconds)
        figures.update(_ours(ours, texts))
        figures["rubric_pkg"] = "skipped (--no-peers)"
        return figures
    for peer in PEER_VERSIONS:
        figures[peer] = await _against(peer, texts, rounds, structured=peer != "rubric")
    return figures


def _seconds(run: dict[str, Any]) -> float:
    return float(run["seconds"])


def _ours(ours: dict[str, Any], texts: list[str]) -> dict[str, Any]:
    expected = reference(texts)
    return {
        "judgments": ours["calls"],
        "rubricflow_s": ours["seconds"],
        "mean_score": sum(ours["scores"]) / len(ours["scores"]),
        "same_scores_as_reference_formula": len(expected) == len(ours["scores"])
        and all(abs(a - b) < 1e-9 for a, b in zip(ours["scores"], expected, strict=True)),
    }


async def _against(peer: str, texts: list[str], rounds: int, *, structured: bool) -> dict[str, Any]:
    """rubricflow against one version of the package, in alternating rounds."""
    count = len(texts)
    _, setup_s = peers.ensure(peer)
    figures: dict[str, Any] = {"peer": peers.versions(peer), "peer_env_setup_s": setup_s}
    ours_runs: list[dict[str, Any]] = []
    theirs_runs: list[dict[str, Any]] = []
    for _ in range(rounds):
        theirs_runs.append(
            peers.run_script(peer, "rubric_pkg_grade.py", {"count": count, "seed": SEED})
        )
        ours_runs.append(await rubricflow_run(texts, structured=structured))
    ours = min(ours_runs, key=_seconds)
    theirs = min(theirs_runs, key=_seconds)
    figures.update(_ours(ours, texts))
    figures["rubricflow_rounds_s"] = [round(r["seconds"], 3) for r in ours_runs]
    gathered = peers.run_script(
        peer, "rubric_pkg_grade.py", {"count": count, "seed": SEED, "mode": "gathered"}
    )
    if len(ours["scores"]) != len(theirs["scores"]):
        raise RuntimeError("the two sides graded different numbers of targets")
    differences = [abs(a - b) for a, b in zip(ours["scores"], theirs["scores"], strict=True)]
    figures["rubric_pkg_judge_calls"] = theirs["calls"]
    figures["rubric_pkg_s (targets one by one)"] = theirs["seconds"]
    figures["rubric_pkg_rounds_s"] = [round(r["seconds"], 3) for r in theirs_runs]
    figures["rubric_pkg_s (all targets gathered by hand, every call at once)"] = gathered["seconds"]
    figures["max_score_difference"] = max(differences, default=0.0)
    figures["same_scores"] = (
        len(ours["scores"]) == len(theirs["scores"]) == len(gathered["scores"])
        and max(differences, default=0.0) < 1e-9
        and gathered["scores"] == theirs["scores"]
    )
    figures["speedup (bar >= 5)"] = theirs["seconds"] / ours["seconds"]
    return figures

"""Issue 9, workload 3: against the `rubric` package (1.3.2, in its own venv).

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


async def rubricflow_run(texts: list[str]) -> dict[str, Any]:
    calls = 0

    async def judge(system_prompt: str, user_prompt: str) -> str:
        nonlocal calls
        calls += 1
        return await keyword_judge.rubricflow_generate(system_prompt, user_prompt)

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
    if peers_enabled:
        _, setup_s = peers.ensure("rubric")
        figures["peer"] = peers.versions("rubric")
        figures["peer_env_setup_s"] = setup_s
    await rubricflow_run(texts[:2])  # warm-up: imports and first-use caches
    ours_runs: list[dict[str, Any]] = []
    theirs_runs: list[dict[str, Any]] = []
    for _ in range(rounds):
        if peers_enabled:
            theirs_runs.append(
                peers.run_script("rubric", "rubric_pkg_grade.py", {"count": count, "seed": SEED})
            )
        ours_runs.append(await rubricflow_run(texts))
    ours = min(ours_runs, key=lambda r: r["seconds"])
    figures["judgments"] = ours["calls"]
    figures["rubricflow_s"] = ours["seconds"]
    figures["rubricflow_rounds_s"] = [round(r["seconds"], 3) for r in ours_runs]
    figures["mean_score"] = sum(ours["scores"]) / len(ours["scores"])
    expected = reference(texts)
    figures["same_scores_as_reference_formula"] = len(expected) == len(ours["scores"]) and all(
        abs(a - b) < 1e-9 for a, b in zip(ours["scores"], expected, strict=True)
    )
    if not peers_enabled:
        figures["rubric_pkg"] = "skipped (--no-peers)"
        return figures
    theirs = min(theirs_runs, key=lambda r: r["seconds"])
    gathered = peers.run_script(
        "rubric", "rubric_pkg_grade.py", {"count": count, "seed": SEED, "mode": "gathered"}
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

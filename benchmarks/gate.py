"""Issue 9, workload 1: the deterministic review gate.

2,000 artifacts, a rubric of five deterministic criteria and one JSON Schema criterion
(`benchmarks/gate_checks.py`, in dataknobs' rubric format), the full lifecycle for each:
rubricflow's `ArtifactRegistry.create` + `submit_for_review` (create; submit and claim;
evaluate; store the evaluation and decide: three committed transactions) on a SQLite
*file*, against dataknobs-bots 0.6.9's `ArtifactRegistry.create` +
`submit_for_review` on its in-memory database (`AsyncMemoryDatabase`), in its own venv.

Both sides review the same artifacts one after another, in rounds that alternate
(dataknobs, rubricflow, dataknobs, rubricflow, ...); each side's figure is its best
round. Bar: rubricflow, durable on disk, at least as fast as dataknobs in memory. The
final status and weighted score of every artifact must agree.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import peers
from benchmarks.gate_checks import RUBRIC, artifacts
from rubricflow import load_document
from rubricflow.review import ArtifactRegistry, ArtifactType, RubricBinding
from rubricflow.store import Store

ARTIFACTS = 2000
QUICK_ARTIFACTS = 100
ROUNDS = 3
QUICK_ROUNDS = 1
SEED = 9


async def rubricflow_round(folder: Path, contents: list[dict[str, Any]], index: int) -> dict:
    """One round on a new SQLite file: (seconds, statuses, scores) for `contents`."""
    store = await Store.open(f"sqlite+aiosqlite:///{folder / f'gate-{index}.db'}")
    try:
        (rubric,) = load_document(RUBRIC, format="dataknobs").rubrics
        await store.rubrics.register(rubric, source_format="dataknobs")
        registry = ArtifactRegistry(store, evaluate_options={"allow_import": True})
        await registry.set_type(
            ArtifactType(name="post", rubrics=(RubricBinding(rubric_id=rubric.id),))
        )
        ids: list[str] = []
        scores: list[float] = []
        started = time.perf_counter()
        for number, content in enumerate(contents):
            artifact = await registry.create("post", content, actor="bench", title=f"post {number}")
            outcome = await registry.submit_for_review(artifact.id, actor="bench")
            scores.append(outcome.evaluations[0].score)
            ids.append(artifact.id)
        elapsed = time.perf_counter() - started
        statuses = [(await registry.get(artifact_id)).status for artifact_id in ids]
    finally:
        await store.close()
    return {"seconds": elapsed, "statuses": statuses, "scores": scores}


def reference(contents: list[dict[str, Any]]) -> dict[str, Any]:
    """The statuses and scores dataknobs' formula gives (weighted mean of the level scores,
    approved at >= pass_threshold), computed here from the same checks: what both sides
    must agree with."""
    import jsonschema

    from benchmarks import gate_checks

    statuses, scores = [], []
    for content in contents:
        total = weighted = 0.0
        for criterion in RUBRIC["criteria"]:
            levels = {level["id"]: level["score"] for level in criterion["levels"]}
            method = criterion["scoring_method"]
            if method["type"] == "schema":
                valid = jsonschema.Draft202012Validator(method["schema"]).is_valid(content)
                ordered = sorted(levels.values())
                score = ordered[-1] if valid else ordered[0]
            else:
                name = method["function_ref"].split(":")[1]
                score = levels[getattr(gate_checks, name)(content)]
            total += criterion["weight"]
            weighted += criterion["weight"] * score
        scores.append(weighted / total)
        statuses.append(
            "approved" if weighted / total >= RUBRIC["pass_threshold"] else "needs_revision"
        )
    return {"statuses": statuses, "scores": scores}


def _agreement(ours: dict, theirs: dict) -> dict[str, Any]:
    if len(ours["statuses"]) != len(theirs["statuses"]):
        raise RuntimeError("the two sides reviewed different numbers of artifacts")
    pairs = zip(ours["statuses"], theirs["statuses"], strict=True)
    score_pairs = zip(ours["scores"], theirs["scores"], strict=True)
    return {
        "status_mismatches": sum(1 for a, b in pairs if a != b),
        "max_score_difference": max((abs(a - b) for a, b in score_pairs), default=0.0),
    }


async def run(quick: bool = False, peers_enabled: bool = True) -> dict[str, Any]:
    count = QUICK_ARTIFACTS if quick else ARTIFACTS
    rounds = QUICK_ROUNDS if quick else ROUNDS
    contents = artifacts(count, SEED)
    figures: dict[str, Any] = {"artifacts": count, "rounds": rounds}
    setup_s = 0.0
    if peers_enabled:
        _, setup_s = peers.ensure("dataknobs")
        figures["peer"] = peers.versions("dataknobs")
        figures["peer_env_setup_s"] = setup_s
    ours_runs: list[dict] = []
    theirs_runs: list[dict] = []
    with tempfile.TemporaryDirectory() as folder:
        # a warm-up round so imports and first-use caches are in no figure
        await rubricflow_round(Path(folder), contents[:20], -1)
        for index in range(rounds):
            if peers_enabled:
                theirs_runs.append(
                    peers.run_script(
                        "dataknobs",
                        "dataknobs_gate.py",
                        {"count": count, "seed": SEED, "rounds": 1, "warmup": 20},
                    )
                )
            ours_runs.append(await rubricflow_round(Path(folder), contents, index))
    ours = min(ours_runs, key=lambda run: run["seconds"])
    figures["rubricflow_sqlite_file_s"] = ours["seconds"]
    figures["rubricflow_artifacts_per_s"] = count / ours["seconds"]
    figures["rubricflow_rounds_s"] = [round(run["seconds"], 3) for run in ours_runs]
    figures["approved"] = ours["statuses"].count("approved")
    figures["needs_revision"] = ours["statuses"].count("needs_revision")
    expected = _agreement(ours, reference(contents))
    figures["same_outcomes_as_reference_formula"] = (
        expected["status_mismatches"] == 0 and expected["max_score_difference"] < 1e-9
    )
    if not peers_enabled:
        figures["dataknobs"] = "skipped (--no-peers)"
        return figures
    theirs = min(theirs_runs, key=lambda run: min(run["seconds"]))
    their_s = min(theirs["seconds"])
    figures["dataknobs_memory_s"] = their_s
    figures["dataknobs_artifacts_per_s"] = count / their_s
    figures["dataknobs_rounds_s"] = [round(min(run["seconds"]), 3) for run in theirs_runs]
    figures.update(_agreement(ours, theirs))
    figures["same_outcomes"] = figures["status_mismatches"] == 0 and (
        figures["max_score_difference"] < 1e-9
    )
    figures["rubricflow / dataknobs speed (bar >= 1.0)"] = their_s / ours["seconds"]
    return figures

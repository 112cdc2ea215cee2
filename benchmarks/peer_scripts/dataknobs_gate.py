"""Workload 1, dataknobs side (runs in the dataknobs-bots venv, never with rubricflow):
create and `submit_for_review` every artifact on dataknobs' in-memory database.

stdin: {"count": N, "seed": S, "rounds": R, "warmup": W}; stdout (last line): seconds per round and,
per artifact, the final status and weighted score.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from dataknobs_bots.artifacts.models import ArtifactTypeDefinition
from dataknobs_bots.artifacts.registry import ArtifactRegistry
from dataknobs_bots.rubrics.executor import FunctionRegistry, RubricExecutor
from dataknobs_bots.rubrics.models import Rubric
from dataknobs_bots.rubrics.registry import RubricRegistry
from dataknobs_data.backends.memory import AsyncMemoryDatabase

from benchmarks.gate_checks import RUBRIC, artifacts


async def one_round(contents: list[dict]) -> tuple[float, list[str], list[float]]:
    rubrics = RubricRegistry(AsyncMemoryDatabase())
    await rubrics.register(Rubric.from_dict(RUBRIC))
    registry = ArtifactRegistry(
        AsyncMemoryDatabase(),
        rubric_registry=rubrics,
        rubric_executor=RubricExecutor(function_registry=FunctionRegistry()),
        type_definitions={"post": ArtifactTypeDefinition(id="post", rubrics=[RUBRIC["id"]])},
    )
    ids: list[str] = []
    scores: list[float] = []
    started = time.perf_counter()
    for index, content in enumerate(contents):
        artifact = await registry.create("post", f"post {index}", content)
        evaluations = await registry.submit_for_review(artifact.id)
        scores.append(evaluations[0]["weighted_score"])
        ids.append(artifact.id)
    elapsed = time.perf_counter() - started
    # the final states, read after the clock stopped
    statuses = []
    for artifact_id in ids:
        current = await registry.get(artifact_id)
        assert current is not None
        statuses.append(current.status.value)
    return elapsed, statuses, scores


async def main() -> None:
    request = json.loads(sys.stdin.read())
    contents = artifacts(request["count"], request.get("seed", 9))
    warmup = request.get("warmup", 0)
    if warmup:  # imports and first-use caches are in no figure
        await one_round(contents[:warmup])
    seconds = []
    statuses: list[str] = []
    scores: list[float] = []
    for _ in range(request.get("rounds", 1)):
        elapsed, statuses, scores = await one_round(contents)
        seconds.append(elapsed)
    print(json.dumps({"seconds": seconds, "statuses": statuses, "scores": scores}))


if __name__ == "__main__":
    asyncio.run(main())

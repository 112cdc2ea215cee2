"""Workload 3, `rubric` package side (runs in the rubric 1.3.2 or 2.0.x venv, never with
rubricflow): grade every target with `PerCriterionGrader`. Under 2.x the judge returns
the package's `PerCriterionOutput` model (its `generate_fn` contract), under 1.x text.

stdin: {"count": N, "seed": S, "mode": "documented" | "gathered"}. `documented` grades the
targets one after another, as the package's README does (each target's criteria in
parallel); `gathered` starts every target at once with `asyncio.gather` (the package has
no call for many targets; this is the most a caller can get from it).
stdout (last line): {"seconds": s, "scores": [...], "calls": n}
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from rubric import Rubric
from rubric.autograders import PerCriterionGrader

from benchmarks import keyword_judge

try:  # rubric 2.x: generate_fn returns a validated model
    from rubric.autograders.schemas import PerCriterionOutput
except ImportError:  # rubric 1.x: it returns text
    PerCriterionOutput = None


async def main() -> None:
    request = json.loads(sys.stdin.read())
    texts = keyword_judge.targets(request["count"], request.get("seed", 3))
    calls = 0

    async def generate(system_prompt: str, user_prompt: str, **kwargs: object) -> object:
        nonlocal calls
        calls += 1
        text = await keyword_judge.rubric_pkg_generate(system_prompt, user_prompt)
        if PerCriterionOutput is None:
            return text
        return PerCriterionOutput.model_validate_json(text)

    criteria = [{k: v for k, v in c.items() if k != "id"} for c in keyword_judge.RUBRIC]
    started = time.perf_counter()
    rubric = Rubric.from_dict(criteria)
    grader = PerCriterionGrader(generate_fn=generate)
    if request.get("mode") == "gathered":
        reports = await asyncio.gather(
            *(rubric.grade(to_grade=text, autograder=grader) for text in texts)
        )
    else:
        reports = [await rubric.grade(to_grade=text, autograder=grader) for text in texts]
    elapsed = time.perf_counter() - started
    print(json.dumps({"seconds": elapsed, "scores": [r.score for r in reports], "calls": calls}))


if __name__ == "__main__":
    asyncio.run(main())

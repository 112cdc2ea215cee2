"""Rubrics as rewards: the same rubric as a TRL, verl, verifiers and OpenRubricRL reward.

The judge here is a tiny offline stand-in (an async `(system, user) -> str` callable that
says MET when the content mentions the criterion's keyword); point `judge=` at a real one
(`openai:gpt-4o-mini`, `ollama:qwen2.5@http://127.0.0.1:11434`) for training.
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from pathlib import Path

from rubricflow.rewards import (
    create_trl_reward_function,
    trl_reward,
    verifiers_reward,
    verl_compute_score,
)


async def keyword_judge(system: str, user: str) -> str:
    """MET when the content contains the criterion's last word (offline stand-in)."""
    content = user.split("<content>")[-1].split("</content>")[0].lower()
    keyword = re.search(r"(?:Requirement|Fault to look for[^:]*): .*?(\w+)\s*\n", user)
    met = bool(keyword) and keyword.group(1).lower() in content
    if "from 0 to 10" in user:  # a 0..10 score question (OpenRubricRL criteria)
        return json.dumps({"reasoning": "keyword check", "score": 10 if met else 0})
    return json.dumps({"reasoning": "keyword check", "verdict": "MET" if met else "UNMET"})


RUBRIC = {
    "id": "capital-answer",
    "criteria": [
        {"id": "names_city", "description": "The answer names paris", "weight": 3},
        {"id": "names_river", "description": "The answer names the seine", "weight": 1},
    ],
}
OPTIONS = {"judge": keyword_judge, "cache": None}

# 1. TRL: GRPOTrainer(reward_funcs=[reward], ...) calls it with the batch and the columns.
reward = trl_reward(RUBRIC, **OPTIONS)
metrics: dict[str, float] = {}
rewards = reward(
    prompts=[[{"role": "user", "content": "Capital of France?"}]] * 2,
    completions=[
        [{"role": "assistant", "content": "Paris, on the Seine."}],
        [{"role": "assistant", "content": "Lyon."}],
    ],
    completion_ids=[[1], [2]],
    reference=["Paris", "Paris"],
    log_metric=lambda name, value: metrics.__setitem__(name, value),
)
print(f"TRL {reward.__name__}: {rewards}")
print(f"TRL metrics: names_city mean {metrics['rubricflow/names_city']:.2f}")

# the async variant, which TRL awaits alongside other async reward functions
async_reward = trl_reward(RUBRIC, asynchronous=True, **OPTIONS)
print(f"TRL async: {asyncio.run(async_reward(prompts=['q'], completions=['Seine']))}")

# 2. Per-prompt rubrics: a `rubric` column of Rubrics-as-Rewards items (pitfalls negative);
#    RaR's formula S / sum|w| is named in the rubric those items make.
rar = [
    {"title": "Vitamin", "description": "Essential: names vitamin", "weight": 5},
    {"title": "Myth", "description": "Pitfall: blames sunlight", "weight": -2},
]
per_prompt = trl_reward(**OPTIONS)
print(
    "per-prompt RaR:",
    per_prompt(
        prompts=["What causes scurvy?"] * 2,
        completions=["A lack of vitamin C.", "Too little sunlight, and vitamin C."],
        rubric=[rar, rar],
    ),
)

# 3. verl: custom_reward_function.path = this file, .name = compute_score
compute_score = verl_compute_score(RUBRIC, **OPTIONS)
score = compute_score(
    data_source="capitals", solution_str="Paris.", ground_truth="Paris", extra_info={}
)
print(f"verl compute_score: {score}")

# 4. verifiers: vf.Rubric(funcs=[verifiers_func], weights=[1.0])
verifiers_func = verifiers_reward(RUBRIC, **OPTIONS)
value = asyncio.run(
    verifiers_func(
        prompt=[{"role": "user", "content": "Capital of France?"}],
        completion=[{"role": "assistant", "content": "The Seine runs through Paris."}],
        answer="Paris",
        state={},
        info={},
    )
)
print(f"verifiers: {value}")

# 5. OpenRubricRL users switch with one import: the same factory, the same call.
with tempfile.TemporaryDirectory() as folder:
    path = Path(folder) / "capital.json"
    path.write_text(
        json.dumps(
            {
                "name": "capital",
                "version": "1.0.0",
                "domain": "general",
                "scale": {"min": 0, "max": 10},
                "criteria": [{"name": "city", "description": "names paris", "weight": 1.0}],
            }
        ),
        encoding="utf-8",
    )
    orl = create_trl_reward_function(rubric_path=str(path), judge=keyword_judge, cache=None)
    print(f"OpenRubricRL: {orl('Capital of France?', 'Paris')}")

"""Workload 3's rubric, targets and judge, shared by both sides (stdlib only).

The judge stands in for an LLM: it waits a fixed 100 ms and answers whether the word a
criterion names (`... the word 'refund'`) appears in the text under review, reading the
criterion and the text out of each side's own prompt. So each side gets the same verdict
for the same (criterion, target), and the scores must agree.
"""

from __future__ import annotations

import asyncio
import json
import random
import re

DELAY = 0.1
WORDS = ("refund", "invoice", "apology", "deadline", "discount", "manager", "receipt", "upgrade")
PENALTIES = ("password", "lawsuit")

# the `rubric` package's format: positive requirements and two penalty ("error") criteria
RUBRIC: list[dict[str, object]] = [
    *(
        {
            "id": f"mentions_{word}",
            "weight": float(1 + i % 3),
            "requirement": f"Mentions the word '{word}'",
        }
        for i, word in enumerate(WORDS)
    ),
    *(
        {"id": f"uses_{word}", "weight": -2.0, "requirement": f"Uses the word '{word}'"}
        for word in PENALTIES
    ),
]

_QUOTED = re.compile(r"the word '([^']+)'")


def targets(count: int, seed: int = 3) -> list[str]:
    chooser = random.Random(seed)
    texts = []
    for i in range(count):
        picked = chooser.sample(WORDS, chooser.randint(0, len(WORDS)))
        if chooser.random() < 0.2:
            picked.append(chooser.choice(PENALTIES))
        filler = " ".join(f"{word} noted" for word in picked) or "nothing to report"
        texts.append(f"Reply {i}: thanks for writing; {filler}.")
    return texts


def verdict(requirement: str, text: str) -> bool:
    match = _QUOTED.search(requirement)
    return bool(match) and match.group(1).lower() in text.lower()


def _between(prompt: str, start: str, end: str) -> str:
    _, _, rest = prompt.partition(start)
    return rest.partition(end)[0] if rest else ""


async def rubric_pkg_generate(system_prompt: str, user_prompt: str) -> str:
    """The `rubric` package's `generate_fn`: its per-criterion prompt holds
    `<criterion>...</criterion>` and `<response>...</response>`."""
    await asyncio.sleep(DELAY)
    met = verdict(
        _between(user_prompt, "<criterion>", "</criterion>"),
        _between(user_prompt, "<response>", "</response>"),
    )
    return json.dumps(
        {"criterion_status": "MET" if met else "UNMET", "explanation": "keyword check"}
    )


async def rubricflow_generate(system_prompt: str, user_prompt: str) -> str:
    """rubricflow's callable provider: its verdict prompt holds the criterion's
    `Requirement: ...` (or `Fault to look for ...: ...`) line and `<content>...</content>`."""
    await asyncio.sleep(DELAY)
    criterion = _between(user_prompt, "<criterion", "</criterion>")
    met = verdict(criterion, _between(user_prompt, "<content>", "</content>"))
    return json.dumps({"reasoning": "keyword check", "verdict": "MET" if met else "UNMET"})

"""Draft a rubric with a judge, see its lint fed back, then rank a GRPO group.

The judge here is a plain async function standing in for a model (pass a spec such as
`openai:gpt-4o-mini` instead): it writes a first draft whose weights do not sum to 1,
fixes them when the meta-rubric's finding comes back, and ranks completions by whether
they state the refund window and the form.
"""

import asyncio
import json
import re

from rubricflow.generation import generate_rubric, rank_group
from rubricflow.llm import LLMSession


def criterion(cid: str, weight: float, description: str) -> dict[str, object]:
    name = cid.replace("_", " ").capitalize()
    return {"id": cid, "name": name, "description": description, "weight": weight,
            "required": cid == "states_window"}  # fmt: skip


async def judge(system_prompt: str, user_prompt: str) -> str:
    if user_prompt.startswith("Rank these"):
        completions = re.findall(r'<completion index="(\d+)">\n(.*?)\n</completion>', user_prompt)
        points = {int(i): ("30 days" in text) + ("form" in text) for i, text in completions}
        ranking = [
            {"index": i, "reasoning": f"covers {p} of the 2 key points", "rank": 3 - p}
            for i, p in points.items()
        ]
        return json.dumps({"ranking": ranking})
    revised = "A linter found" in user_prompt
    return json.dumps(
        {
            "id": "refund_answer",
            "name": "Refund answer",
            "description": "Judges an answer about the refund policy.",
            "pass_threshold": 0.7,
            "criteria": [
                criterion("states_window", 0.5, "States the 30-day refund window."),
                criterion("names_form", 0.3 if revised else 0.5, "Names the online form."),
                criterion("polite", 0.2 if revised else 0.5, "Is polite."),
                criterion("promises_cash", -0.2, "Promises a cash refund (a pitfall)."),
            ],
        }
    )


async def main() -> None:
    async with LLMSession(judge, cache=None) as session:
        draft = await generate_rubric(
            task="Answer a customer's question about refunds.",
            reference="Refunds within 30 days, using the online form.",
            judge=session,
            criteria=(3, 8),  # a small policy needs few criteria (the default asks 7 to 20)
        )
        print(f"first draft findings: {len(draft.first_findings)}")
        for finding in draft.first_findings:
            print(f"  {finding.split(';')[0]}")
        print(f"revised: {draft.revised}, clean: {draft.clean}")
        for c in draft.rubric.criteria:
            print(f"  {c.id}: weight {c.weight:g}{' required' if c.required else ''}")

        ranking = await rank_group(
            "How do refunds work?",
            ["No refunds.", "Within 30 days.", "Within 30 days, via the online form."],
            judge=session,
            rubric=draft.rubric,
        )
        for place in ranking.completions:
            print(f"completion {place.index}: rank {place.rank}, reward {place.reward:.2f}")


asyncio.run(main())

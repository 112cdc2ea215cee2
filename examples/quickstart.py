"""Evaluate a bot's reply against a rubric from the library and print the feedback.

Run from the repository root: python examples/quickstart.py
"""

import asyncio
from pathlib import Path

from rubricflow import evaluate, load_rubric

ROOT = Path(__file__).resolve().parent.parent


async def main() -> None:
    rubric = load_rubric(ROOT / "rubrics" / "support-reply-checks.yaml")
    replies = [
        {
            "id": "good",
            "content": "Thanks for reaching out! You can download your invoice from the "
            "Billing page: click 'Invoices', pick the month, and press Download. "
            "We will also e-mail a copy at the end of the month.",
        },
        {"id": "leaky", "content": "As an AI language model: call me on +44 20 7946 0958."},
    ]
    for reply in replies:
        evaluation = await evaluate(rubric, reply)
        print(f"{evaluation.target_id}: {evaluation.verdict} ({evaluation.score:.2f})")
        if not evaluation.passed:
            print(evaluation.feedback)


if __name__ == "__main__":
    asyncio.run(main())

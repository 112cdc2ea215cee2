"""Scripted judge answers for the generation tests."""

from __future__ import annotations

from typing import Any

from llm.scripted import Recorded, Reply, openai_reply

#: the criteria count the scripted drafts (3 or 4 criteria) are asked for
FEW = (3, 5)
FEW_ARGS = ["--criteria", "3-5"]


def criterion(cid: str, weight: float, *, required: bool = False, name: str = "") -> dict[str, Any]:
    return {
        "id": cid,
        "name": name or cid.replace("_", " ").title(),
        "description": f"The answer {cid.replace('_', ' ')}.",
        "weight": weight,
        "required": required,
    }


def draft(*criteria: dict[str, Any], threshold: float = 0.7) -> dict[str, Any]:
    return {
        "id": "refund_answer",
        "name": "Refund answer",
        "description": "Judges an answer about the refund policy.",
        "pass_threshold": threshold,
        "criteria": list(criteria),
    }


#: weights summing to 1.5: the meta-rubric's weight_distribution check fails
UNEVEN = draft(
    criterion("states_window", 0.5, required=True),
    criterion("names_form", 0.5),
    criterion("polite", 0.5),
)
#: the same criteria, weights summing to 1, plus a pitfall
EVEN = draft(
    criterion("states_window", 0.5, required=True),
    criterion("names_form", 0.3),
    criterion("polite", 0.2),
    criterion("promises_cash", -0.2),
)


def reviser(request: Recorded) -> Reply:
    """The uneven draft first; the even one once the lint is fed back."""
    return openai_reply(EVEN if "A linter found" in request.text else UNEVEN)

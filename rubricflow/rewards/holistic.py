"""Implicit aggregation: one holistic judge call over every rubric item.

Rubrics as Rewards' "implicit" variant asks the judge for a single overall score with all
items in view, instead of a verdict per item combined by a formula. Here that is a
one-criterion rubric: a 0..10 band score (the `llm_score` scorer) whose description lists
every item with its weight, pitfalls marked. It is an ordinary rubric, so the judge cache,
retries and evidence work as for any other.
"""

from __future__ import annotations

import threading

from rubricflow.model import Rubric, parse_rubric

__all__ = ["holistic_rubric"]

_BANDS = [
    {"min": 0, "max": 2, "description": "misses the essential items or commits a serious pitfall"},
    {"min": 3, "max": 5, "description": "meets some important items; clear gaps"},
    {"min": 6, "max": 8, "description": "meets the essential and most important items"},
    {"min": 9, "max": 10, "description": "meets every item that matters and commits no pitfall"},
]


_BUILT: dict[str, Rubric] = {}
_LOCK = threading.Lock()
_LIMIT = 4096


def holistic_rubric(rubric: Rubric) -> Rubric:
    """`rubric` as one holistic criterion judged 0..10 over all its items (kept by content
    hash: a rubric's holistic form is built once)."""
    with _LOCK:
        found = _BUILT.get(rubric.content_hash)
    if found is not None:
        return found
    built = _holistic(rubric)
    with _LOCK:
        if len(_BUILT) >= _LIMIT:
            _BUILT.clear()
        _BUILT[rubric.content_hash] = built
    return built


def _holistic(rubric: Rubric) -> Rubric:
    lines = []
    for criterion in rubric.criteria:
        text = criterion.description or criterion.name
        if criterion.weight < 0:
            lines.append(f"- PITFALL (weight {criterion.weight:g}; must not happen): {text}")
        else:
            lines.append(f"- (weight {criterion.weight:g}) {text}")
    description = (
        "Judge the response as a whole against every item below, heavier items counting "
        "more, and give one overall score.\n" + "\n".join(lines)
    )
    return parse_rubric(
        {
            "id": rubric.id,
            "version": rubric.version,
            "name": rubric.name,
            "pass_threshold": rubric.pass_threshold,
            "criteria": [
                {
                    "id": "overall",
                    "description": description,
                    "score_ranges": _BANDS,
                    "scoring": {"method": "llm_score"},
                }
            ],
            "metadata": {"aggregation": "implicit", "items_of": rubric.content_hash},
        }
    )

"""Workload 1's rubric, artifacts and check functions, shared by both sides.

Stdlib only: the same file is imported by rubricflow (as `benchmarks.gate_checks:NAME`
function references, with `allow_import`) and by dataknobs-bots in its own venv (as its
`function_ref`s). A dataknobs check receives the content dict, a rubricflow check the
`Target` whose `content` is that dict; `_content` accepts both, so the code that scores is
the same on both sides.
"""

from __future__ import annotations

import random
import re
from typing import Any

_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_POLITE = ("please", "thanks", "thank you")


def _content(target: Any) -> dict[str, Any]:
    content = getattr(target, "content", target)
    return content if isinstance(content, dict) else {}


def title_ok(target: Any) -> str:
    title = _content(target).get("title")
    return "pass" if isinstance(title, str) and 0 < len(title.strip()) <= 80 else "fail"


def body_length(target: Any) -> str:
    body = _content(target).get("body")
    words = len(body.split()) if isinstance(body, str) else 0
    if words < 12:
        return "short"
    return "long" if words > 120 else "good"


def no_email(target: Any) -> str:
    body = _content(target).get("body")
    return "fail" if isinstance(body, str) and _EMAIL.search(body) else "pass"


def polite(target: Any) -> str:
    body = _content(target).get("body")
    text = body.lower() if isinstance(body, str) else ""
    return "pass" if any(term in text for term in _POLITE) else "fail"


def tags_ok(target: Any) -> str:
    tags = _content(target).get("tags")
    if not isinstance(tags, list) or not tags:
        return "none"
    return "good" if len(tags) <= 5 else "too_many"


def _levels(*levels: tuple[str, float]) -> list[dict[str, Any]]:
    return [
        {"id": level, "label": level.replace("_", " ").title(), "description": level, "score": s}
        for level, s in levels
    ]


def _check(cid: str, weight: float, levels: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": cid,
        "name": cid.replace("_", " ").title(),
        "description": f"deterministic check {cid}",
        "weight": weight,
        "levels": levels,
        "scoring_method": {
            "type": "deterministic",
            "function_ref": f"benchmarks.gate_checks:{cid}",
        },
        # both sides decide on the weighted score alone: dataknobs' `required` means "must
        # be evaluated", and rubricflow imports it that way (it does not gate)
        "required": False,
    }


CONTENT_SCHEMA = {
    "type": "object",
    "required": ["title", "body", "tags", "author"],
    "properties": {
        "title": {"type": "string"},
        "body": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "author": {"type": "string", "minLength": 1},
    },
}

# five deterministic criteria and one schema criterion, in dataknobs' rubric format (rubricflow
# imports it with its dataknobs importer)
RUBRIC: dict[str, Any] = {
    "id": "bench-gate",
    "name": "Benchmark review gate",
    "description": "five deterministic checks and one JSON Schema check",
    "version": "1.0.0",
    "target_type": "post",
    "pass_threshold": 0.7,
    "metadata": {},
    "criteria": [
        _check("title_ok", 0.15, _levels(("fail", 0.0), ("pass", 1.0))),
        _check("body_length", 0.2, _levels(("short", 0.25), ("long", 0.5), ("good", 1.0))),
        _check("no_email", 0.2, _levels(("fail", 0.0), ("pass", 1.0))),
        _check("polite", 0.1, _levels(("fail", 0.0), ("pass", 1.0))),
        _check("tags_ok", 0.1, _levels(("none", 0.0), ("too_many", 0.5), ("good", 1.0))),
        {
            "id": "shape",
            "name": "Shape",
            "description": "the post has every field with the right type",
            "weight": 0.25,
            "levels": _levels(("invalid", 0.0), ("valid", 1.0)),
            "scoring_method": {"type": "schema", "schema": CONTENT_SCHEMA},
            "required": False,
        },
    ],
}

_TEXT = (
    "the release notes cover the new export flow and the fixes for the importer customers "
    "asked about last quarter while the team also reworked the settings page"
)
_WORDS = tuple(_TEXT.split())


def artifacts(count: int, seed: int = 9) -> list[dict[str, Any]]:
    """`count` post contents, the same on both sides: most pass, some fail a check or two."""
    chooser = random.Random(seed)
    posts = []
    for i in range(count):
        words = chooser.choice((6, 30, 40, 60, 150))
        body = " ".join(chooser.choice(_WORDS) for _ in range(words))
        if chooser.random() < 0.7:
            body += " Thanks for reading."
        if chooser.random() < 0.1:
            body += f" Write to editor{i}@example.com with questions."
        post: dict[str, Any] = {
            "title": f"Release notes {i}" if chooser.random() < 0.95 else "",
            "body": body,
            "tags": [f"tag{t}" for t in range(chooser.choice((0, 1, 2, 3, 7)))],
            "author": f"bot-{i % 7}",
        }
        if chooser.random() < 0.05:
            del post["author"]
        posts.append(post)
    return posts

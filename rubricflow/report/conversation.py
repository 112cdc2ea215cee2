"""A conversation as the report shows it: turn by turn, each turn's text (escaped by the
template), its tool calls with their arguments, and its images inline.

Images are shown only as they were read and checked (PNG, JPEG, WebP or GIF, its media
type from its own header, never SVG), as `data:` URLs the page's policy allows, and only
up to a size: an image over `MAX_IMAGE_BYTES`, past `MAX_IMAGES` in one target, or past
`MAX_REPORT_IMAGE_BYTES` in the whole report (`ImageBudget`), is named instead of shown,
so a report of ten thousand multimodal targets stays a reasonable file. Text is cut at
`MAX_TEXT_CHARS` per part, saying so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rubricflow.conversation import ImagePart, read_conversation
from rubricflow.errors import RubricflowError

__all__ = [
    "MAX_IMAGES",
    "MAX_IMAGE_BYTES",
    "MAX_REPORT_IMAGE_BYTES",
    "MAX_TEXT_CHARS",
    "ImageBudget",
    "conversation_view",
]

MAX_IMAGE_BYTES = 512 * 1024
MAX_IMAGES = 8
MAX_REPORT_IMAGE_BYTES = 20 * 1024 * 1024
MAX_TEXT_CHARS = 20_000


class ImageBudget:
    """The bytes of images one report may still embed (`MAX_REPORT_IMAGE_BYTES` in all)."""

    def __init__(self, total: int = MAX_REPORT_IMAGE_BYTES) -> None:
        self.left = total


def _image(part: ImagePart, shown: int, budget: ImageBudget) -> dict[str, Any]:
    size = len(part.data) * 3 // 4
    label = f"{part.media_type} {part.width}x{part.height}, {size:,} bytes"
    why = None
    if size > MAX_IMAGE_BYTES:
        why = f"over the report's {MAX_IMAGE_BYTES:,}-byte cap"
    elif shown >= MAX_IMAGES:
        why = f"past the report's {MAX_IMAGES} images per target"
    elif size > budget.left:
        why = f"the report's {MAX_REPORT_IMAGE_BYTES:,} bytes of images are used up"
    if why is not None:
        return {"kind": "omitted", "text": f"image not shown ({label}): {why}"}
    budget.left -= size
    return {
        "kind": "image",
        "src": part.data_url,
        "alt": part.alt or f"image ({label})",
        "width": part.width,
        "height": part.height,
    }


def _text(text: str) -> dict[str, Any]:
    if len(text) <= MAX_TEXT_CHARS:
        return {"kind": "text", "text": text}
    cut = len(text) - MAX_TEXT_CHARS
    return {"kind": "text", "text": text[:MAX_TEXT_CHARS] + f"\n[... {cut:,} more characters]"}


def conversation_view(
    content: Any, budget: ImageBudget | None = None
) -> list[dict[str, Any]] | None:
    """The turns of `content` when it is a conversation (else None): role, parts (text,
    image, or an omitted image's description), tool calls and the call a result answers.
    `budget`: the report's images left to embed (shared by its targets)."""
    budget = budget if budget is not None else ImageBudget()
    if not isinstance(content, list | Mapping):
        return None
    try:
        conversation = read_conversation(content)
    except (RubricflowError, ValueError):
        return None
    if conversation is None:
        return None
    turns: list[dict[str, Any]] = []
    shown = 0
    for index, message in enumerate(conversation.messages):
        parts: list[dict[str, Any]] = []
        for part in message.content:
            if isinstance(part, ImagePart):
                view = _image(part, shown, budget)
                shown += view["kind"] == "image"
                parts.append(view)
            elif part.text:
                parts.append(_text(part.text))
        calls = [
            {
                "name": call.name,
                "id": call.id,
                "arguments": json.dumps(
                    call.arguments, indent=2, ensure_ascii=False, sort_keys=True
                ),
            }
            for call in message.tool_calls
        ]
        turns.append(
            {
                "index": index,
                "role": message.role,
                "name": message.name,
                "tool_call_id": message.tool_call_id,
                "parts": parts,
                "calls": calls,
            }
        )
    return turns

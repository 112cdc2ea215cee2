"""Images in each provider's wire format, attached to the first user message (the one
that holds the target): OpenAI-compatible `image_url` parts with data URLs, Anthropic
base64 `image` blocks, Ollama's `images` list of base64 strings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from rubricflow.conversation import ImagePart

__all__ = ["with_images"]


def _parts(text: str, images: Sequence[ImagePart], wire: str) -> Any:
    if wire == "ollama":
        return text
    if wire == "openai":
        blocks: list[dict[str, Any]] = [
            {"type": "image_url", "image_url": {"url": image.data_url}} for image in images
        ]
    else:
        blocks = [
            {
                "type": "image",
                "source": {"type": "base64", "media_type": image.media_type, "data": image.data},
            }
            for image in images
        ]
    return [{"type": "text", "text": text}, *blocks]


def with_images(
    messages: list[dict[str, Any]],
    images: Sequence[ImagePart],
    wire: Literal["openai", "anthropic", "ollama"],
) -> list[dict[str, Any]]:
    """`messages` with `images` on the first user message (unchanged without images)."""
    if not images:
        return messages
    out = list(messages)
    for index, message in enumerate(out):
        if message.get("role") == "user":
            changed = {**message, "content": _parts(str(message["content"]), images, wire)}
            if wire == "ollama":
                changed["images"] = [image.data for image in images]
            out[index] = changed
            break
    return out

"""What a judge sees of a conversation: a transcript with each turn delimited and
escaped, and the images the target holds.

Turns are `<turn index=".." role="..">` elements whose text is escaped (`&`, `<`, `>`),
so a message cannot close its turn or fake another; the transcript is data, filled into
the prompt as a value, never rendered as a template. A transcript over the size budget
loses turns from its middle, and a marker says which and why. Images are listed in the
transcript where they occur, and sent beside the prompt to a judge that sees images
(`sees_images`); a judge that does not is never asked to judge them blind.
"""

from __future__ import annotations

import hashlib
import json
import re
from html import escape

from rubricflow.conversation import Conversation, ImagePart, Message, conversation_of
from rubricflow.errors import RubricflowError
from rubricflow.llm.base import LLMProvider
from rubricflow.results import Target

__all__ = [
    "DEFAULT_TRANSCRIPT_CHARS",
    "blind_refusal",
    "image_digests",
    "judged_text",
    "render_transcript",
    "sees_images",
    "target_images",
]

DEFAULT_TRANSCRIPT_CHARS = 100_000
"""The most characters of transcript a judge is sent; the middle turns go first."""

# model names that accept images, by family (a spec's `vision: true` says so for others)
_VISION_MODELS = re.compile(
    r"(gpt-4o|gpt-4\.1|gpt-4-turbo|gpt-4-vision|gpt-5|chatgpt-4o|\bo[134]\b|o[134]-"
    r"|claude-3|claude-(opus|sonnet|haiku)-4|claude-.*-4|gemini|llava|bakllava|moondream"
    r"|-vl\b|-vl-|vl:|vision|pixtral|gemma3|gemma-3|minicpm-v|qwen2\.5vl|internvl|molmo)",
    re.IGNORECASE,
)


def sees_images(model: str, vision: bool | None) -> bool:
    """Whether a judge sees images: as its spec says (`vision`), else by its model name."""
    if vision is not None:
        return vision
    return _VISION_MODELS.search(model) is not None


def _conversation(target: Target) -> Conversation | None:
    try:
        return conversation_of(target)
    except (ValueError, RubricflowError):  # not one we can read: the judge sees its JSON
        return None


def target_images(target: Target) -> tuple[ImagePart, ...]:
    """The images a target's content holds (none for text and plain JSON)."""
    conversation = _conversation(target)
    return conversation.images if conversation is not None else ()


def image_digests(images: tuple[ImagePart, ...]) -> list[str]:
    """sha256 of each image's bytes, for the answer cache's key."""
    return [hashlib.sha256(image.data.encode("ascii")).hexdigest() for image in images]


def judged_text(target: Target, budget: int = DEFAULT_TRANSCRIPT_CHARS) -> str:
    """The content as the judge reads it: a transcript for a conversation, else text."""
    conversation = _conversation(target)
    if conversation is None:
        return target.text
    return render_transcript(conversation, budget)


def _turn(index: int, message: Message, first_image: int) -> str:
    attributes = f'index="{index}" role="{message.role}"'
    if message.tool_call_id is not None:
        attributes += f' tool_call_id="{escape(message.tool_call_id)}"'
    if message.name is not None:
        attributes += f' name="{escape(message.name)}"'
    lines = [f"<turn {attributes}>"]
    number = first_image
    for part in message.content:
        if isinstance(part, ImagePart):
            number += 1
            alt = f' alt="{escape(part.alt)}"' if part.alt else ""
            lines.append(
                f'<image number="{number}" type="{part.media_type}" '
                f'size="{part.width}x{part.height}"{alt}/>'
            )
        else:
            lines.append(escape(part.text, quote=False))
    for call in message.tool_calls:
        arguments = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
        call_id = f' id="{escape(call.id)}"' if call.id is not None else ""
        lines.append(
            f'<tool_call{call_id} name="{escape(call.name)}">'
            f"{escape(arguments, quote=False)}</tool_call>"
        )
    lines.append("</turn>")
    return "\n".join(lines)


def render_transcript(conversation: Conversation, budget: int = DEFAULT_TRANSCRIPT_CHARS) -> str:
    """Every turn delimited and escaped; over `budget` characters, the middle turns are
    left out and an `<omitted>` marker says which."""
    turns: list[str] = []
    seen = 0
    for index, message in enumerate(conversation.messages):
        turns.append(_turn(index, message, seen))
        seen += len(message.images)
    if sum(len(turn) + 1 for turn in turns) <= budget:
        return "\n".join(turns)
    head: list[str] = []
    tail: list[str] = []
    used = 0
    low, high = 0, len(turns) - 1
    while low <= high:  # keep turns from both ends, first and last first
        pick = turns[low] if len(head) <= len(tail) else turns[high]
        if used + len(pick) + 1 > budget:
            break
        used += len(pick) + 1
        if len(head) <= len(tail):
            head.append(pick)
            low += 1
        else:
            tail.append(pick)
            high -= 1
    marker = (
        f'<omitted turns="{low}..{high}" count="{high - low + 1}" '
        f'reason="the transcript is over its size budget of {budget} characters"/>'
    )
    return "\n".join([*head, marker, *reversed(tail)])


def blind_refusal(provider: LLMProvider, images: tuple[ImagePart, ...]) -> str | None:
    """Why `provider` may not judge content with `images` (None when it may): a judge
    that does not see images never judges them blind."""
    if not images:
        return None
    if not provider.accepts_images:
        return (
            f"the content holds {len(images)} image(s) and judge {provider.label} cannot be "
            "sent images (use an OpenAI-compatible, Anthropic or Ollama judge that sees them)"
        )
    vision = provider.vision if provider.vision is not None else provider.settings.vision
    if not sees_images(provider.model, vision):
        return (
            f"the content holds {len(images)} image(s) and judge {provider.label} is not "
            "known to see images; if it does, say so with --judge-vision (vision: true in its "
            "spec's options), else use a vision model"
        )
    return None

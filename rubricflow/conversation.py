"""Typed content: a conversation (messages with roles, content parts, tool calls and tool
results) and images, read from our own shape, the OpenAI chat format or the Anthropic
messages format as they are.

`read_conversation(content)` gives a `Conversation` when a target's content is one (a
list of messages, or an object with `messages`), else None (text or other JSON). Sizes
are bounded (`ConversationBounds`): messages, parts per message, images, image bytes and
pixels, each refused with a `ContentBoundsError` naming the bound and the path. Image
dimensions are read from the file's header (PNG, JPEG, WebP, GIF), without decoding it.
An image is bytes, a data URL or, only when the caller passes `base_dir` (local use), a
file path inside it; a remote URL is never fetched.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rubricflow.errors import ConfigurationError, ContentBoundsError

__all__ = [
    "IMAGE_MEDIA_TYPES",
    "Conversation",
    "ConversationBounds",
    "ImagePart",
    "Message",
    "TextPart",
    "ToolCall",
    "content_schemas",
    "conversation_of",
    "image_size",
    "inline_images",
    "read_conversation",
]

IMAGE_MEDIA_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")
Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ConversationBounds:
    """How large a conversation may be; beyond these the judge's context and the server's
    memory are at stake, far beyond what a review needs."""

    max_messages: int = 2_000
    max_parts: int = 200
    max_images: int = 32
    max_image_bytes: int = 8 * 1024 * 1024
    max_image_pixels: int = 40_000_000


DEFAULT_CONVERSATION_BOUNDS = ConversationBounds()


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TextPart(_Frozen):
    """A part of a message's content that is text."""

    type: Literal["text"] = "text"
    text: str


class ImagePart(_Frozen):
    """An image, inline: its media type, base64 data and the size read from its header."""

    type: Literal["image"] = "image"
    media_type: Literal["image/png", "image/jpeg", "image/webp", "image/gif"]
    data: str = Field(description="the image's bytes, base64")
    width: int = 0
    height: int = 0
    alt: str | None = None

    @property
    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{self.data}"

    @property
    def raw(self) -> bytes:
        return base64.b64decode(self.data)


Part = TextPart | ImagePart


class ToolCall(_Frozen):
    """One call of a tool by the assistant: its id, name and arguments (JSON)."""

    id: str | None = None
    name: str
    arguments: Any = Field(default_factory=dict)


class Message(_Frozen):
    """One message. A `tool` message is a tool result; `tool_call_id` names its call."""

    role: Role
    content: tuple[Part, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    @property
    def text(self) -> str:
        return "\n".join(p.text for p in self.content if isinstance(p, TextPart))

    @property
    def images(self) -> tuple[ImagePart, ...]:
        return tuple(p for p in self.content if isinstance(p, ImagePart))


class Conversation(_Frozen):
    """A conversation or an agent's run: its messages, in order."""

    messages: tuple[Message, ...]

    def assistant_turns(self) -> list[tuple[int, Message]]:
        """(message index, message) of every assistant message that says something: a
        message that only calls tools is a step of the trajectory, not a turn."""
        return [
            (i, m)
            for i, m in enumerate(self.messages)
            if m.role == "assistant" and (m.text.strip() or m.images or not m.tool_calls)
        ]

    def tool_calls(self) -> list[tuple[int, ToolCall]]:
        """(message index, call) of every tool call, in order: the trajectory."""
        return [(i, call) for i, m in enumerate(self.messages) for call in m.tool_calls]

    @property
    def images(self) -> tuple[ImagePart, ...]:
        return tuple(image for m in self.messages for image in m.images)

    def canonical(self) -> list[dict[str, Any]]:
        """The messages in our own JSON shape (what a per-turn target holds)."""
        return [m.model_dump(mode="json", exclude_none=True) for m in self.messages]


def content_schemas() -> dict[str, Any]:
    """JSON Schemas of the typed content shapes, for `rubricflow schema`."""
    return {
        "conversation": Conversation.model_json_schema(),
        "message": Message.model_json_schema(),
        "image": ImagePart.model_json_schema(),
    }


def _is_message(value: Any) -> bool:
    return isinstance(value, Mapping) and isinstance(value.get("role"), str)


def read_conversation(
    content: Any,
    *,
    bounds: ConversationBounds = DEFAULT_CONVERSATION_BOUNDS,
    base_dir: Path | None = None,
) -> Conversation | None:
    """The conversation `content` holds, or None when it is not one. A list of messages
    (each with a `role`), or an object with `messages` (and Anthropic's `system`)."""
    return _read(content, _Reader(bounds, base_dir))


def _read(content: Any, reader: _Reader) -> Conversation | None:
    bounds = reader.bounds
    system: Any = None
    if isinstance(content, Mapping) and isinstance(content.get("messages"), list):
        messages, system = content["messages"], content.get("system")
    elif isinstance(content, list) and content and all(_is_message(m) for m in content):
        messages = content
    else:
        return None
    if not all(_is_message(m) for m in messages):
        raise ConfigurationError("every message of a conversation needs a `role` (a string)")
    out: list[Message] = []
    if system is not None:
        out.append(Message(role="system", content=reader.parts(system, "$.system")))
    for index, raw in enumerate(messages):
        out.extend(reader.message(raw, f"$.messages[{index}]"))
    if len(out) > bounds.max_messages:
        _over("max_messages", f"{len(out)} messages", bounds.max_messages, "$.messages")
    return Conversation(messages=tuple(out))


_PARSED = "_rubricflow_conversation"


def conversation_of(target: Any) -> Conversation | None:
    """The conversation a target's content holds (None for text and other JSON), read
    once per target: the answer is kept on the target beside the very content object it
    was read from, so a copy of the target with other content reads its own."""
    content = target.content
    kept = target.__dict__.get(_PARSED)
    if kept is not None and kept[0] is content:
        return kept[1]  # type: ignore[no-any-return]
    conversation = read_conversation(content)
    target.__dict__[_PARSED] = (content, conversation)
    return conversation


def inline_images(content: Any, base_dir: Path | None) -> Any:
    """`content` with its image file paths read (inside `base_dir`, local use only) and
    put inline, so later readers need no folder; content without file images as is."""
    if base_dir is None:
        return content
    reader = _Reader(DEFAULT_CONVERSATION_BOUNDS, base_dir)
    conversation = _read(content, reader)
    if conversation is None or not reader.files:
        return content
    return conversation.canonical()


def _over(bound: str, what: str, limit: int, path: str) -> None:
    raise ContentBoundsError(
        f"{path}: {what} is over the bound {bound} ({limit}); shorten the conversation or split it",
        bound=bound,
        path=path,
    )


class _Reader:
    def __init__(self, bounds: ConversationBounds, base_dir: Path | None) -> None:
        self.bounds = bounds
        self.base_dir = base_dir
        self.images = 0
        self.files = 0

    def message(self, raw: Mapping[str, Any], path: str) -> list[Message]:
        role = raw["role"]
        if role in ("developer", "system"):
            role = "system"
        elif role == "function":
            role = "tool"
        if role not in ("system", "user", "assistant", "tool"):
            raise ConfigurationError(f"{path}.role: unknown role {role!r}")
        calls = [
            _openai_call(c, f"{path}.tool_calls[{i}]")
            for i, c in enumerate(raw.get("tool_calls") or ())
        ]
        parts: list[Part] = []
        results: list[Message] = []
        content = raw.get("content")
        items = content if isinstance(content, list) else [content] if content is not None else []
        if len(items) > self.bounds.max_parts:
            _over("max_parts", f"{len(items)} parts", self.bounds.max_parts, f"{path}.content")
        for i, item in enumerate(items):
            where = f"{path}.content[{i}]" if isinstance(content, list) else f"{path}.content"
            kind = item.get("type") if isinstance(item, Mapping) else None
            if kind == "tool_use":  # Anthropic
                calls.append(
                    ToolCall(
                        id=item.get("id"),
                        name=str(item.get("name")),
                        arguments=item.get("input", {}),
                    )
                )
            elif kind == "tool_result":  # Anthropic: a tool result inside a user message
                results.append(
                    Message(
                        role="tool",
                        tool_call_id=item.get("tool_use_id"),
                        content=self.parts(item.get("content", ""), f"{where}.content"),
                    )
                )
            else:
                parts.extend(self.parts(item, where))
        own = Message(
            role=role,
            content=tuple(parts),
            tool_calls=tuple(calls),
            tool_call_id=raw.get("tool_call_id"),
            name=raw.get("name") if isinstance(raw.get("name"), str) else None,
        )
        if results and not parts and not calls:
            return results
        return [own, *results] if results else [own]

    def parts(self, value: Any, path: str) -> tuple[Part, ...]:
        if value is None:
            return ()
        if isinstance(value, str):
            return (TextPart(text=value),)
        if isinstance(value, list):
            return tuple(
                p for i, item in enumerate(value) for p in self.parts(item, f"{path}[{i}]")
            )
        if not isinstance(value, Mapping):
            return (TextPart(text=json.dumps(value, ensure_ascii=False)),)
        kind = value.get("type")
        if kind in ("text", "input_text", "output_text"):
            return (TextPart(text=str(value.get("text", ""))),)
        if kind in ("image", "image_url", "input_image"):
            return (self.image(value, path),)
        return (TextPart(text=json.dumps(value, ensure_ascii=False, sort_keys=True)),)

    def image(self, value: Mapping[str, Any], path: str) -> ImagePart:
        self.images += 1
        if self.images > self.bounds.max_images:
            _over("max_images", f"{self.images} images", self.bounds.max_images, path)
        raw, declared = self._image_bytes(value, path)
        if len(raw) > self.bounds.max_image_bytes:
            _over(
                "max_image_bytes",
                f"an image of {len(raw)} bytes",
                self.bounds.max_image_bytes,
                path,
            )
        media_type, width, height = image_size(raw, path)
        if declared and declared != media_type:
            raise ConfigurationError(f"{path}: declared {declared} but the bytes are {media_type}")
        if width * height > self.bounds.max_image_pixels:
            _over(
                "max_image_pixels",
                f"an image of {width}x{height} pixels",
                self.bounds.max_image_pixels,
                path,
            )
        alt = value.get("alt")
        return ImagePart(
            media_type=media_type,
            data=base64.b64encode(raw).decode("ascii"),
            width=width,
            height=height,
            alt=alt if isinstance(alt, str) else None,
        )

    def _image_bytes(self, value: Mapping[str, Any], path: str) -> tuple[bytes, str | None]:
        source = value.get("source")
        if isinstance(source, Mapping) and source.get("type") == "base64":  # Anthropic
            return _b64(source.get("data"), path), source.get("media_type")
        url = value.get("image_url", value.get("url"))
        if isinstance(url, Mapping):  # OpenAI: {"image_url": {"url": ...}}
            url = url.get("url")
        if isinstance(value.get("data"), str):  # our own shape
            return _b64(value["data"], path), value.get("media_type")
        if isinstance(value.get("bytes"), bytes):
            return value["bytes"], None
        if isinstance(url, str) and url.startswith("data:"):
            header, _, data = url.partition(",")
            if not header.endswith(";base64"):
                raise ConfigurationError(f"{path}: an image data URL must be base64")
            return _b64(data, path), header[5:].removesuffix(";base64")
        if isinstance(url, str) and "://" in url:
            raise ConfigurationError(
                f"{path}: image URLs are not fetched ({url[:60]}); inline the image as a "
                "data URL or base64 data"
            )
        file = value.get("path", url)
        if isinstance(file, str):
            return self._file(file, path), None
        raise ConfigurationError(f"{path}: an image needs data, a data URL or a path")

    def _file(self, name: str, path: str) -> bytes:
        if self.base_dir is None:
            raise ConfigurationError(
                f"{path}: image file paths are read only in local use; inline the image "
                "as a data URL or base64 data"
            )
        base = self.base_dir.resolve()
        file = (base / name).resolve()
        if not file.is_relative_to(base) or not file.is_file():
            raise ConfigurationError(f"{path}: no image file {name!r} under {base}")
        with file.open("rb") as handle:
            data = handle.read(self.bounds.max_image_bytes + 1)
        self.files += 1
        return data


def _b64(data: Any, path: str) -> bytes:
    if not isinstance(data, str):
        raise ConfigurationError(f"{path}: image data must be a base64 string")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ConfigurationError(f"{path}: image data is not valid base64") from None


def _openai_call(raw: Any, path: str) -> ToolCall:
    if not isinstance(raw, Mapping):
        raise ConfigurationError(f"{path}: a tool call is an object")
    nested = raw.get("function")
    function: Mapping[str, Any] = nested if isinstance(nested, Mapping) else raw
    name = function.get("name")
    if not isinstance(name, str):
        raise ConfigurationError(f"{path}: a tool call needs a `name`")
    arguments = function.get("arguments", {})
    if isinstance(arguments, str):  # OpenAI sends arguments as a JSON string
        with contextlib.suppress(ValueError):  # else kept as text; argument checks say so
            arguments = json.loads(arguments) if arguments.strip() else {}
    call_id = raw.get("id")
    return ToolCall(
        id=call_id if isinstance(call_id, str) else None, name=name, arguments=arguments
    )


def image_size(data: bytes, path: str = "$") -> tuple[str, int, int]:
    """(media type, width, height) from an image's header; PNG, JPEG, WebP or GIF."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return "image/png", width, height
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return "image/gif", width, height
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        return ("image/webp", *_webp_size(data, path))
    if data[:2] == b"\xff\xd8":
        return ("image/jpeg", *_jpeg_size(data, path))
    raise ConfigurationError(f"{path}: not a PNG, JPEG, WebP or GIF image")


def _webp_size(data: bytes, path: str) -> tuple[int, int]:
    chunk = data[12:16]
    if chunk == b"VP8X":
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    if chunk == b"VP8L":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8 ":
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    raise ConfigurationError(f"{path}: a WebP image with an unknown chunk")


_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def _jpeg_size(data: bytes, path: str) -> tuple[int, int]:
    at = 2
    while at + 9 < len(data):
        if data[at] != 0xFF:
            break
        marker = data[at + 1]
        if marker == 0xFF:
            at += 1
            continue
        length = struct.unpack(">H", data[at + 2 : at + 4])[0]
        if marker in _SOF:
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height
        at += 2 + length
    raise ConfigurationError(f"{path}: a JPEG image without a readable size")

"""Typed content: conversations read from our shape, OpenAI chat and Anthropic messages;
images sized from their headers; every bound refused with its name."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from image_bytes import data_url, gif, jpeg, png, webp

from rubricflow.conversation import (
    ConversationBounds,
    ImagePart,
    content_schemas,
    image_size,
    read_conversation,
)
from rubricflow.errors import ConfigurationError, ContentBoundsError

OPENAI = [
    {"role": "system", "content": "You are a travel agent."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Weather in Paris?"},
            {"type": "image_url", "image_url": {"url": data_url(png())}},
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "18C and sunny"},
    {"role": "assistant", "content": "It is 18C and sunny in Paris."},
]

ANTHROPIC = {
    "system": "You are a travel agent.",
    "messages": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Weather in Paris?"},
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": "image/png",
                        "data": base64.b64encode(png()).decode(),
                    },
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Paris"}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "18C and sunny"}],
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "It is 18C and sunny in Paris."}],
        },
    ],
}


@pytest.mark.parametrize("content", [OPENAI, ANTHROPIC], ids=["openai", "anthropic"])
def test_both_wire_formats_read_as_the_same_conversation(content: object) -> None:
    conversation = read_conversation(content)
    assert conversation is not None
    assert [m.role for m in conversation.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    ((index, call),) = conversation.tool_calls()
    assert (index, call.id, call.name, call.arguments) == (2, "c1", "weather", {"city": "Paris"})
    assert conversation.messages[3].tool_call_id == "c1"
    assert conversation.messages[3].text == "18C and sunny"
    (image,) = conversation.images
    assert (image.media_type, image.width, image.height) == ("image/png", 2, 3)
    # our own shape round-trips
    again = read_conversation(conversation.canonical())
    assert again == conversation


def test_text_and_other_json_are_not_conversations() -> None:
    assert read_conversation("hello") is None
    assert read_conversation({"answer": 42}) is None
    assert read_conversation([1, 2]) is None


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (png(), ("image/png", 2, 3)),
        (gif(), ("image/gif", 4, 5)),
        (jpeg(), ("image/jpeg", 6, 7)),
        (webp(), ("image/webp", 8, 9)),
    ],
)
def test_image_sizes_come_from_headers(data: bytes, expected: tuple[str, int, int]) -> None:
    assert image_size(data) == expected


def test_not_an_image_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="not a PNG, JPEG, WebP or GIF"):
        read_conversation(
            [
                {
                    "role": "user",
                    "content": [{"type": "image", "data": base64.b64encode(b"<svg/>").decode()}],
                }
            ]
        )


def test_remote_urls_are_never_fetched() -> None:
    with pytest.raises(ConfigurationError, match="not fetched"):
        read_conversation(
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "image_url", "image_url": {"url": "http://127.0.0.1:9/x.png"}}
                    ],
                }
            ]
        )


def test_file_paths_only_in_local_use(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(png(5, 5))
    message = [{"role": "user", "content": [{"type": "image", "path": "a.png"}]}]
    with pytest.raises(ConfigurationError, match="local use"):
        read_conversation(message)
    conversation = read_conversation(message, base_dir=tmp_path)
    assert conversation is not None and conversation.images[0].width == 5
    escape = [{"role": "user", "content": [{"type": "image", "path": "../etc/passwd"}]}]
    with pytest.raises(ConfigurationError, match="no image file"):
        read_conversation(escape, base_dir=tmp_path)


@pytest.mark.parametrize(
    ("bounds", "content", "bound"),
    [
        (
            ConversationBounds(max_messages=2),
            [{"role": "user", "content": "x"}] * 3,
            "max_messages",
        ),
        (ConversationBounds(max_parts=1), [{"role": "user", "content": ["a", "b"]}], "max_parts"),
        (
            ConversationBounds(max_images=1),
            [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": data_url(png())}}] * 2,
                }
            ],
            "max_images",
        ),
        (
            ConversationBounds(max_image_bytes=10),
            [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": data_url(png())}}],
                }
            ],
            "max_image_bytes",
        ),
        (
            ConversationBounds(max_image_pixels=100),
            [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": data_url(png(20, 20))}}],
                }
            ],
            "max_image_pixels",
        ),
    ],
)
def test_bounds_name_themselves(bounds: ConversationBounds, content: object, bound: str) -> None:
    with pytest.raises(ContentBoundsError, match=bound) as caught:
        read_conversation(content, bounds=bounds)
    assert caught.value.bound == bound


def test_declared_media_type_must_match_the_bytes() -> None:
    with pytest.raises(ConfigurationError, match="declared image/jpeg"):
        read_conversation(
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "image_url", "image_url": {"url": data_url(png(), "image/jpeg")}}
                    ],
                }
            ]
        )


def test_schemas_are_published() -> None:
    schemas = content_schemas()
    assert set(schemas) == {"conversation", "message", "image"}
    json.dumps(schemas)
    assert ImagePart.model_json_schema()["properties"]["media_type"]["enum"] == [
        "image/png",
        "image/jpeg",
        "image/webp",
        "image/gif",
    ]


def test_rubricflow_schema_content_prints_the_shapes() -> None:
    from typer.testing import CliRunner

    from rubricflow.cli import app

    result = CliRunner().invoke(app, ["schema", "--content"])
    assert result.exit_code == 0, result.output
    assert set(json.loads(result.stdout)) == {"conversation", "message", "image"}


def test_a_bad_conversation_is_refused_at_the_door() -> None:
    from rubricflow.targets import as_target

    remote = [
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": "https://x.invalid/a.png"}}],
        }
    ]
    with pytest.raises(ConfigurationError, match="not fetched"):
        as_target(remote)
    with pytest.raises(ConfigurationError, match="not fetched"):
        as_target({"content": remote})
    assert as_target(OPENAI).content == OPENAI

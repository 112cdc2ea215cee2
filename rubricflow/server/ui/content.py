"""An artifact's content as a reviewer reads it, by kind: markdown rendered, JSON
pretty-printed, a conversation turn by turn with its tool calls and results, and plain
text as it is.

The content under review is data, never a template: it is turned into HTML here, every
piece escaped, and handed to the page as finished markup. Markdown is rendered by
markdown-it-py (CommonMark) with raw HTML off (a `<script>` in the content is shown as
text), link targets checked (no `javascript:`, `vbscript:`, `file:` or `data:` links) and
images off (the page fetches nothing the content names); links get `rel="nofollow
noopener noreferrer"`. A conversation's images are its own inline bytes (data URLs).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from markupsafe import Markup

from rubricflow.conversation import Conversation, Message, read_conversation
from rubricflow.errors import RubricflowError

__all__ = ["ContentView", "looks_like_markdown", "markdown_html", "render_content"]

# a line that only markdown writes: a heading, a list item, a fence, a quote, a table rule
_MARKDOWN_LINE = re.compile(
    r"^(?:#{1,6}\s+\S|\s{0,3}(?:[-*+]|\d{1,3}[.)])\s+\S|\s{0,3}(?:```|~~~)|>\s|"
    r"\|?\s*:?-{3,}:?\s*\|)",
    re.MULTILINE,
)
# inline markdown: **strong**, `code`, [a link](target)
_MARKDOWN_INLINE = re.compile(r"\*\*[^*\n]+\*\*|`[^`\n]+`|\[[^\]\n]+\]\([^)\s]+\)")
_ROLE_LABELS = {"system": "System", "user": "User", "assistant": "Assistant", "tool": "Tool"}


@dataclass(frozen=True)
class ContentView:
    """The content rendered for the page: its kind (`markdown`, `json`, `conversation`,
    `text`), a label for people, and the finished, escaped HTML."""

    kind: str
    label: str
    html: Markup


def looks_like_markdown(text: str) -> bool:
    """Whether `text` is written in markdown (a heading, a list, a fence, a quote, a
    table, strong text, code or a link): plain prose stays as it was written."""
    return bool(_MARKDOWN_LINE.search(text) or _MARKDOWN_INLINE.search(text))


@cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "breaks": True})
    md.enable("table").enable("strikethrough")
    md.disable("image")

    def link_open(renderer: Any, tokens: Any, index: int, options: Any, env: Any) -> str:
        tokens[index].attrSet("rel", "nofollow noopener noreferrer")
        return str(renderer.renderToken(tokens, index, options, env))

    md.add_render_rule("link_open", link_open)
    return md


def markdown_html(text: str) -> Markup:
    """`text` as HTML: markdown rendered with raw HTML escaped and unsafe links dropped."""
    return Markup(_markdown().render(text))  # markdown-it escapes the text


def _prose(text: str) -> Markup:
    if looks_like_markdown(text):
        return Markup('<div class="markdown" dir="auto">{}</div>').format(markdown_html(text))
    return Markup('<p class="prose" dir="auto">{}</p>').format(text)


def _json_block(value: Any, label: str) -> Markup:
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return Markup('<pre class="json" tabindex="0" aria-label="{}">{}</pre>').format(label, text)


def _message(index: int, message: Message) -> Markup:
    role = _ROLE_LABELS.get(message.role, message.role)
    heading = Markup("{}{}").format(role, f" · {message.name}" if message.name else "")
    if message.role == "tool" and message.tool_call_id:
        heading += Markup(' <span class="muted">result of call {}</span>').format(
            message.tool_call_id
        )
    parts: list[Markup] = []
    if message.text:
        parts.append(_prose(message.text))
    for image in message.images:
        parts.append(
            Markup('<img class="turn-image" src="{}" alt="{}">').format(
                image.data_url, image.alt or f"image in message {index + 1}"
            )
        )
    for call in message.tool_calls:
        parts.append(
            Markup(
                '<div class="tool-call"><p><span class="badge">tool call</span> '
                "<code>{}</code>{}</p>{}</div>"
            ).format(
                call.name,
                Markup(' <span class="muted">id {}</span>').format(call.id) if call.id else "",
                _json_block(call.arguments, f"Arguments of {call.name}"),
            )
        )
    return Markup(
        '<li class="turn role-{}" data-role="{}"><p class="turn-head">'
        '<span class="turn-number">{}</span> {}</p>{}</li>'
    ).format(message.role, message.role, index + 1, heading, Markup("").join(parts))


def _conversation(conversation: Conversation) -> Markup:
    turns = Markup("").join(_message(i, m) for i, m in enumerate(conversation.messages))
    calls = conversation.tool_calls()
    trajectory = Markup("")
    if calls:
        steps = Markup("").join(
            Markup('<li><code>{}</code> <span class="muted">message {}</span></li>').format(
                call.name, index + 1
            )
            for index, call in calls
        )
        trajectory = Markup(
            '<details class="trajectory" open><summary>Trajectory: {} tool call{}</summary>'
            "<ol>{}</ol></details>"
        ).format(len(calls), "" if len(calls) == 1 else "s", steps)
    return Markup('{}<ol class="conversation">{}</ol>').format(trajectory, turns)


def _read(content: Any) -> Conversation | None:
    try:
        return read_conversation(content)
    except (RubricflowError, ValueError):
        return None  # not a conversation we can read: shown as JSON


def render_content(content: Any, *, text: str, cut: bool) -> ContentView:
    """`content` rendered by kind; `text` is its plain form as the page may show it (cut
    at the page's limit when `cut`: then it is shown as plain text, since a cut document
    does not parse)."""
    if cut:
        return ContentView("text", "text, cut", _pre(text))
    if isinstance(content, str):
        if looks_like_markdown(content):
            return ContentView(
                "markdown",
                "markdown",
                Markup('<div class="markdown" dir="auto">{}</div>').format(markdown_html(content)),
            )
        return ContentView("text", "text", _pre(text))
    conversation = _read(content)
    if conversation is not None:
        turns = len(conversation.messages)
        label = f"conversation, {turns} message{'' if turns == 1 else 's'}"
        return ContentView("conversation", label, _conversation(conversation))
    return ContentView("json", "JSON", _pre(text, kind="json"))


def _pre(text: str, *, kind: str = "text") -> Markup:
    return Markup('<pre class="content" dir="auto" tabindex="0" data-kind="{}">{}</pre>').format(
        kind, text
    )

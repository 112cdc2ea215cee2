"""Reading a trainer's batch: completion and prompt text, and per-prompt rubric columns.

A `rubric` column may hold, for each prompt, a native rubric (a mapping or YAML/JSON
text), a `rubric`-package list (`[{requirement, weight}]`) or Rubrics-as-Rewards items
(`[{title, description, weight}]`, negative weights for pitfalls). Each distinct content
is parsed once and kept by its content hash, so a batch of G completions per prompt (and
the same prompt again next epoch) parses its rubric once.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from rubricflow.errors import RubricLoadError
from rubricflow.formats import load_document
from rubricflow.formats.document import parse_text
from rubricflow.formats.rar import is_rar_item, rar_rubric
from rubricflow.model import Rubric, parse_rubric
from rubricflow.results import canonical_json

__all__ = ["RubricColumnCache", "completion_content", "completion_text", "prompt_text"]


def completion_text(completion: Any) -> str:
    """A completion as text: plain text as is; a chat-message list (TRL's conversational
    completions, `[{"role": "assistant", "content": ...}]`) as its assistant content."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        return _content(completion.get("content"))
    if isinstance(completion, list | tuple):
        replies = [m for m in completion if isinstance(m, Mapping) and m.get("role") == "assistant"]
        chosen = replies or [m for m in completion if isinstance(m, Mapping)]
        return "\n".join(_content(m.get("content")) for m in chosen)
    return "" if completion is None else str(completion)


def _is_messages(value: Any) -> bool:
    return (
        isinstance(value, list | tuple)
        and bool(value)
        and all(isinstance(m, Mapping) and isinstance(m.get("role"), str) for m in value)
    )


def _multi_turn(completion: Sequence[Mapping[str, Any]]) -> bool:
    """More than one message, or a message with tool calls, a tool result or non-text
    parts (images): a conversation, not one reply's text."""
    if len(completion) > 1:
        return True
    (message,) = completion
    content = message.get("content")
    return (
        message.get("role") != "assistant"
        or bool(message.get("tool_calls"))
        or (
            isinstance(content, list)
            and any(not (isinstance(p, Mapping) and p.get("type") == "text") for p in content)
        )
    )


def completion_content(completion: Any, prompt: Any = None) -> Any:
    """What a completion is judged as: its text, or, for a multi-turn completion (a list
    of messages: verifiers' multi-turn environments, TRL's conversational datasets with
    tool calls), the conversation itself, the prompt's messages first, so each turn, the
    tool calls and any images are there for scoped criteria and the judge. A single
    assistant message of text stays its text."""
    if _is_messages(completion) and _multi_turn(completion):
        before = list(prompt) if _is_messages(prompt) else []
        if isinstance(prompt, str) and prompt:
            before = [{"role": "user", "content": prompt}]
        return [dict(m) for m in (*before, *completion)]
    return completion_text(completion)


def prompt_text(prompt: Any) -> str | None:
    """A prompt as text for the judge: chat messages become `role: content` lines."""
    if prompt is None or isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Mapping):
        return _content(prompt.get("content"))
    if isinstance(prompt, list | tuple):
        return "\n".join(
            f"{m.get('role', 'user')}: {_content(m.get('content'))}"
            for m in prompt
            if isinstance(m, Mapping)
        )
    return str(prompt)


def _content(content: Any) -> str:
    """Message content: text, or a list of parts whose text parts are joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", "")) if isinstance(part, Mapping) else str(part)
            for part in content
        )
    return "" if content is None else str(content)


def _key(value: Any) -> str:
    if isinstance(value, str):
        return "t:" + hashlib.sha256(value.encode("utf-8")).hexdigest()
    return "j:" + hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


class RubricColumnCache:
    """Per-prompt rubrics parsed once per distinct content, kept by content hash (at most
    `size` of them, least recently used dropped first). Thread-safe."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self.parses = 0
        """How many contents were parsed (a hit parses nothing)."""
        self._rubrics: OrderedDict[str, Rubric] = OrderedDict()
        self._lock = threading.Lock()

    def rubric(self, value: Any) -> Rubric:
        """The rubric a column cell holds; `RubricLoadError` or `RubricValidationError`
        naming the cell's problem when it holds none."""
        if isinstance(value, Rubric):
            return value
        key = _key(value)
        with self._lock:
            found = self._rubrics.get(key)
            if found is not None:
                self._rubrics.move_to_end(key)
                return found
        rubric = parse_rubric_cell(value, key[2:14])
        with self._lock:
            self.parses += 1
            self._rubrics[key] = rubric
            while len(self._rubrics) > self.size:
                self._rubrics.popitem(last=False)
        return rubric


def parse_rubric_cell(value: Any, digest: str) -> Rubric:
    """One rubric from a column cell (see the module); its id is `prompt-<hash>` unless
    the document names one."""
    source = f"<rubric column {digest}>"
    document = parse_text(value, source) if isinstance(value, str) else value
    rubric_id = f"prompt-{digest}"
    if isinstance(document, list) and document and all(is_rar_item(i) for i in document):
        return rar_rubric(document, rubric_id=rubric_id, source=source)
    if isinstance(document, Mapping) and "criteria" in document and "id" not in document:
        document = {"id": rubric_id, **document}
    if isinstance(document, list | Mapping):
        loaded = load_document(document, source=source)
        if len(loaded.rubrics) != 1:
            raise RubricLoadError(
                f"holds {len(loaded.rubrics)} rubrics; a rubric column cell holds one", source
            )
        rubric = loaded.rubrics[0]
        if rubric.id in ("rubric", "rar"):  # an importer's fallback id: name it by content
            rubric = parse_rubric({**rubric.to_dict(), "id": rubric_id}, source)
        return rubric
    raise RubricLoadError(
        "a rubric column cell holds a rubric mapping, YAML/JSON text, a `rubric`-package "
        "list or Rubrics-as-Rewards items, not "
        f"{type(document).__name__}",
        source,
    )

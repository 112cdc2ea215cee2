"""Bounds on the JSON content strangers send: artifact content and metadata, and the
targets of an evaluation.

Content nested hundreds of levels deep, a list of millions of items or a string of
gigabytes costs every later step: the store, the type's schema check, the scorers, and
every listing that serialises it again (pydantic's serialiser stops at 255 levels, so a
row nested 256 deep made each listing that held it a 500). `check_content_bounds` refuses
such content at the door, before anything is stored, with a `ContentBoundsError` that
names the bound and the path into the content (`$.a[3].b`).

`shown_within_depth` is for reading: a row stored before the bounds existed, nested deeper
than `MAX_SHOWN_DEPTH`, is shown cut there, each cut container replaced by `CUT_MARKER`,
instead of failing the response it is in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rubricflow.errors import ContentBoundsError

__all__ = [
    "CUT_MARKER",
    "DEFAULT_BOUNDS",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_ITEMS",
    "DEFAULT_MAX_STRING_LENGTH",
    "DEFAULT_MAX_TOTAL_BYTES",
    "MAX_SHOWN_DEPTH",
    "ContentBounds",
    "check_content_bounds",
    "shown_within_depth",
]

DEFAULT_MAX_DEPTH = 64
"""Deepest nesting of objects and lists in content (the top level is depth 0)."""
DEFAULT_MAX_ITEMS = 100_000
"""Most items in one list, or keys in one object."""
DEFAULT_MAX_STRING_LENGTH = 5_000_000
"""Longest string (a value or a key), in characters."""
DEFAULT_MAX_TOTAL_BYTES = 10 * 1024 * 1024
"""Largest content as compact JSON, in UTF-8 bytes (the server's default body limit)."""
MAX_SHOWN_DEPTH = 200
"""Deepest nesting shown when stored content is read; deeper parts are cut (rows stored
before the bounds existed). `max_depth` cannot be set above it."""
CUT_MARKER = f"[cut: nested deeper than {MAX_SHOWN_DEPTH} levels]"
"""What stands in for a container cut when stored content is shown."""

_CONTAINERS = (dict, list, tuple)
# (parent link, key): the path to a value, built into text only for a message
_Link = tuple[Any, str | int] | None


@dataclass(frozen=True)
class ContentBounds:
    """The bounds content must keep; the defaults suit review content (a document, a
    structured answer), far beyond what one needs, far below what harms the server."""

    max_depth: int = DEFAULT_MAX_DEPTH
    max_items: int = DEFAULT_MAX_ITEMS
    max_string_length: int = DEFAULT_MAX_STRING_LENGTH
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES

    def __post_init__(self) -> None:
        for name in ("max_depth", "max_items", "max_string_length", "max_total_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"content bound {name} must be 1 or more")
        if self.max_depth > MAX_SHOWN_DEPTH:
            raise ValueError(
                f"content bound max_depth must be at most {MAX_SHOWN_DEPTH} (stored content "
                "deeper than that is cut when shown)"
            )


DEFAULT_BOUNDS = ContentBounds()


def check_content_bounds(
    value: Any, what: str = "content", bounds: ContentBounds = DEFAULT_BOUNDS
) -> None:
    """Refuse `value` (`what` names it in the message: "artifact content") when it nests
    deeper than `bounds.max_depth`, holds a container of more than `max_items` items or a
    string longer than `max_string_length`, or is larger than `max_total_bytes` as JSON.
    Walks the value without recursion, stopping at the first bound broken."""
    total = 0
    stack: list[tuple[Any, int, _Link]] = [(value, 0, None)]
    while stack:
        item, depth, link = stack.pop()
        if isinstance(item, str):
            total += _string_bytes(item, what, link, bounds) + 2
        elif isinstance(item, dict | list | tuple):
            _check_container(item, depth, what, link, bounds)
            total += 2 + len(item)
            if isinstance(item, dict):
                for key, child in item.items():
                    if isinstance(key, str):
                        total += _string_bytes(key, what, (link, key), bounds) + 3
                    stack.append((child, depth + 1, (link, key)))
            else:
                stack.extend((child, depth + 1, (link, index)) for index, child in enumerate(item))
        else:
            total += _scalar_bytes(item)
        if total > bounds.max_total_bytes:
            raise ContentBoundsError(
                f"{what} is larger than {bounds.max_total_bytes} bytes as JSON (the content "
                f"bound max_total_bytes; passed at {_path(link)}); send less, or store it "
                "elsewhere and send a reference to it",
                bound="max_total_bytes",
                path=_path(link),
            )


def _check_container(
    item: dict[Any, Any] | list[Any] | tuple[Any, ...],
    depth: int,
    what: str,
    link: _Link,
    bounds: ContentBounds,
) -> None:
    if depth >= bounds.max_depth:
        raise ContentBoundsError(
            f"{what} nests objects and lists more than {bounds.max_depth} levels deep, at "
            f"{_path(link)} (the content bound max_depth); flatten it",
            bound="max_depth",
            path=_path(link),
        )
    if len(item) > bounds.max_items:
        kind = "an object" if isinstance(item, dict) else "a list"
        unit = "keys" if isinstance(item, dict) else "items"
        raise ContentBoundsError(
            f"{what} holds {kind} of {len(item)} {unit} at {_path(link)}, more than "
            f"{bounds.max_items} (the content bound max_items, per object or list); split it",
            bound="max_items",
            path=_path(link),
        )


def _string_bytes(text: str, what: str, link: _Link, bounds: ContentBounds) -> int:
    if len(text) > bounds.max_string_length:
        raise ContentBoundsError(
            f"{what} holds a string of {len(text)} characters at {_path(link)}, more than "
            f"{bounds.max_string_length} (the content bound max_string_length); shorten it",
            bound="max_string_length",
            path=_path(link),
        )
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _scalar_bytes(item: Any) -> int:
    if isinstance(item, bool) or item is None:
        return 5
    if isinstance(item, int):  # without str(): a huge int refuses to become text
        return int(abs(item).bit_length() * math.log10(2)) + 2
    if isinstance(item, float):
        return len(repr(item))  # what JSON writes (at most 24 characters)
    return 24  # anything else check_json refuses


def _path(link: _Link) -> str:
    """`$`, `$.key`, `$[3]` or `$["odd key"]` for the value at `link`; a long path keeps
    its start and end."""
    parts: list[str] = []
    while link is not None:
        link, key = link
        if isinstance(key, int):
            parts.append(f"[{key}]")
        elif isinstance(key, str) and key.isidentifier():
            parts.append(f".{key[:40]}")
        else:
            parts.append(f"[{str(key)[:40]!r}]")
    parts.reverse()
    if len(parts) > 12:
        parts = [*parts[:6], f"(...{len(parts) - 10} more...)", *parts[-4:]]
    return "$" + "".join(parts)


def shown_within_depth(value: Any, max_depth: int = MAX_SHOWN_DEPTH) -> Any:
    """`value` as it is when it nests at most `max_depth` levels (the usual case: nothing
    is copied); otherwise a copy whose containers at depth `max_depth` are replaced by
    `CUT_MARKER`. For showing stored content: a serialiser with a recursion limit, or a
    reader, never meets deeper content."""
    if not _deeper_than(value, max_depth):
        return value
    return _cut(value, max_depth)


def _deeper_than(value: Any, max_depth: int) -> bool:
    """Whether a container sits at depth `max_depth` or deeper; level by level, looking
    only at containers (fast: a listing checks every artifact it shows)."""
    level: list[Any] = [value] if isinstance(value, _CONTAINERS) else []
    depth = 0
    while level:
        if depth >= max_depth:
            return True
        below: list[Any] = []
        for item in level:
            children = item.values() if isinstance(item, dict) else item
            below += [child for child in children if isinstance(child, _CONTAINERS)]
        level = below
        depth += 1
    return False


def _cut(value: Any, max_depth: int) -> Any:
    """A copy of `value` cut at `max_depth`, built without recursion."""

    def shell(item: Any, depth: int) -> Any:
        if not isinstance(item, dict | list | tuple):
            return item
        if depth >= max_depth:
            return CUT_MARKER
        made: Any = {} if isinstance(item, dict) else []
        pending.append((item, made, depth))
        return made

    pending: list[tuple[Any, Any, int]] = []
    root = shell(value, 0)
    while pending:
        item, made, depth = pending.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                made[key] = shell(child, depth + 1)
        else:
            made.extend(shell(child, depth + 1) for child in item)
    return root

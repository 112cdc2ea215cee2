"""Read targets to evaluate: one object in a JSON/YAML file, a JSONL stream, or stdin.

JSONL is read line by line, so a file of a million targets is never held in memory; a
line longer than `RUBRICFLOW_MAX_LINE_BYTES` is refused with its number, and a JSON/YAML
document (a file or stdin) larger than `RUBRICFLOW_MAX_INPUT_BYTES`. A target file must be
a regular file (a named pipe or a device is refused; stdin may be a pipe).
Every problem is a `TargetInputError` naming the file and line.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from rubricflow.conversation import conversation_of, inline_images
from rubricflow.errors import ConfigurationError, RubricflowError
from rubricflow.formats.document import (
    INPUT_SETTING,
    lone_surrogate,
    max_input_bytes,
    open_regular_file,
    parse_text,
    read_capped,
)
from rubricflow.jsonl import bounded_lines, json_lines
from rubricflow.results import Target

__all__ = ["TargetInputError", "as_target", "read_targets"]


class TargetInputError(RubricflowError):
    """A target file cannot be read or holds something that is not a target."""


def as_target(
    value: Target | Mapping[str, Any] | str | list[Any], *, base_dir: Path | None = None
) -> Target:
    """Accept a `Target`, a mapping with `content` (and optional id, query, reference,
    metadata), plain text, or a conversation (a list of messages, each with a `role`).
    `base_dir` (local use: the folder of the file the target came from) lets a
    conversation name image files inside it; they are read and put inline."""
    if isinstance(value, Target):
        return value
    _refuse_lone_surrogates(value)
    if isinstance(value, str):
        return Target(content=value)
    if _is_conversation(value):
        target = Target(content=inline_images(list(value), base_dir))
        conversation_of(target)  # its shape and bounds, refused here with the path
        return target
    if isinstance(value, Mapping):
        if "content" not in value:
            raise ConfigurationError(
                "a target needs `content` (plus optional id, query, reference, metadata); "
                f"got keys {', '.join(map(str, value)) or 'none'}"
            )
        data = dict(value)
        if isinstance(data.get("id"), int | float) and not isinstance(data.get("id"), bool):
            data["id"] = str(data["id"])
        data["content"] = inline_images(data["content"], base_dir)
        try:
            target = Target.model_validate(data)
        except ValidationError as error:
            detail = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()
            )
            raise ConfigurationError(f"invalid target: {detail}") from None
        conversation_of(target)  # a conversation's shape and bounds, at the door
        return target
    raise ConfigurationError(
        f"a target is text or a mapping with `content`, got {type(value).__name__}"
    )


def _is_conversation(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, Mapping) and isinstance(m.get("role"), str) for m in value)
    )


def _refuse_lone_surrogates(value: Any) -> None:
    """Text with half of a UTF-16 pair (`\\ud800`, e.g. an emoji cut in two) cannot be
    hashed, stored or sent to a judge: refuse it up front, saying where."""
    shown = lone_surrogate(value)
    if shown is not None:
        raise ConfigurationError(
            f"the target holds a lone surrogate ({shown}): half of a character, e.g. an emoji "
            "cut in two; repair or drop that text"
        )


def _target(value: Any, where: str, base_dir: Path | None = None) -> Target:
    if not isinstance(value, dict):
        raise TargetInputError(
            f"{where}: a target is an object with `content` (and optional id, query, "
            f"reference, metadata), got {type(value).__name__}"
        )
    try:
        return as_target(value, base_dir=base_dir)
    except ConfigurationError as error:
        raise TargetInputError(f"{where}: {error}") from None


def _jsonl(lines: Iterator[str], name: str, base_dir: Path | None = None) -> Iterator[Target]:
    for number, value in json_lines(lines, name, TargetInputError):
        target = _target(value, f"{name} line {number}", base_dir)
        if target.id is None:
            target = target.model_copy(update={"id": f"line-{number}"})
        yield target


def read_targets(source: str | Path, *, base_dir: Path | None = None) -> Iterator[Target]:
    """Targets from `source`: a .jsonl file (streamed), a .json/.yaml file holding one
    target object, or `-` for stdin (JSONL, or one JSON/YAML object). With `base_dir`
    (local use), a conversation's image file paths are read inside that folder."""
    if str(source) == "-":
        yield from _stdin(base_dir)
        return
    path = Path(source)
    name = str(source)

    def refuse(reason: str) -> TargetInputError:
        return TargetInputError(f"{name}: {reason}")

    with open_regular_file(path, refuse, what="target file (.jsonl, .json or .yaml)") as stream:
        if path.suffix.lower() in (".jsonl", ".ndjson"):
            yield from _jsonl(bounded_lines(stream, name, TargetInputError), name, base_dir)
            return
        raw = read_capped(stream, refuse, what="the file")
    yield from _document(_utf8(raw, name), name, path.suffix, base_dir)


def _utf8(raw: bytes, name: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise TargetInputError(f"{name}: not UTF-8 text; save it as UTF-8") from None


def _document(text: str, name: str, suffix: str, base_dir: Path | None = None) -> Iterator[Target]:
    try:
        value = parse_text(text, name, suffix=suffix)
    except RubricflowError as error:
        raise TargetInputError(str(error)) from None
    yield _target(value, name, base_dir)


def _stdin(base_dir: Path | None = None) -> Iterator[Target]:
    """JSONL or one JSON/YAML document from stdin, told apart by the first non-blank
    line; read in bounded pieces like a file (stdin may be a pipe of any length)."""
    stream: IO[bytes] = (
        sys.stdin.buffer if hasattr(sys.stdin, "buffer") else io.BufferedReader(_Encoded(sys.stdin))
    )
    lines = bounded_lines(stream, "stdin", TargetInputError)
    read: list[str] = []
    while not read or not read[-1].strip():
        try:
            read.append(next(lines))
        except StopIteration:
            break
        except UnicodeDecodeError:
            raise TargetInputError(
                f"stdin line {len(read) + 1}: not UTF-8 text; send UTF-8"
            ) from None
    if not read or not read[-1].strip():
        raise TargetInputError("stdin: no target given")
    try:
        json.loads(read[-1])
    except json.JSONDecodeError:
        head = "".join(read).encode("utf-8")

        def refuse(reason: str) -> TargetInputError:
            return TargetInputError(f"stdin: {reason}")

        rest = _capped_rest(stream, refuse, len(head))
        yield from _document(_utf8(head + rest, "stdin"), "stdin", "", base_dir)
        return
    except (RecursionError, ValueError):
        pass  # json_lines reports it with its line number
    yield from _jsonl(_chain(read, lines), "stdin", base_dir)


def _capped_rest(stream: IO[bytes], refuse: Callable[[str], TargetInputError], used: int) -> bytes:
    """The rest of a document on stdin whose first `used` bytes are read, within the cap."""
    limit = max_input_bytes() - used
    rest = stream.read(limit + 1) if limit >= 0 else b"x"
    if len(rest) > limit:
        raise refuse(
            f"the document is larger than {max_input_bytes():,} bytes, the input size cap; "
            f"send JSONL (one target a line, streamed), or raise the cap with {INPUT_SETTING}"
        )
    return rest


def _chain(first: list[str], rest: Iterator[str]) -> Iterator[str]:
    yield from first
    yield from rest


class _Encoded(io.RawIOBase):
    """A text stream (stdin replaced by a test harness) seen as UTF-8 bytes."""

    def __init__(self, text: IO[str]) -> None:
        self._text = text
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            chunk = self._text.read(65536)
            if not chunk:
                return 0
            self._pending = chunk.encode("utf-8")
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

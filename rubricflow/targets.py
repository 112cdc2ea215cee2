"""Read targets to evaluate: one object in a JSON/YAML file, a JSONL stream, or stdin.

JSONL is read line by line, so a file of a million targets is never held in memory.
Every problem is a `TargetInputError` naming the file and line.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from rubricflow.errors import ConfigurationError, RubricflowError
from rubricflow.formats.document import lone_surrogate, parse_text
from rubricflow.jsonl import json_lines
from rubricflow.results import Target

__all__ = ["TargetInputError", "as_target", "read_targets"]


class TargetInputError(RubricflowError):
    """A target file cannot be read or holds something that is not a target."""


def as_target(value: Target | Mapping[str, Any] | str) -> Target:
    """Accept a `Target`, a mapping with `content` (and optional id, query, reference,
    metadata), or plain text."""
    if isinstance(value, Target):
        return value
    _refuse_lone_surrogates(value)
    if isinstance(value, str):
        return Target(content=value)
    if isinstance(value, Mapping):
        if "content" not in value:
            raise ConfigurationError(
                "a target needs `content` (plus optional id, query, reference, metadata); "
                f"got keys {', '.join(map(str, value)) or 'none'}"
            )
        data = dict(value)
        if isinstance(data.get("id"), int | float) and not isinstance(data.get("id"), bool):
            data["id"] = str(data["id"])
        try:
            return Target.model_validate(data)
        except ValidationError as error:
            detail = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()
            )
            raise ConfigurationError(f"invalid target: {detail}") from None
    raise ConfigurationError(
        f"a target is text or a mapping with `content`, got {type(value).__name__}"
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


def _target(value: Any, where: str) -> Target:
    if not isinstance(value, dict):
        raise TargetInputError(
            f"{where}: a target is an object with `content` (and optional id, query, "
            f"reference, metadata), got {type(value).__name__}"
        )
    try:
        return as_target(value)
    except ConfigurationError as error:
        raise TargetInputError(f"{where}: {error}") from None


def _jsonl(
    stream: IO[str], name: str, first: str | None = None, start: int = 1
) -> Iterator[Target]:
    lines = stream if first is None else _prepend(first, stream)
    for number, value in json_lines(lines, name, TargetInputError, start=start):
        target = _target(value, f"{name} line {number}")
        if target.id is None:
            target = target.model_copy(update={"id": f"line-{number}"})
        yield target


def _prepend(first: str, rest: IO[str]) -> Iterator[str]:
    yield first
    yield from rest


def read_targets(source: str | Path) -> Iterator[Target]:
    """Targets from `source`: a .jsonl file (streamed), a .json/.yaml file holding one
    target object, or `-` for stdin (JSONL, or one JSON/YAML object)."""
    if str(source) == "-":
        yield from _stdin()
        return
    path = Path(source)
    name = str(source)
    if not path.is_file():
        raise TargetInputError(f"{name}: no such file; check the path")
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        try:
            with path.open(encoding="utf-8") as stream:
                yield from _jsonl(stream, name)
        except UnicodeDecodeError:
            raise TargetInputError(f"{name}: not UTF-8 text; save it as UTF-8") from None
        return
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise TargetInputError(f"{name}: cannot read: {error}") from None
    yield from _document(text, name, path.suffix)


def _document(text: str, name: str, suffix: str) -> Iterator[Target]:
    try:
        value = parse_text(text, name, suffix=suffix)
    except RubricflowError as error:
        raise TargetInputError(str(error)) from None
    yield _target(value, name)


def _stdin() -> Iterator[Target]:
    try:
        yield from _stdin_targets()
    except UnicodeDecodeError:
        raise TargetInputError("stdin: not UTF-8 text; send UTF-8") from None


def _stdin_targets() -> Iterator[Target]:
    stream = (
        io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8")
        if hasattr(sys.stdin, "buffer")
        else sys.stdin
    )
    first = ""
    skipped = 0
    for line in stream:
        if line.strip():
            first = line
            break
        skipped += 1
    if not first:
        raise TargetInputError("stdin: no target given")
    try:
        json.loads(first)
    except json.JSONDecodeError:
        yield from _document(first + stream.read(), "stdin", "")
        return
    yield from _jsonl(stream, "stdin", first, start=skipped + 1)

"""Reading JSON Lines input: one value per non-blank line, a malformed line reported by
file, line and column (targets, suite outputs, calibration labels all read this way)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["json_lines"]


def json_lines(
    lines: Iterable[str],
    name: str,
    error: Callable[[str], Exception],
    *,
    start: int = 1,
    hint: str = "",
) -> Iterator[tuple[int, Any]]:
    """(line number, decoded value) for each non-blank line of `lines` (numbered from
    `start`). A line that is not JSON raises `error("NAME line N: malformed JSON at column
    C: why" + hint)`."""
    for number, line in enumerate(lines, start=start):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as failure:
            raise error(
                f"{name} line {number}: malformed JSON at column {failure.colno}: "
                f"{failure.msg}{hint}"
            ) from None
        yield number, value

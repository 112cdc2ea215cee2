"""Reading JSON Lines input: one value per non-blank line, a malformed line reported by
file, line and column (targets, suite outputs, calibration labels all read this way)."""

from __future__ import annotations

import json
import sys
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
    C: why" + hint)`; so does a line nested too deep for the decoder or holding a number
    too long to convert, and text that is not UTF-8."""
    numbered = enumerate(lines, start=start)
    number = start - 1
    while True:
        try:
            number, line = next(numbered)
        except StopIteration:
            return
        except UnicodeDecodeError:
            raise error(
                f"{name} line {number + 1}: not UTF-8 text; save it as UTF-8{hint}"
            ) from None
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as failure:
            raise error(
                f"{name} line {number}: malformed JSON at column {failure.colno}: "
                f"{failure.msg}{hint}"
            ) from None
        except RecursionError:
            raise error(
                f"{name} line {number}: the value is nested too deeply to read; flatten it{hint}"
            ) from None
        except ValueError:  # an integer with more digits than Python converts
            raise error(
                f"{name} line {number}: holds a number with more than "
                f"{sys.get_int_max_str_digits():,} digits; give such a number as a string{hint}"
            ) from None
        yield number, value

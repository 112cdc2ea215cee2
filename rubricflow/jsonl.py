"""Reading JSON Lines input: one value per non-blank line, a malformed line reported by
file, line and column (targets, suite outputs, calibration labels all read this way).

`bounded_lines` reads the lines from a binary stream in bounded chunks: a line longer
than `RUBRICFLOW_MAX_LINE_BYTES` (default 10 MiB) is refused with its number after at
most that many bytes are read, so memory stays bounded whatever the file holds."""

from __future__ import annotations

import codecs
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from rubricflow.formats.document import LINE_SETTING, max_line_bytes

__all__ = ["bounded_lines", "json_lines"]


def bounded_lines(
    stream: IO[bytes],
    name: str,
    error: Callable[[str], Exception],
    *,
    start: int = 1,
    hint: str = "",
) -> Iterator[str]:
    """Each line of binary `stream` decoded as UTF-8 (a leading byte-order mark dropped),
    blank ones included, so that numbering matches `json_lines`'. A line longer than
    `max_line_bytes()` raises `error("NAME line N: longer than ...")`; a line that is not
    UTF-8 raises `UnicodeDecodeError`, which `json_lines` reports with its number."""
    limit = max_line_bytes()
    number = start
    first = True
    while True:
        raw = stream.readline(limit + 1)
        if not raw:
            return
        if len(raw) > limit and not (len(raw) == limit + 1 and raw.endswith(b"\n")):
            raise error(
                f"{name} line {number}: longer than {limit:,} bytes, the line size cap; "
                f"split the value, or raise the cap with {LINE_SETTING}{hint}"
            )
        if first and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
        first = False
        yield raw.decode("utf-8")
        number += 1


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

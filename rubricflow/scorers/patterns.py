"""Regular expressions from rubrics, bounded where they run.

A rubric's `matches_regex` pattern is untrusted: on Python's `re`, `^(a+)+$` over 37
characters backtracks for hours while holding the GIL, and pins the worker that runs it.
`compile_bounded` compiles a pattern on RE2 (`google-re2`), whose matching time is linear
in the text whatever the pattern. RE2 refuses what it cannot run in linear time
(lookarounds, backreferences, the `x` flag); those patterns fall back to the `regex`
module with a per-search time limit (`RUBRICFLOW_REGEX_TIMEOUT`, default 1 s), and a search
that runs past it raises `RegexLimitError`, which names the limit, so the criterion is an
`error` rather than a hung worker.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import re2
import regex

from rubricflow.settings import current, env_name

__all__ = [
    "REGEX_TIMEOUT_ENV",
    "BoundedPattern",
    "RegexLimitError",
    "compile_bounded",
    "regex_timeout",
]

REGEX_TIMEOUT_ENV = env_name("regex_timeout")
DEFAULT_REGEX_TIMEOUT = 1.0
# flags RE2 takes inline; `x` (verbose) it does not, so such a pattern uses the fallback
_INLINE = {"i": "i", "m": "m", "s": "s"}
_FALLBACK_FLAGS = {
    "i": regex.IGNORECASE,
    "m": regex.MULTILINE,
    "s": regex.DOTALL,
    "x": regex.VERBOSE,
}

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is ours to report, not absl's on stderr


class RegexLimitError(TimeoutError):
    """A search ran past the regular-expression time limit."""


class _Match(Protocol):
    def group(self, index: int = 0) -> Any: ...


def regex_timeout() -> float:
    """Seconds one fallback search may run (`Settings.regex_timeout`, default 1)."""
    return current().regex_timeout


@dataclass(frozen=True)
class BoundedPattern:
    """A compiled pattern whose searches are bounded: linear on RE2, time-limited on the
    fallback (`engine` says which)."""

    pattern: str
    engine: str  # "re2" or "regex"
    _compiled: Any
    timeout: float

    def search(self, text: str) -> _Match | None:
        if self.engine == "re2":
            match: _Match | None = self._compiled.search(text)
            return match
        try:
            found: _Match | None = self._compiled.search(text, timeout=self.timeout)
        except TimeoutError:
            raise self._limit() from None
        return found

    def finditer(self, text: str) -> Iterator[_Match]:
        if self.engine == "re2":
            yield from self._compiled.finditer(text)
            return
        try:
            yield from self._compiled.finditer(text, timeout=self.timeout)
        except TimeoutError:
            raise self._limit() from None

    def _limit(self) -> RegexLimitError:
        return RegexLimitError(
            f"the regular expression /{self.pattern}/ exceeded the {self.timeout:g}s regex time "
            f"limit ({REGEX_TIMEOUT_ENV}): RE2 cannot run it (lookarounds, backreferences or "
            "the x flag) and it backtracks; simplify it (no nested quantifiers such as (a+)+)"
        )


def re2_multiline(pattern: str) -> bool:
    """Whether `pattern` turns multiline mode on inline (`(?m)`, `(?im)`, `(?m:...)`)."""
    return bool(_INLINE_MULTILINE.search(pattern))


_INLINE_MULTILINE = re.compile(r"\(\?[a-zA-Z]*m[a-zA-Z]*[:)]")
#: an end anchor (a `$` not escaped)
_DOLLAR = re.compile(r"(?<!\\)\$")


def compile_bounded(
    pattern: str,
    flags: str = "",
    *,
    timeout: float | None = None,
    where: str = "scoring.config.pattern",
) -> BoundedPattern:
    """`pattern` with `flags` (any of i, m, s, x) on RE2, or on `regex` with a time limit
    when RE2 refuses it. An unknown flag or a pattern neither engine accepts is
    `ValueError` naming it (and `where` it came from)."""
    for flag in flags:
        if flag not in _FALLBACK_FLAGS:
            raise ValueError(
                f"unknown regex flag {flag!r} in scoring.config.flags; use i, m, s or x"
            )
    limit = regex_timeout() if timeout is None else timeout
    # RE2's multiline `^` does not match after a newline that ends the text, where
    # Python's does (`^[a-c]*$` finds an empty line in "0\n"), and RE2's `$` matches only
    # at the very end, where Python's also matches before a final newline (`^[a-c]*$`
    # finds "" in "\n"): such patterns keep Python's meaning on the fallback, which is
    # time-limited all the same
    python_only = "m" in flags or re2_multiline(pattern) or bool(_DOLLAR.search(pattern))
    if "x" not in flags and not python_only:
        inline = "".join(sorted({_INLINE[f] for f in flags}))
        source = f"(?{inline}){pattern}" if inline else pattern
        try:
            return BoundedPattern(pattern, "re2", re2.compile(source, _OPTIONS), limit)
        except re2.error:
            pass  # beyond RE2 (or invalid): the fallback decides
    value = 0
    for flag in flags:
        value |= _FALLBACK_FLAGS[flag]
    try:
        compiled = regex.compile(pattern, value)
    except regex.error as error:
        raise ValueError(f"invalid regex {pattern!r} in {where}: {error}") from None
    return BoundedPattern(pattern, "regex", compiled, limit)

"""The rule for the names users choose: artifact ids, artifact type names, token names.

One rule, used by every front door (the HTTP API's bodies and paths, the CLI, the library's
registry), so an id the CLI accepts is one the API accepts and the other way round:

- 1 to `MAX_ID_LENGTH` characters;
- no control characters (NUL among them: no store keeps it), no lone surrogate (half of a
  UTF-16 pair: no store encodes it);
- no invisible formatting characters: bidi controls (U+202A-U+202E, U+2066-U+2069, the
  marks U+200E, U+200F and U+061C) and zero-width characters (U+200B-U+200D, U+2060,
  U+FEFF). They make two different ids look the same, or one id read backwards
  (`\\u202eabc` shows as `cba`), in a listing, a log or the dashboard.

Over HTTP an id is also one path segment: no `/`, and not `.` or `..` (`ID_PATTERN`, the
pattern the OpenAPI document gives, says the same as `id_problem(..., path_segment=True)`).
"""

from __future__ import annotations

import re
import unicodedata

from pydantic_core import PydanticCustomError

from rubricflow.errors import ConfigurationError
from rubricflow.model import MAX_ID_LENGTH

__all__ = [
    "ID_PATTERN",
    "INVISIBLE_CHARACTERS",
    "check_id",
    "id_problem",
    "invisible_problem",
    "valid_id",
]

#: bidi controls and marks, and zero-width characters: refused in ids, neutralised when
#: the dashboard shows text
INVISIBLE_CHARACTERS = frozenset(
    "\u061c\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
    "\u2060\u2066\u2067\u2068\u2069\ufeff"
)
_INVISIBLE_CLASS = "".join(f"\\u{ord(c):04x}" for c in sorted(INVISIBLE_CHARACTERS))
_REFUSED = f"\\x00-\\x1f\\x7f{_INVISIBLE_CLASS}"
_FIRST = f"[^{_REFUSED}/.]"
_NEXT = f"[^{_REFUSED}/]"

ID_PATTERN = f"^({_FIRST}{_NEXT}*|\\.{_FIRST}{_NEXT}*|\\.\\.{_NEXT}+)$"
"""Ids, types and names over HTTP, as a regular expression (for the OpenAPI document):
what `id_problem(value, path_segment=True)` accepts, but for the length and lone
surrogates (which JSON text and regular expression engines do not all carry)."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _shown(character: str) -> str:
    name = unicodedata.name(character, "")
    code = f"U+{ord(character):04X}"
    return f"{code} ({name})" if name else code


def id_problem(value: str, *, what: str = "the id", path_segment: bool = True) -> str | None:
    """What is wrong with `value` as an id, as a sentence naming `what` and the fix; None
    when it is fine. `path_segment` adds HTTP's rule: no `/`, not `.` or `..`."""
    if not value:
        return f"{what} is empty; give at least one character"
    if len(value) > MAX_ID_LENGTH:
        return f"{what} is {len(value)} characters; the limit is {MAX_ID_LENGTH}: shorten it"
    control = _CONTROL.search(value)
    if control is not None:
        return (
            f"{what} holds the control character {_shown(control.group())}; "
            "use printable characters only"
        )
    surrogate = _SURROGATE.search(value)
    if surrogate is not None:
        return (
            f"{what} holds a lone surrogate (\\u{ord(surrogate.group()):04x}): half of a "
            "character, e.g. an emoji cut in two; repair or drop it"
        )
    invisible = invisible_problem(value, what=what)
    if invisible is not None:
        return invisible
    if path_segment:
        if "/" in value:
            return f"{what} holds '/', which a URL path segment cannot; use another character"
        if value in (".", ".."):
            return f"{what} cannot be {value!r} (a URL path segment would drop it); rename it"
    return None


def invisible_problem(value: str, *, what: str = "the name") -> str | None:
    """The sentence refusing the first bidi control or zero-width character in `value`;
    None when it has none. Part of the id rule; token names (the actors an audit trail
    records) keep it too."""
    invisible = next((c for c in value if c in INVISIBLE_CHARACTERS), None)
    if invisible is None:
        return None
    return (
        f"{what} holds {_shown(invisible)}, an invisible bidi control or zero-width "
        "character that makes names look alike or read backwards; remove it"
    )


def check_id(value: str, *, what: str = "the id", path_segment: bool = True) -> str:
    """`value` if it is a valid id; otherwise a `ConfigurationError` saying why."""
    problem = id_problem(value, what=what, path_segment=path_segment)
    if problem is not None:
        raise ConfigurationError(problem)
    return value


def valid_id(value: str) -> str:
    """The id rule as a pydantic check (`AfterValidator(valid_id)`): its sentence is the
    error's message, naming what is wrong and the fix."""
    problem = id_problem(value, what="the value")
    if problem is not None:
        raise PydanticCustomError("invalid_id", problem)
    return value

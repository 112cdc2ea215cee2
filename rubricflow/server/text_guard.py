"""Text no store can keep is refused at the door, for every route: a 422 naming the
parameter, the same on SQLite and PostgreSQL.

- A NUL character (`%00`) in a path or query parameter: PostgreSQL refuses NUL in text,
  so a lookup holding one failed there (a 500) while SQLite answered 404.
- A lone surrogate (`\\ud800`, half of a UTF-16 pair, sent as a JSON escape) anywhere in
  a JSON body: it cannot be encoded as UTF-8, so it can be neither stored, hashed, sent to
  a judge nor written back in a response.

Text fields of bodies bound for the store refuse NUL in their own models (ids, names,
versions, reasons); content is JSON and keeps a NUL as the escape `\\u0000`.

`refuse_unstorable_text` is an app-wide dependency (`create_app` installs it): it runs
after FastAPI has read the body and before the route's own dependencies and code.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError

from rubricflow.formats.document import lone_surrogate
from rubricflow.model import NUL_MESSAGE

__all__ = ["refuse_unstorable_text"]

#: a JSON escape of a surrogate (`\ud800`..`\udfff`): the only way one reaches a body, as
#: raw UTF-8 cannot encode it; a body without one is not parsed again
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _error(location: tuple[str | int, ...], message: str) -> RequestValidationError:
    return RequestValidationError(
        [{"type": "unstorable_text", "loc": location, "msg": message, "input": None}]
    )


def _is_json(request: Request) -> bool:
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


async def _json_body(request: Request) -> Any:
    """The request's JSON body when it may hold a surrogate escape; None otherwise (or
    when it is not JSON: the route answers that itself)."""
    if request.method in ("GET", "HEAD") or not _is_json(request):
        return None
    body = await request.body()
    if not _SURROGATE_ESCAPE.search(body):
        return None
    try:
        return await request.json()  # parsed once already: Starlette keeps it
    except (ValueError, UnicodeDecodeError):
        return None


async def refuse_unstorable_text(request: Request) -> None:
    """Refuse NUL in path and query parameters, and lone surrogates anywhere in the
    request (its JSON body included), with a 422 naming where."""
    for kind, items in (
        ("path", list(request.path_params.items())),
        ("query", request.query_params.multi_items()),
    ):
        for name, value in items:
            if not isinstance(value, str):
                continue
            if "\x00" in value:
                raise _error((kind, name), NUL_MESSAGE)
            surrogate = lone_surrogate(value)
            if surrogate is not None:
                raise _error((kind, name), _surrogate_message(surrogate))
    body = await _json_body(request)
    if body is not None and lone_surrogate(body) is not None:
        location, shown = _first_surrogate(body)
        raise _error(location, _surrogate_message(shown))


def _first_surrogate(body: Any) -> tuple[tuple[str | int, ...], str]:
    """Where the first lone surrogate of `body` is (`("body", "target", "content")`), and
    it escaped; a loop, not recursion: the body may nest deeper than Python recurses."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [(("body",), body)]
    while stack:
        location, value = stack.pop()
        if isinstance(value, str):
            shown = lone_surrogate(value)
            if shown is not None:
                return location, shown
        elif isinstance(value, dict):
            for key, item in reversed(list(value.items())):
                shown = lone_surrogate(key)
                if shown is not None:
                    return location, shown
                stack.append(((*location, key), item))
        elif isinstance(value, list):
            stack.extend(((*location, i), item) for i, item in reversed(list(enumerate(value))))
    return ("body",), "?"


def _surrogate_message(shown: str) -> str:
    return (
        f"holds a lone surrogate ({shown}): half of a character, e.g. an emoji cut in two, "
        "which no store or judge can take; repair or drop that text"
    )

"""The dashboard's Jinja2 templates: autoescaped, loaded from the package only.

Content under review is data: it reaches a template as a value (escaped on output),
never as template source, and never through `|safe`.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import jinja2
from fastapi import Request
from fastapi.responses import HTMLResponse
from markupsafe import Markup

__all__ = ["STATIC_PREFIX", "environment", "neutral_bidi", "render"]

#: where the static files are served
STATIC_PREFIX = "/ui/static"

_environment: jinja2.Environment | None = None


def _when(value: datetime | None) -> str:
    if value is None:
        return ""
    return value.astimezone(timezone.utc).strftime("%d %b %Y, %H:%M:%S UTC")


def _ago(value: datetime | None) -> str:
    """How long ago, roughly: '5 s', '3 min', '2 h', '4 d'."""
    if value is None:
        return ""
    seconds = max(0, int((datetime.now(timezone.utc) - value).total_seconds()))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def _since(value: datetime | None) -> str:
    """When, for people: 'just now', '3 min ago'."""
    if value is None:
        return ""
    if (datetime.now(timezone.utc) - value).total_seconds() < 60:
        return "just now"
    return f"{_ago(value)} ago"


def _number(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}"


def _percent(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 100:.0f}%"


def _label(value: str) -> str:
    """A state or trigger name for people: 'needs_revision' -> 'needs revision'."""
    return value.replace("_", " ")


def _iso_when(value: str) -> str:
    """A stored ISO time (text) as `when` writes it; the text itself if it is not one."""
    try:
        return _when(datetime.fromisoformat(value))
    except (TypeError, ValueError):
        return value


def _count(value: int | None) -> str:
    """A count with thousands separators: 10,000."""
    return "-" if value is None else f"{value:,}"


def _money(value: float | None) -> str:
    """A judge cost in US dollars (what the providers bill in), to the cent or, under a
    cent, to four significant digits."""
    if value is None:
        return "-"
    return f"US${value:,.2f}" if value >= 0.01 or value == 0 else f"US${value:.4g}"


def _compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


#: bidi embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069): shown as
#: `[U+202E]`, so a title, an id or content cannot reorder the text around it on the page
#: (`\u202eabc` showing as `cba`); RTL text itself is shown with `dir="auto"`
_BIDI_CONTROLS = {c: f"[U+{c:04X}]" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}


def neutral_bidi(value: Any) -> Any:
    """`value` with its bidi controls made visible marks; what is not text is unchanged
    (markup the templates built stays markup). Every `{{ }}` of every template goes
    through it (the environment's `finalize`); also the `bidi` filter."""
    if isinstance(value, Markup):
        return Markup(str(value).translate(_BIDI_CONTROLS))
    if isinstance(value, str):
        return value.translate(_BIDI_CONTROLS)
    return value


def environment() -> jinja2.Environment:
    global _environment
    if _environment is None:
        env = jinja2.Environment(
            loader=jinja2.PackageLoader("rubricflow.server.ui", "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            finalize=neutral_bidi,
        )
        env.filters.update(
            when=_when,
            ago=_ago,
            since=_since,
            number=_number,
            percent=_percent,
            count=_count,
            iso_when=_iso_when,
            money=_money,
            label=_label,
            compact_json=_compact_json,
            bidi=neutral_bidi,
        )
        env.globals["static"] = lambda path: f"{STATIC_PREFIX}/{path}"
        _environment = env
    return _environment


def render(
    request: Request, template: str, context: dict[str, Any], *, status_code: int = 200
) -> HTMLResponse:
    """`template` rendered with `context` (plus the request, who is signed in and the
    CSRF token the page's forms carry) as an HTML response."""
    from rubricflow.server.ui.sessions import csrf_token

    session = getattr(request.state, "ui_session", None)
    response = HTMLResponse("", status_code=status_code)
    values = {
        "request": request,
        "session": session,
        "principal": session.principal if session is not None else None,
        "auth": request.app.state.settings.auth,
        "csrf": csrf_token(request, session, response),
        #: which navigation entry is the current page ("queue", ...)
        "active": "",
        **context,
    }
    body = environment().get_template(template).render(values)
    response.body = response.render(body)
    response.headers["content-length"] = str(len(response.body))
    return response

"""Dashboard sessions and CSRF tokens.

Signing in exchanges an API token for a session cookie. The cookie never holds the token:
it holds the token's id, a random nonce and an expiry, signed with HMAC-SHA256 under a key
the store derives from the token's stored hash (`TokenStore.session_key`), mixed with the
deployment's `RUBRICFLOW_UI_SECRET` when one is set. So every server process of a
deployment (`--workers N`, several hosts on one database) accepts the same cookie with no
shared state and no configuration, a restart signs nobody out, and every request looks
the token up again: a revoked or expired token is signed out at once. Someone who can
read the database could forge a session; set `RUBRICFLOW_UI_SECRET` (the same on every
process) to rule that out.

CSRF: a signed-in form carries an HMAC of the session's nonce under the same key (bound
to the session: useless to anyone without the cookie). Before sign-in, and on a
`--no-auth` server, forms carry a double-submit token: a random value in a SameSite=Strict
cookie that the form repeats.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass

from fastapi import Request, Response

from rubricflow.server.auth import LOCAL_PRINCIPAL, Principal
from rubricflow.settings import current, env_name

__all__ = [
    "CSRF_COOKIE",
    "SECRET_ENV",
    "SESSION_COOKIE",
    "SESSION_SECONDS",
    "Session",
    "check_csrf",
    "clear_session",
    "csrf_token",
    "current_session",
    "start_session",
]

SESSION_COOKIE = "rubricflow_session"
CSRF_COOKIE = "rubricflow_csrf"
SECRET_ENV = env_name("ui_secret")
#: how long a session lasts (never past the token's own expiry)
SESSION_SECONDS = 12 * 3600
_PURPOSE = "rubricflow-ui-session"


@dataclass(frozen=True)
class Session:
    """Who is signed in to the dashboard, and the key that signs their forms."""

    principal: Principal
    token_id: str | None
    nonce: str
    key: bytes


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mix(key: bytes) -> bytes:
    """The store's key for a token, mixed with the deployment's secret when set."""
    secret = current().ui_secret
    if not secret:
        return key
    return hmac.new(secret.encode(), key, hashlib.sha256).digest()


def _secure(request: Request) -> bool:
    return request.url.scheme == "https"


def _set_cookie(response: Response, request: Request, name: str, value: str, age: int) -> None:
    response.set_cookie(
        name,
        value,
        max_age=age,
        path="/ui",
        httponly=True,
        samesite="strict",
        secure=_secure(request),
    )


async def start_session(request: Request, response: Response, presented: str) -> Principal | None:
    """Sign in with the API token `presented`: set the session cookie on `response` and
    return the principal, or None when the token is unknown, revoked or expired."""
    tokens = request.app.state.application.tokens
    token = await tokens.verify(presented.strip())
    if token is None:
        return None
    found = await tokens.session_key(token.id, _PURPOSE)
    if found is None:  # revoked between the two reads
        return None
    _, key = found
    expires = int(time.time()) + SESSION_SECONDS
    if token.expires_at is not None:
        expires = min(expires, int(token.expires_at.timestamp()))
    payload = _b64(json.dumps({"t": token.id, "n": secrets.token_hex(16), "e": expires}).encode())
    mac = _b64(hmac.new(_mix(key), payload.encode(), hashlib.sha256).digest())
    _set_cookie(response, request, SESSION_COOKIE, f"{payload}.{mac}", SESSION_SECONDS)
    return Principal(name=token.name, role=token.role, types=token.types)


def clear_session(request: Request, response: Response) -> None:
    response.delete_cookie(
        SESSION_COOKIE, path="/ui", httponly=True, samesite="strict", secure=_secure(request)
    )


async def current_session(request: Request) -> Session | None:
    """The signed-in session of this request (the local admin's on a `--no-auth`
    server), or None. Checked against the store on every request."""
    cached: Session | None = getattr(request.state, "ui_session", None)
    if cached is not None:
        return cached
    if not request.app.state.settings.auth:
        session = Session(LOCAL_PRINCIPAL, None, "", b"")
        request.state.ui_session = session
        request.state.principal = LOCAL_PRINCIPAL
        return session
    cookie = request.cookies.get(SESSION_COOKIE, "")
    payload, sep, mac = cookie.partition(".")
    if not sep or len(cookie) > 1000:
        return None
    try:
        data = json.loads(_unb64(payload))
        token_id, nonce, expires = str(data["t"]), str(data["n"]), int(data["e"])
        given = _unb64(mac)
    except (ValueError, KeyError, TypeError):
        return None
    if expires < time.time():
        return None
    found = await request.app.state.application.tokens.session_key(token_id, _PURPOSE)
    if found is None:
        return None
    token, key = found
    key = _mix(key)
    if not hmac.compare_digest(hmac.new(key, payload.encode(), hashlib.sha256).digest(), given):
        return None
    principal = Principal(name=token.name, role=token.role, types=token.types)
    session = Session(principal, token_id, nonce, key)
    request.state.ui_session = session
    request.state.principal = principal
    return session


def _double_submit(request: Request, response: Response | None) -> str:
    """The double-submit token of this browser (made, and set on `response`, if new)."""
    value = request.cookies.get(CSRF_COOKIE, "")
    if len(value) != 43:
        value = getattr(request.state, "ui_csrf", "") or secrets.token_urlsafe(32)
        request.state.ui_csrf = value
        if response is not None:
            _set_cookie(response, request, CSRF_COOKIE, value, SESSION_SECONDS)
    return value


def csrf_token(request: Request, session: Session | None, response: Response | None) -> str:
    """The token this request's forms carry."""
    if session is not None and session.token_id is not None:
        return hmac.new(session.key, f"csrf:{session.nonce}".encode(), hashlib.sha256).hexdigest()
    return _double_submit(request, response)


def check_csrf(request: Request, session: Session | None, presented: str) -> bool:
    """Whether a form's token is this session's (or this browser's double-submit one)."""
    if not presented:
        return False
    if session is not None and session.token_id is not None:
        expected = csrf_token(request, session, None)
    else:
        expected = request.cookies.get(CSRF_COOKIE, "")
        if len(expected) != 43:
            return False
    return hmac.compare_digest(expected.encode(), presented.encode())

"""What every dashboard response carries and how its errors look.

`UiRoute` is the route class of the dashboard's router: each response gets the strict
Content-Security-Policy (no inline script or style, nothing from another origin, no
framing), `X-Content-Type-Options: nosniff` and `Referrer-Policy: same-origin`; a
rubricflow error, an HTTP error or invalid input becomes an HTML page with the same
message the API gives (not problem+json: a person reads it), and a page that needs a
signed-in person sends the browser to the sign-in form.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import quote

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException

from rubricflow.errors import IllegalTransitionError, RubricflowError
from rubricflow.server.problems import status_of

__all__ = ["CONTENT_SECURITY_POLICY", "SECURITY_HEADERS", "SignInRequired", "UiRoute"]

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


class SignInRequired(Exception):
    """The page needs a signed-in person: send the browser to the sign-in form."""


def sign_in_redirect(request: Request) -> Response:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    if request.method != "GET" or not target.startswith("/ui"):
        target = "/ui/"
    if request.headers.get("HX-Request"):
        # htmx follows a redirect inside the page; tell it to load the sign-in page
        response = Response(status_code=204)
        response.headers["HX-Redirect"] = f"/ui/sign-in?next={quote(target, safe='/')}"
        return response
    return RedirectResponse(f"/ui/sign-in?next={quote(target, safe='')}", status_code=303)


async def _error_page(request: Request, status: int, message: str) -> Response:
    from rubricflow.server.ui.templating import render

    return render(request, "error.html", {"status": status, "message": message}, status_code=status)


async def _handle(request: Request, error: Exception) -> Response:
    if isinstance(error, SignInRequired):
        return sign_in_redirect(request)
    if isinstance(error, RubricflowError):
        status, _ = status_of(error)
        message = str(error)
        if isinstance(error, IllegalTransitionError):
            message = await request.app.state.application.artifacts.explain_refusal(error)
        return await _error_page(request, status, message)
    if isinstance(error, StarletteHTTPException):
        detail = error.detail if isinstance(error.detail, str) else str(error.detail)
        return await _error_page(request, error.status_code, detail)
    if isinstance(error, RequestValidationError):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in item.get('loc', ()))}: {item.get('msg', '')}"
            for item in error.errors()
        )
        return await _error_page(request, 422, f"invalid request: {problems}")
    raise error


def secure(response: Response) -> Response:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


class UiRoute(APIRoute):
    """A dashboard route: security headers on every response, errors as HTML pages."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        original = super().get_route_handler()

        async def handler(request: Request) -> Response:
            try:
                response = await original(request)
            except (
                SignInRequired,
                RubricflowError,
                StarletteHTTPException,
                RequestValidationError,
            ) as error:
                response = await _handle(request, error)
            return secure(response)

        return handler

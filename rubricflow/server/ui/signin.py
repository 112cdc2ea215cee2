"""Signing in and out of the dashboard: an API token for a session cookie, and back.

A `--no-auth` server has no sign-in: everyone on its loopback address is the local admin.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import RedirectResponse

from rubricflow.server.ui.access import Viewer, posted_form
from rubricflow.server.ui.security import UiRoute
from rubricflow.server.ui.sessions import clear_session, current_session, start_session
from rubricflow.server.ui.templating import render

__all__ = ["router", "safe_next"]

router = APIRouter(route_class=UiRoute)


def safe_next(target: str) -> str:
    """Where to go after signing in: a dashboard path only (never another site)."""
    if not target.startswith("/ui") or target.startswith("//") or "\\" in target:
        return "/ui/"
    return target


@router.get("/sign-in", summary="The sign-in form")
async def sign_in_form(
    request: Request, next: Annotated[str, Query(max_length=1000)] = "/ui/"
) -> Response:
    if not request.app.state.settings.auth or await current_session(request) is not None:
        return RedirectResponse(safe_next(next), status_code=303)
    return render(request, "sign_in.html", {"next": safe_next(next), "error": ""})


@router.post("/sign-in", summary="Sign in with an API token")
async def sign_in(request: Request) -> Response:
    form = await posted_form(request, None)
    target = safe_next(form.get("next", "/ui/"))
    if not request.app.state.settings.auth:
        return RedirectResponse(target, status_code=303)
    response = RedirectResponse(target, status_code=303)
    principal = await start_session(request, response, form.get("token", ""))
    if principal is None:
        return render(
            request,
            "sign_in.html",
            {
                "next": target,
                "error": "That token is unknown, revoked or expired. Ask an admin for a new "
                "one ('rubricflow tokens create').",
            },
            status_code=401,
        )
    return response


@router.post("/sign-out", summary="Sign out")
async def sign_out(request: Request, viewer: Viewer) -> Response:
    await posted_form(request, viewer)
    response = RedirectResponse("/ui/sign-in", status_code=303)
    clear_session(request, response)
    return response

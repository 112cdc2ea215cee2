"""Who is looking at a dashboard page, and a posted form checked for CSRF.

`Viewer` is a page's signed-in session (the browser is sent to sign in without one);
`ReviewerViewer` one whose token is a reviewer or an admin (a submitter gets 403, as the
API's reviewer-only routes answer it: the run pages and judge agreement);
`readable_artifact` reads an artifact the principal may see, else the same 404 as for one
that does not exist; `seen_types` is the artifact types a principal's pages show;
`require_decider` refuses a decision a principal may not take; `posted_form` reads an
`application/x-www-form-urlencoded` body (no multipart parser is needed) and refuses it,
403, without this session's CSRF token or from another origin.

The rules are the API's (`rubricflow.server.auth.Principal`): a submitter reads only the
artifacts it created, of its token's types; a reviewer or an admin every artifact of its
token's types; the pages built on evaluations and decisions (runs, pass rates, agreement)
are a reviewer's, and count only its types' artifacts.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qs, urlsplit

from fastapi import Depends, HTTPException, Request

from rubricflow.application import Application, Artifact
from rubricflow.errors import NotFoundError
from rubricflow.server.auth import Principal
from rubricflow.server.ui.security import SignInRequired
from rubricflow.server.ui.sessions import Session, check_csrf, current_session

__all__ = [
    "MAX_FORM_BYTES",
    "ReviewerViewer",
    "Viewer",
    "posted_form",
    "readable",
    "readable_artifact",
    "require_decider",
    "seen_types",
]

#: the biggest form the dashboard reads (reasons are short; content is never posted here)
MAX_FORM_BYTES = 64 * 1024
#: the most fields a form may have (a decision ticks at most this many criteria)
MAX_FORM_FIELDS = 500


async def _viewer(request: Request) -> Session:
    session = await current_session(request)
    if session is None:
        raise SignInRequired()
    return session


Viewer = Annotated[Session, Depends(_viewer)]


async def _reviewer(viewer: Viewer) -> Session:
    principal = viewer.principal
    if not principal.allows_role("reviewer"):
        raise HTTPException(
            403,
            f"this page needs the reviewer role, as the API's /v1/runs and pass rates do; "
            f"token {principal.name!r} is a {principal.role}",
        )
    return viewer


ReviewerViewer = Annotated[Session, Depends(_reviewer)]


def seen_types(principal: Principal) -> tuple[str, ...] | None:
    """The artifact types `principal` may see rows of: its token's, or None for every
    type (a token without types)."""
    return principal.types or None


def _same_origin(request: Request) -> bool:
    """A browser's POST names where it comes from; refuse another site's (defence in
    depth: the CSRF token is the check)."""
    if request.headers.get("sec-fetch-site", "same-origin") not in {"same-origin", "none"}:
        return False
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    return urlsplit(origin).netloc == request.headers.get("host", "")


async def posted_form(
    request: Request, session: Session | None, *, multi: frozenset[str] = frozenset()
) -> dict[str, str]:
    """The posted form's fields (the first value of each; every value of a field in
    `multi`, one a line), after the CSRF check."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        raise HTTPException(415, "the dashboard takes forms (application/x-www-form-urlencoded)")
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise HTTPException(413, f"the form is over {MAX_FORM_BYTES} bytes")
    try:
        fields = parse_qs(
            body.decode("utf-8"),
            keep_blank_values=True,
            strict_parsing=False,
            max_num_fields=MAX_FORM_FIELDS,
        )
    except (UnicodeDecodeError, ValueError):
        raise HTTPException(400, "the form could not be read") from None
    form = {
        name: "\n".join(values) if name in multi else values[0]
        for name, values in fields.items()
        if values
    }
    if not _same_origin(request) or not check_csrf(request, session, form.get("csrf", "")):
        raise HTTPException(
            403,
            "the form's CSRF token is missing or not this session's; reload the page and "
            "submit it again",
        )
    return form


def readable(principal: Principal, artifact: Artifact) -> Artifact:
    """`artifact`, or a 404 when `principal` may not see it (as if it did not exist)."""
    if not principal.can_read(artifact):
        raise NotFoundError(f"no artifact {artifact.id!r}")
    return artifact


async def readable_artifact(
    application: Application, principal: Principal, artifact_id: str
) -> Artifact:
    """The artifact `artifact_id` if `principal` may see it; otherwise 404 with the same
    words whether it is missing or someone else's (the page must not tell them apart)."""
    try:
        artifact = await application.artifacts.get(artifact_id)
    except NotFoundError:
        raise NotFoundError(f"no artifact {artifact_id!r}") from None
    return readable(principal, artifact)


def require_decider(principal: Principal, artifact: Artifact) -> None:
    """Refuse (403) a decision by a principal below reviewer or outside its types."""
    if not principal.allows_role("reviewer") or not principal.allows_type(artifact.type):
        raise HTTPException(
            403,
            f"deciding needs the reviewer role for type {artifact.type!r}; "
            f"{principal.name!r} is a {principal.role}",
        )

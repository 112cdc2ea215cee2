"""The workbench's team pages: comments on an artifact (posted with htmx, or as a plain
form without JavaScript) and the download of every decision and label (CSV or JSON
Lines), for a reviewer's types.

A comment needs to read the artifact (a submitter comments on its own); it is kept with
the artifact's history and shown in it. The export is a reviewer's, as the agreement
page is.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Path, Query, Request, Response
from fastapi.responses import RedirectResponse, StreamingResponse

from rubricflow.application import Application
from rubricflow.server.decision_export import EXPORT_FORMATS, EXPORT_ROWS, export_lines, filename
from rubricflow.server.ui.access import ReviewerViewer, Viewer, posted_form, readable_artifact
from rubricflow.server.ui.security import UiRoute
from rubricflow.server.ui.templating import render

__all__ = ["router"]

router = APIRouter(route_class=UiRoute)

_ArtifactId = Annotated[str, Path(min_length=1, max_length=200)]
#: the longest comment the page takes
MAX_COMMENT_CHARS = 4000


@router.post("/artifacts/{artifact_id}/comments", summary="Comment on an artifact")
async def post_comment(request: Request, viewer: Viewer, artifact_id: _ArtifactId) -> Response:
    """Keep a comment; htmx gets the comments block back, a plain form the page."""
    form = await posted_form(request, viewer)
    application: Application = request.app.state.application
    principal = viewer.principal
    artifact = await readable_artifact(application, principal, artifact_id)
    body = form.get("comment", "").strip()
    problem = ""
    if not body:
        problem = "A comment needs some words: write it and post it again."
    elif len(body) > MAX_COMMENT_CHARS:
        problem = f"A comment is at most {MAX_COMMENT_CHARS:,} characters; shorten it."
    else:
        await application.workbench.add_comment(
            artifact_id, revision=artifact.revision, author=principal.name, body=body
        )
    if request.headers.get("hx-request") != "true" and not problem:
        return RedirectResponse(
            f"/ui/artifacts/{quote(artifact_id, safe='')}#comments-heading", status_code=303
        )
    comments = await application.workbench.comments(artifact_id)
    return render(
        request,
        "artifact_comments.html",
        {
            "artifact": artifact,
            "comments": comments,
            "comment_problem": problem,
            "comment_draft": body if problem else "",
        },
        status_code=422 if problem and request.headers.get("hx-request") != "true" else 200,
    )


@router.get("/decisions/export", summary="Download every decision and label")
async def export_decisions(
    request: Request,
    viewer: ReviewerViewer,
    format: Annotated[str, Query(max_length=10)] = "csv",
    rows: Annotated[str, Query(max_length=20)] = "decisions",
) -> Response:
    if format not in EXPORT_FORMATS:
        raise HTTPException(422, f"unknown export format {format!r}; use csv or jsonl")
    if rows not in EXPORT_ROWS:
        raise HTTPException(422, f"unknown export rows {rows!r}; use decisions or labels")
    application: Application = request.app.state.application
    types = viewer.principal.types or None
    return StreamingResponse(
        export_lines(application, format=format, rows=rows, types=types),
        media_type=EXPORT_FORMATS[format],
        headers={
            "Content-Disposition": f'attachment; filename="{filename(format, rows)}"',
            "Cache-Control": "no-store",
        },
    )

"""The dashboard's static files, served from the package: the style sheet, its one script
and the vendored htmx (static/vendor, with their licences; VENDORED.md says where each
came from). Only files in the package's static folder are served, by name; they may be
cached for an hour and are revalidated by ETag."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path as FilePath
from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Request, Response

from rubricflow.server.ui.security import UiRoute

__all__ = ["router", "static_files"]

_TYPES = {
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".LICENSE": "text/plain; charset=utf-8",
    ".md": "text/plain; charset=utf-8",
    ".NOTICE": "text/plain; charset=utf-8",
}

router = APIRouter(route_class=UiRoute)


@dataclass(frozen=True)
class StaticFile:
    body: bytes
    media_type: str
    etag: str


@cache
def static_files() -> dict[str, StaticFile]:
    """Every static file by its path under static/ (read once)."""
    found: dict[str, StaticFile] = {}
    root = FilePath(__file__).with_name("static")
    for entry in sorted(root.rglob("*")):
        suffix = next((s for s in _TYPES if entry.name.endswith(s)), None)
        if suffix is None or not entry.is_file():
            continue
        body = entry.read_bytes()
        etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
        found[entry.relative_to(root).as_posix()] = StaticFile(body, _TYPES[suffix], etag)
    return found


@router.get("/static/{path:path}", summary="A static file of the dashboard")
async def static_file(request: Request, path: Annotated[str, Path(max_length=200)]) -> Response:
    found = static_files().get(path)
    if found is None:
        raise HTTPException(404, f"no static file {path!r}")
    headers = {"ETag": found.etag, "Cache-Control": "public, max-age=3600"}
    if request.headers.get("if-none-match") == found.etag:
        return Response(status_code=304, headers=headers)
    return Response(found.body, media_type=found.media_type, headers=headers)

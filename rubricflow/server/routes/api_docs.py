"""`GET /docs`: the API's interactive documentation, Swagger UI served from the package
(vendored from the npm registry, with its licence: see server/ui/static/vendor), so it
works offline. FastAPI's own page loads Swagger UI from a CDN, which a machine without
internet access cannot reach."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

__all__ = ["SWAGGER_UI_VERSION", "router"]

SWAGGER_UI_VERSION = "5.35.0"
_STATIC = "/ui/static"

router = APIRouter(tags=["operations"])

_PAGE = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>rubricflow API</title>
<link rel="stylesheet" href="{_STATIC}/vendor/swagger-ui-{SWAGGER_UI_VERSION}.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{_STATIC}/vendor/swagger-ui-{SWAGGER_UI_VERSION}-bundle.js"></script>
<script src="{_STATIC}/swagger-init.js"></script>
</body>
</html>
"""


@router.get("/docs", include_in_schema=False)
async def api_docs() -> HTMLResponse:
    return HTMLResponse(_PAGE)

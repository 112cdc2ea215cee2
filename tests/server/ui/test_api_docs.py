"""The API's interactive documentation at /docs works offline (issue 31: it loaded Swagger
UI from a CDN): the page loads only files this server serves, and in Chromium, with every
request to another host refused, it lists the API's operations."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import httpx

from .conftest import Dashboard, Tab


def test_the_docs_page_loads_only_this_server_s_files(sqlite_dashboard: Dashboard) -> None:
    with httpx.Client(base_url=sqlite_dashboard.url, timeout=30) as client:
        page = client.get("/docs")
        assert page.status_code == 200
        sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        assert sources, page.text
        for source in sources:
            assert source.startswith("/"), f"{source} is not served by this server"
            asset = client.get(source)
            assert asset.status_code == 200, source
            assert asset.headers["content-type"].startswith(("text/css", "text/javascript"))
        assert client.get("/redoc").status_code == 404  # no second, CDN-backed page


def test_swagger_ui_lists_the_operations_with_no_other_host(
    sqlite_dashboard: Dashboard, tab: Tab
) -> None:
    own = urlsplit(sqlite_dashboard.url).netloc
    elsewhere: list[str] = []

    def only_here(route: Any) -> None:
        if urlsplit(route.request.url).netloc == own:
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    tab.page.route("**/*", only_here)
    tab.page.goto(f"{sqlite_dashboard.url}/docs")
    tab.page.get_by_text("/v1/artifacts", exact=True).first.wait_for()
    assert tab.page.title() == "rubricflow API"
    assert elsewhere == []
    tab.clean()

"""The dashboard's screenshots in docs/img (linked from docs/dashboard.md): they exist and
are PNG images of a sensible size; with RUBRICFLOW_UPDATE_SCREENSHOTS=1 a real server in
headless Chromium takes them again (the queue, an artifact's page, a rubric's page)."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from review.conftest import run_blocking

from .conftest import Dashboard, Tab, sign_in
from .seed import RUBRIC, seed

DOCS = Path(__file__).resolve().parents[3] / "docs"
IMAGES = DOCS / "img"
SHOTS = ("dashboard-queue.png", "dashboard-artifact.png", "dashboard-rubric.png")
UPDATE = os.environ.get("RUBRICFLOW_UPDATE_SCREENSHOTS") == "1"


def png_size(data: bytes) -> tuple[int, int]:
    """A PNG's width and height (from its IHDR chunk); ValueError for anything else."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.parametrize("name", SHOTS)
def test_screenshots_exist_as_pngs_linked_from_the_docs(name: str) -> None:
    path = IMAGES / name
    assert path.exists(), f"{path} is missing: RUBRICFLOW_UPDATE_SCREENSHOTS=1 makes it"
    data = path.read_bytes()
    width, height = png_size(data)
    assert 1000 <= width <= 3000 and 500 <= height <= 8000, (width, height)
    assert len(data) < 2_000_000
    assert f"img/{name}" in (DOCS / "dashboard.md").read_text()


@pytest.fixture(scope="module")
def shown(sqlite_dashboard: Dashboard) -> Iterator[dict[str, str]]:
    dashboard = sqlite_dashboard
    run_blocking(seed(dashboard.db_url))
    for i, text in enumerate(("a clear and kind post", "quarterly notes for the team")):
        dashboard.submit({"text": text, "n": i}, actor="bob", title=f"Post {i + 1}")
    failing = dashboard.submit(
        "This post has a forbidden word\nand a second line.", actor="carol", title="Launch note"
    )
    dashboard.submit("spam spam", actor="bob", title="Offer")
    yield {"artifact": failing}


@pytest.mark.skipif(not UPDATE, reason="set RUBRICFLOW_UPDATE_SCREENSHOTS=1 to take them again")
def test_take_the_screenshots_again(
    sqlite_dashboard: Dashboard, shown: dict[str, str], tab: Tab
) -> None:
    dashboard = sqlite_dashboard
    page = tab.page
    page.set_viewport_size({"width": 1280, "height": 800})
    sign_in(tab, dashboard, "alice")
    IMAGES.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(IMAGES / SHOTS[0]))
    page.goto(f"{dashboard.url}/ui/artifacts/{shown['artifact']}")
    page.screenshot(path=str(IMAGES / SHOTS[1]), full_page=True)
    page.goto(f"{dashboard.url}/ui/rubrics/{RUBRIC}")
    page.screenshot(path=str(IMAGES / SHOTS[2]), full_page=True)
    for name in SHOTS:
        png_size((IMAGES / name).read_bytes())
    tab.clean()

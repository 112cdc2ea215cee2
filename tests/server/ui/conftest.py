"""Fixtures for the dashboard's tests: one real `rubricflow serve` per backend and module
(with artifact types and tokens made through the application core; on SQLite the same
server as `sqlite_dashboard`), one headless Chromium per module (Debian's
/usr/bin/chromium through Playwright; no browser download) with a fresh context per test,
and helpers to sign in and to make artifacts from the test process.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from review.conftest import PG_DEFAULT, PG_ENV, PostgresServer, check, make_rubric, run_blocking

from rubricflow.application import Application
from rubricflow.store import Store
from rubricflow.store.artifact_models import ArtifactType, RubricBinding
from server.conftest import RunningServer, issue_token, spawn_server

CHROMIUM = os.environ.get("RUBRICFLOW_TEST_CHROMIUM", "/usr/bin/chromium")
#: how long a browser expectation may wait (live updates arrive in well under a second)
WAIT_MS = 10_000

#: a passing post awaits a reviewer's approval; one with "forbidden" needs revision
POST_TYPE = "post"


@dataclass
class Dashboard:
    """A running server with the dashboard, its store and its people."""

    server: RunningServer
    db_url: str
    tokens: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.server.url

    def submit(self, content: Any, *, actor: str, title: str | None = None) -> str:
        """Create and submit an artifact through the application core; its id."""

        async def work() -> str:
            async with await Application.open(self.db_url) as app:
                outcome = await app.create_and_submit(POST_TYPE, content, actor=actor, title=title)
                return outcome.artifact.id

        return str(run_blocking(work()))

    def status(self, artifact_id: str) -> str:
        async def work() -> str:
            async with await Application.open(self.db_url) as app:
                return (await app.artifacts.get(artifact_id)).status

        return str(run_blocking(work()))


async def _prepare(db_url: str) -> None:
    async with await Store.open(db_url) as store:
        app = Application(store)
        rubric = make_rubric(
            "clean-post",
            check("filled", "non_empty"),
            check("polite", "contains_none", terms=["forbidden"]),
            threshold=0.9,
        )
        await store.rubrics.register(rubric)
        await app.artifacts.set_type(
            ArtifactType(
                name=POST_TYPE,
                rubrics=(RubricBinding(rubric_id="clean-post"),),
                requires_approval=True,
            )
        )
        await app.close()


def _start(db_url: str, log: Path) -> Dashboard:
    run_blocking(_prepare(db_url))
    dashboard = Dashboard(spawn_server(db_url, log=log), db_url)
    dashboard.tokens = {
        "alice": issue_token(db_url, "reviewer", name="alice"),
        "bob": issue_token(db_url, "submitter", name="bob"),
        "carol": issue_token(db_url, "submitter", name="carol"),
    }
    return dashboard


async def _migrate(url: str) -> None:
    store = await Store.open(url)
    await store.close()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def dashboard(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Dashboard]:
    """A dashboard server per backend, shared by a module's tests; on SQLite it is the
    module's `sqlite_dashboard` (tests work on artifacts of their own)."""
    if request.param == "sqlite":
        yield request.getfixturevalue("sqlite_dashboard")
        return
    folder = tmp_path_factory.mktemp("ui")
    db_url = str(request.getfixturevalue("pg_session_url"))
    PostgresServer(os.environ.get(PG_ENV, PG_DEFAULT)).empty(db_url)
    dashboard = _start(db_url, folder / "server.log")
    yield dashboard
    dashboard.server.stop(signal.SIGKILL)


@pytest.fixture(scope="module")
def sqlite_dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    """A dashboard server on SQLite only, for the checks that need one backend."""
    folder = tmp_path_factory.mktemp("ui-sqlite")
    db_url = f"sqlite+aiosqlite:///{folder / 'ui.db'}"
    run_blocking(_migrate(db_url))
    dashboard = _start(db_url, folder / "server.log")
    yield dashboard
    dashboard.server.stop(signal.SIGKILL)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium, one per module (each test gets a fresh context). Not one per
    package: Playwright's sync API keeps an event loop running while it is open, and the
    package's async tests (pytest-asyncio) cannot run inside it."""
    if shutil.which(CHROMIUM) is None and not Path(CHROMIUM).exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and no Chromium at {CHROMIUM}", pytrace=False)
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield launched
        launched.close()


@dataclass
class Tab:
    """A browser page that records dialogs and console errors."""

    page: Any
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def clean(self) -> None:
        assert not self.dialogs, f"a dialog opened: {self.dialogs}"
        assert not self.errors, f"console errors: {self.errors}"


@pytest.fixture
def tab(browser: Any) -> Iterator[Tab]:
    """A fresh browser context (no cookies) and page for one test."""
    context = browser.new_context()
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    opened = Tab(page)

    def on_dialog(dialog: Any) -> None:
        opened.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("console", lambda m: opened.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: opened.errors.append(str(e)))
    yield opened
    context.close()


def sign_in(tab: Tab, dashboard: Dashboard, who: str) -> None:
    """Sign in through the form, as a person would."""
    page = tab.page
    page.goto(f"{dashboard.url}/ui/")
    assert page.url.startswith(f"{dashboard.url}/ui/sign-in")
    page.get_by_label("API token").fill(dashboard.tokens[who])
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{dashboard.url}/ui/")
    assert page.get_by_role("heading", level=1).inner_text() == "Review queue"
    assert who in page.locator(".who").inner_text()


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "the page has no CSRF field"
    return found.group(1)

"""Phones (issue 29, item 10) in headless Chromium against a real `rubricflow serve` on
SQLite, over a seeded history (tests/server/ui/seed.py): at 390 px no dashboard page
scrolls sideways (document.scrollingElement.scrollWidth <= clientWidth), the queue is a
list of cards, charts keep legible labels, and axe-core finds no serious or critical
violation on the new screens (the reviewers' screen, content rendered by kind) at
1440 px and at 390 px."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from review.conftest import run_blocking

from rubricflow.application import Application
from rubricflow.records.artifacts import ReviewPolicy
from rubricflow.store.artifact_models import ArtifactType, RubricBinding

from .conftest import WAIT_MS, Dashboard, Tab, sign_in
from .seed import RUBRIC, Seeded, seed
from .test_ui_content import CONVERSATION, MARKDOWN
from .test_ui_workbench_browser import serious_violations

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}
UNBROKEN = "x" * 400  # one long word: a token, a URL, a hash
PAIR = "phone-pair"


@pytest.fixture(scope="module")
def history(sqlite_dashboard: Dashboard) -> Iterator[tuple[Seeded, dict[str, str]]]:
    """Seeded rubrics, runs and evaluations, and artifacts of every kind."""
    dashboard = sqlite_dashboard
    seeded = run_blocking(seed(dashboard.db_url))
    wide_json = {"key_" + "k" * 120: ["v" * 300, {"nested": UNBROKEN}]}
    made = {
        "text": dashboard.submit(f"A long reply {UNBROKEN} " * 3, actor="bob", title=UNBROKEN),
        "markdown": dashboard.submit(
            MARKDOWN + f"\n| a | b | c |\n|---|---|---|\n| {UNBROKEN} | 2 | 3 |\n\n"
            f"```\n{UNBROKEN}\n```\n",
            actor="bob",
            title="Markdown",
        ),
        "conversation": dashboard.submit(CONVERSATION, actor="bob", title="A booking"),
        "json": dashboard.submit(wide_json, actor="bob", title="Wide JSON"),
        "revised": dashboard.submit(
            {"text": "a forbidden first go " + UNBROKEN}, actor="bob", title="Revised"
        ),
    }

    async def revise() -> None:
        async with await Application.open(dashboard.db_url) as app:
            await app.artifacts.revise(
                made["revised"],
                {"text": "a better second go " + UNBROKEN},
                actor="bob",
                reason="fixed",
            )

    async def split() -> None:
        """A type two people decide: one round they agreed on, one open split."""
        async with await Application.open(dashboard.db_url) as app:
            await app.artifacts.set_type(
                ArtifactType(
                    name=PAIR,
                    rubrics=(RubricBinding(rubric_id=RUBRIC),),
                    requires_approval=True,
                    review_policy=ReviewPolicy(reviewers=2),
                )
            )
            for title, second in (("Agreed on", "approve"), ("Split on", "reject")):
                outcome = await app.create_and_submit(
                    PAIR, {"text": "a fine long post"}, actor="bob", title=title
                )
                artifact_id = outcome.artifact.id
                await app.artifacts.approve(artifact_id, actor="dave", reason="good " + UNBROKEN)
                decide = getattr(app.artifacts, second)
                await decide(artifact_id, actor="erin", reason="my call")

    run_blocking(revise())
    run_blocking(split())
    yield seeded, made


def pages(seeded: Seeded, made: dict[str, str]) -> list[str]:
    """Every dashboard page a signed-in reviewer reaches."""
    return [
        "/ui/queue",
        "/ui/queue?bucket=awaiting_approval&sort=score",
        *(f"/ui/artifacts/{artifact_id}" for artifact_id in made.values()),
        f"/ui/artifacts/{made['revised']}?from=1&to=2",
        "/ui/rubrics",
        f"/ui/rubrics/{RUBRIC}",
        f"/ui/rubrics/{RUBRIC}/diff",
        "/ui/runs",
        f"/ui/runs/{seeded.run_a}",
        f"/ui/runs/{seeded.running}",
        f"/ui/runs/compare?a={seeded.run_a}&b={seeded.run_b}",
        "/ui/agreement",
        f"/ui/agreement?rubric={RUBRIC}",
        "/ui/reviewers",
        f"/ui/reviewers?type={PAIR}",
        "/ui/artifacts/no-such-artifact",
    ]


def sideways(page: Any) -> tuple[int, int]:
    return page.evaluate(
        "[document.scrollingElement.scrollWidth, document.scrollingElement.clientWidth]"
    )


def context(browser: Any, viewport: dict[str, int]) -> Any:
    # the page's CSP allows no injected script: bypassed for axe alone
    made = browser.new_context(viewport=viewport, bypass_csp=True)
    made.set_default_timeout(WAIT_MS)
    return made


def test_no_page_scrolls_sideways_at_390_px(
    sqlite_dashboard: Dashboard, browser: Any, history: tuple[Seeded, dict[str, str]]
) -> None:
    dashboard = sqlite_dashboard
    seeded, made = history
    phone = context(browser, PHONE)
    try:
        page = phone.new_page()
        page.goto(f"{dashboard.url}/ui/sign-in")
        wide = {"/ui/sign-in": sideways(page)}
        sign_in(Tab(page), dashboard, "alice")
        for path in pages(seeded, made):
            page.goto(f"{dashboard.url}{path}")
            page.wait_for_load_state("load")
            wide[path] = sideways(page)
        too_wide = {path: sizes for path, sizes in wide.items() if sizes[0] > sizes[1]}
        assert not too_wide, too_wide
        # the queue is a list of cards: one column, each row a box as wide as the screen
        page.goto(f"{dashboard.url}/ui/queue")
        card = page.locator("table.queue tbody tr").first
        assert card.evaluate("e => getComputedStyle(e).display") == "block"
        box = card.bounding_box()
        assert box is not None and box["width"] <= PHONE["width"]
        # charts keep their labels legible: at least 10 px on screen
        for path in (f"/ui/rubrics/{RUBRIC}", f"/ui/reviewers?type={PAIR}"):
            page.goto(f"{dashboard.url}{path}")
            sizes = page.eval_on_selector_all(
                "figure svg text", "els => els.map(e => e.getBoundingClientRect().height)"
            )
            assert sizes and min(sizes) >= 10, (path, sizes)
        # the reviewers' screen has its open split to resolve, and its charts
        assert page.locator("li.split.open").count() == 1
        assert page.locator("li.split.open form.resolve-form").count() == 1
        assert page.locator("svg#reviewer-agreement").count() == 1
    finally:
        phone.close()


def test_axe_finds_nothing_serious_on_the_new_screens(
    sqlite_dashboard: Dashboard, browser: Any, history: tuple[Seeded, dict[str, str]]
) -> None:
    dashboard = sqlite_dashboard
    _, made = history
    paths = [
        f"/ui/reviewers?type={PAIR}",  # an open split to resolve, agreement charts
        f"/ui/artifacts/{made['markdown']}",
        f"/ui/artifacts/{made['conversation']}",
        f"/ui/rubrics/{RUBRIC}",  # its charts scroll inside their figures on a phone
    ]
    for viewport in (DESKTOP, PHONE):
        made_context = context(browser, viewport)
        try:
            tab = Tab(made_context.new_page())
            sign_in(tab, dashboard, "alice")
            for path in paths:
                tab.page.goto(f"{dashboard.url}{path}")
                tab.page.wait_for_load_state("load")
                assert serious_violations(tab.page) == [], (viewport, path)
        finally:
            made_context.close()

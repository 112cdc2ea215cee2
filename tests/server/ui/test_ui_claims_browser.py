"""Claims by two browsers (issue 29, item 2) in headless Chromium against a real
`rubricflow serve` on SQLite: two reviewers, alice and dave, each in a browser context of
their own. The item alice opens leaves dave's open queue at once and is left out of it
after, with her named as its holder; dave opening it anyway is told who reviews it;
after alice's decision the next item she is shown is not the one dave holds."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from server.conftest import issue_token

from .conftest import WAIT_MS, Dashboard, Tab, sign_in


@pytest.fixture
def second_tab(browser: Any) -> Iterator[Tab]:
    """Another browser context (its own cookies: another person) and page."""
    context = browser.new_context()
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    opened = Tab(page)
    page.on("console", lambda m: opened.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: opened.errors.append(str(e)))
    yield opened
    context.close()


def test_claims_by_two_browsers(sqlite_dashboard: Dashboard, tab: Tab, second_tab: Tab) -> None:
    from playwright.sync_api import expect

    dashboard = sqlite_dashboard
    if "dave" not in dashboard.tokens:
        dashboard.tokens["dave"] = issue_token(dashboard.db_url, "reviewer", name="dave")
    tag = uuid.uuid4().hex[:8]
    first = dashboard.submit({"text": "c1"}, actor="bob", title=f"claims {tag} first")
    second = dashboard.submit({"text": "c2"}, actor="bob", title=f"claims {tag} second")
    alice, dave = tab.page, second_tab.page
    sign_in(tab, dashboard, "alice")
    sign_in(second_tab, dashboard, "dave")

    # dave's queue is open and shows both items
    dave.goto(f"{dashboard.url}/ui/queue?q={tag}")
    dave.wait_for_selector("body[data-workbench=ready]")
    expect(dave.locator(f'tr[data-artifact="{first}"]')).to_have_count(1)

    # alice opens the first item from her queue: she holds it
    alice.goto(f"{dashboard.url}/ui/queue?q={tag}")
    alice.locator(f'tr[data-artifact="{first}"] a.item-link').click()
    alice.wait_for_url(re.compile(f"/ui/artifacts/{first}"))
    expect(alice.locator("#claim-note")).to_be_visible()

    # dave's open queue drops it at once (live), and after a reload names who has it
    expect(dave.locator(f'tr[data-artifact="{first}"]')).to_have_count(0)
    dave.goto(f"{dashboard.url}/ui/queue?q={tag}")
    expect(dave.locator(f'tr[data-artifact="{second}"]')).to_have_count(1)
    expect(dave.locator(f'tr[data-artifact="{first}"]')).to_have_count(0)
    held = dave.locator("#claimed-by-others")
    expect(held).to_contain_text("being reviewed by others")
    held.locator("summary").click()
    expect(held.locator(".holder")).to_have_text("alice")
    # opening it anyway: the page names alice and dave does not take it over
    held.locator(f'a[href="/ui/artifacts/{first}"]').click()  # named by its title
    dave.wait_for_url(re.compile(f"/ui/artifacts/{first}"))
    expect(dave.locator("#claim-banner")).to_contain_text("alice is reviewing this item")

    # dave opens the second item from his queue: now he holds that one
    dave.goto(f"{dashboard.url}/ui/queue?q={tag}")
    dave.locator(f'tr[data-artifact="{second}"] a.item-link').click()
    dave.wait_for_url(re.compile(f"/ui/artifacts/{second}"))
    expect(dave.locator("#claim-note")).to_be_visible()

    # alice decides: her next item would be the second, but dave holds it, so she stays
    alice.get_by_label("Reason").fill("off topic")
    alice.get_by_role("button", name="Reject").click()
    alice.wait_for_url(re.compile(r"done=reject"))
    assert f"/ui/artifacts/{first}?" in alice.url
    expect(alice.locator(".message.done")).to_contain_text("Rejected.")
    assert dashboard.status(first) == "rejected"
    tab.clean()
    second_tab.clean()

"""The reviewer's workbench in headless Chromium against a real `rubricflow serve` on
SQLite (issue 29): a decision by keyboard alone in a few keystrokes that opens the next
item, live updates that keep the focus and are announced, a stale decision recovered
without losing the reason, and a queue that says it is offline and catches up after the
server restarts. One server and one browser for the module."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from server.conftest import spawn_server

from .conftest import WAIT_MS, Dashboard, Tab, sign_in

#: how long a restarted server may take to answer (a loaded machine starts it slowly)
STARTUP_MS = 60_000


def expect_text(locator: Any, text: str) -> None:
    from playwright.sync_api import expect

    expect(locator).to_contain_text(text, timeout=WAIT_MS)


def active_id(page: Any) -> str:
    return str(page.evaluate("document.activeElement.id"))


def test_keyboard_only_decision_opens_the_next_item(sqlite_dashboard: Dashboard, tab: Tab) -> None:
    dashboard = sqlite_dashboard
    tag = uuid.uuid4().hex[:8]
    first = dashboard.submit({"text": "k1"}, actor="bob", title=f"keys {tag} first")
    second = dashboard.submit({"text": "k2"}, actor="bob", title=f"keys {tag} second")
    sign_in(tab, dashboard, "alice")
    page = tab.page
    page.wait_for_selector("body[data-workbench=ready]")
    page.keyboard.press("/")
    assert active_id(page) == "f-q"
    page.keyboard.type(tag)
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"q=" + tag))
    page.wait_for_selector("body[data-workbench=ready]")
    assert page.locator("tr[data-artifact]").count() == 2
    newest = page.locator("tr[data-artifact]").first.get_attribute("data-artifact")
    # j chooses the first row, Enter opens it; the reason box has the focus
    for key in ("j", "Enter"):
        page.keyboard.press(key)
    page.wait_for_url(re.compile(f"/ui/artifacts/{newest}"))
    page.wait_for_selector("body[data-workbench=ready]")
    assert active_id(page) == "reason"
    page.keyboard.type("read it all")
    for key in ("Escape", "a"):
        page.keyboard.press(key)
    # j, Enter, (the reason), Escape, a: four keystrokes plus the reason
    following = second if newest == first else first
    page.wait_for_url(re.compile(f"/ui/artifacts/{following}"))
    expect_text(page.locator(".message.done"), "Approved.")
    page.wait_for_selector("body[data-workbench=ready]")
    assert active_id(page) == "reason"
    assert dashboard.status(newest) == "approved"
    # spaces alone are refused in the form itself: nothing is posted
    page.keyboard.type("   ")
    page.keyboard.press("Escape")
    page.keyboard.press("r")
    assert page.evaluate("document.getElementById('reason').validity.valid") is False
    assert dashboard.status(following) == "in_review"
    # ? lists the shortcuts
    page.keyboard.press("Escape")
    page.keyboard.press("?")
    assert page.locator("dialog#shortcuts").is_visible()
    tab.clean()


def test_live_updates_keep_focus_and_are_announced(sqlite_dashboard: Dashboard, tab: Tab) -> None:
    dashboard = sqlite_dashboard
    dashboard.submit({"text": "there"}, actor="bob", title="Already waiting")
    page = tab.page
    page.add_init_script(
        "document.addEventListener('htmx:sseOpen', () => { window.sseOpen = true; });"
    )
    sign_in(tab, dashboard, "alice")
    page.wait_for_selector("body[data-workbench=ready]")
    # a function, not a bare expression: Playwright polls a bare one with eval, which the
    # dashboard's CSP refuses (seen when the stream opened late, on a loaded machine)
    page.wait_for_function("() => window.sseOpen === true")
    page.keyboard.press("j")
    page.keyboard.press("j")
    chosen = page.evaluate("document.activeElement.closest('tr').dataset.artifact")
    scroll = page.evaluate("window.scrollY")
    fresh = dashboard.submit({"text": "new"}, actor="carol", title="Arrived live")
    expect_text(page.locator(f'tr[data-artifact="{fresh}"]'), "Arrived live")
    expect_text(page.locator("#live-status"), "The queue was updated")
    assert page.locator("#live-status").get_attribute("aria-live") == "polite"
    assert page.evaluate("document.activeElement.closest('tr').dataset.artifact") == chosen
    assert page.evaluate("window.scrollY") == scroll
    tab.clean()


def test_a_stale_decision_is_recovered(sqlite_dashboard: Dashboard, tab: Tab) -> None:
    dashboard = sqlite_dashboard
    artifact_id = dashboard.submit({"text": "moving"}, actor="bob", title="Moving")
    sign_in(tab, dashboard, "alice")
    page = tab.page
    page.goto(f"{dashboard.url}/ui/artifacts/{artifact_id}")
    page.locator('input[name="wrong"]').first.check()
    page.get_by_label("Reason").fill("my careful reason")
    # the form names an older version, as when another writer moved the artifact on
    # while the reviewer typed
    page.evaluate("document.querySelector('#decision-form input[name=version]').value -= 1")
    page.get_by_role("button", name="Reject", exact=True).click()
    expect_text(page.locator("#refusal"), "Someone else changed this artifact")
    assert page.get_by_label("Reason").input_value() == "my careful reason"
    assert page.locator('input[name="wrong"]').first.is_checked()
    # deciding again on the current version works
    page.get_by_role("button", name="Reject", exact=True).click()
    page.wait_for_url(re.compile(r"done=reject"))
    assert dashboard.status(artifact_id) == "rejected"
    tab.errors[:] = [e for e in tab.errors if "412" not in e]
    tab.clean()


def test_the_queue_says_offline_and_catches_up(
    sqlite_dashboard: Dashboard, tab: Tab, tmp_path: Any
) -> None:
    dashboard = sqlite_dashboard
    own = spawn_server(dashboard.db_url, log=tmp_path / "a.log")
    port = str(urlparse(own.url).port)
    page = tab.page
    page.goto(f"{own.url}/ui/")
    page.get_by_label("API token").fill(dashboard.tokens["alice"])
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("body[data-live=online]")
    own.stop(signal.SIGKILL)
    page.wait_for_selector("body[data-live=offline]")
    expect_text(page.locator("#live-status"), "Offline")
    missed = dashboard.submit({"text": "while down"}, actor="bob", title="Made while down")
    # the same server again, on the same port (spawn_server would choose another one)
    command = [sys.executable, "-m", "rubricflow", "serve", "--db", dashboard.db_url]
    with (tmp_path / "b.log").open("wb") as log:
        again = subprocess.Popen(
            [*command, "--port", port],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        from playwright.sync_api import expect

        # the browser reconnects by itself and fetches what changed while it was away
        row = page.locator(f'tr[data-artifact="{missed}"]')
        expect(row).to_contain_text("Made while down", timeout=STARTUP_MS)
        page.wait_for_selector("body[data-live=online]")
        expect_text(page.locator("#live-status"), "The queue was updated")
    finally:
        os.killpg(again.pid, signal.SIGKILL)
        again.wait()
    tab.errors.clear()  # Chromium logs the refused connections while the server is down
    assert not tab.dialogs


#: axe-core, vendored for the tests only (MPL-2.0, its licence beside it)
AXE = Path(__file__).with_name("vendor") / "axe-core-4.10.3.min.js"


def serious_violations(page: Any) -> list[str]:
    """axe-core's serious and critical violations on the page, as 'rule: target'."""
    page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        "async () => (await axe.run(document)).violations"
        ".filter(v => v.impact === 'serious' || v.impact === 'critical')"
        ".map(v => v.id + ': ' + v.nodes.map(n => n.target.join(' ')).join(', '))"
    )
    return list(found)


def test_axe_and_no_sideways_scroll_at_both_viewports(
    sqlite_dashboard: Dashboard, browser: Any
) -> None:
    dashboard = sqlite_dashboard
    artifact_id = dashboard.submit("a forbidden word " * 40, actor="bob", title="A long one")
    for width, height in ((1440, 900), (390, 844)):
        # the page's CSP allows no injected script: bypassed for axe alone
        context = browser.new_context(viewport={"width": width, "height": height}, bypass_csp=True)
        context.set_default_timeout(WAIT_MS)
        try:
            tab = Tab(context.new_page())
            sign_in(tab, dashboard, "alice")
            page = tab.page
            for path in ("/ui/queue", f"/ui/artifacts/{artifact_id}"):
                page.goto(f"{dashboard.url}{path}")
                page.wait_for_selector("body[data-workbench=ready]")
                assert serious_violations(page) == [], (width, path)
                if width < 500:
                    wide = page.evaluate("document.documentElement.scrollWidth")
                    assert wide <= width, (path, wide)
        finally:
            context.close()

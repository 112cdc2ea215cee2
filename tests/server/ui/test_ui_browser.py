"""The dashboard in a real browser (headless Chromium driven by Playwright) against a real
`rubricflow serve`: sign-in, the live queue, decisions recorded under the signed-in
token's name, what a submitter may not do, CSRF, hostile content, and the keyboard.

The main flows run on SQLite and PostgreSQL (`dashboard`); the rest on SQLite.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
from typer.testing import CliRunner

from rubricflow.cli import app as cli_app

from .conftest import WAIT_MS, Dashboard, Tab, csrf_of, sign_in


def history(dashboard: Dashboard, artifact_id: str) -> str:
    """`rubricflow artifacts history ID` as the CLI prints it (in a thread: the sync
    Playwright API runs an event loop in this one)."""
    with ThreadPoolExecutor(1) as pool:
        result = pool.submit(
            CliRunner().invoke,
            cli_app,
            ["artifacts", "history", artifact_id, "--db", dashboard.db_url],
        ).result()
    assert result.exit_code == 0, result.output
    return result.output


def expect_text(locator: Any, text: str) -> None:
    from playwright.sync_api import expect

    expect(locator).to_contain_text(text, timeout=WAIT_MS)


def test_a_submission_appears_live_in_the_queue(dashboard: Dashboard, tab: Tab) -> None:
    page = tab.page
    page.add_init_script(
        "document.addEventListener('htmx:sseOpen', () => { window.sseOpen = true; });"
    )
    sign_in(tab, dashboard, "alice")
    waiting = page.locator('.count-value[data-bucket="awaiting_approval"]')
    before = int(waiting.inner_text())
    # a function, not a bare expression: Playwright polls a bare one with eval, which the
    # dashboard's CSP refuses (seen when the stream opened late, on a loaded machine)
    page.wait_for_function("() => window.sseOpen === true")
    # the page listens; a bot submits through the core, in another process
    artifact_id = dashboard.submit({"text": "a fine post"}, actor="bob", title="Fresh post")
    row = page.locator(f'tr[data-artifact="{artifact_id}"]')
    expect_text(row, "Fresh post")
    expect_text(row, "Awaiting approval")
    expect_text(waiting, str(before + 1))
    assert page.url.rstrip("/").endswith("/ui"), "the page was not reloaded"
    tab.clean()


def test_approve_override_and_reject_are_recorded_with_the_token_name(
    dashboard: Dashboard, tab: Tab
) -> None:
    passing = dashboard.submit({"text": "good"}, actor="bob", title="To approve")
    failing = dashboard.submit("a forbidden word", actor="bob", title="To override")
    doomed = dashboard.submit("forbidden again", actor="bob", title="To reject")
    assert dashboard.status(failing) == "needs_revision"
    sign_in(tab, dashboard, "alice")
    page = tab.page
    for artifact_id, button, reason, status in (
        (passing, "Approve", "reads well", "approved"),
        (failing, "Override and approve", "the word is a quote", "approved"),
        (doomed, "Reject", "off topic", "rejected"),
    ):
        page.goto(f"{dashboard.url}/ui/artifacts/{artifact_id}")
        page.get_by_label("Reason").fill(reason)
        page.get_by_role("button", name=button, exact=True).click()
        expect_text(
            page.locator(".message.done"), "Approved" if status == "approved" else "Rejected"
        )
        assert dashboard.status(artifact_id) == status
        text = history(dashboard, artifact_id)
        assert re.search(rf"-> {status} by alice: {reason}", text), text
        # the decision opened the queue's next item (or stayed, when none is left: the
        # queue's other items are other tests'); the decided one's history says so too
        page.goto(f"{dashboard.url}/ui/artifacts/{artifact_id}")
        expect_text(page.locator("table.history tbody tr").last, "alice")
    tab.clean()


def test_a_submitter_sees_only_its_own_and_cannot_decide(
    sqlite_dashboard: Dashboard, tab: Tab
) -> None:
    dashboard = sqlite_dashboard
    own = dashboard.submit({"text": "mine"}, actor="bob", title="Bob's post")
    other = dashboard.submit({"text": "theirs"}, actor="carol", title="Carol's post")
    sign_in(tab, dashboard, "bob")
    page = tab.page
    assert page.locator(f'tr[data-artifact="{own}"]').count() == 1
    assert page.locator(f'tr[data-artifact="{other}"]').count() == 0
    page.goto(f"{dashboard.url}/ui/artifacts/{own}")
    assert page.get_by_role("heading", level=1).inner_text() == "Bob's post"
    assert page.locator("form#decision-form").count() == 0
    assert page.get_by_role("button", name="Approve").count() == 0
    # a forged approval with bob's own session and a valid CSRF token is refused
    csrf = csrf_of(page.content())
    refused = page.request.post(
        f"{dashboard.url}/ui/artifacts/{own}/decision",
        form={"csrf": csrf, "action": "approve", "reason": "self-approved"},
    )
    assert refused.status == 403
    assert dashboard.status(own) == "in_review"
    # another submitter's artifact does not exist for bob
    response = page.goto(f"{dashboard.url}/ui/artifacts/{other}")
    assert response is not None and response.status == 404
    assert page.get_by_role("heading", level=1).inner_text() == "Not found (404)"
    assert [e for e in tab.errors if "404" not in e] == []
    tab.errors.clear()  # Chromium logs the 404 page's status as a console error
    assert "self-approved" not in history(dashboard, own)
    tab.clean()


def test_a_form_post_without_the_csrf_token_is_refused(
    sqlite_dashboard: Dashboard, tab: Tab
) -> None:
    dashboard = sqlite_dashboard
    artifact_id = dashboard.submit({"text": "steady"}, actor="bob")
    sign_in(tab, dashboard, "alice")
    page = tab.page
    url = f"{dashboard.url}/ui/artifacts/{artifact_id}/decision"
    for form in (
        {"action": "approve", "reason": "forged"},
        {"action": "approve", "reason": "forged", "csrf": "0" * 64},
    ):
        # the browser sends alice's session cookie: only the token is missing or wrong
        refused = page.request.post(url, form=form)
        assert refused.status == 403
        assert "CSRF" in refused.text()
    # a token from another session (signed in elsewhere) does not work either
    with httpx.Client(base_url=dashboard.url, follow_redirects=True) as other:
        html = other.get("/ui/sign-in").text
        signed = other.post(
            "/ui/sign-in",
            data={"csrf": csrf_of(html), "token": dashboard.tokens["alice"], "next": "/ui/"},
        )
        foreign = csrf_of(signed.text)
    refused = page.request.post(url, form={"action": "approve", "reason": "x", "csrf": foreign})
    assert refused.status == 403
    assert dashboard.status(artifact_id) == "in_review"
    assert "forged" not in history(dashboard, artifact_id)
    tab.clean()


HOSTILE = (
    '<script>alert("script")</script>\n'
    '</textarea><script>alert("textarea")</script>\n'
    '</pre><img src=x onerror=alert("img")>\n'
    "<a href=\"javascript:alert('link')\">click me</a>\n"
    '" onmouseover="alert(\'attr\')" x="\n'
    "' autofocus onfocus='alert(1)' '\n"
    "{{ 7 * 7 }} {% raw %}"
)


def test_hostile_content_is_shown_as_text_and_runs_nothing(
    sqlite_dashboard: Dashboard, tab: Tab
) -> None:
    dashboard = sqlite_dashboard
    title = '"><script>alert("title")</script>'
    artifact_id = dashboard.submit(HOSTILE, actor="bob", title=title)
    sign_in(tab, dashboard, "alice")
    page = tab.page
    row = page.locator(f'tr[data-artifact="{artifact_id}"]')
    expect_text(row, title)
    page.goto(f"{dashboard.url}/ui/artifacts/{artifact_id}")
    assert page.locator("pre.content").inner_text() == HOSTILE
    assert page.get_by_role("heading", level=1).inner_text() == title
    # nothing of the content became markup: no image, link or script came from it
    assert page.locator("main img").count() == 0
    assert page.locator('a[href^="javascript"]').count() == 0
    assert page.locator("main script").count() == 0
    assert "49" not in page.locator("pre.content").inner_text()
    # hovering and tabbing would fire any handler the content had smuggled in
    page.locator("pre.content").hover()
    page.keyboard.press("Tab")
    tab.clean()


def test_keyboard_only_approve(sqlite_dashboard: Dashboard, tab: Tab) -> None:
    dashboard = sqlite_dashboard
    artifact_id = dashboard.submit({"text": "keyboard"}, actor="bob", title="By keyboard")
    sign_in(tab, dashboard, "alice")
    page = tab.page
    page.goto(f"{dashboard.url}/ui/artifacts/{artifact_id}")
    # Tab from the top of the page until the reason field has focus
    for _ in range(30):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "reason":
            break
    else:
        raise AssertionError("Tab never reached the reason field")
    page.keyboard.type("checked by keyboard")
    page.keyboard.press("Tab")
    focused = page.evaluate("[document.activeElement.tagName, document.activeElement.value]")
    assert focused == ["BUTTON", "approve"]
    page.keyboard.press("Enter")
    expect_text(page.locator(".message.done"), "Approved")
    assert "by alice: checked by keyboard" in history(dashboard, artifact_id)
    tab.clean()

"""The dashboard over plain HTTP (no browser): security headers on every response, the
session cookie (its flags, no token inside, revocation signs out), CSRF and same-origin
checks, what a `--no-auth` server does, keyset links, and a live stream that ends when
the server stops."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import pytest
from review.conftest import run_blocking

from rubricflow.server.ui.security import CONTENT_SECURITY_POLICY
from rubricflow.store import Store
from server.conftest import RunningServer

from .conftest import Dashboard, csrf_of

STRICT = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)


@contextmanager
def signed_in(dashboard: Dashboard, who: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=dashboard.url, follow_redirects=True, timeout=30) as client:
        form = client.get("/ui/sign-in")
        answer = client.post(
            "/ui/sign-in",
            data={"csrf": csrf_of(form.text), "token": dashboard.tokens[who], "next": "/ui/"},
        )
        assert answer.status_code == 200 and "Review queue" in answer.text
        yield client


def assert_secured(response: httpx.Response) -> None:
    assert response.headers["content-security-policy"] == STRICT
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "same-origin"


def test_every_dashboard_response_carries_the_strict_policy(sqlite_dashboard: Dashboard) -> None:
    assert CONTENT_SECURITY_POLICY == STRICT
    dashboard = sqlite_dashboard
    artifact_id = dashboard.submit({"text": "headers"}, actor="bob")
    with httpx.Client(base_url=dashboard.url) as anonymous:
        for path in ("/ui/", "/ui/sign-in", "/ui/static/dashboard.css", "/ui/queue/fragment"):
            assert_secured(anonymous.get(path))
        redirect = anonymous.get("/ui/artifacts/x")
        assert redirect.status_code == 303
        assert redirect.headers["location"] == "/ui/sign-in?next=%2Fui%2Fartifacts%2Fx"
        # htmx asks for a fragment: it is told to load the sign-in page instead
        told = anonymous.get("/ui/queue/fragment", headers={"HX-Request": "true"})
        assert told.status_code == 204 and told.headers["hx-redirect"].startswith("/ui/sign-in")
        script = anonymous.get("/ui/static/vendor/htmx-2.0.11.min.js")
        assert script.headers["content-type"].startswith("text/javascript")
        assert anonymous.get("/ui/static/../templates/base.html").status_code == 404
        again = anonymous.get(
            "/ui/static/dashboard.css", headers={"If-None-Match": script.headers["etag"]}
        )
        assert again.status_code == 200
        etag = anonymous.get("/ui/static/dashboard.css").headers["etag"]
        assert (
            anonymous.get("/ui/static/dashboard.css", headers={"If-None-Match": etag}).status_code
            == 304
        )
    with signed_in(dashboard, "alice") as client:
        for path in (
            "/ui/",
            f"/ui/artifacts/{artifact_id}",
            "/ui/queue/fragment",
            "/ui/queue?bucket=awaiting_approval&age=1h&order=oldest",
        ):
            page = client.get(path)
            assert page.status_code == 200, path
            assert_secured(page)
            assert "<script>" not in page.text and " style=" not in page.text
        missing = client.get("/ui/artifacts/nothing-here")
        assert missing.status_code == 404 and "text/html" in missing.headers["content-type"]
        assert_secured(missing)
        assert "no artifact" in missing.text
    # the API keeps its OpenAPI document free of the dashboard's HTML routes
    with httpx.Client(base_url=dashboard.url) as anonymous:
        paths = anonymous.get("/openapi.json").json()["paths"]
        assert not [p for p in paths if p.startswith("/ui")]


def test_the_session_cookie_names_the_token_never_holds_it_and_ends_with_it(
    sqlite_dashboard: Dashboard,
) -> None:
    dashboard = sqlite_dashboard
    with httpx.Client(base_url=dashboard.url) as client:
        form = client.get("/ui/sign-in")
        csrf = csrf_of(form.text)
        wrong = client.post("/ui/sign-in", data={"csrf": csrf, "token": "rf_nope_nope"})
        assert wrong.status_code == 401 and "unknown, revoked or expired" in wrong.text
        assert "rubricflow_session" not in wrong.headers.get("set-cookie", "")
        # a sign-in without the form's CSRF token is refused (login CSRF)
        forged = client.post("/ui/sign-in", data={"token": dashboard.tokens["alice"]})
        assert forged.status_code == 403
        # an outside `next` is not followed
        answer = client.post(
            "/ui/sign-in",
            data={"csrf": csrf, "token": dashboard.tokens["alice"], "next": "//evil.example/"},
        )
        assert answer.status_code == 303 and answer.headers["location"] == "/ui/"
        cookie = answer.headers["set-cookie"]
        assert cookie.startswith("rubricflow_session=")
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
        assert "Secure" not in cookie  # plain http here; https makes it Secure
        value = cookie.split(";")[0].split("=", 1)[1]
        secret = dashboard.tokens["alice"].split("_", 2)[2]
        assert secret not in value and dashboard.tokens["alice"] not in value
        assert client.get("/ui/").status_code == 200
        # a tampered cookie is no session
        with httpx.Client(base_url=dashboard.url) as other:
            # one character of the signature changed (not the last ones: base64's last
            # character carries unused bits, so a change there may decode to the same bytes)
            at = len(value) - 5
            tampered = value[:at] + ("B" if value[at] != "B" else "C") + value[at + 1 :]
            other.cookies.set("rubricflow_session", tampered, path="/ui")
            assert other.get("/ui/").status_code == 303

    # revoking the token signs its sessions out at once
    name = "dora"
    token = _token(dashboard, name)
    dashboard.tokens[name] = token
    with signed_in(dashboard, name) as client:
        run_blocking(_revoke(dashboard.db_url, name))
        assert client.get("/ui/", follow_redirects=False).status_code == 303
    # signing out ends the session
    with signed_in(dashboard, "alice") as client:
        page = client.get("/ui/")
        out = client.post("/ui/sign-out", data={"csrf": csrf_of(page.text)})
        assert out.url.path == "/ui/sign-in"
        assert client.get("/ui/", follow_redirects=False).status_code == 303


def _token(dashboard: Dashboard, name: str) -> str:
    from server.conftest import issue_token

    return issue_token(dashboard.db_url, "reviewer", name=name)


async def _revoke(db_url: str, name: str) -> None:
    async with await Store.open(db_url) as store:
        await store.tokens.revoke(name)


def test_cross_site_posts_are_refused_even_with_a_token(sqlite_dashboard: Dashboard) -> None:
    dashboard = sqlite_dashboard
    artifact_id = dashboard.submit({"text": "origin"}, actor="bob")
    with signed_in(dashboard, "alice") as client:
        csrf = csrf_of(client.get(f"/ui/artifacts/{artifact_id}").text)
        url = f"/ui/artifacts/{artifact_id}/decision"
        data = {"csrf": csrf, "action": "approve", "reason": "r", "version": "1"}
        for headers in (
            {"Origin": "https://evil.example"},
            {"Sec-Fetch-Site": "cross-site"},
        ):
            assert client.post(url, data=data, headers=headers).status_code == 403
        assert client.post(url, json=data).status_code == 415
        # a reason is required
        refused = client.post(url, data={**data, "reason": "  "})
        assert refused.status_code == 422 and "needs a reason" in refused.text
        assert dashboard.status(artifact_id) == "in_review"
        # a decision on a version that is no longer current is refused, not applied
        stale = client.post(url, data={**data, "version": "999"})
        assert stale.status_code == 412
        done = client.post(url, data={**data, "version": ""})
        assert done.status_code == 200 and "Approved." in done.text
        # deciding again: the lifecycle refuses, explained to a person
        again = client.post(url, data={**data, "version": ""})
        assert again.status_code == 409 and "approved" in again.text


def test_keyset_links_page_through_the_queue(sqlite_dashboard: Dashboard) -> None:
    dashboard = sqlite_dashboard
    made = {dashboard.submit({"n": i}, actor="carol", title=f"paged {i}") for i in range(3)}
    with signed_in(dashboard, "alice") as client:
        seen: list[str] = []
        page = client.get("/ui/queue?bucket=awaiting_approval")
        pages = 1
        import re

        while True:
            seen += re.findall(r'<tr data-artifact="([^"]+)"', page.text)
            nxt = re.search(r'<a href="(/ui/queue\?[^"]+)" rel="next">', page.text)
            if nxt is None:
                break
            page = client.get(nxt.group(1).replace("&amp;", "&"))
            pages += 1
        assert len(seen) == len(set(seen)) and made <= set(seen)
        assert pages == -(-len(seen) // 50)


def test_a_no_auth_server_is_the_local_admin_with_csrf_still_checked(
    sqlite_db: str, start_server: Callable[..., RunningServer]
) -> None:
    server = start_server(sqlite_db, "--no-auth")
    with httpx.Client(base_url=server.url) as client:
        page = client.get("/ui/")
        assert page.status_code == 200 and "<strong>local</strong> (admin)" in page.text
        assert "Sign out" not in page.text
        assert client.get("/ui/sign-in").status_code == 303
        # the forms' token is a double-submit one: it must match this browser's cookie
        csrf = client.cookies["rubricflow_csrf"]
        assert client.post("/ui/sign-out", data={"x": "1"}).status_code == 403
        assert client.post("/ui/sign-out", data={"csrf": "x" * 43}).status_code == 403
        assert client.post("/ui/sign-out", data={"csrf": csrf}).status_code == 303
        with httpx.Client(base_url=server.url) as stranger:
            assert stranger.post("/ui/sign-in", data={"csrf": csrf}).status_code == 403


def test_the_live_stream_ends_when_the_server_stops(
    sqlite_db: str, start_server: Callable[..., RunningServer]
) -> None:
    server = start_server(sqlite_db, "--no-auth")
    with (
        httpx.Client(base_url=server.url, timeout=30) as client,
        client.stream("GET", "/ui/queue/events") as stream,
    ):
        assert stream.headers["content-type"].startswith("text/event-stream")
        lines = stream.iter_lines()
        assert next(lines) == "retry: 1000"
        started = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        rest = list(lines)
    assert "event: shutdown" in rest
    assert server.process.wait(20) in (0, -signal.SIGTERM)  # uvicorn re-raises it
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("target", ["/ui/", "/ui/artifacts/a?b=c", "//evil", "https://x/ui", "/x"])
def test_safe_next(target: str) -> None:
    from rubricflow.server.ui.signin import safe_next

    assert safe_next(target) == (target if target.startswith("/ui") else "/ui/")

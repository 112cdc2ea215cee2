"""The artifact and artifact-type resources through a real server, on SQLite and
PostgreSQL: every endpoint x role, allowed and denied (a stranger's artifact is 404, not
403); the actor recorded is the token's name; ETags and If-Match (412, never a lost
update); the long poll; cursor pages stable under inserts; ids with path tricks and
malformed bodies are 4xx problems."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from .artifact_setup import FAIL, PASS, Tokens, prepare
from .conftest import RunningServer

PROBLEM = "application/problem+json"
ROLES = ("none", "sub", "other", "rev", "revx", "admin")


def _client(server: RunningServer, tokens: Tokens, role: str) -> httpx.Client:
    return server.client(None if role == "none" else getattr(tokens, role))


def _new(client: httpx.Client, state: str, *, type_name: str = "note") -> dict[str, Any]:
    """An artifact the client creates, driven into `state` over HTTP."""
    if state == "draft":
        made = client.post("/v1/artifacts", json={"type": type_name, "content": PASS})
        assert made.status_code == 201, made.text
        return dict(made.json())
    content = FAIL if state == "needs_revision" else PASS
    body = {"type": type_name, "content": content, "defer": state == "pending_review"}
    done = client.post("/v1/submissions", json=body)
    assert done.status_code == 201, done.text
    artifact = dict(done.json()["artifact"])
    expected = {"awaiting": "in_review"}.get(state, state)
    assert artifact["status"] == expected, artifact
    return artifact


# endpoint -> (state of a `sub` artifact it acts on, method, path suffix, body)
OWN = {
    "show": ("draft", "GET", "", None),
    "history": ("draft", "GET", "/history", None),
    "evaluations": ("needs_revision", "GET", "/evaluations", None),
    "submit": ("draft", "POST", "/submit", None),
    "revise": ("needs_revision", "POST", "/revise", {"content": PASS, "reason": "fixed"}),
    "withdraw": ("pending_review", "POST", "/withdraw", {"reason": "not yet"}),
}
DECISIONS = {
    "approve": ("awaiting", "/approve", {"reason": "reads well"}, 200),
    "reject": ("needs_revision", "/reject", {"reason": "off topic"}, 200),
    "override": ("needs_revision", "/override", {"reason": "fine as is"}, 200),
    "archive": ("draft", "/archive", None, 200),
    "supersede": ("draft", "/supersede", {"reason": "replaced"}, 200),
    # a draft cannot be retried: 409 shows the role and type checks let it through
    "retry": ("draft", "/retry", None, 409),
}


def _expect(allowed: int, pattern: str) -> dict[str, int]:
    """Per role: `OWN` (the creator and reviewers/admins of the type) or `REV` (reviewers
    and admins of the type); a stranger to the artifact gets 404, a role below 403."""
    if pattern == "own":
        codes = (401, allowed, 404, allowed, 404, allowed)
    else:
        codes = (401, 403, 403, allowed, 404, allowed)
    return dict(zip(ROLES, codes, strict=True))


def _check_roles(server: RunningServer, tokens: Tokens) -> None:
    clients = {role: _client(server, tokens, role) for role in ROLES}
    sub = clients["sub"]
    failures: list[str] = []

    def check(what: str, role: str, response: httpx.Response, expected: int) -> None:
        if response.status_code != expected:
            failures.append(f"{what} as {role}: {response.status_code} != {expected}")
        elif response.status_code >= 400:
            assert response.headers["content-type"].startswith(PROBLEM), response.text

    for name, (state, method, suffix, body) in OWN.items():
        allowed = 200
        denied = _new(sub, state)  # a refused request changes nothing: one will do
        for role, expected in _expect(allowed, "own").items():
            artifact = _new(sub, state) if expected == allowed else denied
            response = clients[role].request(
                method, f"/v1/artifacts/{artifact['id']}{suffix}", json=body
            )
            check(name, role, response, expected)
    for name, (state, suffix, body, allowed) in DECISIONS.items():
        type_name = "gated" if state == "awaiting" else "note"
        denied = _new(sub, state, type_name=type_name)
        for role, expected in _expect(allowed, "rev").items():
            artifact = _new(sub, state, type_name=type_name) if expected == allowed else denied
            response = clients[role].post(f"/v1/artifacts/{artifact['id']}{suffix}", json=body)
            check(name, role, response, expected)
            if response.status_code == 200:  # the actor is the token's name
                history = clients["admin"].get(f"/v1/artifacts/{artifact['id']}/history").json()
                assert history[-1]["actor"] == role, history[-1]
    creations = {
        "create": ("/v1/artifacts", {"type": "note", "content": PASS}),
        "submissions": ("/v1/submissions", {"type": "note", "content": PASS}),
    }
    for name, (path, body) in creations.items():
        codes = (401, 201, 201, 201, 403, 201)
        for role, expected in zip(ROLES, codes, strict=True):
            response = clients[role].post(path, json=body)
            check(name, role, response, expected)
            if response.status_code == 201:
                made = response.json().get("artifact", response.json())
                assert made["created_by"] == role
    type_body = {"rubrics": [{"rubric_id": "gate"}], "description": "made over HTTP"}
    for role, (listing, getting, putting) in zip(
        ROLES,
        [
            (401, 401, 401),
            (200, 200, 403),
            (200, 200, 403),
            (200, 200, 403),
            (200, 404, 403),
            (200, 200, 200),
        ],
        strict=True,
    ):
        check("types list", role, clients[role].get("/v1/types"), listing)
        check("types get", role, clients[role].get("/v1/types/note"), getting)
        check("types put", role, clients[role].put("/v1/types/memo", json=type_body), putting)
        check("list", role, clients[role].get("/v1/artifacts"), 401 if role == "none" else 200)
    assert not failures, "\n".join(failures)

    # what each one sees: the types of its token; a submitter only its own artifacts
    assert [t["name"] for t in clients["revx"].get("/v1/types").json()] == ["secret"]
    assert {t["name"] for t in clients["sub"].get("/v1/types").json()} == {"note", "gated"}
    mine = clients["other"].get("/v1/artifacts", params={"limit": 200}).json()["items"]
    assert mine and {a["created_by"] for a in mine} == {"other"}
    spying = clients["other"].get("/v1/artifacts", params={"created_by": "sub"}).json()
    assert spying["items"] == []
    assert clients["revx"].get("/v1/artifacts").json()["items"] == []
    everyone = clients["rev"].get("/v1/artifacts", params={"limit": 200}).json()["items"]
    assert {a["created_by"] for a in everyone} >= {"sub", "other", "rev", "admin"}
    memo = clients["admin"].get("/v1/types/memo").json()
    assert memo["rubrics"] == [{"rubric_id": "gate", "version": None, "blocking": False}]
    for client in clients.values():
        client.close()


def _check_versions(server: RunningServer, tokens: Tokens) -> None:
    """ETag on every artifact response; If-Match with an old version is 412 and changes
    nothing; the current one applies; a malformed one is 400."""
    with server.client(tokens.sub) as sub, server.client(tokens.rev) as rev:
        artifact = _new(sub, "awaiting", type_name="gated")
        path = f"/v1/artifacts/{artifact['id']}"
        shown = rev.get(path)
        assert shown.headers["etag"] == f'"{artifact["version"]}"'
        stale = f'"{artifact["version"] - 1}"'
        refused = rev.post(f"{path}/approve", json={"reason": "ok"}, headers={"If-Match": stale})
        assert refused.status_code == 412, refused.text
        assert refused.headers["content-type"].startswith(PROBLEM)
        assert "no longer at version" in refused.json()["detail"]
        assert rev.get(path).json()["version"] == artifact["version"]
        bad = rev.post(f"{path}/approve", json={"reason": "ok"}, headers={"If-Match": "yes"})
        assert bad.status_code == 400
        approved = rev.post(
            f"{path}/approve", json={"reason": "ok"}, headers={"If-Match": shown.headers["etag"]}
        )
        assert approved.status_code == 200, approved.text
        assert approved.json()["status"] == "approved"
        assert approved.headers["etag"] == f'"{artifact["version"] + 1}"'

        # two reviewers decide on the same version at once: one wins, the other is 412
        for _ in range(5):
            artifact = _new(sub, "needs_revision")
            path = f"/v1/artifacts/{artifact['id']}"
            match = {"If-Match": f'"{artifact["version"]}"'}

            def decide(kind: str, path: str = path, match: dict[str, str] = match) -> int:
                with server.client(tokens.rev) as client:
                    answer = client.post(f"{path}/{kind}", json={"reason": kind}, headers=match)
                    return answer.status_code

            with ThreadPoolExecutor(2) as pool:
                results = list(pool.map(decide, ("reject", "override")))
            assert sorted(results) == [200, 412], results
            final = rev.get(f"{path}/history").json()
            assert len(final) == artifact["version"] + 1


def _check_long_poll(server: RunningServer, tokens: Tokens) -> None:
    with server.client(tokens.sub) as sub, server.client(tokens.rev) as rev:
        artifact = _new(sub, "awaiting", type_name="gated")
        path = f"/v1/artifacts/{artifact['id']}"
        held = {"If-None-Match": f'"{artifact["version"]}"'}
        assert sub.get(path, headers=held).status_code == 304
        started = time.monotonic()
        assert sub.get(path, params={"wait": 0.3}, headers=held).status_code == 304
        assert time.monotonic() - started >= 0.3

        polled: list[httpx.Response] = []

        def poll() -> None:
            polled.append(sub.get(path, params={"wait": 30, "after": artifact["version"]}))

        waiter = threading.Thread(target=poll)
        started = time.monotonic()
        waiter.start()
        rev.post(f"{path}/approve", json={"reason": "ok"})
        waiter.join()
        assert time.monotonic() - started < 10
        assert polled[0].status_code == 200
        assert polled[0].json()["status"] == "approved"
        assert polled[0].headers["etag"] == f'"{artifact["version"] + 1}"'
        # a stranger cannot wait on it either
        with server.client(tokens.other) as other:
            assert other.get(path, params={"wait": 1, "after": 1}).status_code == 404


def _check_pages(server: RunningServer, tokens: Tokens) -> None:
    """Pages of 3 over 7 artifacts with one more created after each page: every one of the
    7 exactly once, none of the new ones (they come before the first page)."""
    with server.client(tokens.admin) as admin:
        first = [_new(admin, "draft", type_name="secret")["id"] for _ in range(7)]
        seen: list[str] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"type": "secret", "limit": 3}
            if cursor:
                params["cursor"] = cursor
            page = admin.get("/v1/artifacts", params=params)
            assert page.status_code == 200, page.text
            seen += [item["id"] for item in page.json()["items"]]
            _new(admin, "draft", type_name="secret")
            cursor = page.json()["next_cursor"]
            if cursor is None:
                break
        assert seen == list(reversed(first))
        assert admin.get("/v1/artifacts", params={"cursor": "garbage!"}).status_code == 400
        unknown = admin.get("/v1/artifacts", params={"status": "published"})
        assert unknown.status_code == 400 and "not a state" in unknown.json()["detail"]
        drafts = admin.get("/v1/artifacts", params={"type": "secret", "status": "draft"}).json()
        assert len(drafts["items"]) == 7 + 3
        assert admin.get("/v1/artifacts", params={"dead_letter": True}).json()["items"] == []


def _check_strangers_input(server: RunningServer, tokens: Tokens) -> None:
    with server.client(tokens.admin) as admin:
        for raw in ("%2E%2E", "a%2Fb", "a%00b", "x" * 5000, "%0A"):
            response = admin.get(f"/v1/artifacts/{raw}")
            assert 400 <= response.status_code < 500, (raw, response.status_code)
            assert response.headers["content-type"].startswith(PROBLEM), raw
        for body in (
            {"type": "note"},  # no content
            {"type": "note", "content": "x", "colour": "red"},  # an unknown field
            {"type": 7, "content": "x"},
            {"type": "../note", "content": "x"},
            {"type": "note", "content": "x", "id": ".."},
            {"type": "note", "content": "x", "title": "a\u0000b"},
        ):
            response = admin.post("/v1/artifacts", json=body)
            assert response.status_code == 422, (body, response.text)
        malformed = admin.post(
            "/v1/submissions", content=b"{not json", headers={"content-type": "application/json"}
        )
        assert malformed.status_code == 422
        # content is data: a template or markup in it comes back exactly as sent
        content = {"text": "{{ 7 * 7 }} <script>x</script> ${HOME}"}
        made = admin.post("/v1/submissions", json={"type": "note", "content": content})
        assert made.status_code == 201
        assert admin.get(made.headers["location"]).json()["content"] == content
        huge = admin.post("/v1/artifacts", json={"type": "note", "content": "x" * 2_000_000})
        assert huge.status_code == 413


CHECKS: dict[str, Callable[[RunningServer, Tokens], None]] = {
    "roles": _check_roles,
    "versions": _check_versions,
    "long_poll": _check_long_poll,
    "pages": _check_pages,
    "strangers_input": _check_strangers_input,
}


def test_artifacts_api(start_server: Callable[..., RunningServer], server_db: str) -> None:
    """One server per backend (no embedded worker: a deferred submission stays queued)."""
    tokens = prepare(server_db)
    server = start_server(server_db, "--review-workers", "0", "--max-body-bytes", "1000000")
    for name, check in CHECKS.items():
        try:
            check(server, tokens)
        except AssertionError as error:
            pytest.fail(f"{name}: {error}\n--- server log ---\n{server.output()[-3000:]}")

"""Idempotency-Key through a real server, on SQLite and PostgreSQL: a retry replays the
first response and changes nothing; the key with another body is refused; keys are per
principal; two clients racing with one key create one artifact and one review, and both
get its response."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx

from .artifact_setup import PASS, Tokens, prepare
from .conftest import RunningServer

PROBLEM = "application/problem+json"


def _key(name: str) -> dict[str, str]:
    return {"Idempotency-Key": name}


def _check_replays(server: RunningServer, tokens: Tokens) -> None:
    with server.client(tokens.sub) as sub, server.client(tokens.other) as other:
        body = {"type": "note", "content": PASS}
        first = sub.post("/v1/submissions", json=body, headers=_key("note-1"))
        assert first.status_code == 201, first.text
        assert "idempotent-replayed" not in first.headers
        again = sub.post("/v1/submissions", json=body, headers=_key("note-1"))
        assert again.status_code == 201
        assert again.headers["idempotent-replayed"] == "true"
        assert again.content == first.content
        assert again.headers["etag"] == first.headers["etag"]
        assert again.headers["location"] == first.headers["location"]
        mine = sub.get("/v1/artifacts").json()["items"]
        assert [a["id"] for a in mine] == [first.json()["artifact"]["id"]]

        # the key with another request: refused, nothing done
        changed = sub.post(
            "/v1/submissions", json={**body, "content": "other"}, headers=_key("note-1")
        )
        assert changed.status_code == 422
        assert changed.headers["content-type"].startswith(PROBLEM)
        assert "different request" in changed.json()["detail"]
        elsewhere = sub.post("/v1/artifacts", json=body, headers=_key("note-1"))
        assert elsewhere.status_code == 422
        assert len(sub.get("/v1/artifacts").json()["items"]) == 1

        # keys are per principal: another token's "note-1" is its own request
        theirs = other.post("/v1/submissions", json=body, headers=_key("note-1"))
        assert theirs.status_code == 201 and "idempotent-replayed" not in theirs.headers
        assert theirs.json()["artifact"]["id"] != first.json()["artifact"]["id"]

        # a refusal is the request's answer too: replayed, not retried
        unknown = {"type": "note", "content": PASS, "id": first.json()["artifact"]["id"]}
        taken = sub.post("/v1/artifacts", json=unknown, headers=_key("dup"))
        assert taken.status_code == 409 and "is taken" in taken.json()["detail"]
        retried = sub.post("/v1/artifacts", json=unknown, headers=_key("dup"))
        assert retried.headers["idempotent-replayed"] == "true"
        assert retried.content == taken.content

        for bad in ("", "x" * 256, "tab\there"):
            refused = sub.post("/v1/artifacts", json=body, headers=_key(bad))
            assert refused.status_code == 400, bad
            assert refused.headers["content-type"].startswith(PROBLEM)

    with server.client(tokens.sub) as sub, server.client(tokens.rev) as rev:
        made = sub.post("/v1/submissions", json={"type": "gated", "content": PASS}).json()
        path = f"/v1/artifacts/{made['artifact']['id']}/approve"
        approved = rev.post(path, json={"reason": "ok"}, headers=_key("approve-1"))
        assert approved.status_code == 200
        # a retry of a decision that already happened gets its answer, not a 409
        again = rev.post(path, json={"reason": "ok"}, headers=_key("approve-1"))
        assert again.status_code == 200 and again.content == approved.content
        assert rev.post(path, json={"reason": "ok"}).status_code == 409


def _check_race(server: RunningServer, tokens: Tokens) -> None:
    """Eight keys, each sent by two clients at once (create and submit): eight artifacts,
    each reviewed once, and both clients of a key see the same response."""

    def send(key: str) -> httpx.Response:
        with server.client(tokens.admin) as client:
            body = {"type": "secret", "content": f"race {key}"}
            return client.post("/v1/submissions", json=body, headers=_key(key))

    keys = [f"race-{n}" for n in range(8) for _ in range(2)]
    with ThreadPoolExecutor(16) as pool:
        responses = list(pool.map(send, keys))
    by_key: dict[str, list[httpx.Response]] = {}
    for key, response in zip(keys, responses, strict=True):
        assert response.status_code == 201, response.text
        by_key.setdefault(key, []).append(response)
    for pair in by_key.values():
        assert pair[0].json() == pair[1].json()
        assert sum("idempotent-replayed" in r.headers for r in pair) == 1
    with server.client(tokens.admin) as admin:
        made = admin.get("/v1/artifacts", params={"type": "secret", "limit": 100}).json()["items"]
        assert len(made) == 8
        for artifact in made:
            history = admin.get(f"/v1/artifacts/{artifact['id']}/history").json()
            assert [e["trigger"] for e in history].count("submit") == 1
            assert [e["trigger"] for e in history].count("start_review") == 1


def test_idempotency_keys(start_server: Callable[..., RunningServer], server_db: str) -> None:
    tokens = prepare(server_db)
    server = start_server(server_db, "--review-workers", "0")
    _check_replays(server, tokens)
    _check_race(server, tokens)

"""Content bounded at the door, over HTTP on SQLite and PostgreSQL (issue 27, finding 2):
content nested past 64 levels, a list of too many items or a string too long is a 422
naming the bound and the path into the content, before anything is stored; a row stored
before the bounds existed, nested 256 levels deep (pydantic's serialiser stops at 255),
no longer makes every listing that holds it a 500: it is shown cut, with a marker."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from review.conftest import run_blocking

from rubricflow.content_bounds import CUT_MARKER, DEFAULT_MAX_DEPTH
from rubricflow.review.lifecycle import CREATE
from rubricflow.store import Store
from rubricflow.store.artifacts import ArtifactRepository, NewArtifact

from .artifact_setup import PASS, Tokens, prepare
from .conftest import RunningServer

PROBLEM = "application/problem+json"


def nested(levels: int, leaf: Any = "x") -> Any:
    """`leaf` inside `levels` objects: {"a": {"a": ... "x"}}."""
    value = leaf
    for _ in range(levels):
        value = {"a": value}
    return value


@pytest.fixture(scope="module")
def tokens(module_server: RunningServer) -> Tokens:
    return prepare(module_server.db_url)


@pytest.fixture
def sub(module_server: RunningServer, tokens: Tokens) -> Iterator[httpx.Client]:
    with module_server.client(tokens.sub) as client:
        yield client


def _own_ids(client: httpx.Client) -> set[str]:
    listed = client.get("/v1/artifacts", params={"limit": 200})
    assert listed.status_code == 200, listed.text
    return {item["id"] for item in listed.json()["items"]}


def _refused(response: httpx.Response, *fragments: str) -> str:
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    detail = str(response.json()["detail"])
    for fragment in fragments:
        assert fragment in detail, detail
    return detail


def test_content_at_the_depth_bound_is_stored_and_listed(sub: httpx.Client) -> None:
    made = sub.post("/v1/artifacts", json={"type": "note", "content": nested(DEFAULT_MAX_DEPTH)})
    assert made.status_code == 201, made.text
    assert made.json()["content"] == nested(DEFAULT_MAX_DEPTH)
    assert made.json()["id"] in _own_ids(sub)


@pytest.mark.parametrize("route", ["/v1/artifacts", "/v1/submissions"])
def test_content_past_the_depth_bound_is_422_and_nothing_is_stored(
    sub: httpx.Client, route: str
) -> None:
    before = _own_ids(sub)
    for levels in (DEFAULT_MAX_DEPTH + 1, 256):
        body = {"type": "note", "content": {"doc": nested(levels - 1)}, "id": f"deep-{levels}"}
        _refused(sub.post(route, json=body), "64 levels deep", "$.doc.a.a", "max_depth")
    assert _own_ids(sub) == before
    assert sub.get(f"/v1/artifacts/deep-{DEFAULT_MAX_DEPTH + 1}").status_code == 404


def test_metadata_and_revisions_are_bounded_too(sub: httpx.Client) -> None:
    body = {"type": "note", "content": PASS, "metadata": {"m": nested(70)}}
    _refused(sub.post("/v1/artifacts", json=body), "artifact metadata", "$.m.a")
    made = sub.post("/v1/artifacts", json={"type": "note", "content": PASS})
    assert made.status_code == 201, made.text
    path = f"/v1/artifacts/{made.json()['id']}"
    revised = sub.post(f"{path}/revise", json={"content": nested(65), "reason": "deeper"})
    _refused(revised, "64 levels deep")
    assert sub.get(path).json()["revision"] == 1


def test_items_and_string_length_are_bounded(sub: httpx.Client) -> None:
    before = _own_ids(sub)
    many = {"type": "note", "content": {"rows": [0] * 100_001}}
    _refused(sub.post("/v1/artifacts", json=many), "100001 items", "$.rows", "max_items")
    long = {"type": "note", "content": {"rows": ["ok", "y" * 5_000_001]}}
    _refused(sub.post("/v1/submissions", json=long), "5000001 characters", "$.rows[1]")
    assert _own_ids(sub) == before


def test_content_nested_past_the_json_parser_is_a_client_error(sub: httpx.Client) -> None:
    """100,000 levels: past Python's recursion limit, where the JSON parser itself gives
    up; a 4xx problem, never a 500."""
    text = '{"type": "note", "content": ' + "[" * 100_000 + "]" * 100_000 + "}"
    answer = sub.post("/v1/artifacts", content=text, headers={"content-type": "application/json"})
    assert 400 <= answer.status_code < 500, answer.text
    assert answer.headers["content-type"].startswith(PROBLEM)


def test_evaluate_targets_are_bounded(sub: httpx.Client) -> None:
    body = {"rubric": "gate", "targets": [{"content": PASS}, {"content": nested(65)}]}
    _refused(sub.post("/v1/evaluate", json=body), "targets[1] content", "64 levels deep")
    fine = {"rubric": "gate", "target": {"content": nested(64)}}
    assert sub.post("/v1/evaluate", json=fine).status_code == 200


def _store_row(db_url: str, artifact_id: str, content: Any) -> None:
    """Write an artifact straight through the store, as the code before the bounds did."""

    async def write() -> None:
        async with await Store.open(db_url) as store:
            new = NewArtifact(
                artifact_id=artifact_id,
                type_name="note",
                content=content,
                actor="sub",
                title="old",
                metadata={"deep": nested(300)},
                trigger=CREATE,
                state="draft",
                revision_state="draft",
            )
            await ArtifactRepository(store.database).create(new)

    run_blocking(write())


def _depth(value: Any) -> int:
    depth = 0
    while isinstance(value, dict):
        value, depth = value["a"], depth + 1
    return depth


@pytest.mark.parametrize("levels", [256, 900])
def test_a_deep_row_stored_before_the_bounds_never_fails_a_listing(
    module_server: RunningServer, tokens: Tokens, sub: httpx.Client, levels: int
) -> None:
    artifact_id = f"old-deep-{levels}"
    whole = sub.post("/v1/artifacts", json={"type": "note", "content": {"whole": [1, 2]}})
    assert whole.status_code == 201, whole.text
    _store_row(module_server.db_url, artifact_id, nested(levels))
    with module_server.client(tokens.admin) as admin:
        for client, path in [
            (sub, "/v1/artifacts"),
            (admin, "/v1/artifacts?limit=200"),
            (admin, "/v1/artifacts?type=note&status=draft"),
            (sub, f"/v1/artifacts/{artifact_id}"),
        ]:
            answer = client.get(path)
            assert answer.status_code == 200, (path, answer.text)
            found = answer.json()
            items = found.get("items", [found])
            (shown,) = [item for item in items if item["id"] == artifact_id]
            text = json.dumps(shown["content"])
            assert CUT_MARKER in text
            assert 100 < _depth(shown["content"]) <= 200
            assert CUT_MARKER in json.dumps(shown["metadata"])
        # submitting it holds it to the bounds: refused, nothing changes
        refused = sub.post(f"/v1/artifacts/{artifact_id}/submit")
        _refused(refused, f"artifact {artifact_id!r} content", "max_depth")
        assert sub.get(f"/v1/artifacts/{artifact_id}").json()["status"] == "draft"
        # the other rows of the listing are whole
        page = admin.get("/v1/artifacts?limit=200").json()["items"]
        assert any(item["content"] == {"whole": [1, 2]} for item in page)

"""schemathesis against the live OpenAPI document of a real server, on SQLite and
PostgreSQL, with an admin's token and a submitter's: a seeded run (a few hundred
requests per backend) of its examples, fuzzing (valid and invalid requests) and stateful
phases (chains of calls along the links it infers), and not one server error (5xx) nor
one answer the document does not describe (status, content type, body schema). The same
runner, `benchmarks/api_fuzz.py`, makes the long run (5,000+ requests per backend;
docs/server.md). Then the classic bad inputs by hand: malformed JSON, wrong types,
unknown fields, huge bodies and ids with path tricks are 4xx problems."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import make_url

from .conftest import RunningServer, issue_token

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
try:
    from benchmarks import api_fuzz
finally:
    sys.path.remove(str(ROOT))

PROBLEM = "application/problem+json"
SEED = 27
#: examples an operation and generation mode: about 330 requests per backend
MAX_EXAMPLES = 3
PHASES = ("examples", "fuzzing", "stateful")


def test_seeded_fuzzing_finds_no_server_error_and_no_undeclared_answer(
    start_server: Callable[..., RunningServer], server_db: str, tmp_path: Path
) -> None:
    backend = make_url(server_db).get_backend_name()
    secrets = api_fuzz.prepare(server_db)  # a rubric, a type, admin and submitter tokens
    server = start_server(server_db)
    figures = api_fuzz.fuzz_server(
        backend,
        server.url,
        server.log,
        secrets,
        tmp_path,
        seed=SEED,
        max_examples=MAX_EXAMPLES,
        phases=PHASES,
    )
    summary = figures.as_dict()
    print(summary)
    log = server.output()
    # what the server said of a failure (its traceback), shown with the failure itself
    said = log[max(0, log.find("Traceback") - 2000) :][:6000] if "Traceback" in log else ""
    assert not figures.failures, (summary["failures"], said)
    assert figures.server_errors == 0, summary
    assert not figures.errors, summary["errors"]
    assert "Traceback" not in server.output()
    assert figures.requests >= 250, summary
    # each token got through to real work, not only refusals
    for role in ("admin", "submitter"):
        assert figures.by_role[role]["statuses"].get("2xx", 0) >= 10, summary


# ---------------------------------------------------------------- bad inputs by hand


@pytest.fixture
def server_and_admin(
    start_server: Callable[..., RunningServer], sqlite_db: str
) -> tuple[RunningServer, str]:
    admin = issue_token(sqlite_db, "admin", name="ops")
    return start_server(sqlite_db, "--review-workers", "0", "--max-body-bytes", "65536"), admin


def _assert_problem(response: Any, *statuses: int) -> dict[str, Any]:
    assert response.status_code in statuses, (response.status_code, response.text[:500])
    assert response.headers["content-type"] == PROBLEM, response.headers
    body: dict[str, Any] = response.json()
    assert body["status"] == response.status_code and body["detail"]
    assert body["request_id"] == response.headers["x-request-id"]
    return body


def test_malformed_wrong_unknown_and_huge_inputs_are_4xx_problems(
    server_and_admin: tuple[RunningServer, str],
) -> None:
    server, admin = server_and_admin
    with server.client(admin) as client:
        post = client.post
        json_header = {"Content-Type": "application/json"}
        # malformed JSON
        body = _assert_problem(
            post("/v1/tokens", content=b'{"name": "x",', headers=json_header), 422
        )
        assert "JSON" in body["detail"] or "json" in body["detail"]
        _assert_problem(post("/v1/tokens", content=b"\xff\xfe\x00", headers=json_header), 400, 422)
        _assert_problem(post("/v1/tokens", content=b"[1, 2]", headers=json_header), 422)
        _assert_problem(post("/v1/tokens", content=b"null", headers=json_header), 422)
        _assert_problem(
            post("/v1/tokens", content=b"name=x", headers={"Content-Type": "text/plain"}), 422
        )
        # wrong types: every wrong field is named
        body = _assert_problem(post("/v1/tokens", json={"name": 5, "role": ["admin"]}), 422)
        assert {item["path"] for item in body["errors"]} >= {"body.name", "body.role"}
        _assert_problem(client.get("/v1/tokens", params={"include_revoked": "perhaps"}), 422)
        # unknown fields are refused, not silently dropped (a typo'd field must not pass)
        unknown = post("/v1/tokens", json={"name": "t1", "role": "submitter", "rol": "admin"})
        body = _assert_problem(unknown, 422)
        assert [item["path"] for item in body["errors"]] == ["body.rol"]
        # a huge body: refused by its declared length, and when streamed without one
        _assert_problem(post("/v1/tokens", content=b"x" * 100_000, headers=json_header), 413)

        def chunks() -> Any:
            for _ in range(20):
                yield b"y" * 8192

        _assert_problem(post("/v1/tokens", content=chunks(), headers=json_header), 413)


PATH_TRICKS = [
    "/v1/tokens/..",
    "/v1/tokens/%2e%2e",
    "/v1/tokens/..%2F..%2Fetc%2Fpasswd",
    "/v1/tokens/a%00b",
    "/v1/tokens/" + "n" * 5000,
    "/v1/tokens/%ff%fe",
    "/v1/tokens/name%0d%0aX-Injected:%201",
    "/v1/me/../tokens",
]


def test_ids_with_path_tricks_are_4xx_problems(
    server_and_admin: tuple[RunningServer, str],
) -> None:
    server, admin = server_and_admin
    with server.client(admin) as client:
        for path in PATH_TRICKS:
            response = client.delete(path)
            _assert_problem(response, 400, 404, 405, 414, 422)
            assert "x-injected" not in response.headers
        # nothing was revoked by any of them
        assert [t["name"] for t in client.get("/v1/tokens").json()] == ["ops"]

"""schemathesis against the live OpenAPI document of a real server, with an admin token:
at least 1,000 generated requests (valid and invalid ones) over every operation, and not
one server error (5xx) nor one response that the document does not describe (status,
content type, body schema). Then the classic bad inputs by hand: malformed JSON, wrong
types, unknown fields, huge bodies and ids with path tricks are 4xx problems."""

from __future__ import annotations

import contextlib
import math
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from .conftest import RunningServer, issue_token

PROBLEM = "application/problem+json"
TOTAL_REQUESTS = 1000
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
# operations whose fuzzing would end the run itself: revoking the fuzzer's own token
# (its name is fixed below, so the fuzzer may hit it) is exercised by the token tests
ADMIN_NAME = "fuzz-admin"


def test_generated_requests_get_no_server_error_and_match_the_document(
    start_server: Callable[..., RunningServer], sqlite_db: str
) -> None:
    admin = issue_token(sqlite_db, "admin", name=ADMIN_NAME)
    server = start_server(sqlite_db, "--review-workers", "0", "--no-access-log")
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 5, [op.label for op in operations]
    session = requests.Session()
    headers = {"Authorization": f"Bearer {admin}"}
    sent: Counter[str] = Counter()
    statuses: Counter[int] = Counter()
    failures: dict[str, str] = {}
    started = time.monotonic()

    def fuzz_one(operation: Any, mode: GenerationMode, examples: int) -> None:
        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=examples,
            deadline=None,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def fuzz(case: Any) -> None:
            if _revokes_ourselves(case):
                return
            response = case.call(base_url=server.url, session=session, headers=headers)
            sent[operation.label] += 1
            statuses[response.status_code] += 1
            try:
                case.validate_response(response, checks=CHECKS)
            except BaseException as error:  # every distinct failure, shrinking none
                if isinstance(error, (KeyboardInterrupt, SystemExit)):
                    raise
                key = f"{operation.label} [{mode.value}] {type(error).__name__}"
                failures.setdefault(key, f"{error}"[:1500])

        # no invalid request exists for an operation without inputs
        with contextlib.suppress(Unsatisfiable):
            fuzz()

    # every operation in both modes, each given an even share of the requests still
    # missing (generation, not the server, is most of the cost: no more than the 1,000 are
    # generated); operations without inputs give one request a round, so go round until
    # enough were sent
    pairs = [
        (operation, mode)
        for operation in operations
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    ]
    for _ in range(5):
        for index, (operation, mode) in enumerate(pairs):
            missing = TOTAL_REQUESTS - sum(sent.values())
            if missing <= 0:
                break
            fuzz_one(operation, mode, math.ceil(missing / (len(pairs) - index)))
        if sum(sent.values()) >= TOTAL_REQUESTS:
            break

    elapsed = time.monotonic() - started
    assert sum(sent.values()) >= TOTAL_REQUESTS, sent
    assert not failures, "\n\n".join(f"{k}\n{v}" for k, v in failures.items())
    assert not [code for code in statuses if code >= 500], statuses
    assert "Traceback" not in server.output()
    print(f"{sum(sent.values())} requests in {elapsed:.1f} s; statuses {dict(statuses)}")


def _revokes_ourselves(case: Any) -> bool:
    return (
        case.method.upper() == "DELETE" and (case.path_parameters or {}).get("name") == ADMIN_NAME
    )


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

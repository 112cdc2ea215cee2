"""The server's foundation, through a real uvicorn process: health and readiness without
a token, tokens and roles, problem+json errors, body limits, `--no-auth` only on loopback,
and a clean stop on SIGTERM.

Tests that need no server options of their own share one server per backend
(`module_server`), each with its own token names."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
from pathlib import Path

from cli_assertions import assert_error
from review.conftest import run_blocking
from typer.testing import CliRunner

from rubricflow.cli import app as cli_app
from rubricflow.store import Store

from .conftest import RunningServer, issue_token

PROBLEM = "application/problem+json"


def test_health_readiness_and_the_api_document_need_no_token(
    module_server: RunningServer,
) -> None:
    server = module_server
    with server.client() as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        ready = client.get("/readyz")
        assert ready.status_code == 200 and ready.json()["status"] == "ready"
        document = client.get("/openapi.json").json()
        assert document["info"]["title"] == "rubricflow"
        assert "/v1/me" in document["paths"]
        assert client.get("/docs").status_code == 200


def test_a_request_without_a_valid_token_is_a_401_problem(
    module_sqlite_server: RunningServer,
) -> None:
    server = module_sqlite_server
    with server.client() as client:
        missing = client.get("/v1/me")
        assert missing.status_code == 401
        assert missing.headers["content-type"] == PROBLEM
        assert missing.headers["www-authenticate"].startswith("Bearer")
        body = missing.json()
        assert body["status"] == 401 and "rubricflow tokens create" in body["detail"]
        wrong = client.get("/v1/me", headers={"Authorization": "Bearer rf_0000_nope"})
        assert wrong.status_code == 401 and "unknown, revoked or expired" in wrong.json()["detail"]


def test_the_token_names_the_caller_and_revoking_it_stops_it_at_once(
    module_server: RunningServer,
) -> None:
    server = module_server
    token = issue_token(server.db_url, "reviewer", name="queue-bot", types=["post"])
    admin = issue_token(server.db_url, "admin", name="revoker")
    with server.client(token) as client, server.client(admin) as ops:
        assert client.get("/v1/me").json() == {
            "name": "queue-bot",
            "role": "reviewer",
            "types": ["post"],
        }
        assert ops.delete("/v1/tokens/queue-bot").json()["revoked_at"]
        assert client.get("/v1/me").status_code == 401


def test_only_admins_manage_tokens_and_the_secret_is_shown_once(
    module_sqlite_server: RunningServer,
) -> None:
    server = module_sqlite_server
    admin = issue_token(server.db_url, "admin", name="mt-ops")
    reviewer = issue_token(server.db_url, "reviewer", name="mt-rev")
    with server.client(admin) as ops, server.client(reviewer) as rev:
        denied = rev.post("/v1/tokens", json={"name": "x", "role": "submitter"})
        assert denied.status_code == 403 and denied.headers["content-type"] == PROBLEM
        assert "admin role" in denied.json()["detail"]
        created = ops.post("/v1/tokens", json={"name": "mt-bot", "role": "submitter"})
        assert created.status_code == 201
        secret = created.json()["token"]
        listed = ops.get("/v1/tokens").json()
        # the shared store also holds the other tests' tokens: every one of this test's
        # is listed, and no listed token carries its secret
        mine = {t["name"] for t in listed if t["name"].startswith("mt-")}
        assert mine == {"mt-ops", "mt-rev", "mt-bot"}
        assert all("token" not in t for t in listed)
        with server.client(secret) as bot:
            assert bot.get("/v1/me").json()["name"] == "mt-bot"
        again = ops.post("/v1/tokens", json={"name": "mt-bot", "role": "admin"})
        assert again.status_code == 422 and "exists" in again.json()["detail"]
    database = server.db_url.split("///", 1)[1]
    with sqlite3.connect(database) as connection:
        stored = " ".join(
            str(v) for row in connection.execute("SELECT * FROM api_tokens") for v in row
        )
    assert secret.rsplit("_", 1)[1] not in stored


def test_an_expired_token_is_refused(module_sqlite_server: RunningServer) -> None:
    from datetime import datetime, timedelta, timezone

    server = module_sqlite_server

    async def create() -> str:
        async with await Store.open(server.db_url) as store:
            issued = await store.tokens.create(
                "short",
                role="admin",
                expires_at=datetime.now(timezone.utc) + timedelta(seconds=1),
                created_by="tests",
            )
            return issued.secret

    secret = run_blocking(create())
    run_blocking(asyncio.sleep(1.1))
    with server.client(secret) as client:
        assert client.get("/v1/me").status_code == 401


def test_errors_are_problems_for_unknown_routes_and_bad_bodies(start_server, sqlite_db) -> None:
    admin = issue_token(sqlite_db, "admin")
    server = start_server(sqlite_db, "--max-body-bytes", "2048")
    with server.client(admin) as client:
        unknown = client.get("/v1/nothing-here")
        assert unknown.status_code == 404 and unknown.headers["content-type"] == PROBLEM
        malformed = client.post(
            "/v1/tokens", content=b"{not json", headers={"content-type": "application/json"}
        )
        assert malformed.status_code == 422 and malformed.headers["content-type"] == PROBLEM
        wrong_type = client.post("/v1/tokens", json={"name": 5, "role": "boss"})
        assert wrong_type.status_code == 422
        assert {e["path"] for e in wrong_type.json()["errors"]} >= {"body.role"}
        huge = client.post("/v1/tokens", json={"name": "x" * 5000, "role": "admin"})
        assert huge.status_code == 413 and huge.headers["content-type"] == PROBLEM
        assert "2048" in huge.json()["detail"]


def test_no_auth_serves_the_local_admin_on_loopback_only(start_server, sqlite_db) -> None:
    server = start_server(sqlite_db, "--no-auth")
    with server.client() as client:
        assert client.get("/v1/me").json()["role"] == "admin"
    result = CliRunner().invoke(
        cli_app, ["serve", "--no-auth", "--host", "0.0.0.0", "--db", sqlite_db]
    )
    assert_error(result, "loopback")


def test_sigterm_stops_the_server_cleanly(start_server, sqlite_db) -> None:
    server = start_server(sqlite_db)
    # uvicorn shuts down gracefully, then re-raises the signal so the exit status says why
    assert server.stop() in (0, -signal.SIGTERM)
    assert "Application shutdown complete" in server.output()
    assert "Traceback" not in server.output()


def test_tokens_commands_print_the_secret_once(sqlite_db: str, tmp_path: Path) -> None:
    runner = CliRunner()
    created = runner.invoke(
        cli_app,
        [
            "tokens",
            "create",
            "ci-bot",
            "--role",
            "submitter",
            "--types",
            "post,page",
            "--expires",
            "30d",
            "--db",
            sqlite_db,
        ],
    )
    assert created.exit_code == 0, created.output
    secret = created.stdout.strip().splitlines()[0]
    assert secret.startswith("rf_")
    listed = runner.invoke(cli_app, ["tokens", "list", "--json", "--db", sqlite_db])
    assert listed.exit_code == 0 and secret not in listed.stdout
    assert '"types": [\n      "post",\n      "page"\n    ]' in listed.stdout
    bad_role = runner.invoke(
        cli_app, ["tokens", "create", "x", "--role", "boss", "--db", sqlite_db]
    )
    assert_error(bad_role, "unknown role 'boss'")
    bad_expiry = runner.invoke(
        cli_app,
        ["tokens", "create", "x", "--role", "admin", "--expires", "soon", "--db", sqlite_db],
    )
    assert_error(bad_expiry, "--expires 'soon'")
    revoked = runner.invoke(cli_app, ["tokens", "revoke", "ci-bot", "--db", sqlite_db])
    assert revoked.exit_code == 0
    missing = runner.invoke(cli_app, ["tokens", "revoke", "nobody", "--db", sqlite_db])
    assert_error(missing, "no token named 'nobody'")


def test_settings_without_an_option_are_read_from_the_environment(start_server, sqlite_db) -> None:
    """`rubricflow serve` passes its options to its processes without overwriting the
    RUBRICFLOW_SERVER_* settings it has no option for."""
    admin = issue_token(sqlite_db, "admin")
    server = start_server(sqlite_db, env={"RUBRICFLOW_SERVER_MAX_EVALUATE_TARGETS": "2"})
    document = (
        "id: tiny\nname: Tiny\nversion: 1.0.0\ncriteria:\n  - id: text\n    name: Text\n"
        "    description: Not empty.\n    scoring: {method: deterministic, function: non_empty}\n"
    )
    with server.client(admin) as client:
        two = client.post(
            "/v1/evaluate", json={"document": document, "targets": [{"content": "a"}] * 2}
        )
        assert two.status_code == 200, two.text
        three = client.post(
            "/v1/evaluate", json={"document": document, "targets": [{"content": "a"}] * 3}
        )
        assert three.status_code == 422 and "2" in three.json()["detail"]

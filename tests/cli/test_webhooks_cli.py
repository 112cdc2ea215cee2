"""`rubricflow webhooks`: add (the secret printed once), list (never the secret), log,
replay, remove and deliver --once against a real receiver; every mistake exits 2 with a
message that names it and no traceback."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from cli_assertions import assert_error, ok_json
from review.conftest import doc_types, reach
from review.webhook_receiver import running_receiver
from typer.testing import CliRunner

from rubricflow.application import Application
from rubricflow.cli import app
from rubricflow.store import DB_ENV


@pytest.fixture(autouse=True)
def _no_store_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(DB_ENV, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path / 'hooks.db'}"

    async def prepare() -> None:
        from review.checks_plugin import ReviewChecks

        from rubricflow.plugins import create_plugin_manager

        plugins = create_plugin_manager(plugins=[ReviewChecks()], load_entry_points=False)
        async with await Application.open(url, plugins=plugins) as application:
            await doc_types(application.artifacts)
            await reach(application.artifacts, "approved")

    asyncio.run(prepare())
    return url


def run(cli: CliRunner, *args: str) -> object:
    return cli.invoke(app, list(args))


def test_the_webhook_commands_end_to_end(cli: CliRunner, db: str) -> None:
    with running_receiver() as receiver:
        added = cli.invoke(
            app,
            [
                "webhooks",
                "add",
                receiver.url,
                "-e",
                "approved,submitted",
                "--type",
                "doc",
                "--allow-private",
                "--db",
                db,
            ],
        )
        assert added.exit_code == 0, added.output
        secret = added.stdout.split("signing secret: ")[1].split()[0]
        assert secret.startswith("whsec_")
        assert "shown this once" in added.stderr
        receiver.secret = secret

        listed = ok_json(cli.invoke(app, ["webhooks", "list", "--db", db, "--json"]))
        (subscription,) = listed
        assert subscription["events"] == ["submitted", "approved"]
        assert "secret" not in subscription and secret not in json.dumps(listed)
        plain = cli.invoke(app, ["webhooks", "list", "--db", db])
        assert plain.exit_code == 0 and "wh_" in plain.stdout and secret not in plain.stdout

        # events committed before the subscription are not sent; new ones are
        async def approve_one() -> None:
            from review.checks_plugin import ReviewChecks

            from rubricflow.plugins import create_plugin_manager

            plugins = create_plugin_manager(plugins=[ReviewChecks()], load_entry_points=False)
            async with await Application.open(db, plugins=plugins) as application:
                await reach(application.artifacts, "approved")

        asyncio.run(approve_one())
        delivered = ok_json(
            cli.invoke(app, ["webhooks", "deliver", "--once", "--db", db, "--json"])
        )
        assert delivered["delivered"] == 2 and delivered["failed"] == 0
        assert [r.verified for r in receiver.received] == [True, True]

        log = ok_json(cli.invoke(app, ["webhooks", "log", "--db", db, "--json"]))
        assert [d["event_type"] for d in log] == ["artifact.approved", "artifact.submitted"]
        assert {d["status"] for d in log} == {"delivered"}
        table = cli.invoke(app, ["webhooks", "log", "--status", "delivered", "--db", db])
        assert table.exit_code == 0 and "approved" in table.stdout
        one = ok_json(cli.invoke(app, ["webhooks", "log", str(log[0]["id"]), "--db", db, "--json"]))
        assert [a["status_code"] for a in one["attempt_log"]] == [200]
        shown = cli.invoke(app, ["webhooks", "log", str(log[0]["id"]), "--db", db])
        assert "#1" in shown.stdout and "HTTP 200" in shown.stdout

        replayed = cli.invoke(app, ["webhooks", "replay", str(log[0]["id"]), "--db", db])
        assert replayed.exit_code == 0 and "queued again" in replayed.stdout
        summary = cli.invoke(app, ["webhooks", "deliver", "--once", "--db", db])
        assert summary.stdout.startswith("1 attempt: 1 delivered")
        # the replay keeps the message's webhook-id (deliveries arrive in any order)
        assert receiver.received[-1].message_id == log[0]["message_id"]

        removed = cli.invoke(app, ["webhooks", "remove", subscription["id"], "--db", db])
        assert removed.exit_code == 0 and "removed" in removed.stdout
        assert ok_json(cli.invoke(app, ["webhooks", "list", "--db", db, "--json"])) == []
        every = ok_json(cli.invoke(app, ["webhooks", "list", "--all", "--db", db, "--json"]))
        assert every[0]["active"] is False


def test_mistakes_exit_2_and_name_the_fix(cli: CliRunner, db: str) -> None:
    assert_error(
        cli.invoke(app, ["webhooks", "add", "http://10.0.0.7/hook", "-e", "approved", "--db", db]),
        "'http://10.0.0.7/hook' is a private address",
        "--allow-private",
    )
    assert_error(
        cli.invoke(app, ["webhooks", "add", "ftp://example.com/", "-e", "approved", "--db", db]),
        "must start with https:// or http://",
    )
    assert_error(
        cli.invoke(
            app,
            [
                "webhooks",
                "add",
                "http://127.0.0.1/",
                "-e",
                "published",
                "--allow-private",
                "--db",
                db,
            ],
        ),
        "unknown webhook event 'published'; choose from submitted, approved",
    )
    assert_error(
        cli.invoke(
            app,
            [
                "webhooks",
                "add",
                "http://127.0.0.1/",
                "-e",
                "approved",
                "-t",
                "nope",
                "--allow-private",
                "--db",
                db,
            ],
        ),
        "no artifact type 'nope'",
    )
    assert_error(cli.invoke(app, ["webhooks", "remove", "wh_nope", "--db", db]), "wh_nope")
    assert_error(
        cli.invoke(app, ["webhooks", "replay", "41", "--db", db]), "no webhook delivery 41"
    )
    assert_error(cli.invoke(app, ["webhooks", "log", "41", "--db", db]), "no webhook delivery 41")
    assert_error(
        cli.invoke(app, ["webhooks", "log", "--status", "lost", "--db", db]),
        "unknown delivery status 'lost'; choose from pending, delivered, failed",
    )
    assert_error(
        cli.invoke(app, ["webhooks", "deliver", "--timeout", "5", "--lease", "2", "--db", db]),
        "lease_seconds (2) must be longer than timeout_seconds (5)",
    )
    added = cli.invoke(
        app,
        ["webhooks", "add", "http://127.0.0.1:9/", "-e", "all", "--allow-private", "--db", db],
    )
    assert added.exit_code == 0
    first = ok_json(cli.invoke(app, ["webhooks", "list", "--db", db, "--json"]))[0]["id"]
    assert cli.invoke(app, ["webhooks", "remove", first, "--db", db]).exit_code == 0
    assert_error(cli.invoke(app, ["webhooks", "remove", first, "--db", db]), "removed already")

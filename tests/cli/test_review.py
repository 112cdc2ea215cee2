"""`rubricflow types`, `rubricflow artifacts` and `rubricflow worker`: the review gate from
the command line. Submit exits 0 only when the artifact ends approved; every error exits
2 with a message and no traceback; every command speaks `--json`."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import review.conftest as backends
import yaml
from cli_assertions import assert_error
from typer.testing import CliRunner, Result

from rubricflow.cli import app
from rubricflow.store import DB_ENV

backend = backends.backend
db_url = backends.db_url
pg_session_url = backends.pg_session_url

COMPLETE = {
    "id": "complete",
    "name": "Complete post",
    "version": "1.0.0",
    "pass_threshold": 0.7,
    "criteria": [
        {
            "id": "fields",
            "description": "The post has a title, a body, tags and an author",
            "scoring": {
                "method": "deterministic",
                "function": "json_has_keys",
                "config": {"keys": ["title", "body", "tags", "author"]},
            },
        }
    ],
}
SAFE = {
    "id": "safe",
    "name": "No secrets",
    "version": "1.0.0",
    "criteria": [
        {
            "id": "secrets",
            "description": "No credentials leak",
            "scoring": {"method": "deterministic", "function": "no_secrets"},
        }
    ],
}
GOOD = {"title": "Release notes", "body": "What changed.", "tags": ["news"], "author": "bot"}
HALF = {"title": "Release notes", "body": "What changed."}  # 2 of 4 fields: score 0.5
LEAKY = {**GOOD, "body": "use key sk-abcdefghijklmnopqrstuvwxyz0123 to log in"}
SCHEMA = {
    "type": "object",
    "required": ["title", "body"],
    "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
}


@pytest.fixture(autouse=True)
def _no_store_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(DB_ENV, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def sqlite_db(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}"


class Cli:
    """Runs `rubricflow` commands against one store, from files in one folder."""

    def __init__(self, runner: CliRunner, db: str, folder: Path) -> None:
        self.runner, self.db, self.folder = runner, db, folder

    def __call__(self, *args: Any) -> Result:
        return self.runner.invoke(app, [str(a) for a in args] + ["--db", self.db])

    def json(self, *args: Any, code: int = 0) -> Any:
        result = self(*args, "--json")
        assert result.exit_code == code, result.output
        return json.loads(result.stdout)

    def file(self, name: str, document: Any) -> Path:
        path = self.folder / name
        if name.endswith(".json"):
            path.write_text(json.dumps(document))
        else:
            path.write_text(yaml.safe_dump(document, sort_keys=False))
        return path

    def setup(self, *type_options: str) -> None:
        """Register `complete` and `safe`; define type `post` with `type_options`."""
        result = self("rubrics", "register", self.file("complete.yaml", COMPLETE))
        assert result.exit_code == 0, result.output
        result = self("rubrics", "register", self.file("safe.yaml", SAFE))
        assert result.exit_code == 0, result.output
        result = self("types", "set", "post", "--rubric", "complete", *type_options)
        assert result.exit_code == 0, result.output


@pytest.fixture
def cli(sqlite_db: str, tmp_path: Path) -> Cli:
    return Cli(CliRunner(), sqlite_db, tmp_path)


# ------------------------------------------------------------------------------- types


def test_types_set_show_list_with_every_option(cli: Cli) -> None:
    cli.setup()
    schema = cli.file("schema.json", SCHEMA)
    defined = cli.json(
        "types",
        "set",
        "gated",
        "--rubric",
        "complete@1.0.0",
        "--blocking",
        "safe",
        "--requires-approval",
        "--approval-threshold",
        "0.5",
        "--content-schema",
        schema,
        "--description",
        "posts a human signs off",
    )
    assert defined["name"] == "gated"
    assert defined["rubrics"] == [
        {"rubric_id": "complete", "version": "1.0.0", "blocking": False},
        {"rubric_id": "safe", "version": None, "blocking": True},
    ]
    assert defined["requires_approval"] is True
    assert defined["approval_threshold"] == 0.5
    assert defined["content_schema"] == SCHEMA
    assert cli.json("types", "show", "gated") == defined
    listed = cli.json("types", "list")["types"]
    assert [t["name"] for t in listed] == ["gated", "post"]
    shown = cli("types", "show", "gated")
    assert shown.exit_code == 0
    assert "rubric complete@1.0.0" in shown.stdout
    assert "rubric safe (blocking)" in shown.stdout
    assert "requires_approval=True" in shown.stdout


def test_blocking_marks_a_rubric_already_given_with_rubric(cli: Cli) -> None:
    cli.setup()
    defined = cli.json(
        "types", "set", "post", "--rubric", "complete", "--rubric", "safe", "--blocking", "safe"
    )
    assert defined["rubrics"] == [
        {"rubric_id": "complete", "version": None, "blocking": False},
        {"rubric_id": "safe", "version": None, "blocking": True},
    ]


def test_types_errors_exit_2_with_a_message(cli: Cli) -> None:
    cli.setup()
    assert_error(cli("types", "set", "post", "--rubric", "nope"), "nope")
    assert_error(cli("types", "show", "ghost"), "ghost")
    bad = cli.file("bad-schema.json", {"type": 12})
    assert_error(
        cli("types", "set", "post", "--rubric", "complete", "--content-schema", bad),
        "not a valid JSON Schema",
    )
    listy = cli.file("list-schema.yaml", ["not", "an", "object"])
    assert_error(
        cli("types", "set", "post", "--rubric", "complete", "--content-schema", listy),
        "object",
    )
    result = cli("types", "set", "post", "--rubric", "complete", "--approval-threshold", "1.5")
    assert result.exit_code == 2
    assert "Traceback" not in result.output


# ---------------------------------------------------------------------------- submit


def test_submit_a_file_creates_reviews_and_exits_0_when_approved(cli: Cli) -> None:
    cli.setup()
    result = cli("artifacts", "submit", "--type", "post", cli.file("good.json", GOOD))
    assert result.exit_code == 0, result.output
    assert "approved" in result.stdout
    assert "evaluation " in result.stdout
    assert "PASSED" in result.stdout
    outcome = cli.json("artifacts", "submit", "--type", "post", cli.file("good.yaml", GOOD))
    assert outcome["status"] == "approved"
    artifact = outcome["artifact"]
    assert {"id", "type", "status", "revision"} <= set(artifact)
    assert (artifact["type"], artifact["status"], artifact["revision"]) == ("post", "approved", 1)
    assert artifact["content"] == GOOD
    [evaluation_id] = outcome["evaluation_ids"]
    assert outcome["evaluations"][0]["verdict"] == "pass"
    stored = cli.json("artifacts", "evaluations", artifact["id"])["evaluations"]
    assert [e["id"] for e in stored] == [evaluation_id]


def test_a_failing_submit_exits_1_with_feedback_then_revise_and_resubmit(cli: Cli) -> None:
    cli.setup()
    failed = cli("artifacts", "submit", "--type", "post", cli.file("half.json", HALF))
    assert failed.exit_code == 1, failed.output
    assert "needs_revision" in failed.stdout
    assert "FAILED" in failed.stdout
    assert "missing: tags, author" in failed.stdout
    artifact_id = cli.json("artifacts", "list", "--status", "needs_revision")["artifacts"][0]["id"]
    assert f"artifact {artifact_id}" in failed.stdout
    revised = cli.json(
        "artifacts",
        "revise",
        artifact_id,
        cli.file("fixed.json", GOOD),
        "--reason",
        "added tags and author",
        "--actor",
        "bot",
    )
    assert (revised["status"], revised["revision"], revised["content"]) == ("draft", 2, GOOD)
    resubmitted = cli("artifacts", "submit", artifact_id)
    assert resubmitted.exit_code == 0, resubmitted.output
    assert "revision 2" in resubmitted.stdout
    history = cli.json("artifacts", "history", artifact_id)["events"]
    assert [e["trigger"] for e in history] == [
        "create",
        "submit",
        "start_review",
        "request_revision",
        "revise",
        "submit",
        "start_review",
        "approve",
    ]
    revise = history[4]
    assert (revise["actor"], revise["reason"], revise["revision"]) == (
        "bot",
        "added tags and author",
        2,
    )
    by_revision = {
        rev: cli.json("artifacts", "evaluations", artifact_id, "--revision", rev)["evaluations"]
        for rev in (1, 2)
    }
    assert [e["verdict"] for e in by_revision[1]] == ["fail"]
    assert [e["verdict"] for e in by_revision[2]] == ["pass"]
    text = cli("artifacts", "history", artifact_id)
    assert text.exit_code == 0
    assert "revise: needs_revision -> draft by bot: added tags and author" in text.stdout


def test_approval_threshold_and_blocking_from_the_command_line(cli: Cli) -> None:
    cli.setup("--approval-threshold", "0.5", "--blocking", "safe")
    half = cli.json("artifacts", "submit", "--type", "post", cli.file("half.json", HALF))
    assert half["status"] == "approved", "0.5 reaches the type's bar"
    leaky = cli.json("artifacts", "submit", "--type", "post", cli.file("leaky.json", LEAKY), code=1)
    assert leaky["status"] == "rejected"
    assert "blocking rubric failed: safe@1.0.0" in leaky["reason"]


def test_defer_then_worker_once_reviews_the_queue(cli: Cli) -> None:
    cli.setup()
    queued = cli.json(
        "artifacts", "submit", "--type", "post", "--defer", cli.file("g.json", GOOD), code=0
    )
    assert (queued["status"], queued["queued"], queued["evaluation_ids"]) == (
        "pending_review",
        True,
        [],
    )
    other = cli.json("artifacts", "create", "--type", "post", cli.file("h.json", HALF))
    assert other["status"] == "draft"
    assert cli.json("artifacts", "submit", other["id"], "--defer", code=0)["queued"]
    pending = cli.json("artifacts", "list", "--status", "pending_review")["artifacts"]
    assert len(pending) == 2
    summary = cli.json("worker", "--once", "--lease", "5", "--poll", "0.1")
    assert summary["reviewed"] == 2
    assert summary["outcomes"] == {"approved": 1, "needs_revision": 1}
    assert cli.json("artifacts", "show", queued["artifact"]["id"])["status"] == "approved"
    assert cli.json("artifacts", "show", other["id"])["status"] == "needs_revision"
    assert cli.json("artifacts", "list", "--status", "pending_review")["artifacts"] == []
    assert cli.json("worker", "--once")["reviewed"] == 0


def test_human_decisions_name_who_and_why(cli: Cli) -> None:
    cli.setup("--requires-approval")
    waiting = cli.json("artifacts", "submit", "--type", "post", cli.file("g.json", GOOD), code=1)
    artifact_id = waiting["artifact"]["id"]
    assert (waiting["status"], waiting["artifact"]["awaiting_approval"]) == ("in_review", True)
    assert_error(cli("artifacts", "approve", artifact_id), "--reason")
    approved = cli.json(
        "artifacts", "approve", artifact_id, "--reason", "read it twice", "--actor", "alice"
    )
    assert approved["status"] == "approved"
    last = cli.json("artifacts", "history", artifact_id)["events"][-1]
    assert (last["trigger"], last["actor"], last["reason"]) == ("approve", "alice", "read it twice")

    failing = cli.json("artifacts", "submit", "--type", "post", cli.file("h.json", HALF), code=1)
    other = failing["artifact"]["id"]
    rejected = cli.json("artifacts", "reject", other, "--reason", "off topic", "--actor", "bob")
    assert rejected["status"] == "rejected"
    overridden = cli.json(
        "artifacts", "override", other, "--reason", "legal cleared it", "--actor", "carol"
    )
    assert overridden["status"] == "approved"
    archived = cli.json("artifacts", "archive", other, "--actor", "carol")
    assert archived["status"] == "archived"
    shown = cli("artifacts", "show", other)
    assert shown.exit_code == 0
    assert "archived" in shown.stdout
    assert "Release notes" in shown.stdout
    listed = cli("artifacts", "list")
    assert listed.exit_code == 0
    assert other in listed.stdout
    assert artifact_id in listed.stdout


def test_withdraw_takes_a_queued_artifact_back(cli: Cli) -> None:
    cli.setup()
    queued = cli.json(
        "artifacts", "submit", "--type", "post", "--defer", cli.file("g.json", GOOD), code=0
    )
    back = cli.json("artifacts", "withdraw", queued["artifact"]["id"], "--actor", "bot")
    assert back["status"] == "draft"


# ---------------------------------------------------------------------------- errors


def test_artifact_errors_exit_2_with_a_message_and_no_traceback(cli: Cli, tmp_path: Path) -> None:
    cli.setup("--content-schema", str(cli.file("schema.json", SCHEMA)))
    good = cli.file("good.json", GOOD)
    draft = cli.json("artifacts", "create", "--type", "post", good, "--id", "post-1")
    assert draft["id"] == "post-1"
    assert_error(cli("artifacts", "create", "--type", "post", good, "--id", "post-1"), "is taken")
    assert_error(cli("artifacts", "show", "nope"), "no artifact 'nope'")
    assert_error(cli("artifacts", "history", "nope"), "nope")
    assert_error(
        cli("artifacts", "approve", "post-1", "--reason", "x"),
        "is draft",
        "'approve' is not allowed",
        "submit",
    )
    assert_error(cli("artifacts", "submit", "--type", "ghost", good), "ghost")
    # a file without --type: no artifact has that id, and the hint says how to submit it
    assert_error(cli("artifacts", "submit", good), "no artifact", "is a file", "add --type TYPE")
    assert_error(
        cli("artifacts", "submit", "--type", "post", tmp_path / "missing.json"), "no such file"
    )
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert_error(cli("artifacts", "submit", "--type", "post", broken), "malformed JSON")
    assert_error(cli("artifacts", "list", "--status", "bogus"), "bogus", "pending_review")
    # content that breaks the type's schema: refused with the errors, nothing reviewed
    wrong = cli.file("wrong.json", {"title": 5})
    result = cli("artifacts", "submit", "--type", "post", wrong)
    assert_error(result, "content schema", "$/title", "$/: 'body' is a required property")
    stranded = cli.json("artifacts", "list", "--status", "draft")["artifacts"]
    assert {a["id"] for a in stranded} >= {"post-1"}
    assert all(a["status"] == "draft" for a in stranded)
    assert cli.json("artifacts", "list", "--status", "in_review")["artifacts"] == []


def test_a_type_without_rubrics_refuses_submit_with_how_to_bind(cli: Cli) -> None:
    result = cli("types", "set", "bare")
    assert result.exit_code == 0, result.output
    good = cli.file("good.json", GOOD)
    assert_error(
        cli("artifacts", "submit", "--type", "bare", good),
        "binds no rubrics",
        "rubricflow types set bare --rubric",
        "nothing was created",
    )
    assert cli.json("artifacts", "list")["artifacts"] == []


# ------------------------------------------------------------ both backends, real process


def test_the_review_gate_on_each_backend(db_url: str, tmp_path: Path) -> None:
    cli = Cli(CliRunner(), db_url, tmp_path)
    cli.setup("--blocking", "safe")
    good = cli.json("artifacts", "submit", "--type", "post", cli.file("g.json", GOOD))
    half = cli.json("artifacts", "submit", "--type", "post", cli.file("h.json", HALF), code=1)
    leaky = cli.json("artifacts", "submit", "--type", "post", cli.file("l.json", LEAKY), code=1)
    assert [o["status"] for o in (good, half, leaky)] == ["approved", "needs_revision", "rejected"]
    approved = cli.json("artifacts", "list", "--status", "approved", "--type", "post")
    assert [a["id"] for a in approved["artifacts"]] == [good["artifact"]["id"]]


def test_a_real_process_submits_and_a_real_worker_reviews(tmp_path: Path) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path / 'real.db'}"
    cli = Cli(CliRunner(), db, tmp_path)
    cli.setup()
    exe = Path(sys.executable).parent / "rubricflow"
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "rubricflow"]

    def run(*args: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, *map(str, args), "--db", db],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )

    submitted = run("artifacts", "submit", "--type", "post", cli.file("g.json", GOOD), "--json")
    assert submitted.returncode == 0, submitted.stderr
    outcome = json.loads(submitted.stdout)
    assert outcome["status"] == "approved"
    assert outcome["evaluation_ids"]

    deferred = cli("artifacts", "submit", "--type", "post", "--defer", cli.file("h.json", HALF))
    assert deferred.exit_code == 0, deferred.output  # queued for a worker
    assert "pending_review" in deferred.stdout
    worked = run("worker", "--once", "--poll", "0.1")
    assert worked.returncode == 0, worked.stderr
    assert "reviewed 1 artifact: needs_revision 1" in worked.stdout
    assert "Traceback" not in worked.stderr


# ------------------------------------------------------------- supersede, refusals for people


def test_supersede_names_the_replacement_and_only_archive_follows(cli: Cli) -> None:
    cli.setup()
    old = cli.json("artifacts", "submit", "--type", "post", cli.file("g.json", GOOD))
    old_id = old["artifact"]["id"]
    new = cli.json("artifacts", "create", "--type", "post", cli.file("v2.json", GOOD))
    assert_error(cli("artifacts", "supersede", old_id, "--by", new["id"]), "--reason")
    assert_error(
        cli("artifacts", "supersede", old_id, "--by", "ghost", "--reason", "v2"),
        "no artifact 'ghost'",
        "--by",
    )
    retired = cli.json(
        "artifacts", "supersede", old_id, "--by", new["id"], "--reason", "v2", "--actor", "dana"
    )
    assert (retired["id"], retired["status"], retired["revision"]) == (old_id, "superseded", 1)
    last = cli.json("artifacts", "history", old_id)["events"][-1]
    assert (last["trigger"], last["source"], last["dest"], last["actor"], last["reason"]) == (
        "supersede",
        "approved",
        "superseded",
        "dana",
        f"superseded by {new['id']}: v2",
    )
    assert cli.json("artifacts", "show", new["id"])["status"] == "draft"
    assert_error(
        cli("artifacts", "submit", old_id),
        f"artifact '{old_id}' is superseded: 'submit' is not allowed; you can: archive",
    )
    text = cli("artifacts", "supersede", new["id"], "--reason", "dropped", "--actor", "dana")
    assert text.exit_code == 0, text.output
    assert "superseded" in text.stdout
    assert "dropped" in text.stdout


def _claim_and_die(db: str, artifact_id: str, lease: float) -> None:
    """A worker claims the review with a `lease`-second lease and never finishes it."""
    import asyncio

    from rubricflow.review import ArtifactRegistry
    from rubricflow.store import Store

    async def claim() -> None:
        async with await Store.open(db) as store:
            await ArtifactRegistry(store, lease_seconds=lease).claim(artifact_id, worker="w-dead")

    asyncio.run(claim())


def test_submit_during_a_review_says_to_wait_or_run_a_worker_not_system_triggers(
    cli: Cli,
) -> None:
    """After a worker crash the artifact sits in in_review: `submit ID` says to run
    `rubricflow worker --once` (or wait), and offers only what a person can do."""
    cli.setup()
    queued = cli.json("artifacts", "submit", "--type", "post", "--defer", cli.file("g.json", GOOD))
    artifact_id = queued["artifact"]["id"]
    again = cli("artifacts", "submit", artifact_id)
    assert_error(again, "is pending_review", "already queued", "rubricflow worker --once")

    _claim_and_die(cli.db, artifact_id, lease=600)  # a worker still within its lease
    running = cli("artifacts", "submit", artifact_id, "--json")
    assert_error(
        running,
        f"artifact '{artifact_id}' is in_review: 'submit' is not allowed",
        "being reviewed by w-dead",
        "wait for the review to finish",
        "rubricflow worker --once",
        "A person can also: reject, override",
    )
    assert "approve" not in running.stderr  # not until the review passed
    for system_only in ("start_review", "request_revision", "abort_review", "await_approval"):
        assert system_only not in running.stderr

    # another artifact whose worker died: its lease runs out
    crashed_id = cli.json(
        "artifacts", "submit", "--type", "post", "--defer", cli.file("c.json", GOOD)
    )["artifact"]["id"]
    _claim_and_die(cli.db, crashed_id, lease=0.3)
    time.sleep(0.5)
    crashed = cli("artifacts", "submit", crashed_id)
    assert_error(
        crashed,
        "its review by w-dead stopped (the lease expired",
        "run `rubricflow worker --once` to take the review over",
        "A person can also: reject, override",
    )
    for system_only in ("start_review", "request_revision", "abort_review", "await_approval"):
        assert system_only not in crashed.stderr
    assert cli.json("artifacts", "history", crashed_id)["events"][-1]["trigger"] == "start_review"
    # the advice works: the worker takes the review over and finishes it
    summary = cli.json("worker", "--once", "--poll", "0.1")
    assert (summary["reviewed"], summary["outcomes"]) == (1, {"approved": 1})
    assert cli.json("artifacts", "show", crashed_id)["status"] == "approved"
    assert cli.json("artifacts", "show", artifact_id)["status"] == "in_review"  # still leased
    done = cli("artifacts", "submit", crashed_id)
    assert_error(done, "is approved: 'submit' is not allowed; you can: revise, archive, supersede")


def test_a_refusal_while_awaiting_approval_says_a_human_decides(cli: Cli) -> None:
    cli.setup("--requires-approval")
    waiting = cli.json("artifacts", "submit", "--type", "post", cli.file("g.json", GOOD), code=1)
    artifact_id = waiting["artifact"]["id"]
    refused = cli("artifacts", "withdraw", artifact_id)
    assert_error(
        refused,
        "is in_review: 'withdraw' is not allowed",
        "waits for a human",
        f"rubricflow artifacts approve {artifact_id} --reason",
        "or: approve, reject, override",
    )
    assert "await_approval" not in refused.stderr

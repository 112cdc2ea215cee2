"""Dead letters: a review that fails N times in a row (default 3) leaves the queue as
`dead_lettered`, is listed (`list_artifacts(status=...)`, `artifacts list --dead-letter`) and waits
for a person's `retry`; failures are errors, incomplete evaluations and expired leases
alike, so a poison artifact never loops through leases forever."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rubricflow.cli import app
from rubricflow.errors import ConfigurationError, IllegalTransitionError
from rubricflow.plugins import PluginRegistry
from rubricflow.review import ArtifactRegistry
from rubricflow.review.lifecycle import Lifecycle
from rubricflow.store import Store

from .conftest import check, define, make_rubric


async def _poisoned(registry: ArtifactRegistry, artifact_id: str = "a1") -> None:
    """A type whose rubric's check always raises, and one artifact of it, queued."""
    await define(registry, "doc", make_rubric("boom", check("boom", "explodes")))
    await registry.create("doc", "some text", actor="bot", artifact_id=artifact_id)
    await registry.submit_for_review(artifact_id, actor="bot", defer=True)


async def test_a_review_failing_three_times_in_a_row_is_dead_lettered(
    registry: ArtifactRegistry,
) -> None:
    await _poisoned(registry)
    for attempt in (1, 2):
        outcome = await registry.review("a1", worker="w/0")
        assert outcome.artifact.status == "pending_review", attempt
        assert outcome.artifact.failures == attempt
    outcome = await registry.review("a1", worker="w/0")
    assert outcome.artifact.status == "dead_lettered"
    assert "dead-lettered after 3 failed reviews in a row" in (outcome.reason or "")
    assert "rubricflow artifacts retry a1" in (outcome.artifact.last_reason or "")
    # out of the queue: no worker claims it again, whenever it looks
    assert await registry.claim_next(worker="w/1") is None
    assert [a.id for a in await registry.list_artifacts(status="dead_lettered")] == ["a1"]
    with pytest.raises(IllegalTransitionError):
        await registry.claim("a1", worker="w/1")

    # a person retries it: queued again, first in line, its failures forgiven
    retried = await registry.retry("a1", actor="alice", reason="fixed the check")
    assert (retried.status, retried.failures) == ("pending_review", 0)
    assert await registry.list_artifacts(status="dead_lettered") == []
    claimed = await registry.claim_next(worker="w/2")
    assert claimed is not None and claimed.id == "a1"
    triggers = [e.trigger for e in await registry.history("a1")]
    assert triggers[-3:] == ["dead_letter", "retry", "start_review"]
    assert triggers.count("abort_review") == 2


async def test_expired_leases_count_as_failures(
    store: Store, review_plugins: PluginRegistry
) -> None:
    """A review whose worker dies every time (a poison that kills or hangs the worker)
    ends dead-lettered by the takeovers themselves."""
    registry = ArtifactRegistry(store, plugins=review_plugins, lease_seconds=0.05)
    await define(registry, "doc", make_rubric())
    await registry.create("doc", "text", actor="bot", artifact_id="a1")
    await registry.submit_for_review("a1", actor="bot", defer=True)
    assert await registry.claim_next(worker="dies/0") is not None
    for _ in range(2):
        await asyncio.sleep(0.1)  # the lease runs out; the next claim takes over
        taken = await registry.claim_next(worker="next/0")
        assert taken is not None and taken.status == "in_review"
    await asyncio.sleep(0.1)
    assert await registry.claim_next(worker="next/0") is None  # dead-lettered, not claimed
    artifact = await registry.get("a1")
    assert (artifact.status, artifact.failures) == ("dead_lettered", 3)
    assert "lease of next/0 expired" in (artifact.last_reason or "")


async def test_a_finished_review_resets_the_count(
    store: Store, review_plugins: PluginRegistry
) -> None:
    registry = ArtifactRegistry(store, plugins=review_plugins, max_failures=2)
    await define(registry, "doc", make_rubric())
    await registry.create("doc", "text", actor="bot", artifact_id="a1")
    await registry.submit_for_review("a1", actor="bot", defer=True)
    claimed = await registry.claim("a1", worker="w/0")
    # a worker that stops hands the review back: not a failure
    handed = await registry.abandon_review(claimed, reason="worker stopping")
    assert (handed.status, handed.failures) == ("pending_review", 0)
    assert (await registry.review("a1", worker="w/0")).artifact.status == "approved"


def test_the_limit_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Lifecycle().max_failures == 3
    assert Lifecycle(max_failures=5).max_failures == 5
    monkeypatch.setenv("RUBRICFLOW_MAX_REVIEW_FAILURES", "7")
    assert Lifecycle().max_failures == 7
    monkeypatch.setenv("RUBRICFLOW_MAX_REVIEW_FAILURES", "many")
    with pytest.raises(ConfigurationError, match="RUBRICFLOW_MAX_REVIEW_FAILURES"):
        Lifecycle()
    with pytest.raises(ConfigurationError, match="at least 1"):
        Lifecycle(max_failures=0)


def test_cli_lists_dead_letters_and_retries_them(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'rf.db'}"

    async def setup() -> None:
        async with await Store.open(url, upgrade=True) as store:
            registry = ArtifactRegistry(store, plugins=_checks_plugins(), max_failures=1)
            await _poisoned(registry, "poison-1")
            outcome = await registry.review("poison-1", worker="w/0")
            assert outcome.artifact.status == "dead_lettered"

    asyncio.run(setup())
    runner = CliRunner()
    listed = runner.invoke(app, ["artifacts", "list", "--dead-letter", "--db", url])
    assert listed.exit_code == 0, listed.output
    assert "poison-1" in listed.output and "dead_lettered" in listed.output
    assert "artifacts retry poison-1" in listed.output
    retried = runner.invoke(app, ["artifacts", "retry", "poison-1", "--actor", "al", "--db", url])
    assert retried.exit_code == 0, retried.output
    assert "pending_review" in retried.output
    again = runner.invoke(app, ["artifacts", "retry", "poison-1", "--db", url])
    assert again.exit_code == 2 and "Traceback" not in again.output
    assert "'retry' is not allowed" in again.output
    listed = runner.invoke(app, ["artifacts", "list", "--dead-letter", "--db", url])
    assert "poison-1" not in listed.output


def _checks_plugins() -> PluginRegistry:
    from rubricflow.plugins import create_plugin_manager

    from .checks_plugin import ReviewChecks

    return create_plugin_manager(plugins=[ReviewChecks()], load_entry_points=False)

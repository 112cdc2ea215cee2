"""The review service's public face: `ArtifactRegistry`, artifacts and their reviews on a
`Store`.

It composes the parts that do the work, each an async, typed application core that any
front end (CLI, HTTP API, MCP server) can call:

- `commands.ArtifactCommands`: types, create, revise and the human decisions;
- `submission.ArtifactSubmitter`: submitting for review (queued, or reviewed inline);
- `queries.ArtifactQueries`: reads, and refusals explained to a person;
- `claims.ReviewClaims`: worker claims and leases;
- `reviewing.Reviewer`: the review itself and its outcome.

Which transitions happen is the lifecycle's decision (`lifecycle.Lifecycle`); the store
persists them (`rubricflow.store.artifacts`).
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncGenerator, Mapping, Sequence
from datetime import datetime
from typing import Any

from rubricflow.errors import IllegalTransitionError
from rubricflow.llm.session import LLMSession
from rubricflow.plugins import PluginRegistry, default_plugins
from rubricflow.results import Evaluation
from rubricflow.review.claims import ReviewClaims
from rubricflow.review.commands import ArtifactCommands
from rubricflow.review.context import (
    DEFAULT_LEASE_SECONDS,
    RETRY_DELAY_SECONDS,
    SYSTEM_ACTOR,
    ReviewContext,
)
from rubricflow.review.events import LiveStatus
from rubricflow.review.lifecycle import Lifecycle, max_failures_setting
from rubricflow.review.queries import ArtifactQueries
from rubricflow.review.reviewers import hide_vote
from rubricflow.review.reviewing import Reviewer, ReviewOutcome
from rubricflow.review.submission import ArtifactSubmitter
from rubricflow.settings import Settings, current
from rubricflow.store import Store
from rubricflow.store.artifacts import Artifact, ArtifactEvent, ArtifactRepository, ArtifactType

__all__ = ["DEFAULT_LEASE_SECONDS", "SYSTEM_ACTOR", "ArtifactRegistry", "ReviewOutcome"]


class ArtifactRegistry:
    """Artifacts and their reviews, on a `Store`."""

    def __init__(
        self,
        store: Store,
        *,
        plugins: PluginRegistry | None = None,
        evaluate_options: Mapping[str, Any] | None = None,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        max_failures: int | None = None,
        retry_delay_seconds: float = RETRY_DELAY_SECONDS,
        settings: Settings | None = None,
    ) -> None:
        """`settings`: what reviews run under (default: the caller's, else the
        environment's, read now and kept, so a review does not read the environment);
        `max_failures`: failed reviews in a row that dead-letter an artifact (default
        $RUBRICFLOW_MAX_REVIEW_FAILURES, else 3); `retry_delay_seconds`: the wait before a
        failed review is retried the first time (doubling with each failure, up to an
        hour)."""
        self.store = store
        self.repository = ArtifactRepository(
            store.database, rubrics=store.rubrics, evaluations=store.evaluations
        )
        self.plugins = plugins or default_plugins()
        self.lifecycle = Lifecycle(max_failures=max_failures)
        self._context = ReviewContext(
            store=store,
            repository=self.repository,
            lifecycle=self.lifecycle,
            plugins=self.plugins,
            lease_seconds=lease_seconds,
            retry_delay_seconds=retry_delay_seconds,
            settings=settings if settings is not None else current(),
        )
        self.commands = ArtifactCommands(self._context)
        self.queries = ArtifactQueries(self._context)
        self.claims = ReviewClaims(self._context)
        self.reviewer = Reviewer(self._context, self.claims, evaluate_options)
        self.submitter = ArtifactSubmitter(self._context, self.claims, self.reviewer)
        self._live: LiveStatus | None = None

    @property
    def live(self) -> LiveStatus:
        """Live status: waits for an artifact's next change, streams its events, wakes
        workers; made on first use, closed by `aclose`."""
        if self._live is None:
            self._live = LiveStatus(self.store.database, self.plugins)
        return self._live

    @property
    def max_failures(self) -> int:
        """Failed reviews in a row that dead-letter an artifact."""
        return self.lifecycle.max_failures

    @max_failures.setter
    def max_failures(self, value: int) -> None:
        self.lifecycle.max_failures = max_failures_setting(value)

    @property
    def evaluate_options(self) -> dict[str, Any]:
        return self.reviewer.evaluate_options

    @evaluate_options.setter
    def evaluate_options(self, options: Mapping[str, Any]) -> None:
        self.reviewer.evaluate_options = dict(options)

    @property
    def _session(self) -> LLMSession | None:
        """The LLM session the reviews share, once a review opened it."""
        return self.reviewer.session

    async def __aenter__(self) -> ArtifactRegistry:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the LLM session the reviews share (its HTTP connections); the store stays
        open. Safe to call twice; a later review opens a new session. Live status stops
        watching the store."""
        live, self._live = self._live, None
        if live is not None:
            await live.aclose()
        await self.reviewer.aclose()

    # --- types ---------------------------------------------------------------------------
    async def set_type(self, artifact_type: ArtifactType) -> ArtifactType:
        """Define or replace an artifact type. Its rubrics must be registered already,
        each bound once; its content schema must be a valid JSON Schema."""
        return await self.commands.set_type(artifact_type)

    async def get_type(self, name: str) -> ArtifactType:
        return await self.queries.get_type(name)

    async def list_types(self) -> builtins.list[ArtifactType]:
        return await self.queries.list_types()

    # --- artifacts -------------------------------------------------------------------------
    async def create(
        self,
        type_name: str,
        content: Any,
        *,
        actor: str,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        artifact_id: str | None = None,
    ) -> Artifact:
        """A new artifact in `draft`, revision 1."""
        return await self.commands.create(
            self.commands.new_artifact(
                type_name,
                content,
                actor=actor,
                title=title,
                metadata=metadata,
                artifact_id=artifact_id,
            )
        )

    async def get(self, artifact_id: str) -> Artifact:
        return await self.queries.get(artifact_id)

    async def list_artifacts(
        self,
        *,
        type_name: str | None = None,
        status: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> builtins.list[Artifact]:
        """Artifacts (of one type, in one status), most recently changed first, a page at
        a time. Also named `list`."""
        return await self.queries.list_artifacts(
            type_name=type_name, status=status, limit=limit, offset=offset
        )

    async def page(
        self,
        *,
        type_names: Sequence[str] | None = None,
        status: str | None = None,
        created_by: str | None = None,
        after: tuple[datetime, str] | None = None,
        limit: int = 50,
    ) -> builtins.list[Artifact]:
        """A page of artifacts, newest first, for cursor pagination: those created before
        `after` (the previous page's last `(created_at, id)`). Inserts never make a page
        repeat or skip an artifact. `type_names`, `status`, `created_by` filter."""
        return await self.queries.page(
            type_names=type_names, status=status, created_by=created_by, after=after, limit=limit
        )

    async def history(
        self, artifact_id: str, *, viewer: str | None = None
    ) -> builtins.list[ArtifactEvent]:
        """Every transition of the artifact, oldest first (votes on a decision still open
        hidden, except from a `viewer` who has voted on it)."""
        return await self.queries.history(artifact_id, viewer=viewer)

    async def wait_for_change(
        self, artifact_id: str, *, after: int, timeout: float
    ) -> ArtifactEvent | None:
        """The artifact's first event after event `after` (the artifact's `version` you
        hold), waiting up to `timeout` seconds for another process or this one to commit
        it; None when nothing changed in time. For long polls. A vote's reason is hidden
        (`reviewers.hide_vote`): the history shows it once the artifact is settled."""
        event = await self.live.wait_for_change(artifact_id, after=after, timeout=timeout)
        return hide_vote(event) if event is not None else None

    async def events(
        self, artifact_id: str, *, after_seq: int = 0
    ) -> AsyncGenerator[ArtifactEvent, None]:
        """The artifact's events after `after_seq`: the stored ones first, then each new one
        as it commits, without end (close the iterator when done). For event streams.
        Votes' reasons are hidden, as in `wait_for_change`."""
        stream = self.live.events(artifact_id, after_seq=after_seq)
        try:
            async for event in stream:
                yield hide_vote(event)
        finally:
            await stream.aclose()

    async def evaluations(
        self, artifact_id: str, revision: int | None = None
    ) -> builtins.list[Evaluation]:
        """The stored evaluations of the artifact (one revision, or all), newest first."""
        return await self.queries.evaluations(artifact_id, revision)

    # --- submission and reviews ------------------------------------------------------------
    async def submit_for_review(
        self,
        artifact_id: str,
        *,
        actor: str,
        defer: bool = False,
        expected_version: int | None = None,
    ) -> ReviewOutcome:
        """Queue the artifact for review and, unless `defer` (or the type has
        `auto_review: false`), review it now in this process.

        Refused before anything changes when the content breaks the type's schema or the
        type binds no rubrics. `expected_version` (every change takes it): the artifact
        version the caller decided on (HTTP `If-Match`); another one, or another writer
        first, is `PreconditionFailedError` and nothing changes.
        """
        return await self.submitter.submit(
            artifact_id, actor=actor, defer=defer, expected_version=expected_version
        )

    async def create_and_submit(
        self,
        type_name: str,
        content: Any,
        *,
        actor: str,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        artifact_id: str | None = None,
        defer: bool = False,
    ) -> ReviewOutcome:
        """`create` and `submit_for_review` in one step, the two written in one
        transaction: whatever the submit would refuse creates nothing."""
        new = self.commands.new_artifact(
            type_name, content, actor=actor, title=title, metadata=metadata, artifact_id=artifact_id
        )
        return await self.submitter.create_and_submit(new, defer=defer)

    async def claim(self, artifact_id: str, *, worker: str) -> Artifact:
        """Start the review of this queued artifact (or take over an expired lease)."""
        return await self.claims.claim(artifact_id, worker=worker)

    async def claim_next(self, *, worker: str) -> Artifact | None:
        """Claim the next artifact waiting for review, if any, in one transaction (on
        PostgreSQL, rows other workers hold are skipped)."""
        return await self.claims.claim_next(worker=worker)

    async def review(self, artifact_id: str, *, worker: str) -> ReviewOutcome:
        """Claim the artifact, evaluate every bound rubric, and commit the outcome. A
        review that cannot finish returns the artifact to `pending_review` with the reason."""
        return await self.reviewer.review(artifact_id, worker=worker)

    async def finish_review(self, artifact: Artifact, *, deferred: bool = False) -> ReviewOutcome:
        """Evaluate a claimed artifact (in_review, leased, as `claim` returned it) and
        commit the outcome.

        The outcome is written only if the artifact is still as claimed: when the lease
        expired and another worker took the review over, or a human decided meanwhile,
        `ArtifactConflictError` is raised and nothing but the (reusable) evaluations is
        written. `deferred`: a worker's review, which nobody waits on (its type may batch
        its judge calls)."""
        return await self.reviewer.finish_review(artifact, deferred=deferred)

    async def abandon_review(self, artifact: Artifact, *, reason: str) -> Artifact:
        """Hand a claimed review back unfinished (`abort_review`, e.g. its worker is
        stopping): queued again at once for another worker, not counted as a failure."""
        return await self.reviewer.abandon(artifact, reason)

    async def retry(
        self,
        artifact_id: str,
        *,
        actor: str,
        reason: str | None = None,
        expected_version: int | None = None,
    ) -> Artifact:
        """Send a dead-lettered artifact back to the queue, its failures forgiven."""
        return await self.commands.retry(
            artifact_id, actor=actor, reason=reason, expected_version=expected_version
        )

    # --- human decisions and edits -------------------------------------------------------
    # Each takes `expected_version` (HTTP `If-Match`): see `submit_for_review`.
    async def approve(
        self,
        artifact_id: str,
        *,
        actor: str,
        reason: str,
        expected_version: int | None = None,
    ) -> Artifact:
        """A named human approves an artifact whose review passed and awaits approval."""
        return await self.commands.approve(
            artifact_id, actor=actor, reason=reason, expected_version=expected_version
        )

    async def reject(
        self,
        artifact_id: str,
        *,
        actor: str,
        reason: str,
        expected_version: int | None = None,
    ) -> Artifact:
        return await self.commands.reject(
            artifact_id, actor=actor, reason=reason, expected_version=expected_version
        )

    async def override(
        self,
        artifact_id: str,
        *,
        actor: str,
        reason: str,
        expected_version: int | None = None,
    ) -> Artifact:
        """A named human approves despite the rubrics; the reason is on the record."""
        return await self.commands.override(
            artifact_id, actor=actor, reason=reason, expected_version=expected_version
        )

    async def revise(
        self,
        artifact_id: str,
        content: Any,
        *,
        actor: str,
        reason: str,
        expected_version: int | None = None,
    ) -> Artifact:
        """New content as a new revision (back in `draft`); the old revision is superseded."""
        return await self.commands.revise(
            artifact_id, content, actor=actor, reason=reason, expected_version=expected_version
        )

    async def withdraw(
        self,
        artifact_id: str,
        *,
        actor: str,
        reason: str | None = None,
        expected_version: int | None = None,
    ) -> Artifact:
        return await self.commands.withdraw(
            artifact_id, actor=actor, reason=reason, expected_version=expected_version
        )

    async def archive(
        self,
        artifact_id: str,
        *,
        actor: str,
        reason: str | None = None,
        expected_version: int | None = None,
    ) -> Artifact:
        return await self.commands.archive(
            artifact_id, actor=actor, reason=reason, expected_version=expected_version
        )

    async def supersede(
        self,
        artifact_id: str,
        *,
        actor: str,
        reason: str,
        by: str | None = None,
        expected_version: int | None = None,
    ) -> Artifact:
        """Retire an artifact that another one replaces (from `draft`, `needs_revision` or
        `approved`); `by` names the replacing artifact, which must exist. The event's
        reason reads "superseded by BY: REASON"."""
        return await self.commands.supersede(
            artifact_id, actor=actor, reason=reason, by=by, expected_version=expected_version
        )

    # --- messages for people ---------------------------------------------------------------
    async def explain_refusal(self, error: IllegalTransitionError) -> str:
        """`error` told to a person: the triggers only rubricflow's reviews fire are left
        out of what is allowed, and an artifact under review says what to do (wait, or
        run a worker to take over a review whose worker is gone). The error itself keeps
        the machine's full answer for programs."""
        return await self.queries.explain_refusal(error)

    # `list` (the name) is `list_artifacts`. Last in the class on purpose: below
    # this line `list` in an annotation would name this method, not the builtin.
    list = list_artifacts

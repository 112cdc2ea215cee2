"""The review service: artifacts go through review against the rubrics bound to their type.

An artifact is approved only when every bound rubric passes (and, for a type that
`requires_approval`, a named human approves); it is sent back with feedback when a
rubric fails, rejected when a `blocking` rubric fails, and returned to the queue with
the reason when a review cannot finish. Every step is written with its cause.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, NamedTuple

from jsonschema import FormatChecker, SchemaError, validators
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from rubricflow.engine.executor import evaluate
from rubricflow.errors import (
    ArtifactConflictError,
    ConfigurationError,
    ContentValidationError,
    IllegalTransitionError,
    NotFoundError,
    ReviewError,
)
from rubricflow.llm.session import LLMSession
from rubricflow.model import Rubric
from rubricflow.plugins import PluginRegistry, default_plugins
from rubricflow.results import Evaluation, Target
from rubricflow.review.lifecycle import Lifecycle, human_triggers
from rubricflow.store import Store
from rubricflow.store._sql import utcnow
from rubricflow.store.artifacts import (
    Artifact,
    ArtifactEvent,
    ArtifactRepository,
    ArtifactType,
    RubricBinding,
)
from rubricflow.store.evaluations import EvaluationFilter

__all__ = ["DEFAULT_LEASE_SECONDS", "SYSTEM_ACTOR", "ArtifactRegistry", "ReviewOutcome"]

logger = logging.getLogger("rubricflow.review")

SYSTEM_ACTOR = "rubricflow"
DEFAULT_LEASE_SECONDS = 300.0
RETRY_DELAY_SECONDS = 30.0
MAX_RETRY_DELAY_SECONDS = 3600.0
INLINE_GRACE_SECONDS = 30.0


# what every transition resets unless it says otherwise: the lease and the approval wait
_RELEASED: dict[str, Any] = {
    "lease_owner": None,
    "lease_expires_at": None,
    "awaiting_approval": False,
}


class _Planned(NamedTuple):
    """A bound rubric in a review: its version now, and its stored evaluation to reuse."""

    binding: RubricBinding
    rubric: Rubric
    reused: Evaluation | None


@dataclass
class ReviewOutcome:
    """Where a submission or review left the artifact, and the evaluations it used."""

    artifact: Artifact
    evaluations: list[Evaluation] = field(default_factory=list)
    queued: bool = False
    reason: str | None = None

    @property
    def approved(self) -> bool:
        return self.artifact.status == "approved"

    def to_dict(self) -> dict[str, Any]:
        return {
            "artifact": self.artifact.to_dict(),
            "status": self.artifact.status,
            "queued": self.queued,
            "reason": self.reason,
            "evaluation_ids": [e.id for e in self.evaluations],
            "evaluations": [
                {
                    "id": e.id,
                    "rubric_id": e.rubric_id,
                    "rubric_version": e.rubric_version,
                    "verdict": e.verdict,
                    "score": e.score,
                    "feedback": e.feedback,
                }
                for e in self.evaluations
            ],
        }


class ArtifactRegistry:
    """Artifacts and their reviews, on a `Store`."""

    def __init__(
        self,
        store: Store,
        *,
        plugins: PluginRegistry | None = None,
        evaluate_options: Mapping[str, Any] | None = None,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
    ) -> None:
        self.store = store
        self.repository = ArtifactRepository(store.database)
        self.plugins = plugins or default_plugins()
        self.evaluate_options = dict(evaluate_options or {})
        self.lease_seconds = lease_seconds
        self.lifecycle = Lifecycle()
        self._session: LLMSession | None = None

    async def __aenter__(self) -> ArtifactRegistry:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the LLM session the reviews share (its HTTP connections); the store stays
        open. Safe to call twice; a later review opens a new session."""
        session, self._session = self._session, None
        if session is not None:
            await session.aclose()

    def _judge_options(self) -> dict[str, Any]:
        """`evaluate()`'s keyword arguments for a review: one LLM session for every review
        this registry makes (one HTTP pool), answering from the store's judge cache unless
        the caller chose a cache, so workers sharing a store share judge answers. Nothing
        is opened until a judge asks."""
        inner = dict(self.evaluate_options.get("options") or {})
        if isinstance(inner.get("llm"), LLMSession):
            return self.evaluate_options
        if self._session is None:
            inner.setdefault("llm_cache", self.store.judge_cache)
            self._session = LLMSession.from_options(
                inner,
                plugins=self.plugins,
                allow_import=bool(self.evaluate_options.get("allow_import", False)),
            )
        return {**self.evaluate_options, "options": {**inner, "llm": self._session}}

    # --- types ---------------------------------------------------------------------------
    async def set_type(self, artifact_type: ArtifactType) -> ArtifactType:
        """Define or replace an artifact type. Its rubrics must be registered already,
        each bound once; its content schema must be a valid JSON Schema."""
        seen: set[str] = set()
        for binding in artifact_type.rubrics:
            if binding.rubric_id in seen:
                raise ConfigurationError(
                    f"artifact type {artifact_type.name!r} binds rubric {binding.rubric_id!r} "
                    "more than once; bind each rubric once (mark it blocking with "
                    "`blocking=True` / `--blocking ID`)"
                )
            seen.add(binding.rubric_id)
            await self.store.rubrics.get(binding.rubric_id, binding.version)
        if artifact_type.content_schema is not None:
            schema = artifact_type.content_schema
            try:
                validators.validator_for(schema).check_schema(schema)
            except SchemaError as error:
                where = "/".join(str(p) for p in error.absolute_path)
                raise ConfigurationError(
                    f"the content schema of artifact type {artifact_type.name!r} is not a "
                    f"valid JSON Schema: at $/{where}: {error.message}"
                ) from None
        await self.repository.put_type(artifact_type)
        return artifact_type

    async def get_type(self, name: str) -> ArtifactType:
        return await self.repository.get_type(name)

    async def list_types(self) -> list[ArtifactType]:
        return await self.repository.list_types()

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
        _check_json(content, "content")
        _check_json(dict(metadata or {}), "metadata")
        new_id = artifact_id or uuid.uuid4().hex
        try:
            async with self.store.database.transaction() as connection:
                artifact, event = await self.repository.insert(
                    connection,
                    artifact_id=new_id,
                    type_name=type_name,
                    content=content,
                    actor=_named(actor),
                    title=title,
                    metadata=dict(metadata or {}),
                )
        except IntegrityError:
            # the type (a foreign key) is unknown, or the id is taken
            await self.repository.get_type(type_name)
            raise ReviewError(
                f"an artifact {new_id!r} already exists; choose another id, or revise it "
                f"(`rubricflow artifacts revise {new_id} FILE --reason ...`)"
            ) from None
        await self._notify(event)
        return artifact

    async def get(self, artifact_id: str) -> Artifact:
        return await self.repository.get(artifact_id)

    async def list_artifacts(
        self,
        *,
        type_name: str | None = None,
        status: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Artifact]:
        """Artifacts (of one type, in one status), most recently changed first, a page at
        a time. Also named `list`."""
        return await self.repository.list_artifacts(
            type_name=type_name, status=status, limit=limit, offset=offset
        )

    async def history(self, artifact_id: str) -> list[ArtifactEvent]:
        """Every transition of the artifact, oldest first."""
        return await self.repository.history(artifact_id)

    async def evaluations(self, artifact_id: str, revision: int | None = None) -> list[Evaluation]:
        """The stored evaluations of the artifact (one revision, or all), newest first."""
        return await self.store.evaluations.query(
            EvaluationFilter(artifact_id=artifact_id, revision=revision), limit=10_000
        )

    # --- transitions -----------------------------------------------------------------------
    async def _apply(self, artifact: Artifact, trigger: str, **fields: Any) -> Artifact:
        """`_write` for callers that need only the artifact as written."""
        written, _ = await self._write(artifact, trigger, **fields)
        return written

    async def _write(
        self,
        artifact: Artifact,
        trigger: str,
        *,
        actor: str,
        reason: str | None = None,
        evaluation_ids: Sequence[str] = (),
        updates: dict[str, Any] | None = None,
        new_content: Any = None,
        revise: bool = False,
        seq: int | None = None,
    ) -> tuple[Artifact, ArtifactEvent]:
        """Apply `trigger` in one transaction and announce it: the artifact as written and
        its event. Raises `ArtifactConflictError` when another writer came first."""
        dest = self.lifecycle.next_state(artifact.id, artifact.status, trigger)
        fields: dict[str, Any] = {**_RELEASED, **(updates or {})}
        async with self.store.database.transaction() as connection:
            if revise:
                fields["revision"] = artifact.revision + 1
                await self.repository.supersede_revision(connection, artifact.id, artifact.revision)
                stored, digest = await self.repository.insert_revision(
                    connection,
                    artifact.id,
                    artifact.revision + 1,
                    new_content,
                    actor=actor,
                    reason=reason,
                )
                artifact = artifact.model_copy(
                    update={"content": json.loads(stored), "content_hash": digest}
                )
            event, updated = await self.repository.write_transition(
                connection,
                artifact,
                trigger=trigger,
                dest=dest,
                actor=actor,
                reason=reason,
                evaluation_ids=evaluation_ids,
                updates=fields,
                seq=seq,
            )
        await self._notify(event)
        return updated, event

    async def _notify(self, event: ArtifactEvent) -> None:
        await self.plugins.notify(event.to_dict())

    async def submit_for_review(
        self, artifact_id: str, *, actor: str, defer: bool = False
    ) -> ReviewOutcome:
        """Queue the artifact for review and, unless `defer` (or the type has
        `auto_review: false`), review it now in this process.

        Refused before anything changes when the content breaks the type's schema or the
        type binds no rubrics.
        """
        async with self.store.database.transaction() as connection:
            artifact, artifact_type, last_seq, reviewed = await self.repository.get_for_submit(
                connection, artifact_id
            )
            self._check_content(artifact, artifact_type)
            if not artifact_type.rubrics:
                raise _no_rubrics(artifact_type, artifact_id)
            inline = not defer and artifact_type.auto_review
            if inline:
                plan = await self._plan(connection, artifact, artifact_type, reviewed)
            else:
                for binding in artifact_type.rubrics:
                    await self.store.rubrics.get(
                        binding.rubric_id, binding.version, connection=connection
                    )
            # a review done here is not left for workers to snatch between the submit and
            # the claim; should this process die in between, workers take it after the
            # grace period
            grace = timedelta(seconds=min(self.lease_seconds, INLINE_GRACE_SECONDS))
            event, artifact = await self.repository.write_transition(
                connection,
                artifact,
                trigger="submit",
                dest=self.lifecycle.next_state(artifact.id, artifact.status, "submit"),
                actor=_named(actor),
                reason="submitted",
                updates={**_RELEASED, "queued_at": utcnow() + grace if inline else utcnow()},
                seq=last_seq + 1,
            )
        await self._notify(event)
        if not inline:
            return ReviewOutcome(artifact, queued=True, reason="queued for a worker")
        worker = f"inline-{os.getpid()}"
        try:
            # the artifact as just written: its claim needs no second look
            claimed, started = await self._write(
                artifact,
                "start_review",
                actor=worker,
                reason="review started",
                updates={
                    "lease_owner": worker,
                    "lease_expires_at": utcnow() + timedelta(seconds=self.lease_seconds),
                },
                seq=event.seq + 1,
            )
        except ArtifactConflictError:
            current = await self.repository.get(artifact.id)
            return ReviewOutcome(current, queued=True, reason="another worker took the review over")
        return await self._finish(claimed, (artifact_type, plan), seq=started.seq + 1)

    def _check_content(self, artifact: Artifact, artifact_type: ArtifactType) -> None:
        schema = artifact_type.content_schema
        if schema is None:
            return
        validator = validators.validator_for(schema)(schema, format_checker=FormatChecker())
        errors = sorted(
            validator.iter_errors(artifact.content), key=lambda e: list(e.absolute_path)
        )
        if errors:
            problems = [
                f"$/{'/'.join(str(p) for p in e.absolute_path)}: {e.message}" for e in errors[:20]
            ]
            raise ContentValidationError(
                f"artifact {artifact.id!r} content does not match the {artifact_type.name!r} "
                "type's content schema; fix the content (e.g. `rubricflow artifacts revise`) "
                "and submit again:",
                problems,
            )

    async def claim(self, artifact_id: str, *, worker: str) -> Artifact:
        """Start the review of this queued artifact (or take over an expired lease)."""
        claimed = await self._claim(worker, artifact_id)
        if claimed is None:
            artifact = await self.repository.get(artifact_id)
            raise IllegalTransitionError(
                artifact.id,
                artifact.status,
                "start_review",
                self.lifecycle.allowed_triggers(artifact.status),
            )
        return claimed

    async def claim_next(self, *, worker: str) -> Artifact | None:
        """Claim the next artifact waiting for review, if any, in one transaction (on
        PostgreSQL, rows other workers hold are skipped)."""
        return await self._claim(worker, None)

    async def _claim(self, worker: str, artifact_id: str | None) -> Artifact | None:
        now = utcnow()
        expires = now + timedelta(seconds=self.lease_seconds)
        events = []
        async with self.store.database.transaction() as connection:
            if artifact_id is None:
                ids = await self.repository.claimable(connection, now=now)
                if not ids:
                    return None
                artifact_id = ids[0]
            artifact = await self.repository.get(artifact_id, connection)
            expired = artifact.lease_expires_at is not None and artifact.lease_expires_at < now
            if artifact.status == "in_review" and not artifact.awaiting_approval and expired:
                aborted, artifact = await self.repository.write_transition(
                    connection,
                    artifact,
                    trigger="abort_review",
                    dest=self.lifecycle.next_state(artifact.id, artifact.status, "abort_review"),
                    actor=SYSTEM_ACTOR,
                    reason=f"the lease of {artifact.lease_owner} expired; review restarted",
                    updates={"lease_owner": None, "lease_expires_at": None},
                )
                events.append(aborted)
            if artifact.status != "pending_review":
                return None
            started, claimed = await self.repository.write_transition(
                connection,
                artifact,
                trigger="start_review",
                dest=self.lifecycle.next_state(artifact.id, artifact.status, "start_review"),
                actor=worker,
                reason="review started",
                updates={"lease_owner": worker, "lease_expires_at": expires},
            )
            events.append(started)
        for event in events:
            await self._notify(event)
        return claimed

    async def review(self, artifact_id: str, *, worker: str) -> ReviewOutcome:
        """Claim the artifact, evaluate every bound rubric, and commit the outcome. A
        review that cannot finish returns the artifact to `pending_review` with the reason."""
        return await self.finish_review(await self.claim(artifact_id, worker=worker))

    async def finish_review(self, artifact: Artifact) -> ReviewOutcome:
        """Evaluate a claimed artifact (in_review, leased, as `claim` returned it) and
        commit the outcome.

        The outcome is written only if the artifact is still as claimed: when the lease
        expired and another worker took the review over, or a human decided meanwhile,
        `ArtifactConflictError` is raised and nothing but the (reusable) evaluations is
        written."""
        return await self._finish(artifact)

    async def _finish(
        self,
        artifact: Artifact,
        prepared: tuple[ArtifactType, list[_Planned]] | None = None,
        seq: int | None = None,
    ) -> ReviewOutcome:
        """`finish_review`, given what the caller already read (the type and the plan) and
        the number of the decision's event when known."""
        if artifact.status != "in_review" or artifact.awaiting_approval:
            raise IllegalTransitionError(
                artifact.id,
                artifact.status,
                "start_review",
                self.lifecycle.allowed_triggers(artifact.status),
            )
        heartbeat = asyncio.create_task(self._keep_lease(artifact))
        try:
            if prepared is None:
                prepared = await self._prepare(artifact)
            artifact_type, plan = prepared
            results, unsaved = await self._evaluate_all(artifact, artifact_type, plan)
        except Exception as error:  # the review could not finish: never strand the artifact
            reason = f"review could not finish: {type(error).__name__}: {error}"
            return ReviewOutcome(await self._release(artifact, reason), reason=reason)
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
        return await self._decide(artifact, artifact_type, results, unsaved, seq)

    async def _prepare(self, artifact: Artifact) -> tuple[ArtifactType, list[_Planned]]:
        """The artifact's type and review plan, read together."""
        async with self.store.database.read() as connection:
            artifact_type = await self.repository.get_type(artifact.type, connection)
            if not artifact_type.rubrics:  # unbound after it was queued: never approve it
                raise _no_rubrics(artifact_type, artifact.id)
            return artifact_type, await self._plan(connection, artifact, artifact_type)

    async def _plan(
        self,
        connection: AsyncConnection,
        artifact: Artifact,
        artifact_type: ArtifactType,
        reviewed: bool = True,
    ) -> list[_Planned]:
        """Each bound rubric (its version now) with the complete evaluation of this
        revision already stored for it, if any: reused, so a restarted review never
        evaluates a (revision, rubric version) into the record twice; an incomplete one
        is evaluated again (its retry is the point). `reviewed=False`: the caller knows
        none is stored."""
        found = (
            await self.repository.reviewed(connection, artifact.id, artifact.revision)
            if reviewed
            else []
        )
        stored = {(e.rubric_id, e.rubric_version): e for e in found}
        plan = []
        for binding in artifact_type.rubrics:
            rubric = await self.store.rubrics.get(
                binding.rubric_id, binding.version, connection=connection
            )
            plan.append(_Planned(binding, rubric, stored.get((rubric.id, rubric.version))))
        return plan

    async def _keep_lease(self, artifact: Artifact) -> None:
        """While this process is alive and reviewing, push the lease forward every third
        of its length, so a long review is not taken over; a killed worker stops renewing
        and its lease runs out."""
        interval = max(self.lease_seconds / 3, 0.05)
        while True:
            await asyncio.sleep(interval)
            try:
                renewed = await self.repository.renew_lease(
                    artifact, utcnow() + timedelta(seconds=self.lease_seconds)
                )
            except Exception:  # a missed renewal only risks a takeover, which is safe
                logger.warning("could not renew the lease on %s", artifact.id, exc_info=True)
                continue
            if not renewed:
                return  # someone else owns it now; our decision will be refused

    async def _release(
        self, artifact: Artifact, reason: str, evaluation_ids: Sequence[str] = ()
    ) -> Artifact:
        retry_at = utcnow() + timedelta(seconds=await self._retry_delay(artifact))
        return await self._commit_decision(
            artifact,
            "abort_review",
            reason=reason,
            evaluation_ids=evaluation_ids,
            updates={"queued_at": retry_at},
        )

    async def _retry_delay(self, artifact: Artifact) -> float:
        """30 s after the first failed attempt at this revision, doubling each time up to
        an hour, so a review that keeps failing (a judge that is down) backs off."""
        events = await self.repository.history(artifact.id)
        failures = sum(
            1
            for event in events
            if event.trigger == "abort_review" and event.revision == artifact.revision
        )
        return float(min(RETRY_DELAY_SECONDS * 2**failures, MAX_RETRY_DELAY_SECONDS))

    async def _commit_decision(
        self,
        artifact: Artifact,
        trigger: str,
        *,
        reason: str,
        evaluation_ids: Sequence[str] = (),
        updates: dict[str, Any] | None = None,
    ) -> Artifact:
        """Apply a review's outcome to the artifact exactly as it was claimed."""
        try:
            return await self._apply(
                artifact,
                trigger,
                actor=SYSTEM_ACTOR,
                reason=reason,
                evaluation_ids=evaluation_ids,
                updates=updates,
            )
        except ArtifactConflictError:
            raise await self._overtaken(artifact, trigger) from None

    async def _overtaken(self, artifact: Artifact, trigger: str) -> ArtifactConflictError:
        current = await self.repository.get(artifact.id)
        return ArtifactConflictError(
            f"the review of artifact {artifact.id!r} by {artifact.lease_owner} was "
            f"overtaken (it is now {current.status}, version {current.version}: its lease "
            "expired and another worker took it over, or a human decided); its "
            f"{trigger!r} was not applied"
        )

    async def _evaluate_all(
        self, artifact: Artifact, artifact_type: ArtifactType, plan: list[_Planned]
    ) -> tuple[list[tuple[RubricBinding, Evaluation]], list[Evaluation]]:
        """Every bound rubric's evaluation of this revision, and those of them not stored
        yet. Each new evaluation is stored as soon as it is made, so a review that dies
        midway leaves them for the next to reuse; a review with one evaluation to make
        leaves it to `_decide`, which stores it in the decision's own transaction."""
        store_now = sum(1 for item in plan if item.reused is None) > 1

        async def one(item: _Planned) -> tuple[RubricBinding, Evaluation, bool]:
            if item.reused is not None:
                return item.binding, item.reused, True
            evaluation = await self._evaluate(artifact, artifact_type, item.rubric)
            if not store_now:
                return item.binding, evaluation, False
            return item.binding, await self._save(evaluation, artifact), True

        done = await asyncio.gather(*(one(item) for item in plan))
        return [(b, e) for b, e, _ in done], [e for _, e, saved in done if not saved]

    async def _evaluate(
        self, artifact: Artifact, artifact_type: ArtifactType, rubric: Rubric
    ) -> Evaluation:
        target = Target(
            id=artifact.id,
            content=artifact.content,
            metadata={
                "artifact_type": artifact.type,
                "revision": artifact.revision,
                **artifact.metadata,
            },
        )
        return await evaluate(
            rubric,
            target,
            plugins=self.plugins,
            threshold=artifact_type.approval_threshold,
            **self._judge_options(),
        )

    async def _decide(
        self,
        artifact: Artifact,
        artifact_type: ArtifactType,
        results: list[tuple[RubricBinding, Evaluation]],
        unsaved: list[Evaluation],
        seq: int | None = None,
    ) -> ReviewOutcome:
        """Store the evaluations not stored yet and commit the outcome, in one transaction.
        The outcome is decided on the evaluations as stored (another reviewer's, when it
        stored one for the same revision and rubric version first). When the artifact is
        no longer as claimed the evaluations are still committed and
        `ArtifactConflictError` is raised."""
        if any(e.verdict == "incomplete" for _, e in results):
            stored = {id(e): await self._save(e, artifact) for e in unsaved}
            results = [(b, stored.get(id(e), e)) for b, e in results]
            evaluations = [evaluation for _, evaluation in results]
            incomplete = [e for e in evaluations if e.verdict == "incomplete"]
            names = ", ".join(f"{e.rubric_id}@{e.rubric_version}" for e in incomplete)
            reason = (
                f"review incomplete: {names} could not score every criterion "
                "(see the evaluation's notes); it will be retried"
            )
            released = await self._release(artifact, reason, [e.id for e in incomplete])
            return ReviewOutcome(released, evaluations, reason=reason)
        async with self.store.database.transaction() as connection:
            stored = {id(e): await self._save(e, artifact, connection) for e in unsaved}
            results = [(b, stored.get(id(e), e)) for b, e in results]
            trigger, reason, updates = _outcome(artifact_type, results)
            evaluations = [evaluation for _, evaluation in results]
            written = await self.repository.transition(
                connection,
                artifact,
                trigger=trigger,
                dest=self.lifecycle.next_state(artifact.id, artifact.status, trigger),
                actor=SYSTEM_ACTOR,
                reason=reason,
                evaluation_ids=[e.id for e in evaluations],
                updates={**_RELEASED, **updates},
                seq=seq,
            )
        if written is None:
            raise await self._overtaken(artifact, trigger)
        event, decided = written
        await self._notify(event)
        return ReviewOutcome(decided, evaluations, reason=reason)

    async def _save(
        self, evaluation: Evaluation, artifact: Artifact, connection: AsyncConnection | None = None
    ) -> Evaluation:
        return await self.store.evaluations.save_for_review(
            evaluation, artifact_id=artifact.id, revision=artifact.revision, connection=connection
        )

    # --- human decisions and edits -------------------------------------------------------
    async def approve(self, artifact_id: str, *, actor: str, reason: str) -> Artifact:
        """A named human approves an artifact whose review passed and awaits approval."""
        artifact = await self.repository.get(artifact_id)
        if artifact.status == "in_review" and not artifact.awaiting_approval:
            raise ReviewError(
                f"artifact {artifact_id!r} is still being reviewed; wait for the review, or "
                "use `override` to approve whatever the rubrics say"
            )
        return await self._apply(artifact, "approve", actor=_named(actor), reason=_why(reason))

    async def reject(self, artifact_id: str, *, actor: str, reason: str) -> Artifact:
        artifact = await self.repository.get(artifact_id)
        return await self._apply(artifact, "reject", actor=_named(actor), reason=_why(reason))

    async def override(self, artifact_id: str, *, actor: str, reason: str) -> Artifact:
        """A named human approves despite the rubrics; the reason is on the record."""
        artifact = await self.repository.get(artifact_id)
        return await self._apply(artifact, "override", actor=_named(actor), reason=_why(reason))

    async def revise(self, artifact_id: str, content: Any, *, actor: str, reason: str) -> Artifact:
        """New content as a new revision (back in `draft`); the old revision is superseded."""
        _check_json(content, "content")
        artifact = await self.repository.get(artifact_id)
        return await self._apply(
            artifact,
            "revise",
            actor=_named(actor),
            reason=_why(reason),
            new_content=content,
            revise=True,
            updates={"queued_at": None},
        )

    async def withdraw(
        self, artifact_id: str, *, actor: str, reason: str | None = None
    ) -> Artifact:
        artifact = await self.repository.get(artifact_id)
        return await self._apply(artifact, "withdraw", actor=_named(actor), reason=reason)

    async def archive(self, artifact_id: str, *, actor: str, reason: str | None = None) -> Artifact:
        artifact = await self.repository.get(artifact_id)
        return await self._apply(artifact, "archive", actor=_named(actor), reason=reason)

    async def supersede(
        self, artifact_id: str, *, actor: str, reason: str, by: str | None = None
    ) -> Artifact:
        """Retire an artifact that another one replaces (from `draft`, `needs_revision` or
        `approved`); `by` names the replacing artifact, which must exist. The event's
        reason reads "superseded by BY: REASON"."""
        who, why = _named(actor), _why(reason)
        artifact = await self.repository.get(artifact_id)
        if by is not None:
            by = by.strip()
            if by == artifact.id:
                raise ReviewError(
                    f"artifact {artifact_id!r} cannot supersede itself; name the artifact "
                    "that replaces it (`--by OTHER_ID`)"
                )
            try:
                await self.repository.get(by)
            except NotFoundError:
                raise NotFoundError(
                    f"no artifact {by!r} to supersede {artifact_id!r} with; create the "
                    "replacement first (`rubricflow artifacts create FILE --type TYPE`) and "
                    "name its id with --by"
                ) from None
            why = f"superseded by {by}: {why}"
        return await self._apply(artifact, "supersede", actor=who, reason=why)

    # --- messages for people ---------------------------------------------------------------
    async def explain_refusal(self, error: IllegalTransitionError) -> str:
        """`error` told to a person: the triggers only rubricflow's reviews fire are left
        out of what is allowed, and an artifact under review says what to do (wait, or
        run a worker to take over a review whose worker is gone). The error itself keeps
        the machine's full answer for programs."""
        try:
            artifact = await self.repository.get(error.artifact_id)
        except NotFoundError:
            return str(error)
        head = f"artifact {artifact.id!r} is {artifact.status}: {error.trigger!r} is not allowed"
        allowed = human_triggers(self.lifecycle.allowed_triggers(artifact.status))
        if artifact.status == "in_review" and not artifact.awaiting_approval:
            allowed = [t for t in allowed if t != "approve"]  # only once the review passed
        others = ", ".join(allowed) if allowed else "nothing (the state is final)"
        if artifact.status != "in_review":
            hint = ""
            if artifact.status == "pending_review" and error.trigger == "submit":
                hint = (
                    "; it is already queued for review: a worker reviews it "
                    "(`rubricflow worker --once`)"
                )
            return f"{head}{hint}; you can: {others}"
        if artifact.awaiting_approval:
            return (
                f"{head}; its review passed and waits for a human: approve it "
                f"(`rubricflow artifacts approve {artifact.id} --reason ...`), or: {others}"
            )
        owner = artifact.lease_owner or "a worker"
        expires = artifact.lease_expires_at
        if expires is None or expires < utcnow():
            since = f" at {expires:%Y-%m-%d %H:%M:%S} UTC" if expires is not None else ""
            state = (
                f"its review by {owner} stopped (the lease expired{since}; that worker is "
                "gone): run `rubricflow worker --once` to take the review over and finish "
                "it, then try again"
            )
        else:
            state = (
                f"it is being reviewed by {owner} (lease until {expires:%Y-%m-%d %H:%M:%S} "
                "UTC): wait for the review to finish; if that worker is gone, run "
                "`rubricflow worker --once` once the lease has expired, to take the review over"
            )
        return f"{head}; {state}. A person can also: {others}"

    # `list` (the name) is `list_artifacts`. Last in the class on purpose: below
    # this line `list` in an annotation would name this method, not the builtin.
    list = list_artifacts


def _outcome(
    artifact_type: ArtifactType, results: list[tuple[RubricBinding, Evaluation]]
) -> tuple[str, str, dict[str, Any]]:
    """The trigger, reason and field updates a review with complete evaluations ends in."""
    evaluations = [evaluation for _, evaluation in results]
    blocking = [e for b, e in results if b.blocking and not e.passed]
    failed = [e for e in evaluations if not e.passed]
    if blocking:
        names = ", ".join(f"{e.rubric_id}@{e.rubric_version}" for e in blocking)
        return "reject", f"blocking rubric failed: {names}", {}
    if failed:
        names = ", ".join(f"{e.rubric_id}@{e.rubric_version}" for e in failed)
        return "request_revision", f"revision needed: {names} did not pass; see the feedback", {}
    if artifact_type.requires_approval:
        reason = "every rubric passed; waiting for a human to approve"
        return "await_approval", reason, {"awaiting_approval": True}
    return "approve", "every rubric passed", {}


def _no_rubrics(artifact_type: ArtifactType, artifact_id: str) -> ReviewError:
    return ReviewError(
        f"artifact type {artifact_type.name!r} binds no rubrics, so {artifact_id!r} "
        "cannot be reviewed; bind one with "
        f"`rubricflow types set {artifact_type.name} --rubric RUBRIC_ID`"
    )


def _check_json(value: Any, what: str) -> None:
    """Content and metadata are stored as JSON: refuse what JSON cannot hold."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ReviewError(
            f"artifact {what} must be JSON data (text, numbers, booleans, null, lists and "
            f"objects with text keys): {error}"
        ) from None


def _named(actor: str) -> str:
    if not actor or not actor.strip():
        raise ReviewError("name who does this (actor); decisions are on the record")
    return actor.strip()


def _why(reason: str) -> str:
    if not reason or not reason.strip():
        raise ReviewError("give a reason; human decisions are on the record")
    return reason.strip()

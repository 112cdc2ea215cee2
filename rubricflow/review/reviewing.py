"""The review itself: evaluate every rubric bound to a claimed artifact's type, store the
evaluations, and commit the outcome the evaluations call for.

An artifact is approved only when every bound rubric passes (and, for a type that
`requires_approval`, it waits for a named human instead); it is sent back for revision
when a rubric fails, rejected when a `blocking` rubric fails, and returned to the queue
with the reason and a retry time when the review cannot finish. The outcome is written
only while the artifact is still as claimed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from datetime import datetime, time, timedelta, timezone
from typing import Any, NamedTuple

from rubricflow.engine.executor import evaluate, resolve_method
from rubricflow.engine.isolation import uses_pool
from rubricflow.errors import ArtifactConflictError, ReviewError
from rubricflow.llm.budget import BUDGET_REASON, CostBudget, capped_session
from rubricflow.llm.session import LLMSession
from rubricflow.model import Rubric
from rubricflow.records.artifacts import ReviewOutcome
from rubricflow.results import CriterionResult, Evaluation, Target
from rubricflow.review.claims import ReviewClaims, dead_letter_reason
from rubricflow.review.context import (
    MAX_RETRY_DELAY_SECONDS,
    SYSTEM_ACTOR,
    ReviewContext,
    utcnow,
)
from rubricflow.review.routing import (
    ESCALATION,
    ROUTED_PREFIX,
    escalations,
    route,
    unsure_criteria,
)
from rubricflow.scorers.llm import LLM_SCORER_NAMES
from rubricflow.store.artifacts import (
    Artifact,
    ArtifactTransaction,
    ArtifactType,
    RubricBinding,
)

__all__ = ["Decided", "Evaluating", "Planned", "ReviewOutcome", "Reviewer", "no_rubrics"]

#: a review's evaluations begun early (`Reviewer.start_evaluating`): one per planned rubric,
#: None where a stored one is reused
Evaluating = asyncio.Task[list[Evaluation | None]]

# loop turns a just-started evaluation is given to reach its first wait (the job sent to
# the check pool: `Reviewer.start_evaluating`)
_START_TURNS = 3

#: how long a submission's transaction waits for an early evaluation that asks no judge
#: (`Reviewer.decide_at_once`): a pool hop takes about a millisecond; past this the
#: submission commits and the review is decided in a transaction of its own, as always
AT_ONCE_SECONDS = 0.25


class Decided(NamedTuple):
    """A review decided in its submission's transaction (`Reviewer.decide_at_once`): the
    outcome, the evaluations stored now, and the decision's event, to announce once the
    transaction commits."""

    outcome: ReviewOutcome
    new: list[Evaluation]
    event: Any


class Planned(NamedTuple):
    """A bound rubric in a review: its version now, and its stored evaluation to reuse."""

    binding: RubricBinding
    rubric: Rubric
    reused: Evaluation | None


#: in a criterion's notes when the type's daily budget refused its judge call
#: (`DailyBudget.refusal`: "... would pass type 'T''s daily budget of N for DAY (UTC) ...")
DAILY_BUDGET_MARK = "'s daily budget of "


def _budget_of(artifact_type: ArtifactType, database: Any) -> CostBudget:
    """A review's budget: the type's per-artifact cap, inside its daily budget in the store
    (shared by every worker and server) when it has one."""
    from rubricflow.store.spend import DailyBudget, DailySpend

    name, limit = artifact_type.name, artifact_type.max_cost_per_artifact
    inner = None if limit is None else CostBudget(limit, f"type {name!r}'s max_cost_per_artifact")
    if artifact_type.daily_budget is None:
        assert inner is not None
        return inner
    return DailyBudget(DailySpend(database), name, artifact_type.daily_budget, inner)


class Reviewer:
    """Reviews claimed artifacts: evaluates, stores the evaluations, commits the outcome.
    Every review shares one LLM session (one HTTP pool) until `aclose`."""

    def __init__(
        self,
        context: ReviewContext,
        claims: ReviewClaims,
        evaluate_options: Mapping[str, Any] | None = None,
    ) -> None:
        self._context = context
        self._claims = claims
        self.evaluate_options: dict[str, Any] = dict(evaluate_options or {})
        self.session: LLMSession | None = None
        #: the sessions of the judges artifact types name (`ArtifactType.judge`), by spec
        self.type_sessions: dict[str, LLMSession] = {}
        #: the spending cap of each artifact revision under review, when its type has one
        self._budgets: dict[tuple[str, int], CostBudget] = {}
        #: the artifact revisions under a deferred review whose type batches its judge calls
        self._batched: set[tuple[str, int]] = set()
        #: the batch-API sessions of deferred reviews (`ArtifactType.judge_batch`), by judge
        self.batch_sessions: dict[str | None, LLMSession] = {}

    async def aclose(self) -> None:
        """Close the LLM session the reviews share (its HTTP connections); the store stays
        open. Safe to call twice; a later review opens a new session."""
        session, self.session = self.session, None
        if session is not None:
            await session.aclose()
        typed, self.type_sessions = self.type_sessions, {}
        batched, self.batch_sessions = self.batch_sessions, {}
        for each in [*typed.values(), *batched.values()]:
            await each.aclose()

    def _judge_options(self, judge: str | None = None) -> dict[str, Any]:
        """`evaluate()`'s keyword arguments for a review: one LLM session for every review
        (one HTTP pool), answering from the store's judge cache unless the caller chose a
        cache, so workers sharing a store share judge answers. Nothing is opened until a
        judge asks. `judge` is the artifact type's own judge (a spec or a panel), which
        has a session of its own."""
        inner = dict(self.evaluate_options.get("options") or {})
        if judge is not None:
            session = self.type_sessions.get(judge)
            if session is None:
                inner.setdefault("llm_cache", self._context.store.judge_cache)
                session = LLMSession.from_options(
                    {**inner, "llm": judge},
                    plugins=self._context.plugins,
                    allow_import=bool(self.evaluate_options.get("allow_import", False)),
                )
                self.type_sessions[judge] = session
            return {**self.evaluate_options, "options": {**inner, "llm": session}}
        if isinstance(inner.get("llm"), LLMSession):
            return self.evaluate_options
        if self.session is None:
            inner.setdefault("llm_cache", self._context.store.judge_cache)
            self.session = LLMSession.from_options(
                inner,
                plugins=self._context.plugins,
                allow_import=bool(self.evaluate_options.get("allow_import", False)),
            )
        return {**self.evaluate_options, "options": {**inner, "llm": self.session}}

    def _batch_options(self, judge: str | None) -> dict[str, Any]:
        """`_judge_options` for a deferred review whose type batches: a session of its own
        whose calls go through the provider's batch API (`rubricflow.llm.batching`)."""
        from rubricflow.llm.batching import use_batch_api

        session = self.batch_sessions.get(judge)
        if session is None:
            inner = dict(self.evaluate_options.get("options") or {})
            inner.setdefault("llm_cache", self._context.store.judge_cache)
            if judge is not None:
                inner["llm"] = judge
            given = inner.get("llm")
            if isinstance(given, LLMSession):
                inner["llm"] = given.provider_now()
            session = LLMSession.from_options(
                inner,
                plugins=self._context.plugins,
                allow_import=bool(self.evaluate_options.get("allow_import", False)),
            )
            use_batch_api(session)
            self.batch_sessions[judge] = session
        inner = dict(self.evaluate_options.get("options") or {})
        return {**self.evaluate_options, "options": {**inner, "llm": session}}

    async def review(self, artifact_id: str, *, worker: str) -> ReviewOutcome:
        """Claim the artifact, evaluate every bound rubric, and commit the outcome. A
        review that cannot finish returns the artifact to `pending_review` with the reason."""
        return await self.finish_review(await self._claims.claim(artifact_id, worker=worker))

    async def finish_review(
        self,
        artifact: Artifact,
        *,
        prepared: tuple[ArtifactType, list[Planned]] | None = None,
        seq: int | None = None,
        evaluating: Evaluating | None = None,
        deferred: bool = False,
    ) -> ReviewOutcome:
        """Evaluate a claimed artifact (in_review, leased, as a claim returned it) and
        commit the outcome; `prepared` is its type and plan when the caller read them
        already, `seq` the number of the decision's event when known, `evaluating` its
        evaluations when the caller began them before the claim (`start_evaluating`).

        The outcome is written only if the artifact is still as claimed: when the lease
        expired and another worker took the review over, or a human decided meanwhile,
        `ArtifactConflictError` is raised and nothing but the (reusable) evaluations is
        written. `deferred`: a worker's review nobody waits on, whose judge calls go
        through the batch API when its type says so (`ArtifactType.judge_batch`)."""
        self._context.lifecycle.check_reviewable(artifact)
        heartbeat = asyncio.create_task(self._claims.keep_lease(artifact))
        try:
            if prepared is None:
                prepared = await self._prepare(artifact)
            artifact_type, plan = prepared
            if deferred and artifact_type.judge_batch:
                self._batched.add((artifact.id, artifact.revision))
            results, unsaved = await self._evaluate_all(artifact, artifact_type, plan, evaluating)
        except Exception as error:  # the review could not finish: never strand the artifact
            reason = f"review could not finish: {type(error).__name__}: {error}"
            released = await self._release(artifact, reason)
            return ReviewOutcome(released, reason=released.last_reason)
        finally:
            self._batched.discard((artifact.id, artifact.revision))
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
            if evaluating is not None:
                await stop_evaluating(evaluating)
        return await self._decide(artifact, artifact_type, results, unsaved, seq)

    async def _prepare(self, artifact: Artifact) -> tuple[ArtifactType, list[Planned]]:
        """The artifact's type and review plan, read together."""
        async with self._context.repository.reading() as tx:
            artifact_type = await tx.get_type(artifact.type)
            if not artifact_type.rubrics:  # unbound after it was queued: never approve it
                raise no_rubrics(artifact_type, artifact.id)
            return artifact_type, await self.plan(tx, artifact, artifact_type)

    async def plan(
        self,
        tx: ArtifactTransaction,
        artifact: Artifact,
        artifact_type: ArtifactType,
        reviewed: bool = True,
    ) -> list[Planned]:
        """Each bound rubric (its version now) with the complete evaluation of this
        revision already stored for it, if any: reused, so a restarted review never
        evaluates a (revision, rubric version) into the record twice; an incomplete one
        is evaluated again (its retry is the point). `reviewed=False`: the caller knows
        none is stored."""
        found = await tx.reviewed(artifact.id, artifact.revision) if reviewed else []
        stored = {(e.rubric_id, e.rubric_version): e for e in found}
        plan = []
        for binding in artifact_type.rubrics:
            rubric = await tx.rubric(binding)
            plan.append(Planned(binding, rubric, stored.get((rubric.id, rubric.version))))
        return plan

    async def _release(
        self, artifact: Artifact, reason: str, evaluation_ids: Sequence[str] = ()
    ) -> Artifact:
        """A failed review: back to the queue with the reason, to be retried later, or
        dead-lettered when it has failed too often in a row (`Lifecycle.failure_trigger`)."""
        context = self._context
        trigger = context.lifecycle.failure_trigger(artifact)
        if trigger == "dead_letter":
            reason = dead_letter_reason(artifact, reason, context.lifecycle)
            queued_at: datetime | None = None
        else:
            delay = self._retry_delay(artifact)
            queued_at = utcnow() + timedelta(seconds=delay)
            reason = f"{reason}; it will be retried in {delay:g}s"
        change = context.change(
            artifact,
            trigger,
            actor=SYSTEM_ACTOR,
            reason=reason,
            evaluation_ids=evaluation_ids,
            by_review=True,
            queued_at=queued_at,
            failed=True,
        )
        try:
            written, _ = await context.commit(artifact, change)
        except ArtifactConflictError:
            raise await self._overtaken(artifact, change.trigger) from None
        return written

    async def _wait_for_budget(
        self, artifact: Artifact, names: str, evaluation_ids: Sequence[str]
    ) -> Artifact:
        """A review stopped only by its type's daily judge budget: back to the queue until
        the budget resets (the next UTC midnight), not counted as a failure; retrying it
        sooner could only fail again, and dead-letter it."""
        today = utcnow().date()
        resets = datetime.combine(today + timedelta(days=1), time.min, tzinfo=timezone.utc)
        reason = (
            f"review waiting for the judge budget: the type's daily budget for {today} (UTC) "
            f"is spent before {names} could be judged; it will be retried after it resets at "
            f"{resets.isoformat()}"
        )
        change = self._context.change(
            artifact,
            "abort_review",
            actor=SYSTEM_ACTOR,
            reason=reason,
            evaluation_ids=evaluation_ids,
            by_review=True,
            queued_at=resets,
        )
        try:
            written, _ = await self._context.commit(artifact, change)
        except ArtifactConflictError:
            raise await self._overtaken(artifact, change.trigger) from None
        return written

    def _retry_delay(self, artifact: Artifact) -> float:
        """30 s after the first failed attempt in a row, doubling each time up to an hour,
        so a review that keeps failing (a judge that is down) backs off."""
        failures = min(artifact.failures, 16)
        first = self._context.retry_delay_seconds
        return float(min(first * 2**failures, max(first, MAX_RETRY_DELAY_SECONDS)))

    async def abandon(self, artifact: Artifact, reason: str) -> Artifact:
        """Hand a claimed review back unfinished (its worker is stopping): `abort_review`
        to the queue at once, for another worker to take; not counted as a failure. Raises
        `ArtifactConflictError` when the artifact is no longer as claimed."""
        context = self._context
        change = context.change(
            artifact,
            "abort_review",
            actor=SYSTEM_ACTOR,
            reason=reason,
            by_review=True,
            queued_at=utcnow(),
        )
        written, _ = await context.commit(artifact, change)
        return written

    async def _overtaken(self, artifact: Artifact, trigger: str) -> ArtifactConflictError:
        current = await self._context.repository.get(artifact.id)
        return ArtifactConflictError(
            f"the review of artifact {artifact.id!r} by {artifact.lease_owner} was "
            f"overtaken (it is now {current.status}, version {current.version}: its lease "
            "expired and another worker took it over, or a human decided); its "
            f"{trigger!r} was not applied"
        )

    def start_evaluating(
        self, artifact: Artifact, artifact_type: ArtifactType, plan: list[Planned]
    ) -> Evaluating | None:
        """Begin a review's evaluations before its claim is written, when a rubric to
        evaluate has criteria in the check process pool: the pool scores them while this
        process commits the submission and the claim (the evaluation needs nothing either
        writes), instead of this process waiting on the pool afterwards. None when nothing
        would overlap (every check runs in this process, or every evaluation is reused).
        The caller gives the task its first turns (`let_start`) and hands it to
        `finish_review`, or stops it (`stop_evaluating`) when the submission does not
        commit."""
        allow_import = bool(self.evaluate_options.get("allow_import", False))
        plugins = self._context.plugins
        if not any(
            item.reused is None
            and uses_pool(
                item.rubric, plugins, allow_import=allow_import, settings=self._context.settings
            )
            for item in plan
        ):
            return None
        return asyncio.create_task(self._make(artifact, artifact_type, plan))

    def asks_no_judge(self, artifact_type: ArtifactType, plan: list[Planned]) -> bool:
        """True when no rubric to evaluate in `plan` has a criterion an LLM judge scores,
        and the type escalates nothing: its evaluation is computation, done in moments."""
        if artifact_type.review_policy.escalate_to is not None:
            return False
        judged = LLM_SCORER_NAMES
        return not any(
            resolve_method(criterion) in judged
            for item in plan
            if item.reused is None
            for criterion in item.rubric.criteria
        )

    async def decide_at_once(
        self,
        tx: ArtifactTransaction,
        artifact: Artifact,
        artifact_type: ArtifactType,
        plan: list[Planned],
        evaluating: Evaluating,
        *,
        seq: int,
    ) -> Decided | None:
        """Decide a claimed artifact's review in `tx`, the transaction that submits and
        claims it, when its early evaluation (asking no judge: `asks_no_judge`) is done
        within `AT_ONCE_SECONDS`: the submission, the claim, the evaluations and the
        decision commit together. None, with nothing written, when the evaluation is not
        done in time, failed, or is incomplete: the review then goes on as usual
        (`finish_review`), which retries or releases it."""
        done, _ = await asyncio.wait({evaluating}, timeout=AT_ONCE_SECONDS)
        if not done or evaluating.cancelled() or evaluating.exception() is not None:
            return None
        made = evaluating.result()
        results = [
            (item.binding, item.reused if item.reused is not None else early)
            for item, early in zip(plan, made, strict=True)
        ]
        if any(e is None or e.verdict == "incomplete" for _, e in results):
            return None
        complete = [(b, e) for b, e in results if e is not None]
        if over_budget_routing(artifact_type, complete) is not None:
            return None
        unsaved = [e for e in made if e is not None]
        stored = {id(e): await self._save(e, artifact, tx) for e in unsaved}
        new = [e for e in unsaved if stored[id(e)] is e]
        complete = [(b, stored.get(id(e), e)) for b, e in complete]
        trigger, reason = outcome_of(artifact_type, complete, artifact)
        evaluations = [evaluation for _, evaluation in complete]
        written = await self._write_decision(tx, artifact, trigger, reason, evaluations, seq)
        if written is None:  # cannot be: this transaction holds the claim it wrote
            raise await self._overtaken(artifact, trigger)
        event, decided = written
        return Decided(ReviewOutcome(decided, evaluations, reason=reason), new, event)

    async def _make(
        self, artifact: Artifact, artifact_type: ArtifactType, plan: list[Planned]
    ) -> list[Evaluation | None]:
        """Each planned rubric's new evaluation (None where a stored one is reused), made
        together; one alone is awaited directly, so its hop starts in the first turn."""
        todo = [item.rubric for item in plan if item.reused is None]
        if len(todo) == 1:
            made = [await self._evaluate(artifact, artifact_type, todo[0])]
        else:
            made = list(
                await asyncio.gather(
                    *(self._evaluate(artifact, artifact_type, rubric) for rubric in todo)
                )
            )
        found = iter(made)
        return [None if item.reused is not None else next(found) for item in plan]

    async def _evaluate_all(
        self,
        artifact: Artifact,
        artifact_type: ArtifactType,
        plan: list[Planned],
        evaluating: Evaluating | None = None,
    ) -> tuple[list[tuple[RubricBinding, Evaluation]], list[Evaluation]]:
        """Every bound rubric's evaluation of this revision (made here, or by `evaluating`,
        begun before the claim), and those of them not stored yet. Each new evaluation is
        stored as soon as it is made, so a review that dies midway leaves them for the
        next to reuse; a review with one evaluation to make leaves it to `_decide`, which
        stores it in the decision's own transaction."""
        store_now = sum(1 for item in plan if item.reused is None) > 1
        made = await evaluating if evaluating is not None else [None] * len(plan)

        async def one(
            item: Planned, early: Evaluation | None
        ) -> tuple[RubricBinding, Evaluation, bool]:
            if item.reused is not None:
                return item.binding, item.reused, True
            evaluation = (
                early
                if early is not None
                else await self._evaluate(artifact, artifact_type, item.rubric)
            )
            if not store_now:
                return item.binding, evaluation, False
            return item.binding, await self._save(evaluation, artifact), True

        try:
            done = await asyncio.gather(
                *(one(item, early) for item, early in zip(plan, made, strict=True))
            )
        finally:
            self._budgets.pop((artifact.id, artifact.revision), None)
        return [(b, e) for b, e, _ in done], [e for _, e, saved in done if not saved]

    def _options_for(self, artifact: Artifact, artifact_type: ArtifactType) -> dict[str, Any]:
        if (artifact.id, artifact.revision) in self._batched:
            return self._batch_options(artifact_type.judge)
        return self._judge_options(artifact_type.judge)

    def _capped(
        self, options: dict[str, Any], artifact: Artifact, artifact_type: ArtifactType
    ) -> dict[str, Any]:
        """`options` with the judge session capped at the type's `max_cost_per_artifact`
        (one budget for all the rubrics of this revision's review), when it has one."""
        limit, daily = artifact_type.max_cost_per_artifact, artifact_type.daily_budget
        inner = dict(options.get("options") or {})
        session = inner.get("llm")
        if (limit is None and daily is None) or not isinstance(session, LLMSession):
            return options
        if session.provider_now().settings.price is None:
            raise ReviewError(
                f"type {artifact_type.name!r} has a judge budget (max_cost_per_artifact "
                f"{limit}, daily_budget {daily}), but the judge has no price to count spend: "
                "set RUBRICFLOW_LLM_PRICE=IN,OUT (per million tokens)"
            )
        key = (artifact.id, artifact.revision)
        budget = self._budgets.get(key)
        if budget is None:
            budget = _budget_of(artifact_type, self._context.store.database)
            self._budgets[key] = budget
        return {**options, "options": {**inner, "llm": capped_session(session, budget)}}

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
        first = await evaluate(
            rubric,
            target,
            plugins=self._context.plugins,
            threshold=artifact_type.approval_threshold,
            settings=self._context.settings,
            **self._capped(self._options_for(artifact, artifact_type), artifact, artifact_type),
        )
        policy = artifact_type.review_policy
        if policy.escalate_to is None:
            return first
        unsure = unsure_criteria(first, policy)
        if not unsure:
            return first
        return await self._escalate(first, rubric, target, artifact_type, unsure)

    async def _escalate(
        self,
        first: Evaluation,
        rubric: Rubric,
        target: Target,
        artifact_type: ArtifactType,
        unsure: dict[str, str],
    ) -> Evaluation:
        """The cascade: the criteria the type's judge was unsure of judged again by the
        policy's `escalate_to` judge, the others kept; the first judge's calls stay in the
        ledger, and the evaluation's metadata says what was escalated and why."""
        stronger = artifact_type.review_policy.escalate_to
        assert stronger is not None
        kept = {r.criterion_id: r for r in first.criteria if r.criterion_id not in unsure}
        second = await evaluate(
            rubric,
            target,
            plugins=self._context.plugins,
            threshold=artifact_type.approval_threshold,
            kept=kept,
            settings=self._context.settings,
            **self._judge_options(stronger),
        )
        before = {r.criterion_id: r for r in first.criteria}
        criteria = tuple(
            result.model_copy(
                update={"llm_calls": before[result.criterion_id].llm_calls + result.llm_calls}
            )
            if result.criterion_id in unsure
            else result
            for result in second.criteria
        )
        escalation = {"to": stronger, "criteria": unsure}
        return second.model_copy(
            update={
                "criteria": criteria,
                "metadata": {**second.metadata, ESCALATION: escalation},
            }
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
        `ArtifactConflictError` is raised.

        An incomplete review is released to be retried (dead-lettered after its retries),
        unless only the judge budget stopped it and the type routes: then it waits for a
        person (`over_budget_routing`); or only the type's daily budget stopped it: then
        it waits for the next UTC day, not counted as a failure (`_wait_for_budget`)."""
        over_budget = over_budget_routing(artifact_type, results)
        if over_budget is None and any(e.verdict == "incomplete" for _, e in results):
            stored = {id(e): await self._save(e, artifact) for e in unsaved}
            results = [(b, stored.get(id(e), e)) for b, e in results]
            evaluations = [evaluation for _, evaluation in results]
            incomplete = [e for e in evaluations if e.verdict == "incomplete"]
            names = ", ".join(f"{e.rubric_id}@{e.rubric_version}" for e in incomplete)
            if stopped_by_daily_budget(results):
                released = await self._wait_for_budget(artifact, names, [e.id for e in incomplete])
                return ReviewOutcome(released, evaluations, reason=released.last_reason)
            reason = (
                f"review incomplete: {names} could not score every criterion "
                "(see the evaluation's notes)"
            )
            released = await self._release(artifact, reason, [e.id for e in incomplete])
            return ReviewOutcome(released, evaluations, reason=released.last_reason)
        context = self._context
        async with context.repository.transaction() as tx:
            stored = {id(e): await self._save(e, artifact, tx) for e in unsaved}
            new = [e for e in unsaved if stored[id(e)] is e]  # not another reviewer's
            results = [(b, stored.get(id(e), e)) for b, e in results]
            trigger, reason = (
                ("await_approval", over_budget)
                if over_budget is not None
                else outcome_of(artifact_type, results, artifact)
            )
            evaluations = [evaluation for _, evaluation in results]
            written = await self._write_decision(tx, artifact, trigger, reason, evaluations, seq)
        await context.announce_evaluations(artifact, new)
        if written is None:
            raise await self._overtaken(artifact, trigger)
        event, decided = written
        await context.notify(event)
        return ReviewOutcome(decided, evaluations, reason=reason)

    async def _write_decision(
        self,
        tx: ArtifactTransaction,
        artifact: Artifact,
        trigger: str,
        reason: str,
        evaluations: Sequence[Evaluation],
        seq: int | None,
    ) -> Any:
        """Write the review's outcome (`trigger`, by the system, naming `evaluations`) in
        `tx`; None when the artifact is no longer as claimed."""
        change = self._context.change(
            artifact,
            trigger,
            actor=SYSTEM_ACTOR,
            reason=reason,
            evaluation_ids=[e.id for e in evaluations],
            by_review=True,
        )
        return await tx.transition(artifact, change, seq=seq)

    async def _save(
        self, evaluation: Evaluation, artifact: Artifact, tx: ArtifactTransaction | None = None
    ) -> Evaluation:
        """Store a review's evaluation (in `tx`, whose caller announces it after the
        commit; else in a transaction of its own, announced here); another reviewer's
        evaluation of the same revision and rubric version when it came first."""
        if tx is not None:
            return await tx.save_evaluation(
                evaluation, artifact_id=artifact.id, revision=artifact.revision
            )
        saved = await self._context.store.evaluations.save_for_review(
            evaluation, artifact_id=artifact.id, revision=artifact.revision
        )
        if saved is evaluation:  # stored now, not found stored by another reviewer
            await self._context.announce_evaluations(artifact, [saved])
        return saved


async def let_start(evaluating: Evaluating) -> None:
    """Give an evaluation just begun (`Reviewer.start_evaluating`) the few loop turns it
    takes to reach its first wait, its job written to the check pool, before the caller
    goes on to writes that run without yielding to the loop (SQLite's inline writes)."""
    for _ in range(_START_TURNS):
        if evaluating.done():
            return
        await asyncio.sleep(0)


async def stop_evaluating(evaluating: Evaluating) -> None:
    """Stop an early evaluation whose review will not use it (its submission did not
    commit, the review stopped): cancelled, and waited for, so no pool job is left behind."""
    if not evaluating.done():
        evaluating.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await evaluating


def _unscored_for_budget(
    results: list[tuple[RubricBinding, Evaluation]],
) -> list[tuple[Evaluation, CriterionResult]] | None:
    """The unscored criteria of the incomplete evaluations when the judge budget alone
    left them unscored (each unable_to_evaluate with the reason "budget"); else None."""
    unscored = [
        (e, r)
        for _, e in results
        if e.verdict == "incomplete"
        for r in e.criteria
        if r.status != "scored"
    ]
    if not unscored or any(
        r.status != "unable_to_evaluate" or not (r.notes or "").startswith(BUDGET_REASON)
        for _, r in unscored
    ):
        return None
    return unscored


def stopped_by_daily_budget(results: list[tuple[RubricBinding, Evaluation]]) -> bool:
    """Whether the review is incomplete only because its type's daily judge budget ran out
    (not a per-artifact cap, which a retry would meet again)."""
    unscored = _unscored_for_budget(results)
    return unscored is not None and all(DAILY_BUDGET_MARK in (r.notes or "") for _, r in unscored)


def over_budget_routing(
    artifact_type: ArtifactType, results: list[tuple[RubricBinding, Evaluation]]
) -> str | None:
    """The routing reason when the review is incomplete only because the judge budget ran
    out (every unscored criterion unable_to_evaluate with the reason "budget") and the
    type routes to people (`ReviewPolicy.routes`); else None (the review is released and
    retried, then dead-lettered; or, stopped by the daily budget, retried the next day)."""
    if not artifact_type.review_policy.routes:
        return None
    unscored = _unscored_for_budget(results)
    if unscored is None:
        return None
    names = sorted({f"{e.rubric_id}@{e.rubric_version}" for e, _ in unscored})
    return (
        f"{ROUTED_PREFIX}: the judge budget ran out before {len(unscored)} criterion(s) of "
        f"{', '.join(names)} were judged; decide the rest"
    )


def outcome_of(
    artifact_type: ArtifactType,
    results: list[tuple[RubricBinding, Evaluation]],
    artifact: Artifact | None = None,
) -> tuple[str, str]:
    """The trigger and reason a review with complete evaluations ends in: the verdict
    (`verdict_of`), unless the type's review policy routes it to people (`await_approval`,
    the routing's reason). With a policy, the reason says which way it was routed."""
    trigger, reason = verdict_of(artifact_type, results)
    policy = artifact_type.review_policy
    if artifact is None or not (policy.routes or policy.audit_rate > 0):
        return trigger, reason
    escalated = escalations([evaluation for _, evaluation in results])
    if escalated:
        reason = f"{escalated}; {reason}"
    routing = route(
        policy,
        [evaluation for _, evaluation in results],
        artifact_id=artifact.id,
        revision=artifact.revision,
    )
    if routing.mode == "human":
        return "await_approval", f"{escalated}; {routing.reason}" if escalated else routing.reason
    return trigger, f"{reason}; {routing.reason}"


def verdict_of(
    artifact_type: ArtifactType, results: list[tuple[RubricBinding, Evaluation]]
) -> tuple[str, str]:
    """The trigger and reason the machine's verdict on complete evaluations calls for."""
    evaluations = [evaluation for _, evaluation in results]
    blocking = [e for b, e in results if b.blocking and not e.passed]
    failed = [e for e in evaluations if not e.passed]
    if blocking:
        names = ", ".join(f"{e.rubric_id}@{e.rubric_version}" for e in blocking)
        return "reject", f"blocking rubric failed: {names}"
    if failed:
        names = ", ".join(f"{e.rubric_id}@{e.rubric_version}" for e in failed)
        return "request_revision", f"revision needed: {names} did not pass; see the feedback"
    if artifact_type.requires_approval:
        return "await_approval", "every rubric passed; waiting for a human to approve"
    return "approve", "every rubric passed"


def no_rubrics(artifact_type: ArtifactType, artifact_id: str) -> ReviewError:
    return ReviewError(
        f"artifact type {artifact_type.name!r} binds no rubrics, so {artifact_id!r} "
        "cannot be reviewed; bind one with "
        f"`rubricflow types set {artifact_type.name} --rubric RUBRIC_ID`"
    )

"""The application core: every operation a front door offers, as typed async calls over
one store and one plugin registry.

The CLI, the HTTP API, the MCP server, the reward adapters and the pytest plugin all
call this, so an operation behaves the same whichever door it came through. A front
door parses its input, calls one or a few of these methods, and presents the result;
it decides nothing itself. What needs no store (loading, linting, evaluating, results
files, comparisons, reports) is `rubricflow.core.Core`'s, which `Application` extends;
a face reaches the store only through an `Application`. The artifact lifecycle is
`Application.artifacts` (an `ArtifactRegistry`); the rubric registry, evaluations, runs
and the judge cache are the store's repositories, reachable as `rubrics`, `evaluations`
(per-criterion pass rates and judge usage among its queries) and `runs`; the judge
cache is `store.judge_cache`.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from rubricflow.core import Core, RubricSource, Trust, under_settings
from rubricflow.errors import NotFoundError
from rubricflow.records import SubmissionOutcome
from rubricflow.settings import Settings, current, use
from rubricflow.store import Store

# The records these operations hand back, which a face names (the CLI, the tools, the
# client): a face imports them from here, never from rubricflow.store.
from rubricflow.store.artifact_models import Artifact, ArtifactEvent, ArtifactType, RubricBinding

# The server's own reads and the values it names (the dashboard's queue and run pages,
# judge labels, idempotency keys): the server imports them from here too.
from rubricflow.store.dashboard import (
    DashboardQueries,
    QueueBucket,
    QueueCursor,
    QueueFilter,
    RunCursor,
)
from rubricflow.store.evaluations import CriterionPassRate, EvaluationFilter, JudgeUsage, Spend
from rubricflow.store.idempotency import (
    FinishedKey,
    IdempotencyStore,
    KeyClaim,
    KeyRequest,
    StoredResponse,
)
from rubricflow.store.labels import JudgeLabels
from rubricflow.store.rubrics import RegisteredRubric, RubricVersionInfo
from rubricflow.store.runs import RunOverview
from rubricflow.store.tokens import ApiToken, IssuedToken, TokenStore
from rubricflow.store.webhooks import DeliveryAttempt, WebhookDelivery, WebhookSubscription
from rubricflow.store.workbench import Claim, Comment, ExportedDecision, Workbench

_T = TypeVar("_T")

if TYPE_CHECKING:
    from datetime import datetime

    from rubricflow.calibration import LabelledExample, PassRateEstimate
    from rubricflow.calibration.propose import Proposal
    from rubricflow.calibration.reliability import Period, ReliabilityPoint
    from rubricflow.compare import RunComparison
    from rubricflow.llm import LLMSession
    from rubricflow.llm.cache import JudgeCache
    from rubricflow.model import Rubric
    from rubricflow.plugins import PluginRegistry
    from rubricflow.results import Evaluation
    from rubricflow.review import ArtifactRegistry, ReviewOutcome
    from rubricflow.review.agreement import TypeAgreement
    from rubricflow.review.disagreements import ReviewerDisagreement
    from rubricflow.rubric_diff import RubricDiff
    from rubricflow.runs import RunData, RunInfo
    from rubricflow.store.evaluations import EvaluationStore
    from rubricflow.store.rubrics import RubricRegistry
    from rubricflow.store.runs import RunStore
    from rubricflow.webhooks import WebhookService

__all__ = [
    "ApiToken",
    "Application",
    "Artifact",
    "ArtifactEvent",
    "ArtifactType",
    "ArtifactsAPI",
    "Claim",
    "Comment",
    "CriterionPassRate",
    "DashboardQueries",
    "DeliveryAttempt",
    "EvaluationFilter",
    "ExportedDecision",
    "FinishedKey",
    "IdempotencyStore",
    "IssuedToken",
    "JudgeLabels",
    "JudgeUsage",
    "KeyClaim",
    "KeyRequest",
    "LocalArtifacts",
    "QueueBucket",
    "QueueCursor",
    "QueueFilter",
    "RegisteredRubric",
    "RubricBinding",
    "RubricVersionInfo",
    "RunCursor",
    "RunOverview",
    "SchemaUpgrade",
    "StoredResponse",
    "TokenStore",
    "WebhookDelivery",
    "WebhookSubscription",
    "Workbench",
]


def _masked(info: RunInfo) -> RunInfo:
    """`info` with credentials in its options (a judge URL's password, a `?key=`)
    masked: what a face shows of a run never holds a secret."""
    from rubricflow.llm.secrets import redact_options

    return replace(info, options=redact_options(info.options))


@dataclass(frozen=True)
class SchemaUpgrade:
    """What `Application.upgrade_db` did: the schema revision before and now, the newest
    one this rubricflow knows (`head`), and whether any migration ran."""

    before: str | None
    revision: str | None
    head: str | None
    upgraded: bool


class Application(Core):
    """One store, one plugin registry, and the operations over them (the store-less
    ones are `Core`'s).

    Open it with `Application.open(db)` (and close it, or use `async with`), or wrap a
    store you already hold with `Application(store)`; then the caller closes the store.
    """

    def __init__(
        self,
        store: Store,
        *,
        plugins: PluginRegistry | None = None,
        lease_seconds: float | None = None,
        settings: Settings | None = None,
    ) -> None:
        # settings: the caller's by default, else the environment's, read now; another
        # application may hold others
        super().__init__(plugins=plugins, settings=settings)
        self.store = store
        self._lease_seconds = lease_seconds
        self._artifacts: ArtifactRegistry | None = None
        self._webhooks: WebhookService | None = None
        self._owns_store = False
        from rubricflow.engine.isolation import hold_check_pool

        # the check process pool (started when a check needs it) stops when the last
        # application (or worker) using it closes
        self._check_pool = hold_check_pool()

    @property
    def artifacts(self) -> ArtifactRegistry:
        """The artifact lifecycle: types, artifacts, reviews and decisions."""
        if self._artifacts is None:
            from rubricflow.review import ArtifactRegistry

            options: dict[str, Any] = {
                "plugins": self.plugins,
                "max_failures": self.settings.max_review_failures,
                "settings": self.settings,
            }
            if self._lease_seconds is not None:
                options["lease_seconds"] = self._lease_seconds
            self._artifacts = ArtifactRegistry(self.store, **options)
        return self._artifacts

    @property
    def webhooks(self) -> WebhookService:
        """Webhook subscriptions, their delivery log, replays and the delivery worker."""
        if self._webhooks is None:
            from rubricflow.store.webhooks import announced_event
            from rubricflow.webhooks import WebhookService

            # a running delivery worker wakes when a transition that may announce an
            # event commits, in this process or another (the artifacts' change feed)
            self._webhooks = WebhookService(
                self.store,
                watch=lambda: self.artifacts.live.feed.watch(
                    match=lambda notice: announced_event(notice.trigger, failed=True) is not None
                ),
            )
        return self._webhooks

    @classmethod
    async def open(
        cls,
        db: str | None = None,
        *,
        upgrade: bool = False,
        existing: bool = False,
        remedy: str | None = None,
        plugins: PluginRegistry | None = None,
        lease_seconds: float | None = None,
        settings: Settings | None = None,
    ) -> Application:
        """The application over the store at `db` (default `settings.db`: $RUBRICFLOW_DB,
        else ./rubricflow.db); closing it closes the store. With `existing`, a SQLite file
        that does not exist is a `NotFoundError` ending with `remedy` (a look at a store
        must not create an empty one). `settings` default to the caller's (the CLI's, the
        server's), else the environment's, read here."""
        settings = settings if settings is not None else current()
        with use(settings):
            if existing:
                from rubricflow.store.url import existing_store_url

                db = existing_store_url(db, remedy=remedy)
            store = await Store.open(db, upgrade=upgrade)
        try:
            application = cls(
                store, plugins=plugins, lease_seconds=lease_seconds, settings=settings
            )
        except BaseException:
            await store.close()
            raise
        application._owns_store = True
        return application

    @staticmethod
    def resolve_db(db: str | None = None) -> str:
        """The database URL `db` names (default `settings.db`, else ./rubricflow.db)."""
        from rubricflow.store import resolve_url

        return resolve_url(db)

    @staticmethod
    def display_db(db: str | None = None) -> str:
        """The store `db` names (default `settings.db`), as shown to a user: its URL with
        any password masked."""
        from rubricflow.store import resolve_url
        from rubricflow.store.url import display_url

        return display_url(resolve_url(db))

    @staticmethod
    async def upgrade_db(db: str | None = None) -> SchemaUpgrade:
        """Apply every pending schema migration to the store at `db`."""
        from rubricflow.store import Database

        database = await Database.open(db, upgrade=True)
        try:
            now = await database.current_revision()
            before = database.migrated[0] if database.migrated else now
            return SchemaUpgrade(
                before=before,
                revision=now,
                head=Database.head_revision(),
                upgraded=database.migrated is not None,
            )
        finally:
            await database.close()

    def artifacts_api(self, actor: str) -> LocalArtifacts:
        """The artifact operations as `ArtifactsAPI` (the HTTP client's signatures), acting
        as `actor`."""
        return LocalArtifacts(self, actor)

    async def close(self) -> None:
        if self._artifacts is not None:
            await self._artifacts.aclose()
        if self._owns_store:
            await self.store.close()
        self._check_pool.release()

    async def __aenter__(self) -> Application:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def rubrics(self) -> RubricRegistry:
        """The rubric registry."""
        return self.store.rubrics

    @property
    def evaluations(self) -> EvaluationStore:
        """Stored evaluations."""
        return self.store.evaluations

    @property
    def runs(self) -> RunStore:
        """Batch evaluation runs."""
        return self.store.runs

    @property
    def tokens(self) -> TokenStore:
        """API tokens: create, verify, list, revoke (and dashboard session keys)."""
        return self.store.tokens

    @property
    def dashboard(self) -> DashboardQueries:
        """The dashboard's read queries (queue, runs, rubric catalogue, revisions)."""
        return DashboardQueries(self.store.database)

    @property
    def workbench(self) -> Workbench:
        """The reviewer's workbench: claims, comments and the export of decisions."""
        return Workbench(self.store.database)

    @property
    def judge_labels(self) -> JudgeLabels:
        """People's decisions as labels of the judge, and the criteria they marked wrong."""
        return JudgeLabels(self.store.database)

    async def reviewer_agreement(
        self, type_name: str, *, resamples: int = 1000, seed: int = 0
    ) -> TypeAgreement:
        """How far the people deciding artifacts of `type_name` agree, overall and per
        criterion (Cohen's kappa or Krippendorff's alpha, with bootstrap 95% intervals)."""
        from rubricflow.review.agreement import reviewer_agreement

        return await reviewer_agreement(self.artifacts, type_name, resamples=resamples, seed=seed)

    async def reviewer_disagreements(
        self, *, type_names: Sequence[str] | None = None, limit: int = 100
    ) -> list[ReviewerDisagreement]:
        """Rounds where the people deciding an artifact disagreed (of `type_names`; every
        type: None): open splits first, then the most recently resolved, each with its
        votes and resolution. Unblinded: blind an open one (`.blinded()`) for a person who
        has not voted in it."""
        from rubricflow.review.disagreements import reviewer_disagreements

        return await reviewer_disagreements(self.artifacts, type_names=type_names, limit=limit)

    @property
    def idempotency_keys(self) -> IdempotencyStore:
        """The HTTP API's idempotency keys."""
        return self.store.idempotency

    @property
    def judge_cache(self) -> JudgeCache:
        """The store's judge cache, for a judge session this application opens."""
        return self.store.judge_cache

    @property
    def display_url(self) -> str:
        """The store's URL as shown to a user (any password masked)."""
        return self.store.database.display_url

    async def schema_revisions(self) -> tuple[str | None, str | None]:
        """The store's schema revision and the newest this rubricflow knows (its head);
        raises whatever reaching the database raises (a readiness probe reports it)."""
        return await self.store.database.current_revision(), self.store.database.head_revision()

    # --- artifacts ---------------------------------------------------------------------------
    @under_settings
    async def create_and_submit(
        self,
        type_name: str,
        content: Any,
        *,
        actor: str,
        title: str | None = None,
        defer: bool = False,
        metadata: Mapping[str, Any] | None = None,
        artifact_id: str | None = None,
    ) -> ReviewOutcome:
        """Create an artifact of `type_name` and submit it, in one step (one transaction
        writes both): whatever the submit refuses (an unknown type, content against the
        type's schema, a type with no rubrics, a bound rubric not registered, an id
        already taken) creates nothing. The review then runs as `submit_for_review`'s."""
        return await self.artifacts.create_and_submit(
            type_name,
            content,
            actor=actor,
            title=title,
            metadata=metadata,
            artifact_id=artifact_id,
            defer=defer,
        )

    # --- rubrics -----------------------------------------------------------------------------
    async def register_rubrics(
        self,
        sources: Sequence[RubricSource],
        *,
        format: str | None = None,
        trust: Trust = "local",
    ) -> list[RegisteredRubric]:
        """Register every rubric of `sources` (files, or `RubricText` documents; any
        format), all in one transaction: whatever `Core.load_rubrics` refuses in any of
        them (a document that does not load, broken check options, templates over budget
        and, with `trust="stranger"`, a file, code or a judge it names) registers
        nothing. The same content again is `created: False`; other content under a
        stored id@version is a `RubricVersionConflictError`. Every face registers through here."""
        loaded = await self.load_rubrics(sources, format=format, trust=trust)
        pairs = [(rubric, item.format) for item in loaded for rubric in item.rubrics]
        with use(self.settings):
            return list(await self.store.rubrics.register_pairs(pairs))

    async def diff_rubric(
        self, rubric_id: str, before: str | None = None, after: str | None = None
    ) -> RubricDiff:
        """What changed between two stored versions of `rubric_id`. By default `after` is
        the highest version and `before` the one below it."""
        from rubricflow.rubric_diff import diff_rubrics

        if before is None or after is None:
            versions = [info.version for info in await self.store.rubrics.history(rubric_id)]
            if not versions:
                raise NotFoundError(f"no rubric {rubric_id!r} is registered")
            after = after or versions[-1]
            if before is None:
                older = versions[: versions.index(after)] if after in versions else []
                if not older:
                    raise NotFoundError(
                        f"rubric {rubric_id!r} has no version before {after} to compare with; "
                        f"stored versions: {', '.join(versions)}"
                    )
                before = older[-1]
        old = await self.store.rubrics.get(rubric_id, before)
        new = await self.store.rubrics.get(rubric_id, after)
        return diff_rubrics(old, new)

    # --- runs --------------------------------------------------------------------------------
    async def run(self, run_id: str) -> RunData:
        """A stored run with its evaluations, by id or `latest` (its options with any
        credential masked, runs stored before masking existed included)."""
        from rubricflow.report.sources import stored_run

        data = await stored_run(self.store, run_id)
        return replace(data, info=_masked(data.info))

    async def artifact_run(self, artifact_id: str) -> RunData:
        """Every stored evaluation of one artifact, as a run (for reports and compare)."""
        from rubricflow.report.sources import stored_artifact_run

        return await stored_artifact_run(self.store, artifact_id)

    async def run_overviews(self, *, limit: int = 20) -> list[RunOverview]:
        """The newest runs with their figures, summed up in SQL (options masked)."""
        overviews = await self.store.runs.overviews(limit=limit)
        return [replace(o, info=_masked(o.info)) for o in overviews]

    async def compare_runs(self, run_a: str, run_b: str) -> RunComparison:
        """Run B against run A, matched by target id (ids or `latest`)."""
        from rubricflow.compare import compare_runs

        return compare_runs(await self.run(run_a), await self.run(run_b))

    # --- the judge cache ---------------------------------------------------------------------
    async def judge_cache_stats(self, *, clear: bool = False) -> dict[str, Any]:
        """The store's judge cache: entries, size and hits (after clearing it when
        asked, with how many answers were `removed`)."""
        from rubricflow.llm.cache import cleared_stats

        return await cleared_stats(self.store.judge_cache, clear=clear)

    async def judge_cache_entries(self) -> list[tuple[str, str]]:
        """Every (key, value) in the store's judge cache, by key (`llm cache export`)."""
        return await self.store.judge_cache.entries()

    async def judge_cache_add(self, entries: Sequence[tuple[str, str]]) -> int:
        """Add (key, value) answers to the store's judge cache (`llm cache import`); a key
        already there keeps its answer. Returns how many were given."""
        for key, value in entries:
            await self.store.judge_cache.put(key, value)
        return len(entries)

    async def judge_spend(
        self,
        by: str = "run",
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        types: Sequence[str] | None = None,
    ) -> list[Spend]:
        """Judge calls, cache hits, tokens and cost per `run`, artifact `type` or `day`
        (UTC) of the evaluations created in [`since`, `until`), from the call ledger
        (`rubricflow llm usage --by`, `GET /v1/judge-spend`, the dashboard's runs page);
        `types`: only the reviews of those artifact types (and evaluations of no
        artifact). Raises ValueError for another `by`."""
        return await self.store.evaluations.spend(by, since=since, until=until, types=types)

    # --- trust: the judge against people's labels ----------------------------------------
    async def run_pass_rate_estimate(
        self, run: RunData, *, confidence: float = 0.95
    ) -> PassRateEstimate | None:
        """The run's naive pass rate and the one corrected with people's decisions on its
        rubric (prediction-powered inference); None when nobody labelled the rubric."""
        from rubricflow.report.trust import run_pass_rate

        return await run_pass_rate(self.store, run, confidence=confidence)

    async def labelled_examples(self, rubric: Rubric) -> list[LabelledExample]:
        """People's decisions on `rubric` as labelled examples (see
        `rubricflow.report.trust.labelled_examples`)."""
        from rubricflow.report.trust import labelled_examples

        return await labelled_examples(self.store, rubric)

    async def judge_reliability(
        self, rubric_id: str, *, period: Period = "week"
    ) -> list[ReliabilityPoint]:
        """The judge's agreement with people per criterion of `rubric_id`, per period."""
        from rubricflow.report.trust import reliability

        return await reliability(self.store, rubric_id, period=period)

    async def propose_rubric_revision(
        self,
        rubric: Rubric,
        *,
        llm: LLMSession,
        examples: Sequence[LabelledExample] = (),
        from_store: bool = True,
        register: bool = False,
        **options: Any,
    ) -> tuple[Proposal, RegisteredRubric | None]:
        """Draft `rubric`'s next version from `examples` and (with `from_store`) people's
        decisions on it, measured by cross-validation (`propose_revision`'s `options`:
        folds, per_criterion, resamples, seed, confidence). With `register`, the draft is
        registered only when its held-out kappa improved beyond the interval of the
        difference; the second item is then the registration, else None."""
        from rubricflow.calibration.propose import propose_revision

        labelled = list(examples)
        if from_store:
            labelled += await self.labelled_examples(rubric)
        with use(self.settings):
            proposal = await propose_revision(
                rubric, labelled, llm=llm, plugins=self.plugins, **options
            )
            if not (register and proposal.improved):
                return proposal, None
            pairs = [(proposal.draft, "rubricflow")]
            return proposal, (await self.store.rubrics.register_pairs(pairs))[0]


class ArtifactsAPI(Protocol):
    """The artifact operations every door offers, with one signature: the in-process
    side (`Application.artifacts_api(actor)`) and the HTTP client
    (`rubricflow.client.AsyncClient`) both satisfy it, so a command written against it
    runs locally or against a server by the same code. Who acts is the API's own: the
    local actor given when it was made, or the token's holder on a server."""

    async def list_types(self) -> builtins.list[ArtifactType]: ...
    async def get_type(self, name: str) -> ArtifactType: ...
    async def set_type(self, name: str, definition: ArtifactType) -> ArtifactType: ...
    async def type_agreement(
        self, name: str, *, resamples: int = 1000, seed: int = 0
    ) -> dict[str, Any]: ...
    async def create(
        self,
        type: str,
        content: Any,
        *,
        title: str | None = None,
        artifact_id: str | None = None,
    ) -> Artifact: ...
    async def create_and_submit(
        self, type: str, content: Any, *, title: str | None = None, defer: bool = False
    ) -> SubmissionOutcome: ...
    async def submit_for_review(
        self, artifact_id: str, *, defer: bool = False
    ) -> SubmissionOutcome: ...
    async def get(self, artifact_id: str) -> Artifact: ...
    def list(
        self,
        *,
        type: str | None = None,
        status: str | None = None,
        page_size: int = 50,
        limit: int | None = None,
    ) -> AsyncIterator[Artifact]: ...
    async def history(self, artifact_id: str) -> builtins.list[ArtifactEvent]: ...
    async def evaluations(
        self, artifact_id: str, revision: int | None = None
    ) -> builtins.list[Evaluation]: ...
    async def revise(self, artifact_id: str, content: Any, *, reason: str) -> Artifact: ...
    async def approve(self, artifact_id: str, *, reason: str) -> Artifact: ...
    async def reject(self, artifact_id: str, *, reason: str) -> Artifact: ...
    async def override(self, artifact_id: str, *, reason: str) -> Artifact: ...
    async def withdraw(self, artifact_id: str, *, reason: str | None = None) -> Artifact: ...
    async def archive(self, artifact_id: str, *, reason: str | None = None) -> Artifact: ...
    async def retry(self, artifact_id: str, *, reason: str | None = None) -> Artifact: ...
    async def supersede(
        self, artifact_id: str, *, reason: str, by: str | None = None
    ) -> Artifact: ...


class LocalArtifacts:
    """`ArtifactsAPI` over an application's store, acting as `actor`. A refused trigger
    is told as a person needs it (what they can do, and what to do about a review in
    progress), as a server tells it."""

    def __init__(self, application: Application, actor: str) -> None:
        self._artifacts = application.artifacts
        self.actor = actor

    async def _told(self, change: Awaitable[_T]) -> _T:
        from rubricflow.errors import IllegalTransitionError, ReviewError

        try:
            return await change
        except IllegalTransitionError as error:
            raise ReviewError(await self._artifacts.explain_refusal(error)) from None

    async def list_types(self) -> builtins.list[ArtifactType]:
        return await self._artifacts.list_types()

    async def get_type(self, name: str) -> ArtifactType:
        return await self._artifacts.get_type(name)

    async def set_type(self, name: str, definition: ArtifactType) -> ArtifactType:
        return await self._artifacts.set_type(definition.model_copy(update={"name": name}))

    async def type_agreement(
        self, name: str, *, resamples: int = 1000, seed: int = 0
    ) -> dict[str, Any]:
        """People's agreement on the type's artifacts (`Application.reviewer_agreement`)."""
        from rubricflow.review.agreement import reviewer_agreement

        found = await reviewer_agreement(self._artifacts, name, resamples=resamples, seed=seed)
        return found.to_dict()

    async def create(
        self,
        type: str,
        content: Any,
        *,
        title: str | None = None,
        artifact_id: str | None = None,
    ) -> Artifact:
        return await self._artifacts.create(
            type, content, actor=self.actor, title=title, artifact_id=artifact_id
        )

    async def create_and_submit(
        self, type: str, content: Any, *, title: str | None = None, defer: bool = False
    ) -> SubmissionOutcome:
        outcome = await self._told(
            self._artifacts.create_and_submit(
                type, content, actor=self.actor, title=title, defer=defer
            )
        )
        return outcome.brief()

    async def submit_for_review(
        self, artifact_id: str, *, defer: bool = False
    ) -> SubmissionOutcome:
        outcome = await self._told(
            self._artifacts.submit_for_review(artifact_id, actor=self.actor, defer=defer)
        )
        return outcome.brief()

    async def get(self, artifact_id: str) -> Artifact:
        return await self._artifacts.get(artifact_id)

    async def list(
        self,
        *,
        type: str | None = None,
        status: str | None = None,
        page_size: int = 50,
        limit: int | None = None,
    ) -> AsyncIterator[Artifact]:
        """Artifacts, most recently changed first (`limit` at most; read in one query, so
        `page_size` is the HTTP client's concern only)."""
        found = await self._artifacts.list_artifacts(
            type_name=type, status=status, limit=_EVERY if limit is None else limit
        )
        for artifact in found:
            yield artifact

    async def history(self, artifact_id: str) -> builtins.list[ArtifactEvent]:
        return await self._artifacts.history(artifact_id)

    async def evaluations(
        self, artifact_id: str, revision: int | None = None
    ) -> builtins.list[Evaluation]:
        return await self._artifacts.evaluations(artifact_id, revision)

    async def revise(self, artifact_id: str, content: Any, *, reason: str) -> Artifact:
        return await self._told(
            self._artifacts.revise(artifact_id, content, actor=self.actor, reason=reason)
        )

    async def approve(self, artifact_id: str, *, reason: str) -> Artifact:
        return await self._told(
            self._artifacts.approve(artifact_id, actor=self.actor, reason=reason)
        )

    async def reject(self, artifact_id: str, *, reason: str) -> Artifact:
        return await self._told(
            self._artifacts.reject(artifact_id, actor=self.actor, reason=reason)
        )

    async def override(self, artifact_id: str, *, reason: str) -> Artifact:
        return await self._told(
            self._artifacts.override(artifact_id, actor=self.actor, reason=reason)
        )

    async def withdraw(self, artifact_id: str, *, reason: str | None = None) -> Artifact:
        return await self._told(
            self._artifacts.withdraw(artifact_id, actor=self.actor, reason=reason)
        )

    async def archive(self, artifact_id: str, *, reason: str | None = None) -> Artifact:
        return await self._told(
            self._artifacts.archive(artifact_id, actor=self.actor, reason=reason)
        )

    async def retry(self, artifact_id: str, *, reason: str | None = None) -> Artifact:
        return await self._told(self._artifacts.retry(artifact_id, actor=self.actor, reason=reason))

    async def supersede(self, artifact_id: str, *, reason: str, by: str | None = None) -> Artifact:
        return await self._told(
            self._artifacts.supersede(artifact_id, actor=self.actor, reason=reason, by=by)
        )


#: `LocalArtifacts.list` without a limit: every artifact
_EVERY = 2**62

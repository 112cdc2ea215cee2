"""The persistent store: versioned rubrics, evaluations with their evidence and LLM calls,
and the judge cache, on SQLite (default) or PostgreSQL.

    async with await Store.open("sqlite+aiosqlite:///reviews.db") as store:
        await store.rubrics.register(rubric)
        await store.evaluations.save(evaluation)
"""

from __future__ import annotations

from types import TracebackType

from rubricflow.store.database import Database
from rubricflow.store.evaluations import (
    CriterionPassRate,
    EvaluationFilter,
    EvaluationStore,
    JudgeUsage,
    StoredEvaluation,
)
from rubricflow.store.idempotency import IdempotencyStore
from rubricflow.store.judge_cache import StoreJudgeCache
from rubricflow.store.rubrics import RegisteredRubric, RubricRegistry, RubricVersionInfo
from rubricflow.store.runs import RunOverview, RunStore
from rubricflow.store.tokens import ApiToken, IssuedToken, TokenStore
from rubricflow.store.url import DB_ENV, DEFAULT_URL, resolve_url
from rubricflow.store.webhooks import WebhookStore

__all__ = [
    "DB_ENV",
    "DEFAULT_URL",
    "ApiToken",
    "CriterionPassRate",
    "Database",
    "EvaluationFilter",
    "EvaluationStore",
    "IdempotencyStore",
    "IssuedToken",
    "JudgeUsage",
    "RegisteredRubric",
    "RubricRegistry",
    "RubricVersionInfo",
    "RunOverview",
    "RunStore",
    "Store",
    "StoreJudgeCache",
    "StoredEvaluation",
    "TokenStore",
    "WebhookStore",
    "resolve_url",
]


class Store:
    """One database and its repositories: `rubrics`, `evaluations`, `judge_cache`, `runs`,
    `tokens`, `webhooks`, `idempotency` (the HTTP API's idempotency keys)."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.rubrics = RubricRegistry(database)
        self.evaluations = EvaluationStore(database)
        self.judge_cache = StoreJudgeCache(database)
        self.runs = RunStore(database)
        self.webhooks = WebhookStore(database)
        self.tokens = TokenStore(database)
        self.idempotency = IdempotencyStore(database)

    @classmethod
    async def open(cls, url: str | None = None, *, upgrade: bool = False) -> Store:
        """Open the store at `url` (default: $RUBRICFLOW_DB, else ./rubricflow.db)."""
        return cls(await Database.open(url, upgrade=upgrade))

    async def close(self) -> None:
        await self.database.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.close()

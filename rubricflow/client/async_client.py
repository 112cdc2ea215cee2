"""`AsyncClient`: the HTTP API as typed async calls, parsed into the models the server
declares (`rubricflow.wire`, and the records it serves as they are: `Artifact`,
`ArtifactEvent`, `ArtifactType`, `Evaluation`, `Rubric`).

    async with AsyncClient("http://127.0.0.1:8000", token) as client:
        outcome = await client.submit("post", {"title": "Hello", "body": "..."}, defer=True)
        artifact = await client.wait_for_decision(outcome.artifact.id, timeout=60)

Every state-changing call sends an `Idempotency-Key` (a new one per call unless given),
so the retries after a dropped connection or a 503 never do a thing twice; calls that
act on an artifact take `expected_version` (sent as `If-Match`: another version is a
`PreconditionFailedError` and nothing changes). An error answer raises the
`RubricflowError` the same mistake raises in process, with the server's message.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import TypeAdapter

from rubricflow.client.problems import error_from_problem, error_from_response
from rubricflow.client.sse import read_events
from rubricflow.client.transport import RETRIED_ERRORS, RetryPolicy, should_retry
from rubricflow.errors import ConfigurationError, DecisionTimeoutError, ServerError
from rubricflow.records import Artifact, ArtifactEvent, ArtifactType, SubmissionOutcome
from rubricflow.results import Evaluation, Target
from rubricflow.settings import current, env_name
from rubricflow.wire import (
    NDJSON,
    ArtifactPage,
    ArtifactTypeIn,
    Backlog,
    DeliveryDetail,
    DeliveryOut,
    EvaluateResponse,
    EvaluationLine,
    EvaluationPage,
    Health,
    JudgeUsageOut,
    LintReport,
    Me,
    PassRateOut,
    RegisterResult,
    ReviewOutcomeOut,
    ReviewPolicyIn,
    RubricBindingIn,
    RubricDiffOut,
    RubricOut,
    RubricSummary,
    RubricVersionOut,
    RunComparisonOut,
    RunOut,
    TokenIssued,
    TokenOut,
    WebhookCreated,
    WebhookOut,
    WebhookRemoved,
)
from rubricflow.wire.runs import SpendOut

__all__ = ["DECIDED", "SERVER_URL_ENV", "TOKEN_ENV", "AsyncClient"]

M = TypeVar("M")

SERVER_URL_ENV = env_name("server_url")
TOKEN_ENV = env_name("token")

#: the states a review's decision leaves an artifact in (and those a person moved it to);
#: `wait_for_decision` also returns for an artifact awaiting a human's approval, and for
#: one whose reviews failed too often (dead-lettered)
DECIDED = frozenset(
    {"approved", "needs_revision", "rejected", "archived", "superseded", "dead_lettered"}
)
_CHANGES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_LONG_POLL = 30.0


def _segment(value: str) -> str:
    """One path segment (an artifact id, a type's name): every reserved character
    escaped."""
    return quote(value, safe="")


def _rubric_path(value: str) -> str:
    """A rubric id (or id@version), which may hold `/` and `:`: the routes take it as the
    rest of the path."""
    return quote(value, safe="/:@")


def _targets(targets: Iterable[Target | Mapping[str, Any] | str]) -> builtins.list[dict[str, Any]]:
    """Targets as the API takes them: a `Target`, its fields as a mapping, or just the
    content (a string)."""
    found: builtins.list[dict[str, Any]] = []
    for target in targets:
        if isinstance(target, Target):
            found.append(target.model_dump(mode="json", exclude_defaults=True))
        elif isinstance(target, str):
            found.append({"content": target})
        else:
            found.append(dict(target))
    return found


class AsyncClient:
    """The rubricflow HTTP API. `base_url` defaults to `$RUBRICFLOW_SERVER_URL`, `token`
    to `$RUBRICFLOW_TOKEN`. One connection pool per client: make one and share it, and
    close it (`async with`, or `aclose()`). `timeout` bounds each request (a long poll
    adds its wait); `retry` says how often and how patiently to retry what a retry can
    fix; `transport` is httpx's (a test's, a proxy's)."""

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        given = current() if base_url is None or token is None else None
        url = base_url or (given.server_url if given is not None else None)
        if not url:
            raise ConfigurationError(
                f"no server URL: pass base_url (or --server URL), or set ${SERVER_URL_ENV}"
            )
        if not url.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"server URL {url!r} must start with http:// or https:// "
                "(e.g. http://127.0.0.1:8000)"
            )
        self.base_url = url.rstrip("/")
        secret = token if token is not None else given.token if given is not None else None
        sent = dict(headers or {})
        sent.setdefault("User-Agent", "rubricflow-client")
        if secret:
            sent["Authorization"] = f"Bearer {secret}"
        self.retry_policy = retry or RetryPolicy()
        self._timeout = timeout
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=sent,
            timeout=timeout,
            transport=transport,
            limits=httpx.Limits(max_connections=100, max_keepalive_connections=20),
        )

    def __repr__(self) -> str:  # never the token
        return f"AsyncClient({self.base_url!r})"

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # --- sending -----------------------------------------------------------------------------
    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
        expected_version: int | None = None,
        timeout: float | None = None,
        ok: tuple[int, ...] = (),
    ) -> httpx.Response:
        """Send one request (retried as the policy says) and return its response; an
        error status (other than those in `ok`) raises the matching `RubricflowError`."""
        sent = dict(headers or {})
        if method in _CHANGES:
            sent["Idempotency-Key"] = idempotency_key or str(uuid.uuid4())
        if expected_version is not None:
            sent["If-Match"] = f'"{expected_version}"'
        content: bytes | None = None
        if body is not None:  # serialised once: every retry sends the same bytes
            content = json.dumps(body, ensure_ascii=False, default=str).encode()
            sent["Content-Type"] = "application/json"
        query = {k: v for k, v in (params or {}).items() if v is not None}
        attempt = 0
        while True:
            try:
                response = await self._http.request(
                    method,
                    path,
                    content=content,
                    params=query,
                    headers=sent,
                    timeout=timeout if timeout is not None else self._timeout,
                )
            except RETRIED_ERRORS as error:
                attempt += 1
                if attempt >= self.retry_policy.attempts:
                    raise self._unreachable(error) from None
                await asyncio.sleep(self.retry_policy.delay(attempt - 1))
                continue
            except httpx.TimeoutException as error:
                raise ServerError(
                    f"{self.base_url} did not answer {method} {path} within the timeout "
                    f"({type(error).__name__}); the change, if any, may still be made: retry "
                    "with the same idempotency_key to learn its outcome"
                ) from None
            if should_retry(response) and attempt + 1 < self.retry_policy.attempts:
                attempt += 1
                await asyncio.sleep(
                    self.retry_policy.delay(attempt - 1, response.headers.get("Retry-After"))
                )
                continue
            if response.status_code >= 400 and response.status_code not in ok:
                raise error_from_response(response)
            return response

    def _unreachable(self, error: Exception) -> ServerError:
        return ServerError(
            f"cannot reach the rubricflow server at {self.base_url}: {type(error).__name__}"
            f"{': ' + str(error) if str(error) else ''} "
            f"(after {self.retry_policy.attempts} attempts); "
            "is `rubricflow serve` running there?"
        )

    async def _json(self, method: str, path: str, model: type[M] | Any, **options: Any) -> M:
        response = await self.request(method, path, **options)
        adapter: TypeAdapter[M] = TypeAdapter(model)
        return adapter.validate_json(response.content)

    # --- who and how -------------------------------------------------------------------------
    async def health(self) -> Health:
        """Whether the server process is up (no token needed)."""
        return await self._json("GET", "/healthz", Health)

    async def me(self) -> Me:
        """The token this client holds: its name (the actor recorded), role and types."""
        return await self._json("GET", "/v1/me", Me)

    # --- artifact types ----------------------------------------------------------------------
    async def list_types(self) -> builtins.list[ArtifactType]:
        return await self._json("GET", "/v1/types", builtins.list[ArtifactType])

    async def get_type(self, name: str) -> ArtifactType:
        return await self._json("GET", f"/v1/types/{_segment(name)}", ArtifactType)

    async def type_agreement(
        self, name: str, *, resamples: int = 1000, seed: int = 0
    ) -> dict[str, Any]:
        """Agreement between the people deciding the type's artifacts (reviewers)."""
        path = f"/v1/types/{_segment(name)}/agreement"
        return await self._json(
            "GET", path, dict[str, Any], params={"resamples": resamples, "seed": seed}
        )

    async def set_type(
        self,
        name: str,
        definition: ArtifactTypeIn | ArtifactType | Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
    ) -> ArtifactType:
        """Define or replace an artifact type (admins)."""
        if isinstance(definition, ArtifactType):
            body: dict[str, Any] = ArtifactTypeIn(
                rubrics=[RubricBindingIn(**b.model_dump()) for b in definition.rubrics],
                auto_review=definition.auto_review,
                requires_approval=definition.requires_approval,
                approval_threshold=definition.approval_threshold,
                content_schema=definition.content_schema,
                description=definition.description,
                judge=definition.judge,
                review_policy=ReviewPolicyIn(**definition.review_policy.model_dump(mode="json")),
                max_cost_per_artifact=definition.max_cost_per_artifact,
                daily_budget=definition.daily_budget,
                judge_batch=definition.judge_batch,
            ).model_dump(mode="json")
        elif isinstance(definition, ArtifactTypeIn):
            body = definition.model_dump(mode="json")
        else:
            body = dict(definition)
        return await self._json(
            "PUT",
            f"/v1/types/{_segment(name)}",
            ArtifactType,
            body=body,
            idempotency_key=idempotency_key,
        )

    # --- artifacts: create and submit --------------------------------------------------------
    async def submit(
        self,
        type: str,
        content: Any,
        *,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        defer: bool = False,
        artifact_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> ReviewOutcomeOut:
        """Create an artifact and submit it for review, in one request: reviewed now (the
        outcome's `status` is the decision), or queued for the server's workers with
        `defer=True` (then `wait_for_decision`)."""
        body: dict[str, Any] = {"type": type, "content": content, "defer": defer}
        if title is not None:
            body["title"] = title
        if metadata:
            body["metadata"] = dict(metadata)
        if artifact_id is not None:
            body["id"] = artifact_id
        return await self._json(
            "POST", "/v1/submissions", ReviewOutcomeOut, body=body, idempotency_key=idempotency_key
        )

    async def create(
        self,
        type: str,
        content: Any,
        *,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        artifact_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Artifact:
        """Create an artifact in draft."""
        body: dict[str, Any] = {"type": type, "content": content}
        if title is not None:
            body["title"] = title
        if metadata:
            body["metadata"] = dict(metadata)
        if artifact_id is not None:
            body["id"] = artifact_id
        return await self._json(
            "POST", "/v1/artifacts", Artifact, body=body, idempotency_key=idempotency_key
        )

    async def submit_artifact(
        self,
        artifact_id: str,
        *,
        defer: bool = False,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
    ) -> ReviewOutcomeOut:
        """Submit an existing artifact (a draft, or one that needs revision)."""
        return await self._json(
            "POST",
            f"/v1/artifacts/{_segment(artifact_id)}/submit",
            ReviewOutcomeOut,
            params={"defer": "true" if defer else None},
            expected_version=expected_version,
            idempotency_key=idempotency_key,
        )

    async def create_and_submit(
        self, type: str, content: Any, *, title: str | None = None, defer: bool = False
    ) -> SubmissionOutcome:
        """`submit` as `ArtifactsAPI` has it: the outcome as both doors report it."""
        return (await self.submit(type, content, title=title, defer=defer)).brief()

    async def submit_for_review(
        self, artifact_id: str, *, defer: bool = False
    ) -> SubmissionOutcome:
        """`submit_artifact` as `ArtifactsAPI` has it: the outcome as both doors report it."""
        return (await self.submit_artifact(artifact_id, defer=defer)).brief()

    # --- artifacts: changes ------------------------------------------------------------------
    async def _change(
        self,
        artifact_id: str,
        action: str,
        body: dict[str, Any] | None,
        expected_version: int | None,
        idempotency_key: str | None,
    ) -> Artifact:
        return await self._json(
            "POST",
            f"/v1/artifacts/{_segment(artifact_id)}/{action}",
            Artifact,
            body=body,
            expected_version=expected_version,
            idempotency_key=idempotency_key,
        )

    async def revise(
        self,
        artifact_id: str,
        content: Any,
        *,
        reason: str,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Artifact:
        """New content as a new revision (back to draft)."""
        body = {"content": content, "reason": reason}
        return await self._change(artifact_id, "revise", body, expected_version, idempotency_key)

    async def approve(
        self,
        artifact_id: str,
        *,
        reason: str,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Artifact:
        """Approve an artifact whose review passed and awaits a human (reviewers)."""
        body = {"reason": reason}
        return await self._change(artifact_id, "approve", body, expected_version, idempotency_key)

    async def reject(
        self,
        artifact_id: str,
        *,
        reason: str,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Artifact:
        """Reject an artifact (reviewers)."""
        body = {"reason": reason}
        return await self._change(artifact_id, "reject", body, expected_version, idempotency_key)

    async def override(
        self,
        artifact_id: str,
        *,
        reason: str,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Artifact:
        """Approve despite the rubrics (reviewers)."""
        body = {"reason": reason}
        return await self._change(artifact_id, "override", body, expected_version, idempotency_key)

    async def withdraw(
        self,
        artifact_id: str,
        *,
        reason: str | None = None,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Artifact:
        """Take a queued artifact back to draft (its submitter)."""
        body = {"reason": reason} if reason else None
        return await self._change(artifact_id, "withdraw", body, expected_version, idempotency_key)

    async def retry(
        self,
        artifact_id: str,
        *,
        reason: str | None = None,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Artifact:
        """Queue a dead-lettered artifact for review again (reviewers)."""
        body = {"reason": reason} if reason else None
        return await self._change(artifact_id, "retry", body, expected_version, idempotency_key)

    async def archive(
        self,
        artifact_id: str,
        *,
        reason: str | None = None,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Artifact:
        """Archive an artifact: final (reviewers)."""
        body = {"reason": reason} if reason else None
        return await self._change(artifact_id, "archive", body, expected_version, idempotency_key)

    async def supersede(
        self,
        artifact_id: str,
        *,
        reason: str,
        by: str | None = None,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
    ) -> Artifact:
        """Retire an artifact another one (`by`) replaces (reviewers)."""
        body: dict[str, Any] = {"reason": reason}
        if by is not None:
            body["by"] = by
        return await self._change(artifact_id, "supersede", body, expected_version, idempotency_key)

    # --- artifacts: reads --------------------------------------------------------------------
    async def get(self, artifact_id: str) -> Artifact:
        return await self._json("GET", f"/v1/artifacts/{_segment(artifact_id)}", Artifact)

    async def list_page(
        self,
        *,
        type: str | None = None,
        status: str | None = None,
        created_by: str | None = None,
        dead_letter: bool = False,
        limit: int = 50,
        cursor: str | None = None,
    ) -> ArtifactPage:
        """One page of artifacts, newest first; pass its `next_cursor` for the next."""
        params = {
            "type": type,
            "status": status,
            "created_by": created_by,
            "dead_letter": "true" if dead_letter else None,
            "limit": limit,
            "cursor": cursor,
        }
        return await self._json("GET", "/v1/artifacts", ArtifactPage, params=params)

    async def list(
        self,
        *,
        type: str | None = None,
        status: str | None = None,
        created_by: str | None = None,
        dead_letter: bool = False,
        page_size: int = 50,
        limit: int | None = None,
    ) -> AsyncIterator[Artifact]:
        """Every artifact the token may see (newest first, `limit` at most), a page at a
        time: artifacts created meanwhile neither repeat nor push one off a page."""
        cursor: str | None = None
        given = 0
        while True:
            size = page_size if limit is None else max(1, min(page_size, limit - given))
            page = await self.list_page(
                type=type,
                status=status,
                created_by=created_by,
                dead_letter=dead_letter,
                limit=min(size, 200),
                cursor=cursor,
            )
            for artifact in page.items:
                if limit is not None and given >= limit:
                    return
                given += 1
                yield artifact
            if page.next_cursor is None or (limit is not None and given >= limit):
                return
            cursor = page.next_cursor

    async def history(self, artifact_id: str) -> builtins.list[ArtifactEvent]:
        """Every transition, oldest first: who, why, which evaluations."""
        return await self._json(
            "GET", f"/v1/artifacts/{_segment(artifact_id)}/history", builtins.list[ArtifactEvent]
        )

    async def evaluations(
        self, artifact_id: str, revision: int | None = None
    ) -> builtins.list[Evaluation]:
        """The stored evaluations of an artifact (one revision, or all), newest first."""
        return await self._json(
            "GET",
            f"/v1/artifacts/{_segment(artifact_id)}/evaluations",
            builtins.list[Evaluation],
            params={"revision": revision},
        )

    # --- waiting -----------------------------------------------------------------------------
    async def wait_for_change(
        self, artifact_id: str, *, after: int, wait: float = _LONG_POLL
    ) -> Artifact | None:
        """The artifact once it moves past version `after`, or None after `wait` seconds
        (one long poll)."""
        response = await self.request(
            "GET",
            f"/v1/artifacts/{_segment(artifact_id)}",
            params={"wait": wait, "after": after},
            timeout=self._timeout + wait,
            ok=(304,),
        )
        if response.status_code == 304:
            return None
        return Artifact.model_validate_json(response.content)

    async def wait_for_decision(
        self, artifact_id: str, timeout: float | None = None, *, poll: float = _LONG_POLL
    ) -> Artifact:
        """The artifact once its review is decided (a state in `DECIDED`, or awaiting a
        human's approval), long-polling for each change; `DecisionTimeoutError` after
        `timeout` seconds (None: wait as long as it takes)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        artifact = await self.get(artifact_id)
        while not _decided(artifact):
            wait = poll
            if deadline is not None:
                wait = min(wait, deadline - time.monotonic())
                if wait <= 0:
                    raise DecisionTimeoutError(
                        f"artifact {artifact_id!r} was not decided within {timeout:g} s: it is "
                        f"{artifact.status}; wait longer, or look at its history"
                    )
            moved = await self.wait_for_change(artifact_id, after=artifact.version, wait=wait)
            if moved is not None:
                artifact = moved
        return artifact

    async def events(
        self, artifact_id: str, *, after: int | None = None
    ) -> AsyncIterator[ArtifactEvent]:
        """The artifact's transitions as they happen (Server-Sent Events), from after
        event `after` (default: every one so far). It ends after a transition into a
        state nothing can follow; a server that shuts down or a dropped connection is
        reconnected to with the last event seen, so none is missed."""
        last = after
        attempt = 0
        path = f"/v1/artifacts/{_segment(artifact_id)}/events"
        while True:
            headers = {"Accept": "text/event-stream"}
            if last is not None:
                headers["Last-Event-ID"] = str(last)
            try:
                async with self._http.stream(
                    "GET", path, headers=headers, timeout=httpx.Timeout(self._timeout, read=None)
                ) as response:
                    if response.status_code == 204:
                        return
                    if response.status_code >= 400:
                        await response.aread()
                        raise error_from_response(response)
                    attempt = 0
                    async for message in read_events(response):
                        if message.event == "end":
                            return
                        if message.event == "shutdown":
                            break
                        if message.event != "artifact.transition":
                            continue
                        data = json.loads(message.data)
                        data.pop("kind", None)
                        event = ArtifactEvent.model_validate(data)
                        last = event.seq
                        yield event
            except RETRIED_ERRORS as error:
                attempt += 1
                if attempt >= self.retry_policy.attempts:
                    raise self._unreachable(error) from None
            await asyncio.sleep(self.retry_policy.delay(attempt))

    # --- scoring without storage -------------------------------------------------------------
    def _evaluate_body(
        self,
        rubric: str | None,
        targets: Iterable[Target | Mapping[str, Any] | str],
        document: str | Path | None,
        format: str | None,
        rubric_id: str | None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"targets": _targets(targets)}
        if rubric is not None:
            body["rubric"] = rubric
        if document is not None:
            body["document"] = (
                document.read_text(encoding="utf-8") if isinstance(document, Path) else document
            )
        if format is not None:
            body["format"] = format
        if rubric_id is not None:
            body["rubric_id"] = rubric_id
        return body

    async def evaluate(
        self,
        rubric: str | None,
        targets: Iterable[Target | Mapping[str, Any] | str],
        *,
        document: str | Path | None = None,
        format: str | None = None,
        rubric_id: str | None = None,
    ) -> EvaluateResponse:
        """Score targets against a registered rubric (`id` or `id@version`) or a document
        sent inline (`rubric=None, document=...`); nothing is stored."""
        body = self._evaluate_body(rubric, targets, document, format, rubric_id)
        return await self._json("POST", "/v1/evaluate", EvaluateResponse, body=body)

    async def evaluate_stream(
        self,
        rubric: str | None,
        targets: Iterable[Target | Mapping[str, Any] | str],
        *,
        document: str | Path | None = None,
        format: str | None = None,
        rubric_id: str | None = None,
    ) -> AsyncIterator[EvaluationLine]:
        """`evaluate` as NDJSON: each target's line as it finishes (in finishing order;
        `index` is its place in `targets`). Leaving the loop early stops the server's
        work. A failure after the stream started raises its error."""
        body = self._evaluate_body(rubric, targets, document, format, rubric_id)
        content = json.dumps(body, ensure_ascii=False).encode()
        headers = {"Accept": NDJSON, "Content-Type": "application/json"}
        async with self._http.stream(
            "POST",
            "/v1/evaluate",
            content=content,
            headers=headers,
            timeout=httpx.Timeout(self._timeout, read=None),
        ) as response:
            if response.status_code >= 400:
                await response.aread()
                raise error_from_response(response)
            async for line in response.aiter_lines():
                if not line.strip():
                    continue
                parsed = EvaluationLine.model_validate_json(line)
                if parsed.error is not None:
                    problem = parsed.error.model_dump()
                    raise error_from_problem(problem, parsed.error.status)
                yield parsed

    # --- rubrics -----------------------------------------------------------------------------
    async def register_rubrics(
        self, document: str | Path, *, format: str | None = None
    ) -> RegisterResult:
        """Register every rubric of a document (its text, or a file to read), all or none
        (admins)."""
        text = document.read_text(encoding="utf-8") if isinstance(document, Path) else document
        return await self._json(
            "POST", "/v1/rubrics", RegisterResult, body={"document": text, "format": format}
        )

    async def list_rubrics(self, *, target_type: str | None = None) -> builtins.list[RubricSummary]:
        """The latest version of every rubric."""
        found = await self.request("GET", "/v1/rubrics", params={"target_type": target_type})
        return [RubricSummary.model_validate(r) for r in found.json()["rubrics"]]

    async def get_rubric(self, rubric_id: str, version: str | None = None) -> RubricOut:
        """A rubric's latest version, or an exact one, with its whole native document
        (`.document`, a `Rubric`)."""
        reference = f"{rubric_id}@{version}" if version else rubric_id
        return await self._json("GET", f"/v1/rubrics/{_rubric_path(reference)}", RubricOut)

    async def rubric_versions(self, rubric_id: str) -> builtins.list[RubricVersionOut]:
        """Every stored version, lowest to highest (deleted ones too)."""
        found = await self.request("GET", f"/v1/rubrics/{_rubric_path(rubric_id)}/versions")
        return [RubricVersionOut.model_validate(v) for v in found.json()["versions"]]

    async def lint_rubric(self, document: str | Path, *, format: str | None = None) -> LintReport:
        """Validate a document and run the meta-rubric over it (a report, even when the
        document is broken)."""
        text = document.read_text(encoding="utf-8") if isinstance(document, Path) else document
        return await self._json(
            "POST", "/v1/rubrics/lint", LintReport, body={"document": text, "format": format}
        )

    async def diff_rubric(
        self, rubric_id: str, before: str | None = None, after: str | None = None
    ) -> RubricDiffOut:
        """What changed between two versions (default: the two highest)."""
        return await self._json(
            "GET",
            f"/v1/rubrics/{_rubric_path(rubric_id)}/diff",
            RubricDiffOut,
            params={"from": before, "to": after},
        )

    async def pass_rates(
        self,
        rubric_id: str,
        *,
        version: str | None = None,
        run: str | None = None,
        artifact_type: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        bucket: str | None = None,
    ) -> builtins.list[PassRateOut]:
        """Per-criterion pass rates over stored evaluations (reviewers)."""
        params = {
            "version": version,
            "run": run,
            "artifact_type": artifact_type,
            "since": since.isoformat() if since else None,
            "until": until.isoformat() if until else None,
            "bucket": bucket,
        }
        found = await self.request(
            "GET", f"/v1/rubrics/{_rubric_path(rubric_id)}/pass-rates", params=params
        )
        return [PassRateOut.model_validate(r) for r in found.json()["rates"]]

    async def delete_rubric(self, rubric_id: str) -> builtins.list[RubricVersionOut]:
        """Hide a rubric from latest lookups (admins); its versions stay readable."""
        found = await self.request("DELETE", f"/v1/rubrics/{_rubric_path(rubric_id)}")
        return [RubricVersionOut.model_validate(v) for v in found.json()["versions"]]

    # --- runs and judge usage ----------------------------------------------------------------
    async def list_runs(self, *, limit: int = 20) -> builtins.list[RunOut]:
        """The newest runs, each with its figures (reviewers)."""
        found = await self.request("GET", "/v1/runs", params={"limit": limit})
        return [RunOut.model_validate(r) for r in found.json()["runs"]]

    async def get_run(self, run_id: str) -> RunOut:
        """One run (or `latest`) with its figures and per-criterion pass rates."""
        return await self._json("GET", f"/v1/runs/{_rubric_path(run_id)}", RunOut)

    async def run_evaluations(
        self, run_id: str, *, limit: int = 50, offset: int = 0
    ) -> EvaluationPage:
        """A page of a run's stored evaluations, newest first."""
        return await self._json(
            "GET",
            f"/v1/runs/{_rubric_path(run_id)}/evaluations",
            EvaluationPage,
            params={"limit": limit, "offset": offset},
        )

    async def compare_runs(
        self, a: str, b: str, *, threshold: float | None = None
    ) -> RunComparisonOut:
        """Run B against run A: flips, pass-rate and score deltas (B - A)."""
        return await self._json(
            "GET",
            "/v1/runs/compare",
            RunComparisonOut,
            params={"a": a, "b": b, "threshold": threshold},
        )

    async def judge_usage(
        self,
        *,
        run: str | None = None,
        rubric: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        by_model: bool = True,
    ) -> builtins.list[JudgeUsageOut]:
        """Judge calls, cache hits, tokens and cost, per run (and model)."""
        params = {
            "run": run,
            "rubric": rubric,
            "since": since.isoformat() if since else None,
            "until": until.isoformat() if until else None,
            "by_model": "true" if by_model else "false",
        }
        found = await self.request("GET", "/v1/judge-usage", params=params)
        return [JudgeUsageOut.model_validate(u) for u in found.json()["usage"]]

    async def judge_spend(
        self,
        by: str = "type",
        *,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> builtins.list[SpendOut]:
        """Judge spend per artifact `type`, `day` (UTC) or `run`: calls, cache hits, tokens
        and cost (`GET /v1/judge-spend`)."""
        params = {
            "by": by,
            "since": since.isoformat() if since else None,
            "until": until.isoformat() if until else None,
        }
        found = await self.request("GET", "/v1/judge-spend", params=params)
        return [SpendOut.model_validate(row) for row in found.json()["spend"]]

    # --- tokens (admins) ---------------------------------------------------------------------
    async def create_token(
        self,
        name: str,
        *,
        role: str,
        types: Iterable[str] = (),
        expires_at: datetime | None = None,
        idempotency_key: str | None = None,
    ) -> TokenIssued:
        """A new token; its secret (`.token`) is in this answer only."""
        body = {
            "name": name,
            "role": role,
            "types": list(types),
            "expires_at": expires_at.isoformat() if expires_at else None,
        }
        return await self._json(
            "POST", "/v1/tokens", TokenIssued, body=body, idempotency_key=idempotency_key
        )

    async def list_tokens(self, *, include_revoked: bool = False) -> builtins.list[TokenOut]:
        return await self._json(
            "GET",
            "/v1/tokens",
            builtins.list[TokenOut],
            params={"include_revoked": "true" if include_revoked else None},
        )

    async def revoke_token(self, name: str) -> TokenOut:
        """Revoke a token by name: it stops working at once."""
        return await self._json("DELETE", f"/v1/tokens/{_segment(name)}", TokenOut)

    # --- webhooks (admins) -------------------------------------------------------------------
    async def add_webhook(
        self,
        url: str,
        events: Iterable[str],
        *,
        artifact_type: str | None = None,
        allow_private: bool = False,
        idempotency_key: str | None = None,
    ) -> WebhookCreated:
        """Subscribe a URL to artifact events; the signing secret is in this answer only."""
        body = {
            "url": url,
            "events": list(events),
            "artifact_type": artifact_type,
            "allow_private": allow_private,
        }
        return await self._json(
            "POST", "/v1/webhooks", WebhookCreated, body=body, idempotency_key=idempotency_key
        )

    async def list_webhooks(self) -> builtins.list[WebhookOut]:
        return await self._json("GET", "/v1/webhooks", builtins.list[WebhookOut])

    async def get_webhook(self, subscription_id: str) -> WebhookOut:
        return await self._json("GET", f"/v1/webhooks/{_segment(subscription_id)}", WebhookOut)

    async def remove_webhook(self, subscription_id: str) -> WebhookRemoved:
        return await self._json(
            "DELETE", f"/v1/webhooks/{_segment(subscription_id)}", WebhookRemoved
        )

    async def webhook_backlog(self) -> Backlog:
        return await self._json("GET", "/v1/webhooks/backlog", Backlog)

    async def webhook_deliveries(
        self,
        *,
        subscription_id: str | None = None,
        status: str | None = None,
        artifact_id: str | None = None,
        event: str | None = None,
        limit: int = 50,
        before: int | None = None,
    ) -> builtins.list[DeliveryOut]:
        """The delivery log, newest first (`before`: page back from that delivery id)."""
        params = {
            "subscription_id": subscription_id,
            "status": status,
            "artifact_id": artifact_id,
            "event": event,
            "limit": limit,
            "before": before,
        }
        return await self._json(
            "GET", "/v1/webhooks/deliveries", builtins.list[DeliveryOut], params=params
        )

    async def webhook_delivery(self, delivery_id: int) -> DeliveryDetail:
        return await self._json(
            "GET", f"/v1/webhooks/deliveries/{int(delivery_id)}", DeliveryDetail
        )

    async def replay_delivery(
        self, delivery_id: int, *, idempotency_key: str | None = None
    ) -> DeliveryOut:
        """Send a delivery again (the same webhook-id, so receivers deduplicate)."""
        return await self._json(
            "POST",
            f"/v1/webhooks/deliveries/{int(delivery_id)}/replay",
            DeliveryOut,
            idempotency_key=idempotency_key,
        )


def _decided(artifact: Artifact) -> bool:
    return artifact.status in DECIDED or bool(artifact.awaiting_approval)

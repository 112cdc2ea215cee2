"""Judge calls through a provider's batch API (`eval --batch`): the OpenAI Batch API and
Anthropic Message Batches, about half the price of live calls, answered within 24 hours.

`use_batch_api(session)` puts a `BatchProvider` in front of the session's judge (each of
a panel's judges). A judge call then waits in a queue; once no new call has come for a
moment, the queue goes to the provider as one batch (OpenAI: a JSONL file uploaded, then
`POST /batches`; Anthropic: `POST /v1/messages/batches`), which is polled every
`RUBRICFLOW_BATCH_POLL` seconds until it ends. Each line carries a `custom_id` made from
the request itself, so its answer goes back to the criterion that asked it; a line that
failed, or that the batch did not reach before it expired or was cancelled, fails that
call alone (its criterion is `unable_to_evaluate`, with the provider's reason), and
nothing is dropped.

Resumable: every batch sent is written down (`judge-batches.json` in the cache folder,
custom_id -> batch id) before its calls are waited on, so after a crash the same run
(`eval --batch --resume`, or the same targets again) finds its calls in the batch already
sent and polls it instead of paying twice. Answers go to the judge cache as any answer
does.

The ledger records the calls under `openai-batch` / `anthropic-batch` at the batch price
(the judge's price times `BATCH_DISCOUNT`). Batches are for runs nobody waits on: an
inline review never uses them.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import tempfile
import threading
from abc import abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import httpx

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: one process's lock only
    fcntl = None  # type: ignore[assignment]

from rubricflow.errors import ConfigurationError
from rubricflow.llm.base import (
    LLMProvider,
    Price,
    ProviderRequest,
    ProviderResponse,
    TransportError,
)
from rubricflow.llm.http import HTTPProvider
from rubricflow.settings import current as current_settings

__all__ = [
    "BATCH_DISCOUNT",
    "AnthropicBatchProvider",
    "BatchLedger",
    "BatchProvider",
    "OpenAIBatchProvider",
    "batch_provider",
    "use_batch_api",
]

logger = logging.getLogger("rubricflow.llm")

#: what a batch call costs against a live one (OpenAI and Anthropic both charge half)
BATCH_DISCOUNT = 0.5
#: how long a batch may take: the providers' 24-hour window, and an hour to spare
BATCH_WAIT = 25 * 3600.0
#: judge calls a batch provider takes at once (sizes the targets in flight)
BATCH_IN_FLIGHT = 4096
#: lines in one batch, at most (OpenAI takes 50,000, Anthropic 100,000)
MAX_LINES = 50_000
#: a batch is sent once no new call came for this long
GATHER_SECONDS = 0.2
DEFAULT_POLL = 30.0
#: polls that may fail in a row (network, 5xx) before the batch's calls fail
POLL_FAILURES = 5


def _custom_id(identity: str, payload: Mapping[str, Any], sample: int = 0) -> str:
    """The line's id: the request itself and which sample of it this is, hashed (Anthropic
    allows [a-zA-Z0-9_-]{1,64}); a question's n samples are n lines."""
    parts: list[Any] = [identity, payload] + ([sample] if sample else [])
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return "rf-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:48]


class BatchLedger:
    """custom_id -> (provider endpoint, batch id) of every batch sent and not yet read, in a
    JSON file rewritten whole (atomically) on each change.

    The file is read once, into memory, where a call's lookup finds it. A change is made
    under an exclusive lock on `<file>.lock` (fcntl.flock, where the platform has it): the
    file is read again, the change merged in and the file written, so two processes that
    send batches at once keep each other's entries."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._data: dict[str, list[str]] | None = None

    def _read(self) -> dict[str, list[str]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _save(self, data: dict[str, list[str]]) -> None:
        handle, name = tempfile.mkstemp(dir=self.path.parent, prefix=".batches-")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.replace(name, self.path)

    @contextlib.contextmanager
    def _locked_file(self) -> Iterator[None]:
        """This process's lock, and every process's: an exclusive flock on the lock file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock, open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
            if fcntl is not None:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            yield  # closing the file releases the flock

    def _change(self, change: Callable[[dict[str, list[str]]], None]) -> None:
        with self._locked_file():
            data = self._read()
            change(data)
            self._save(data)
            self._data = data

    def batch_of(self, endpoint: str, custom_id: str) -> str | None:
        with self._lock:
            if self._data is None:
                self._data = self._read()
            found = self._data.get(custom_id)
        if isinstance(found, list) and len(found) == 2 and found[0] == endpoint:
            return str(found[1])
        return None

    def record(self, endpoint: str, batch_id: str, custom_ids: list[str]) -> None:
        def add(data: dict[str, list[str]]) -> None:
            for custom_id in custom_ids:
                data[custom_id] = [endpoint, batch_id]

        self._change(add)

    def forget(self, custom_ids: list[str]) -> None:
        def drop(data: dict[str, list[str]]) -> None:
            for custom_id in custom_ids:
                data.pop(custom_id, None)

        self._change(drop)


def default_ledger() -> BatchLedger:
    from rubricflow.llm.cache import default_cache_dir

    return BatchLedger(default_cache_dir() / "judge-batches.json")


@dataclass
class _Ended:
    """A batch that ended: its status, and each line's answer or failure."""

    status: str
    lines: dict[str, ProviderResponse | TransportError]
    why_missing: str


@dataclass
class _Watch:
    batch_id: str
    waiters: dict[str, asyncio.Future[ProviderResponse]] = field(default_factory=dict)
    task: asyncio.Task[None] | None = None


@dataclass
class _Queue:
    lines: dict[str, tuple[dict[str, Any], ProviderRequest]] = field(default_factory=dict)
    waiters: dict[str, asyncio.Future[ProviderResponse]] = field(default_factory=dict)
    timer: asyncio.Task[None] | None = None
    arrivals: int = 0


class BatchProvider(LLMProvider):
    """A judge (`inner`, an OpenAI-compatible or Anthropic provider) asked through its
    provider's batch API. Same model, same cache identity; the batch price; a call's
    deadline is the batch window."""

    kind: ClassVar[str] = "batch"
    completion_window: ClassVar[str] = "24h"

    def __init__(
        self,
        inner: HTTPProvider,
        *,
        poll: float | None = None,
        ledger: BatchLedger | None = None,
        gather: float = GATHER_SECONDS,
    ) -> None:
        price = inner.settings.price
        settings = replace(
            inner.settings,
            timeout=BATCH_WAIT,
            deadline=BATCH_WAIT,
            max_concurrency=BATCH_IN_FLIGHT,
            rpm=None,
            price=None
            if price is None
            else Price(
                price.input_per_million * BATCH_DISCOUNT, price.output_per_million * BATCH_DISCOUNT
            ),
        )
        super().__init__(inner.model, settings=settings)
        self.inner = inner
        self.vision = inner.vision
        self.scrubber = inner.scrubber
        configured = current_settings().batch_poll
        self.poll = poll if poll is not None else (configured or DEFAULT_POLL)
        self.ledger = ledger if ledger is not None else default_ledger()
        self.gather = gather
        self.batches_sent: list[str] = []
        #: whether each line asked for a structured answer (OpenAI's parse needs it)
        self._structured: dict[str, bool] = {}

    # -- identity: the inner judge's, so live and batch answers share the cache ---------

    @property
    def endpoint(self) -> str:
        return self.inner.endpoint

    @property
    def identity(self) -> str:
        return self.inner.identity

    @property
    def structured_output(self) -> str:
        return self.inner.structured_output

    @property
    def accepts_images(self) -> bool:  # type: ignore[override]
        return self.inner.accepts_images

    async def _close(self) -> None:
        state = self._state
        if state is not None:
            queue: _Queue | None = state.extra.get("queue")
            watches: dict[str, _Watch] = state.extra.get("watches", {})
            tasks = [w.task for w in watches.values()] + [queue.timer if queue else None]
            for task in tasks:
                if task is not None and not task.done():
                    task.cancel()
            client: httpx.AsyncClient | None = state.extra.pop("client", None)
            if client is not None and state.loop is asyncio.get_running_loop():
                await client.aclose()
        await self.inner.aclose()

    # -- one call -----------------------------------------------------------------------

    async def _send(self, request: ProviderRequest, timeout: float) -> ProviderResponse:
        state = self.loop_state()
        payload = self.inner.payload(request)  # type: ignore[attr-defined]
        custom_id = _custom_id(self.inner.identity, payload, request.sample)
        sent_in = self.ledger.batch_of(self.endpoint, custom_id)
        if sent_in is not None:
            future = self._watch(state.extra, sent_in).waiters.get(custom_id)
            if future is None:
                future = asyncio.get_running_loop().create_future()
                self._watch(state.extra, sent_in).waiters[custom_id] = future
            return await asyncio.shield(future)
        queue: _Queue = state.extra.setdefault("queue", _Queue())
        future = queue.waiters.get(custom_id)
        if future is None:
            future = asyncio.get_running_loop().create_future()
            queue.waiters[custom_id] = future
            queue.lines[custom_id] = (payload, request)
            queue.arrivals += 1
            if queue.timer is None or queue.timer.done():
                queue.timer = asyncio.create_task(self._gather(state.extra))
        return await asyncio.shield(future)

    async def _gather(self, extra: dict[str, Any]) -> None:
        """Send the queue once no call has come for `gather` seconds (or it is full)."""
        queue: _Queue = extra["queue"]
        seen = -1
        while queue.arrivals != seen and len(queue.lines) < MAX_LINES:
            seen = queue.arrivals
            await asyncio.sleep(self.gather)
        lines, waiters = queue.lines, queue.waiters
        extra["queue"] = _Queue()
        try:
            batch_id = await self._submit(lines)
        except TransportError as error:
            _fail(waiters, error)
            return
        except Exception as error:  # every waiter hears of it
            _fail(
                waiters,
                _unexpected(error),
            )
            return
        self.batches_sent.append(batch_id)
        self.ledger.record(self.endpoint, batch_id, list(lines))
        logger.info("%s: batch %s sent with %d call(s)", self.label, batch_id, len(lines))
        self._watch(extra, batch_id).waiters.update(waiters)

    def _watch(self, extra: dict[str, Any], batch_id: str) -> _Watch:
        watches: dict[str, _Watch] = extra.setdefault("watches", {})
        watch = watches.get(batch_id)
        if watch is None or (watch.task is not None and watch.task.done()):
            watch = watches[batch_id] = _Watch(batch_id)
            watch.task = asyncio.create_task(self._follow(watch, watches))
        return watch

    async def _follow(self, watch: _Watch, watches: dict[str, _Watch]) -> None:
        """Poll the batch until it ends, then answer every call waiting on it."""
        failures = 0
        try:
            while True:
                try:
                    ended = await self._poll(watch.batch_id)
                    failures = 0
                except TransportError as error:
                    failures += 1
                    if not error.retryable or failures >= POLL_FAILURES:
                        if error.status == 404:
                            self.ledger.forget(list(watch.waiters))  # sent again next time
                        _fail(watch.waiters, error)
                        return
                    ended = None
                if ended is not None:
                    break
                await asyncio.sleep(self.poll)
            self._answer(watch, ended)
        except Exception as error:  # every waiter hears of it
            _fail(
                watch.waiters,
                _unexpected(error),
            )
        finally:
            if watches.get(watch.batch_id) is watch:
                del watches[watch.batch_id]

    def _answer(self, watch: _Watch, ended: _Ended) -> None:
        for custom_id, future in watch.waiters.items():
            if future.done():
                continue
            found = ended.lines.get(custom_id)
            if found is None:
                found = TransportError(
                    "error",
                    f"batch {watch.batch_id} {ended.status} without an answer for this call"
                    f"{': ' + ended.why_missing if ended.why_missing else ''}",
                    retryable=False,
                )
            if isinstance(found, TransportError):
                future.set_exception(found)
            else:
                future.set_result(found)
        self.ledger.forget(list(watch.waiters))

    # -- the wire -------------------------------------------------------------------------

    @abstractmethod
    async def _submit(self, lines: Mapping[str, tuple[dict[str, Any], ProviderRequest]]) -> str:
        """Send the lines as one batch; its id."""

    @abstractmethod
    async def _poll(self, batch_id: str) -> _Ended | None:
        """The batch's lines once it has ended, else None."""

    def _client(self) -> httpx.AsyncClient:
        extra = self.loop_state().extra
        client: httpx.AsyncClient | None = extra.get("client")
        if client is None:
            timeout = httpx.Timeout(self.inner.settings.timeout)
            client = extra["client"] = httpx.AsyncClient(timeout=timeout)
        return client

    async def _call(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        files: Mapping[str, Any] | None = None,
        data: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        headers = dict(self.inner._request_headers())
        headers.pop("content-type", None)
        try:
            response = await self._client().request(
                method,
                self.inner._url(path),
                headers=headers,
                json=json_body,
                files=files,
                data=data,
            )
        except httpx.TimeoutException as error:
            raise TransportError(
                "timeout", f"{type(error).__name__} talking to {self.endpoint}", retryable=True
            ) from None
        except httpx.HTTPError as error:
            raise TransportError(
                "connection_error",
                f"{error or type(error).__name__} ({self.endpoint})",
                retryable=True,
            ) from None
        if response.status_code >= 400:
            raise self.inner._status_error(response)
        return response

    async def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response = await self._call(method, path, **kwargs)
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise TransportError(
                "error",
                f"{self.endpoint}{path} answered with a body that is not a JSON object",
                retryable=True,
            )
        return data


def _unexpected(error: Exception) -> TransportError:
    return TransportError("error", f"{type(error).__name__}: {error}", retryable=False)


def _fail(waiters: Mapping[str, asyncio.Future[ProviderResponse]], error: TransportError) -> None:
    for future in waiters.values():
        if not future.done():
            future.set_exception(error)


def _jsonl(text: str) -> list[dict[str, Any]]:
    rows = []
    for line in text.splitlines():
        with contextlib.suppress(ValueError):
            row = json.loads(line)
            if isinstance(row, dict):
                rows.append(row)
    return rows


def _message(error: Any) -> str:
    if isinstance(error, Mapping):
        inner = error.get("error")
        if isinstance(inner, Mapping):
            return _message(inner)
        code, text = error.get("code") or error.get("type"), error.get("message")
        return ": ".join(str(part) for part in (code, text) if part) or json.dumps(error)
    return str(error)


class OpenAIBatchProvider(BatchProvider):
    """The OpenAI Batch API: `POST /files` (purpose batch), `POST /batches`, `GET
    /batches/{id}`, `GET /files/{id}/content` for the output and error files."""

    kind = "openai-batch"
    _ENDED = frozenset({"completed", "failed", "expired", "cancelled"})

    async def _submit(self, lines: Mapping[str, tuple[dict[str, Any], ProviderRequest]]) -> str:
        body = "".join(
            json.dumps(
                {
                    "custom_id": custom_id,
                    "method": "POST",
                    "url": "/v1/chat/completions",
                    "body": payload,
                },
                ensure_ascii=False,
            )
            + "\n"
            for custom_id, (payload, _request) in lines.items()
        )
        upload = await self._json(
            "POST",
            "/files",
            data={"purpose": "batch"},
            files={"file": ("rubricflow-batch.jsonl", body.encode("utf-8"), "application/jsonl")},
        )
        batch = await self._json(
            "POST",
            "/batches",
            json_body={
                "input_file_id": upload.get("id"),
                "endpoint": "/v1/chat/completions",
                "completion_window": self.completion_window,
                "metadata": {"source": "rubricflow"},
            },
        )
        self._structured.update(
            (custom_id, request.schema is not None) for custom_id, (_p, request) in lines.items()
        )
        return str(batch.get("id"))

    async def _poll(self, batch_id: str) -> _Ended | None:
        batch = await self._json("GET", f"/batches/{batch_id}")
        status = str(batch.get("status"))
        if status not in self._ENDED:
            return None
        lines: dict[str, ProviderResponse | TransportError] = {}
        for key in ("error_file_id", "output_file_id"):
            file_id = batch.get(key)
            if isinstance(file_id, str) and file_id:
                content = await self._call("GET", f"/files/{file_id}/content")
                for row in _jsonl(content.text):
                    self._read_line(row, lines)
        errors = batch.get("errors")
        listed = errors.get("data") if isinstance(errors, Mapping) else None
        why = "; ".join(_message(e) for e in listed or [] if isinstance(e, Mapping))
        if status == "expired":
            why = why or "the 24-hour window passed before this call ran"
        return _Ended(status, lines, why)

    def _read_line(
        self, row: Mapping[str, Any], lines: dict[str, ProviderResponse | TransportError]
    ) -> None:
        custom_id = row.get("custom_id")
        if not isinstance(custom_id, str):
            return
        response = row.get("response")
        error = row.get("error")
        status = response.get("status_code") if isinstance(response, Mapping) else None
        body = response.get("body") if isinstance(response, Mapping) else None
        if error or status != 200 or not isinstance(body, Mapping):
            why = _message(error) if error else _message(body) if body else "no response"
            lines[custom_id] = TransportError(
                "http_error" if status else "error",
                f"batch line failed{f' (HTTP {status})' if status else ''}: {why}",
                retryable=False,
                status=status if isinstance(status, int) else None,
            )
            return
        inner = self.inner
        structured = self._structured.get(custom_id, True)
        mode = getattr(inner, "mode", "json_schema")
        try:
            lines[custom_id] = inner._parse(  # type: ignore[attr-defined]
                body, structured=structured and mode != "none"
            )
        except TransportError as failed:
            lines[custom_id] = TransportError(failed.outcome, str(failed), retryable=False)


class AnthropicBatchProvider(BatchProvider):
    """Anthropic Message Batches: `POST /v1/messages/batches`, `GET
    /v1/messages/batches/{id}`, `GET /v1/messages/batches/{id}/results`."""

    kind = "anthropic-batch"

    async def _submit(self, lines: Mapping[str, tuple[dict[str, Any], ProviderRequest]]) -> str:
        batch = await self._json(
            "POST",
            "/v1/messages/batches",
            json_body={
                "requests": [
                    {"custom_id": custom_id, "params": payload}
                    for custom_id, (payload, _request) in lines.items()
                ]
            },
        )
        return str(batch.get("id"))

    async def _poll(self, batch_id: str) -> _Ended | None:
        batch = await self._json("GET", f"/v1/messages/batches/{batch_id}")
        if batch.get("processing_status") != "ended":
            return None
        # the results are read from the judge's own host, whatever results_url names: the
        # key is never sent elsewhere
        content = await self._call("GET", f"/v1/messages/batches/{batch_id}/results")
        lines: dict[str, ProviderResponse | TransportError] = {}
        for row in _jsonl(content.text):
            custom_id, result = row.get("custom_id"), row.get("result")
            if not isinstance(custom_id, str) or not isinstance(result, Mapping):
                continue
            kind = result.get("type")
            if kind == "succeeded":
                try:
                    lines[custom_id] = self.inner.parse(result.get("message"))  # type: ignore[attr-defined]
                except TransportError as failed:
                    lines[custom_id] = TransportError(failed.outcome, str(failed), retryable=False)
                continue
            why = _message(result.get("error")) if result.get("error") else ""
            lines[custom_id] = TransportError(
                "error",
                f"batch line {kind}{': ' + why if why else ''}",
                retryable=False,
            )
        return _Ended("ended", lines, "")


def batch_provider(provider: LLMProvider, **options: Any) -> BatchProvider:
    """`provider` asked through its batch API; ConfigurationError for a judge that has none
    (only OpenAI's and Anthropic's APIs batch)."""
    from rubricflow.llm.providers.anthropic import AnthropicProvider
    from rubricflow.llm.providers.openai import OpenAIProvider

    if isinstance(provider, BatchProvider):
        return provider
    if isinstance(provider, AnthropicProvider):
        return AnthropicBatchProvider(provider, **options)
    if isinstance(provider, OpenAIProvider) and provider.kind == "openai":
        return OpenAIBatchProvider(provider, **options)
    raise ConfigurationError(
        f"--batch: judge {provider.label} has no batch API; batches go through the OpenAI "
        "Batch API (openai:MODEL) or Anthropic Message Batches (anthropic:MODEL)"
    )


def use_batch_api(session: Any, **options: Any) -> None:
    """Send the judge calls of `session` (an `LLMSession`; each of a panel's judges)
    through their provider's batch API. Raises ConfigurationError for a judge without one."""
    for member in session.members():
        inner = member.provider_now()
        member._provider = batch_provider(inner, **options)

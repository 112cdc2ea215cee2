"""`Client`: the blocking face of `AsyncClient`, for scripts and programs without an
event loop. A thin wrapper: each call runs the async client's coroutine on an event loop
of its own thread (so it also works where a loop is already running, as in a notebook),
and iterators step the async ones.

    with Client("http://127.0.0.1:8000", token) as client:
        outcome = client.submit("post", {"title": "Hello"}, defer=True)
        artifact = client.wait_for_decision(outcome.artifact.id, timeout=60)
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from concurrent.futures import Future
from types import TracebackType
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from rubricflow.client.async_client import AsyncClient

__all__ = ["Client"]

P = ParamSpec("P")
T = TypeVar("T")


class _Blocking(Generic[P, T]):
    """`Client.x`: `AsyncClient.x`, run to completion on the client's loop."""

    def __init__(self, method: Callable[Concatenate[AsyncClient, P], Coroutine[Any, Any, T]]):
        self._method = method
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, client: None, owner: type[Client]) -> _Blocking[P, T]: ...
    @overload
    def __get__(self, client: Client, owner: type[Client]) -> Callable[P, T]: ...
    def __get__(
        self, client: Client | None, owner: type[Client]
    ) -> _Blocking[P, T] | Callable[P, T]:
        if client is None:
            return self
        method = self._method

        def call(*args: P.args, **kwargs: P.kwargs) -> T:
            return client._run(method(client.aio, *args, **kwargs))

        call.__doc__ = method.__doc__
        return call


class _Iterating(Generic[P, T]):
    """`Client.x`: `AsyncClient.x`'s async iterator, stepped from this thread."""

    def __init__(self, method: Callable[Concatenate[AsyncClient, P], AsyncIterator[T]]):
        self._method = method
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, client: None, owner: type[Client]) -> _Iterating[P, T]: ...
    @overload
    def __get__(self, client: Client, owner: type[Client]) -> Callable[P, Iterator[T]]: ...
    def __get__(
        self, client: Client | None, owner: type[Client]
    ) -> _Iterating[P, T] | Callable[P, Iterator[T]]:
        if client is None:
            return self
        method = self._method

        def call(*args: P.args, **kwargs: P.kwargs) -> Iterator[T]:
            return client._iterate(method(client.aio, *args, **kwargs))

        call.__doc__ = method.__doc__
        return call


class Client:
    """The rubricflow HTTP API, blocking. Takes what `AsyncClient` takes; `aio` is the
    async client underneath. Close it (`with`, or `close()`)."""

    def __init__(self, base_url: str | None = None, token: str | None = None, **options: Any):
        self.aio = AsyncClient(base_url, token, **options)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="rubricflow-client", daemon=True
        )
        self._thread.start()
        self._closed = False

    def __repr__(self) -> str:  # never the token
        return f"Client({self.aio.base_url!r})"

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            work.close()
            raise RuntimeError("this Client is closed")
        future: Future[T] = asyncio.run_coroutine_threadsafe(work, self._loop)
        return future.result()

    def _iterate(self, items: AsyncIterator[T]) -> Iterator[T]:
        try:
            while True:
                try:
                    yield self._run(items.__anext__())  # type: ignore[arg-type]
                except StopAsyncIteration:
                    return
        finally:
            closer = getattr(items, "aclose", None)
            if closer is not None and not self._closed:
                self._run(closer())

    def close(self) -> None:
        if self._closed:
            return
        self._run(self.aio.aclose())
        self._closed = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        return self.aio.base_url

    request = _Blocking(AsyncClient.request)
    health = _Blocking(AsyncClient.health)
    me = _Blocking(AsyncClient.me)
    list_types = _Blocking(AsyncClient.list_types)
    get_type = _Blocking(AsyncClient.get_type)
    set_type = _Blocking(AsyncClient.set_type)
    submit = _Blocking(AsyncClient.submit)
    create = _Blocking(AsyncClient.create)
    submit_artifact = _Blocking(AsyncClient.submit_artifact)
    revise = _Blocking(AsyncClient.revise)
    approve = _Blocking(AsyncClient.approve)
    reject = _Blocking(AsyncClient.reject)
    override = _Blocking(AsyncClient.override)
    withdraw = _Blocking(AsyncClient.withdraw)
    retry = _Blocking(AsyncClient.retry)
    archive = _Blocking(AsyncClient.archive)
    supersede = _Blocking(AsyncClient.supersede)
    get = _Blocking(AsyncClient.get)
    list_page = _Blocking(AsyncClient.list_page)
    list = _Iterating(AsyncClient.list)
    history = _Blocking(AsyncClient.history)
    evaluations = _Blocking(AsyncClient.evaluations)
    wait_for_change = _Blocking(AsyncClient.wait_for_change)
    wait_for_decision = _Blocking(AsyncClient.wait_for_decision)
    events = _Iterating(AsyncClient.events)
    evaluate = _Blocking(AsyncClient.evaluate)
    evaluate_stream = _Iterating(AsyncClient.evaluate_stream)
    register_rubrics = _Blocking(AsyncClient.register_rubrics)
    list_rubrics = _Blocking(AsyncClient.list_rubrics)
    get_rubric = _Blocking(AsyncClient.get_rubric)
    rubric_versions = _Blocking(AsyncClient.rubric_versions)
    lint_rubric = _Blocking(AsyncClient.lint_rubric)
    diff_rubric = _Blocking(AsyncClient.diff_rubric)
    pass_rates = _Blocking(AsyncClient.pass_rates)
    delete_rubric = _Blocking(AsyncClient.delete_rubric)
    list_runs = _Blocking(AsyncClient.list_runs)
    get_run = _Blocking(AsyncClient.get_run)
    run_evaluations = _Blocking(AsyncClient.run_evaluations)
    compare_runs = _Blocking(AsyncClient.compare_runs)
    judge_usage = _Blocking(AsyncClient.judge_usage)
    judge_spend = _Blocking(AsyncClient.judge_spend)
    create_token = _Blocking(AsyncClient.create_token)
    list_tokens = _Blocking(AsyncClient.list_tokens)
    revoke_token = _Blocking(AsyncClient.revoke_token)
    add_webhook = _Blocking(AsyncClient.add_webhook)
    list_webhooks = _Blocking(AsyncClient.list_webhooks)
    get_webhook = _Blocking(AsyncClient.get_webhook)
    remove_webhook = _Blocking(AsyncClient.remove_webhook)
    webhook_backlog = _Blocking(AsyncClient.webhook_backlog)
    webhook_deliveries = _Blocking(AsyncClient.webhook_deliveries)
    webhook_delivery = _Blocking(AsyncClient.webhook_delivery)
    replay_delivery = _Blocking(AsyncClient.replay_delivery)

"""Providers that speak HTTP share this base: one `httpx.AsyncClient` per provider
(connection pooling, timeouts), status codes mapped to ledger outcomes, and secrets kept
out of every message."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx

from rubricflow.llm.base import (
    LLMProvider,
    ProviderSettings,
    Secret,
    TransportError,
    redact,
    retry_after_seconds,
)

__all__ = ["HTTPProvider", "normalise_base_url"]

_BODY_SHOWN = 300
POOL_SHARD = 8


def normalise_base_url(url: str, default_scheme: str = "http") -> str:
    """`host:port` gets a scheme; a trailing slash is dropped."""
    url = url.strip()
    if "://" not in url:
        url = f"{default_scheme}://{url}"
    return url.rstrip("/")


class HTTPProvider(LLMProvider):
    """A provider that POSTs JSON to `base_url`. Subclasses build the body (`_payload`),
    the headers (`_headers`) and read the answer (`_parse`)."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: Secret | None = None,
        settings: ProviderSettings | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(model, settings=settings)
        self.base_url = normalise_base_url(base_url)
        self._api_key = api_key
        self._transport = transport
        self._clients: list[httpx.AsyncClient] = []
        self._busy: list[int] = []
        self._urls: dict[str, httpx.URL] = {}
        self._merged_headers: dict[int, tuple[httpx.AsyncClient, httpx.Headers]] = {}
        self._timeouts: dict[float, dict[str, float | None]] = {}

    @property
    def endpoint(self) -> str:
        return redact(self.base_url)

    def _on_new_loop(self) -> None:
        # an AsyncClient's pool belongs to the loop that opened it; a new loop gets a new one
        self._clients, self._busy = [], []
        self._merged_headers.clear()

    def client(self) -> httpx.AsyncClient:
        """The least busy of this provider's clients (for the current event loop)."""
        index = self._pick()  # first: it makes the clients
        return self._clients[index]

    def _pick(self) -> int:
        self.loop_state()
        if not self._clients:
            # httpcore's pool rescans all its connections on every request and response
            # (quadratically), so at high concurrency that bookkeeping outweighs the
            # request: the connections are spread over clients of at most POOL_SHARD each
            size = self.settings.max_concurrency
            shards = -(-size // POOL_SHARD)
            per_shard = -(-size // shards)
            limits = httpx.Limits(max_connections=per_shard, max_keepalive_connections=per_shard)
            # one TLS context for them all: each client would load the CA bundle (~50 ms)
            tls = httpx.create_ssl_context()
            self._clients = [
                httpx.AsyncClient(
                    timeout=httpx.Timeout(
                        self.settings.timeout, connect=self.settings.connect_timeout
                    ),
                    limits=limits,
                    verify=tls,
                    transport=self._transport,
                    headers={"user-agent": "rubricflow"},
                    follow_redirects=False,
                )
                for _ in range(shards)
            ]
            self._busy = [0] * shards
        return min(range(len(self._busy)), key=self._busy.__getitem__)

    async def _close(self) -> None:
        clients, self._clients, self._busy = self._clients, [], []
        self._merged_headers.clear()
        for client in clients:
            await client.aclose()

    def _headers(self) -> dict[str, str]:
        return {}

    def _url(self, path: str) -> httpx.URL:
        url = self._urls.get(path)
        if url is None:
            url = self._urls[path] = httpx.URL(f"{self.base_url}{path}")
        return url

    def _request_headers(self, client: httpx.AsyncClient) -> httpx.Headers:
        """The client's default headers, the provider's (auth) and the JSON content type,
        merged once per client (a `Request` copies them)."""
        merged = self._merged_headers.get(id(client))
        if merged is None or merged[0] is not client:
            headers = client.headers.copy()
            headers.update(self._headers())
            headers["content-type"] = "application/json"
            merged = self._merged_headers[id(client)] = (client, headers)
        return merged[1]

    def _timeout(self, seconds: float) -> dict[str, float | None]:
        known = self._timeouts.get(seconds)
        if known is None:
            connect = min(seconds, self.settings.connect_timeout)
            known = self._timeouts[seconds] = httpx.Timeout(seconds, connect=connect).as_dict()
        return known

    async def post_json(self, path: str, payload: Mapping[str, Any], timeout: float) -> Any:
        """POST `payload` to base_url + path and return the decoded JSON body; failures
        become `TransportError`s with the right ledger outcome."""
        index = self._pick()
        client, busy = self._clients[index], self._busy
        busy[index] += 1
        try:
            # the request is built here, not by `client.post`: the URL parsed once, the
            # headers merged once, the body encoded as httpx encodes `json=`; that is about
            # a sixth of a judge call's CPU, which at high concurrency is throughput
            body = json.dumps(
                payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False
            ).encode("utf-8")
            request = httpx.Request(
                "POST",
                self._url(path),
                headers=self._request_headers(client),
                content=body,
                extensions={"timeout": self._timeout(timeout)},
            )
            response = await client.send(request)
        except httpx.TimeoutException as error:
            raise TransportError(
                "timeout",
                f"{type(error).__name__} after {timeout:g}s talking to {self.endpoint}",
                retryable=True,
            ) from None
        except (httpx.NetworkError, httpx.RemoteProtocolError) as error:
            detail = str(error) or type(error).__name__
            raise TransportError(
                "connection_error", f"{detail} ({self.endpoint})", retryable=True
            ) from None
        except httpx.HTTPError as error:
            raise TransportError(
                "error", f"{type(error).__name__}: {error} ({self.endpoint})", retryable=False
            ) from None
        finally:
            busy[index] -= 1
        status = response.status_code
        if status >= 400:
            raise self._status_error(response)
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
            raise TransportError(
                "error",
                f"HTTP {status} from {self.endpoint} with a body that is not JSON: "
                f"{_shown_body(response)}",
                retryable=True,
            ) from None

    def _status_error(self, response: httpx.Response) -> TransportError:
        status = response.status_code
        reason = response.reason_phrase or ""
        if status in (401, 403):
            # the body of an auth failure may echo part of the key: never show it
            return TransportError(
                "http_error",
                f"HTTP {status} {reason} from {self.endpoint}: the API key was refused or is "
                f"missing; check {self._key_variable()}",
                retryable=False,
                status=status,
            )
        body = _shown_body(response)
        if status == 429:
            wait = retry_after_seconds(response.headers)
            hint = f" (Retry-After {wait:g}s)" if wait is not None else ""
            return TransportError(
                "rate_limited",
                f"HTTP 429 rate limited by {self.endpoint}{hint}: {body}",
                retryable=True,
                retry_after=wait,
                status=status,
            )
        retryable = status >= 500 or status in (408, 409)
        return TransportError(
            "http_error",
            f"HTTP {status} {reason} from {self.endpoint}: {body}",
            retryable=retryable,
            retry_after=retry_after_seconds(response.headers) if retryable else None,
            status=status,
        )

    def _key_variable(self) -> str:
        return "the API key"


def _shown_body(response: httpx.Response) -> str:
    try:
        text = response.text
    except Exception:
        return "(unreadable body)"
    text = " ".join(text.split())
    if len(text) > _BODY_SHOWN:
        text = text[: _BODY_SHOWN - 3] + "..."
    return redact(text) or "(empty body)"

"""Providers that speak HTTP share this base: one `httpx.AsyncClient` per provider
(connection pooling, timeouts), status codes mapped to ledger outcomes, and secrets kept
out of every message."""

from __future__ import annotations

import base64
import json
import logging
import socket
import ssl
import time
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any, TypeVar

import httpx

from rubricflow.llm.base import (
    LLMProvider,
    ProviderSettings,
    Secret,
    TransportError,
    redact,
    retry_after_seconds,
)
from rubricflow.llm.secrets import SecretScrubber, key_like_parameter

__all__ = ["HTTPProvider", "environment_proxy", "normalise_base_url"]

_BODY_SHOWN = 300
#: connections per httpcore pool: its bookkeeping grows with the square of a pool's
#: connections, so 32 in one pool cost 1.3 ms of CPU a judgment against 0.9 ms in pools
#: of 8, which is what kept the reward path from the judge's pace beside other work
POOL_SHARD = 8
#: how long a host name that did not resolve fails every question at once (a DNS
#: failure is not retried: trying the same name again a second later gives the same)
UNRESOLVED_FOR = 30.0
logger = logging.getLogger("rubricflow.llm")


_Raised = TypeVar("_Raised", bound=BaseException)


def _in_chain(error: BaseException, kind: type[_Raised]) -> _Raised | None:
    """The first exception of `kind` in `error`'s chain of causes, or None."""
    seen: BaseException | None = error
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, kind):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def unresolved_host(error: BaseException) -> str | None:
    """The resolver's message when `error` (an httpx error) comes from a host name that
    does not resolve (`socket.gaierror` anywhere in its chain), else None."""
    found = _in_chain(error, socket.gaierror)
    if found is None:
        return None
    return found.strerror or str(found)


def untrusted_certificate(error: BaseException) -> str | None:
    """Why the server's certificate did not verify, when `error` (an httpx error) comes
    from that (`ssl.SSLCertVerificationError` in its chain), else None."""
    found = _in_chain(error, ssl.SSLCertVerificationError)
    if found is None:
        return None
    return found.verify_message or str(found)


def environment_proxy(url: str) -> str | None:
    """The proxy the environment sets for `url`, as httpx's client finds it: the
    `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY` variables (any case; on macOS and Windows the
    system settings too), unless `NO_PROXY` exempts the host; a proxy written without a
    scheme is taken as `http://`. None when no proxy applies."""
    parsed = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parsed.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(parsed.hostname or ""):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def normalise_base_url(url: str, default_scheme: str = "http") -> str:
    """`host:port` gets a scheme; a trailing slash is dropped."""
    url = url.strip()
    if "://" not in url:
        url = f"{default_scheme}://{url}"
    return url.rstrip("/")


class HTTPProvider(LLMProvider):
    """A provider that POSTs JSON to `base_url`. Subclasses build the body (`_payload`),
    the headers (`_headers`) and read the answer (`_parse`)."""

    #: (until when, why) after the base URL's host name did not resolve: every question
    #: fails at once with that reason instead of each retrying the resolver
    _unresolved: tuple[float, str] | None = None

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
        self._pools: list[httpx.AsyncBaseTransport] = []
        self._busy: list[int] = []
        self._urls: dict[str, httpx.URL] = {}
        self._sent_headers: httpx.Headers | None = None
        self._timeouts: dict[float, dict[str, float | None]] = {}
        #: the environment variable the key came from, named in a 401/403 message
        self.key_source: str | None = None
        self.scrubber = self._secrets()
        self.scrubber.register()

    def _secrets(self) -> SecretScrubber:
        """Every secret this provider sends, for scrubbing what the server returns: the API
        key, the base URL's password (and its Basic form) and key-like query values."""
        try:
            url = httpx.URL(self.base_url)
        except (httpx.InvalidURL, TypeError, ValueError):
            return SecretScrubber.of(self._api_key)  # the request will fail, naming the URL
        query = urllib.parse.parse_qsl(url.query.decode("ascii", "replace"))
        found = [value for name, value in query if key_like_parameter(name)]
        raw_query = [
            part.partition("=")[2]
            for part in url.query.decode("ascii", "replace").split("&")
            if key_like_parameter(part.partition("=")[0])
        ]
        basic = (url.username, url.password) if url.password else None
        return SecretScrubber.of(self._api_key, url.password, *found, *raw_query, basic=basic)

    @property
    def endpoint(self) -> str:
        return redact(self.base_url)

    def _on_new_loop(self) -> None:
        # a connection pool belongs to the loop that opened it; a new loop gets a new one
        self._pools, self._busy = [], []

    def _pick(self) -> int:
        self.loop_state()
        if not self._pools:
            self._pools = self._open_pools()
            self._busy = [0] * len(self._pools)
        return min(range(len(self._busy)), key=self._busy.__getitem__)

    def _open_pools(self) -> list[httpx.AsyncBaseTransport]:
        """httpx transports (connection pools) for this provider: the caller's, else
        ceil(max_concurrency / POOL_SHARD) pools sharing the connections (httpcore's pool
        rescans all its connections on every request and response, so very large pools
        cost more in bookkeeping than the requests). A proxy set in the environment
        (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, with NO_PROXY) is used, as httpx's client
        would."""
        if self._transport is not None:
            return [self._transport]
        size = self.settings.max_concurrency
        shards = -(-size // POOL_SHARD)
        per_shard = -(-size // shards)
        limits = httpx.Limits(max_connections=per_shard, max_keepalive_connections=per_shard)
        # one TLS context for them all: each pool would load the CA bundle (~50 ms, in the
        # event loop's thread, on the judge's first call). A plain-http judge (llama.cpp,
        # Ollama, vLLM on a local port) speaks no TLS, so its context loads nothing
        secure = self.base_url.lower().startswith("https:")
        tls = httpx.create_ssl_context(verify=secure)
        proxy = environment_proxy(self.base_url)
        try:
            return [
                httpx.AsyncHTTPTransport(verify=tls, limits=limits, proxy=proxy)
                for _ in range(shards)
            ]
        except (ValueError, ImportError) as error:
            raise TransportError(
                "error",
                f"the proxy {redact(str(proxy))} that the environment sets for "
                f"{self.endpoint} cannot be used: {error}; fix HTTPS_PROXY / HTTP_PROXY / "
                "ALL_PROXY (or exempt the host in NO_PROXY)",
                retryable=False,
            ) from None

    async def _close(self) -> None:
        pools, self._pools, self._busy = self._pools, [], []
        if self._transport is not None:
            return  # the caller's transport is the caller's to close
        for pool in pools:
            await pool.aclose()

    def _headers(self) -> dict[str, str]:
        return {}

    def _url(self, path: str) -> httpx.URL:
        """base_url + path, without any `user:password@` (sent as Basic auth instead); a
        query in the base URL (`?key=...`) stays after the path."""
        url = self._urls.get(path)
        if url is None:
            parts = urllib.parse.urlsplit(self.base_url)
            joined = parts._replace(path=parts.path.rstrip("/") + path, fragment="")
            url = httpx.URL(urllib.parse.urlunsplit(joined))
            if url.userinfo:
                url = url.copy_with(userinfo=b"")
            self._urls[path] = url
        return url

    def _request_headers(self) -> httpx.Headers:
        """httpx's default request headers with rubricflow's user agent, the provider's
        own (auth) and the JSON content type, merged once (a `Request` copies them)."""
        if self._sent_headers is None:
            headers = httpx.Headers(
                {
                    "accept": "*/*",
                    "accept-encoding": "gzip, deflate",
                    "connection": "keep-alive",
                    "user-agent": "rubricflow",
                }
            )
            headers.update(self._headers())
            headers["content-type"] = "application/json"
            base = httpx.URL(self.base_url)
            if base.username or base.password:
                # credentials in the URL win over the provider's, as httpx's client does
                pair = f"{base.username}:{base.password}".encode()
                headers["authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
            self._sent_headers = headers
        return self._sent_headers

    def _timeout(self, seconds: float) -> dict[str, float | None]:
        known = self._timeouts.get(seconds)
        if known is None:
            connect = min(seconds, self.settings.connect_timeout)
            known = self._timeouts[seconds] = httpx.Timeout(seconds, connect=connect).as_dict()
        return known

    def _cannot_resolve(self, resolver: str) -> TransportError:
        """The failure for a host name that does not resolve: not retried, said once (a
        warning), and every question for the next UNRESOLVED_FOR seconds fails with it
        without asking the resolver again."""
        host = httpx.URL(self.base_url).host
        why = (
            f"cannot resolve the host name {host!r} of {self.endpoint} ({resolver}): check "
            "the URL and the network (not retried)"
        )
        if self._unresolved is None or time.monotonic() >= self._unresolved[0]:
            logger.warning("%s: %s", self.label, why)
        self._unresolved = (time.monotonic() + UNRESOLVED_FOR, why)
        return TransportError("connection_error", why, retryable=False)

    async def post_json(self, path: str, payload: Mapping[str, Any], timeout: float) -> Any:
        """POST `payload` to base_url + path and return the decoded JSON body; failures
        become `TransportError`s with the right ledger outcome."""
        unresolved = self._unresolved
        if unresolved is not None and time.monotonic() < unresolved[0]:
            raise TransportError("connection_error", unresolved[1], retryable=False)
        index = self._pick()
        pool, busy = self._pools[index], self._busy
        busy[index] += 1
        try:
            # straight to the connection pool (httpx's transport) with a request built
            # here: the URL parsed once, the headers merged once, the body encoded as
            # httpx encodes `json=`. `AsyncClient.post` redoes all of that and runs its
            # auth, redirect and cookie machinery on every call, which judge APIs do not
            # use: at 300 calls a second that was 7% of the throughput
            body = json.dumps(
                payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False
            ).encode("utf-8")
            request = httpx.Request(
                "POST",
                self._url(path),
                headers=self._request_headers(),
                content=body,
                extensions={"timeout": self._timeout(timeout)},
            )
            response = await pool.handle_async_request(request)
            response.request = request
            try:
                await response.aread()
            finally:
                await response.aclose()
        except httpx.TimeoutException as error:
            raise TransportError(
                "timeout",
                f"{type(error).__name__} after {timeout:g}s talking to {self.endpoint}",
                retryable=True,
            ) from None
        except httpx.ConnectError as error:
            untrusted = untrusted_certificate(error)
            if untrusted is not None:  # asking again gets the same certificate
                raise TransportError(
                    "connection_error",
                    f"the certificate of {self.endpoint} did not verify ({untrusted}): fix "
                    "the server's certificate, or trust the CA that signed it with "
                    "SSL_CERT_FILE=/path/to/ca.pem (or SSL_CERT_DIR)",
                    retryable=False,
                ) from None
            resolver = unresolved_host(error)
            if resolver is None:
                detail = str(error) or type(error).__name__
                raise TransportError(
                    "connection_error", f"{detail} ({self.endpoint})", retryable=True
                ) from None
            raise self._cannot_resolve(resolver) from None
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

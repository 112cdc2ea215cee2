"""What an LLM provider is: one request, one answer, within limits, with secrets kept out.

A provider turns a `ProviderRequest` (chat messages plus an optional answer JSON Schema)
into a `ProviderResponse` in ONE attempt, raising `TransportError` on failure; retries,
validation, caching and the call ledger live above it (`rubricflow.llm.session`). The
base class enforces the per-provider concurrency limit, the optional requests-per-minute
limit and the per-attempt timeout, and keeps its loop-bound primitives per event loop.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

from rubricflow.conversation import ImagePart
from rubricflow.errors import ConfigurationError, RubricflowError
from rubricflow.llm.admission import admitted
from rubricflow.llm.slots import OrderedSlots
from rubricflow.results import CallOutcome
from rubricflow.settings import current as current_settings

__all__ = [
    "LLMError",
    "LLMProvider",
    "Message",
    "Price",
    "ProviderRequest",
    "ProviderResponse",
    "ProviderSettings",
    "Secret",
    "TransportError",
    "redact",
]

Message = Mapping[str, str]
"""A chat message: `{"role": "system" | "user" | "assistant", "content": text}`."""

_SECRETS: set[str] = set()
_MIN_SECRET = 6
_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")
_KEY_PARAM = re.compile(r"(?i)([?&](?:api[_-]?key|key|token|access_token)=)[^&\s#]+")
_BEARER = re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}")
_KEY_SHAPED = re.compile(r"\b(sk-(?:ant-|proj-)?)[A-Za-z0-9_*-]{6,}")


_REDACTED: dict[tuple[str, int], str] = {}


def redact(text: str) -> str:
    """`text` with every known secret, URL credential, key-like query parameter, bearer
    token and `sk-...` key replaced by `***`. Every error, log line and ledger record
    made by rubricflow's LLM layer passes through here."""
    # the same short texts (a provider's label, on every judgment) come back again and
    # again; secrets are only ever added, so their count tells a stale answer
    key = (text, len(_SECRETS))
    known = _REDACTED.get(key)
    if known is not None:
        return known
    original = text
    for secret in sorted(_SECRETS, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, "***")
    text = _USERINFO.sub("***@", text)
    text = _KEY_PARAM.sub(r"\1***", text)
    text = _BEARER.sub(r"\1***", text)
    text = _KEY_SHAPED.sub(r"\1***", text)
    if len(original) <= 256:
        if len(_REDACTED) >= 1024:
            _REDACTED.clear()
        _REDACTED[key] = text
    return text


class Secret:
    """An API key: `reveal()` gives it to the transport; `repr`, `str` and formatting show
    `***`, and its value is registered so `redact` scrubs it from any text."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value
        if len(value) >= _MIN_SECRET:
            _SECRETS.add(value)

    def reveal(self) -> str:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("a Secret cannot be pickled or copied out of the process")


def secret_from_env(*names: str) -> Secret | None:
    """The first non-empty environment variable of `names`, as a `Secret`."""
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return Secret(value)
    return None


class LLMError(RubricflowError):
    """A problem talking to an LLM provider (its message is already redacted)."""

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))


class TransportError(LLMError):
    """One attempt failed. `outcome` is the ledger outcome (`timeout`, `connection_error`,
    `rate_limited`, `http_error`, `error`); `retryable` says whether trying again may help;
    `retry_after` is the server's requested wait in seconds, when it gave one."""

    def __init__(
        self,
        outcome: CallOutcome,
        message: str,
        *,
        retryable: bool,
        retry_after: float | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.outcome: CallOutcome = outcome
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status


@dataclass(frozen=True)
class Price:
    """What a model costs, in your currency per million tokens."""

    input_per_million: float
    output_per_million: float

    def cost(self, input_tokens: int | None, output_tokens: int | None) -> float | None:
        if input_tokens is None and output_tokens is None:
            return None
        return (
            (input_tokens or 0) * self.input_per_million
            + (output_tokens or 0) * self.output_per_million
        ) / 1_000_000

    @classmethod
    def parse(cls, text: str) -> Price:
        """`"0.15,0.60"`: input and output price per million tokens."""
        parts = [part.strip() for part in text.split(",")]
        try:
            if len(parts) != 2:
                raise ValueError
            low, high = float(parts[0]), float(parts[1])
        except ValueError:
            raise ConfigurationError(
                f"price {text!r} is not `INPUT,OUTPUT` (cost per million input and output "
                "tokens, e.g. 0.15,0.60)"
            ) from None
        if low < 0 or high < 0:
            raise ConfigurationError(f"price {text!r} must not be negative")
        return cls(low, high)


@dataclass(frozen=True)
class ProviderSettings:
    """Limits and defaults for one provider.

    `timeout` bounds one attempt; `deadline` bounds a whole question including retries and
    back-off; `max_attempts` bounds transport attempts per question (timeouts, connection
    errors, 429 and 5xx are retried with exponential back-off and jitter, honouring
    Retry-After); `max_concurrency` bounds requests in flight; `rpm` (optional) spaces
    request starts to at most that many per minute; `reask` is how many times an invalid
    answer is sent back with the validation error.
    """

    timeout: float = 60.0
    connect_timeout: float = 10.0
    deadline: float = 180.0
    max_attempts: int = 4
    backoff_base: float = 0.5
    backoff_max: float = 20.0
    max_concurrency: int = 8
    rpm: float | None = None
    max_tokens: int = 1024
    temperature: float | None = 0.0
    reasoning_max_chars: int | None = None
    reask: int = 1
    price: Price | None = None
    logprobs: bool = False
    vision: bool | None = None
    """Whether the judge sees images (`--judge-vision`); None: known by its model name."""
    """Ask for the answer's token log-probabilities (OpenAI-compatible servers), from which
    a single answer's confidence is read (`rubricflow.llm.logprobs`)."""

    def __post_init__(self) -> None:
        checks: list[tuple[str, bool]] = [
            ("timeout", self.timeout > 0),
            ("connect_timeout", self.connect_timeout > 0),
            ("deadline", self.deadline > 0),
            ("max_attempts", self.max_attempts >= 1),
            ("backoff_base", self.backoff_base >= 0),
            ("backoff_max", self.backoff_max >= 0),
            ("max_concurrency", self.max_concurrency >= 1),
            ("rpm", self.rpm is None or self.rpm > 0),
            ("max_tokens", self.max_tokens >= 1),
            ("reask", self.reask >= 0),
            (
                "reasoning_max_chars",
                self.reasoning_max_chars is None or self.reasoning_max_chars > 0,
            ),
        ]
        for name, ok in checks:
            if not ok:
                raise ConfigurationError(
                    f"LLM setting {name}={getattr(self, name)!r} is out of range"
                )

    def with_overrides(self, **changes: Any) -> ProviderSettings:
        """A copy with `changes` applied (None values are ignored)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    @classmethod
    def from_env(cls, base: ProviderSettings | None = None) -> ProviderSettings:
        """`base` (or the defaults) with the `llm_*` settings that are set applied
        (`rubricflow.settings.current()`: RUBRICFLOW_LLM_TIMEOUT, DEADLINE, MAX_ATTEMPTS,
        CONCURRENCY, RPM, MAX_TOKENS, PRICE, LOGPROBS)."""
        given = current_settings()
        changes: dict[str, Any] = {
            "timeout": given.llm_timeout,
            "deadline": given.llm_deadline,
            "max_attempts": given.llm_max_attempts,
            "max_concurrency": given.llm_concurrency,
            "rpm": given.llm_rpm,
            "max_tokens": given.llm_max_tokens,
            "price": Price.parse(given.llm_price) if given.llm_price else None,
            "logprobs": given.llm_logprobs,
        }
        return replace(base or cls(), **{k: v for k, v in changes.items() if v is not None})


@dataclass(frozen=True)
class ProviderRequest:
    """One question for a model: chat messages, and the JSON Schema its answer must match
    (None when the answer is free text, e.g. RubricJudgeSpec's tags)."""

    messages: tuple[Message, ...]
    schema: Mapping[str, Any] | None = None
    schema_name: str = "answer"
    max_tokens: int = 1024
    temperature: float | None = 0.0
    images: tuple[ImagePart, ...] = ()
    """Images sent with the first user message, in the provider's own wire format."""
    sample: int = 0
    """Which of a question's samples this is: equal requests of different samples are
    different calls (a batch line each), not one."""

    @property
    def system(self) -> str:
        return "\n\n".join(m["content"] for m in self.messages if m["role"] == "system")

    @property
    def conversation(self) -> list[Message]:
        return [m for m in self.messages if m["role"] != "system"]


@dataclass(frozen=True)
class ProviderResponse:
    """A model's answer text (for a forced tool call, the tool input as JSON) and usage."""

    text: str
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    structured: bool = False
    logprobs: tuple[tuple[str, float], ...] | None = None
    """The answer's tokens with their log-probabilities, when the provider gave them."""


@dataclass
class _LoopState:
    loop: asyncio.AbstractEventLoop
    semaphore: OrderedSlots
    pacing: asyncio.Lock
    extra: dict[str, Any] = field(default_factory=dict)


class LLMProvider(ABC):
    """Base class of every provider. Subclasses implement `_send` (one attempt) and, when
    they hold resources, `_close`. The base applies the concurrency and RPM limits and the
    per-attempt timeout around `_send`.

    `kind` is the spec prefix (`openai`), `model` the model name, `endpoint` where requests
    go (without credentials); `structured_feature` names the provider feature used to
    enforce the answer schema.
    """

    kind: ClassVar[str] = "provider"
    structured_feature: ClassVar[str] = "none"
    vision: bool | None = None
    """Whether the judge sees images: True or False as its spec says (`vision: true`,
    `--judge-vision`), None to recognise well-known vision models by name."""
    accepts_images: ClassVar[bool] = False
    """Whether this provider sends images on the wire (OpenAI, Anthropic, Ollama do)."""

    def __init__(self, model: str, *, settings: ProviderSettings | None = None) -> None:
        self.model = model
        self.settings = settings or ProviderSettings()
        self._state: _LoopState | None = None
        self._next_start = 0.0

    @property
    def endpoint(self) -> str:
        return ""

    @property
    def structured_output(self) -> str:
        """The feature that enforces the answer schema (as currently in use)."""
        return self.structured_feature

    @property
    def label(self) -> str:
        """`kind:model[@endpoint]`, safe to print."""
        text = f"{self.kind}:{self.model}" if self.model else self.kind
        return redact(f"{text}@{self.endpoint}" if self.endpoint else text)

    @property
    def identity(self) -> str:
        """What distinguishes this provider's answers, for the cache key (no secrets)."""
        return self.label

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.label}>"

    def loop_state(self) -> _LoopState:
        """Loop-bound primitives (semaphore, pacing lock, clients), rebuilt when the running
        event loop changes (e.g. successive `asyncio.run` calls)."""
        loop = asyncio.get_running_loop()
        state = self._state
        if state is None or state.loop is not loop:
            state = _LoopState(loop, OrderedSlots(self.settings.max_concurrency), asyncio.Lock())
            self._state = state
            self._on_new_loop()
        return state

    def _on_new_loop(self) -> None:  # noqa: B027 - an optional hook
        """Called when primitives are rebuilt for a new event loop (drop loop-bound clients)."""

    async def _pace(self, state: _LoopState) -> None:
        if self.settings.rpm is None:
            return
        interval = 60.0 / self.settings.rpm
        async with state.pacing:  # held while waiting: starts are at least `interval` apart
            wait = self._next_start - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self._next_start = time.monotonic() + interval

    async def send(
        self, request: ProviderRequest, *, timeout: float | None = None
    ) -> ProviderResponse:
        """One attempt within the provider's limits; raises `TransportError` on failure."""
        state = self.loop_state()
        limit = self.settings.timeout if timeout is None else min(timeout, self.settings.timeout)
        async with state.semaphore, admitted():
            await self._pace(state)
            try:
                return await _within(self._send(request, limit), limit + 1.0)
            except asyncio.TimeoutError:
                raise TransportError(
                    "timeout", f"no answer within {limit:g}s", retryable=True
                ) from None
            except TransportError:
                raise
            except asyncio.CancelledError:
                raise
            except Exception as error:
                raise TransportError(
                    "error", f"{type(error).__name__}: {error}", retryable=False
                ) from None

    @abstractmethod
    async def _send(self, request: ProviderRequest, timeout: float) -> ProviderResponse:
        """Make one attempt, taking at most `timeout` seconds."""

    async def _close(self) -> None:  # noqa: B027 - an optional hook
        """Release resources (HTTP clients, models)."""

    async def aclose(self) -> None:
        await self._close()

    async def __aenter__(self) -> LLMProvider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


#: `asyncio.timeout` (Python 3.11+), looked up once: `_within` runs for every judge call
_DEADLINE: Any = getattr(asyncio, "timeout", None)


async def _within(work: Awaitable[ProviderResponse], seconds: float) -> ProviderResponse:
    """`work`'s result, or `asyncio.TimeoutError` after `seconds`. On Python 3.11+ the
    deadline is `asyncio.timeout`, which runs `work` in the caller's task: `wait_for`
    there wraps it in a task of its own, and the two extra event-loop turns it costs
    are spent holding a judge slot (about a tenth of a busy judge's throughput)."""
    if _DEADLINE is None:  # Python 3.10
        return await asyncio.wait_for(work, timeout=seconds)
    async with _DEADLINE(seconds):
        return await work


def schema_with_reasoning_limit(
    schema: Mapping[str, Any] | None, limit: int | None
) -> Mapping[str, Any] | None:
    """`schema` with `maxLength: limit` on every `reasoning` string property, so a
    grammar-constrained small model cannot ramble past its token budget."""
    if schema is None or limit is None:
        return schema

    def walk(node: Any) -> Any:
        if isinstance(node, Mapping):
            out = {key: walk(value) for key, value in node.items()}
            props = out.get("properties")
            if isinstance(props, dict) and isinstance(props.get("reasoning"), dict):
                props["reasoning"] = {**props["reasoning"], "maxLength": limit}
            return out
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    result: Mapping[str, Any] = walk(schema)
    return result


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The wait a server asked for: `retry-after-ms`, or `Retry-After` in seconds or as an
    HTTP date."""
    lowered = {key.lower(): value for key, value in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def join_nonempty(parts: Sequence[str], sep: str = "; ") -> str:
    return sep.join(part for part in parts if part)


RoleName = Literal["system", "user", "assistant"]

"""An LLM session: one provider (resolved lazily from a spec), one cache, and the loop
that turns a question into a validated answer with every call in the ledger.

`LLMSession.ask(question)`:
1. looks the question up in the cache (a hit is a ledger record with outcome `cached`
   and no request at all);
2. sends it, retrying timeouts, connection errors, 429 and 5xx with exponential back-off
   and jitter (honouring Retry-After) within `max_attempts` and the overall `deadline`;
3. scrubs every secret the provider sent (its key, URL credentials, in every encoding)
   from what the server returned, in case it echoes them: text, model name, errors;
4. validates the answer; an invalid one is sent back once (`reask`) with the validation
   error; only valid answers are cached (under the original question's key too, so a
   re-run costs zero calls);
5. returns the answer, or the reason there is none. It never raises for a judge failure.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import rubricflow.instrumentation as instrumentation
from rubricflow.conversation import ImagePart
from rubricflow.errors import ConfigurationError, RubricflowError
from rubricflow.instrumentation import JudgeCall
from rubricflow.llm.answers import AnswerError
from rubricflow.llm.base import (
    LLMProvider,
    Message,
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    TransportError,
    redact,
)
from rubricflow.llm.budget import CostBudget, expected_input_tokens
from rubricflow.llm.cache import JudgeCache, SQLiteJudgeCache, cache_key, default_cache
from rubricflow.llm.panel import Panel, as_panel
from rubricflow.llm.secrets import scrubber_of
from rubricflow.llm.transcript import blind_refusal, image_digests
from rubricflow.results import CallOutcome, LLMCall, canonical_json

if TYPE_CHECKING:
    from rubricflow.scoring import PluginSet, ScoringContext

__all__ = [
    "Answer",
    "LLMSession",
    "Question",
    "Reading",
    "backoff_delay",
    "llm_scope",
    "shared_llm_session",
]

logger = logging.getLogger("rubricflow.llm")
SESSION_OPTION = "llm_session"


@dataclass(frozen=True)
class Reading:
    """A parsed answer: `value`, plus `problems` that make it usable only in part (e.g. a
    one-shot answer missing a criterion). An answer with problems is re-asked and never
    cached."""

    value: Any
    problems: tuple[str, ...] = ()


def _read_answer(question: Question, text: str) -> tuple[Reading | None, str | None]:
    """The answer read (None when unreadable), and what is wrong with it (None when it is
    usable as it is)."""
    try:
        reading = _read(question, text)
    except AnswerError as error:
        return None, str(error)
    except Exception as error:  # a reader bug must not become a score
        return None, f"the answer could not be read: {type(error).__name__}: {error}"
    if reading.problems:
        return reading, "; ".join(reading.problems)
    return reading, None


def _nul_free(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "")
    if type(value) is dict:
        return {_nul_free(k): _nul_free(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_nul_free(v) for v in value)
    return value


def _read(question: Question, text: str) -> Reading:
    """The answer read, with every NUL dropped from the text the judge wrote (reasoning,
    evidence, feedback), raw or as a `\\u0000` escape in its JSON: no store keeps one
    (PostgreSQL refuses it in text). Fresh answers and cached ones alike."""
    reading = question.read(text.replace("\x00", ""))
    return replace(reading, value=_nul_free(reading.value))


@dataclass(frozen=True)
class Question:
    """One thing to ask a judge. `read` parses and validates the answer text (raising
    `AnswerError`); `schema` is sent to the provider's structured-output feature."""

    user: str
    read: Callable[[str], Reading]
    rubric_hash: str
    system: str | None = None
    schema: Mapping[str, Any] | None = None
    schema_name: str = "answer"
    criterion_ids: tuple[str, ...] = ()
    sample: int = 0
    temperature: float | None = None
    max_tokens: int | None = None
    reask_text: Callable[[str], str] | None = None
    images: tuple[ImagePart, ...] = ()
    """Images of the content, sent beside the prompt to a judge that sees them (their
    digests enter the cache key)."""
    about: Mapping[str, Any] | None = None
    """What the question is about, for people and for replay (not part of the cache key):
    rubric id, version and hash, criteria, target, prompt template name and hash. Stored
    with the cached answer; see rubricflow.llm.replay."""

    def messages(self) -> list[Message]:
        messages: list[Message] = []
        if self.system:
            messages.append({"role": "system", "content": self.system})
        messages.append({"role": "user", "content": self.user})
        return messages


@dataclass
class Answer:
    """What asking gave: the validated `value` (None when there is no usable answer), any
    `problems`, the `error` explaining what went wrong, and every ledger record."""

    value: Any = None
    problems: tuple[str, ...] = ()
    error: str | None = None
    calls: list[LLMCall] = field(default_factory=list)
    text: str | None = None
    """The answer's text as the judge wrote it (when there is a value)."""
    logprobs: tuple[tuple[str, float], ...] | None = None
    """Its tokens with their log-probabilities, when the provider gave them."""

    @property
    def ok(self) -> bool:
        return self.value is not None and not self.problems


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def backoff_delay(
    failures: int, settings: ProviderSettings, retry_after: float | None = None
) -> float:
    """Seconds to wait after the `failures`-th failed attempt: exponential from
    `backoff_base`, capped at `backoff_max`, with jitter (50-100% of the step); never less
    than the server's Retry-After."""
    step = min(settings.backoff_max, settings.backoff_base * 2.0 ** (failures - 1))
    delay = step * random.uniform(0.5, 1.0)
    if retry_after is not None:
        delay = max(delay, retry_after)
    return delay


CacheOption = JudgeCache | str | Path | None


def _resolve_cache(cache: CacheOption | bool) -> JudgeCache | None:
    if cache is None or cache is False:
        return None
    if cache is True or cache == "default":
        return default_cache()
    if isinstance(cache, str | Path):
        return SQLiteJudgeCache(cache)
    if isinstance(cache, JudgeCache):
        return cache
    raise ConfigurationError(
        "llm_cache must be a JudgeCache, a file path, 'default' or None, "
        f"not {type(cache).__name__}"
    )


class LLMSession:
    """A judge session: the provider (spec, provider object, or async callable), the answer
    cache (default: the local SQLite file; None turns it off) and defaults for judging.

    Use it as an async context manager or call `aclose()`; providers it created from a spec
    are closed with it, provider objects you passed in are yours to close.

    `llm` may be a judge panel (`Panel`, or a `panel:POLICY(A | B)` spec): the session
    then holds one session per judge (`members()`), sharing its cache.
    """

    member_label: str | None = None
    """The judge's label within a panel (set on a panel's member sessions)."""

    budget: CostBudget | None = None
    """A spending cap (`eval --max-cost`): a call that would pass it is not sent and its
    criterion is unable_to_evaluate with the reason "budget" (`rubricflow.llm.budget`)."""

    def __init__(
        self,
        llm: str | LLMProvider | Panel | Callable[[str, str], Awaitable[str]] | None = None,
        *,
        plugins: PluginSet | None = None,
        allow_import: bool = False,
        settings: ProviderSettings | Mapping[str, Any] | None = None,
        cache: CacheOption | bool = "default",
    ) -> None:
        self._llm = llm
        self._plugins = plugins
        self._allow_import = allow_import
        self._settings = settings
        self._provider: LLMProvider | None = None
        self._owned = False
        self._problem: RubricflowError | None = None
        self._cache_option: CacheOption | bool = cache
        self._cache: JudgeCache | None = None
        self._cache_resolved = False
        self._owns_cache = cache == "default" or cache is True or isinstance(cache, str | Path)
        self._panel: Panel | RubricflowError | None = None
        self._members: list[LLMSession] | None = None
        try:
            self._panel = as_panel(llm)
        except RubricflowError as error:  # reported when the judge is first needed
            self._panel = error

    @property
    def panel(self) -> Panel | None:
        """The judge panel this session asks, or None for a single judge."""
        return self._panel if isinstance(self._panel, Panel) else None

    def members(self) -> list[LLMSession]:
        """The sessions of the panel's judges (sharing this session's cache), or just this
        session for a single judge."""
        panel = self.panel
        if panel is None:
            return [self]
        if self._members is None:
            self._members = []
            for judge in panel.judges:
                member = LLMSession(
                    judge,
                    plugins=self._plugins,
                    allow_import=self._allow_import,
                    settings=self._settings,
                    cache=None,
                )
                member.cache = self.cache
                member.member_label = _panel_label(judge)
                self._members.append(member)
        return self._members

    @property
    def cache(self) -> JudgeCache | None:
        """The judge cache, resolved on first use: an evaluation that asks no judge never
        touches the cache file."""
        if not self._cache_resolved:
            self._cache = _resolve_cache(self._cache_option)
            self._cache_resolved = True
        return self._cache

    @cache.setter
    def cache(self, value: JudgeCache | None) -> None:
        self._cache, self._cache_resolved, self._owns_cache = value, True, False
        for member in getattr(self, "_members", None) or []:
            member.cache = value  # a panel's judges answer from the same cache

    @classmethod
    def from_options(
        cls,
        options: Mapping[str, Any],
        *,
        plugins: PluginSet | None = None,
        allow_import: bool = False,
    ) -> LLMSession:
        """A session from evaluate()'s options: `llm` (a spec, a provider, a callable, a
        `Panel`, or a list of judges with `panel` naming the policy), `llm_settings`,
        `llm_cache`."""
        llm = options.get("llm")
        if isinstance(llm, LLMSession):
            return llm
        if isinstance(llm, list | tuple):
            llm = Panel(llm, options.get("panel") or "majority")
        return cls(
            llm,
            plugins=plugins,
            allow_import=allow_import,
            settings=options.get("llm_settings"),
            cache=options.get("llm_cache", "default"),
        )

    def provider_now(self) -> LLMProvider:
        """The provider, created on first use; raises `ConfigurationError` (or
        `UnsafeImportError`) when none can be made."""
        if self._provider is not None:
            return self._provider
        if self._problem is not None:
            raise self._problem
        llm = self._llm
        try:
            if isinstance(self._panel, RubricflowError):
                raise self._panel
            if self._panel is not None:
                self._provider = self._panel_provider(self._panel)
            elif isinstance(llm, LLMProvider):
                self._provider = llm
            elif llm is None or isinstance(llm, str):
                from rubricflow.llm.specs import create_provider

                self._provider = create_provider(
                    llm,
                    plugins=self._plugins,
                    settings=self._settings,
                    allow_import=self._allow_import,
                )
                self._owned = True
            elif callable(llm):
                from rubricflow.llm.providers.callable import CallableProvider

                settings = self._settings
                if isinstance(settings, Mapping):
                    settings = ProviderSettings.from_env().with_overrides(**settings)
                self._provider = CallableProvider(llm, settings=settings)
                self._owned = True
            else:
                raise ConfigurationError(
                    f"llm must be a spec string, an LLMProvider or an async "
                    f"(system_prompt, user_prompt) -> str function, not {type(llm).__name__}"
                )
        except RubricflowError as error:
            self._problem = error
            raise
        return self._provider

    def _panel_provider(self, panel: Panel) -> LLMProvider:
        """Every judge of the panel made now (the first that cannot be is named), and the
        stand-in provider that names the panel."""
        from rubricflow.llm.panel_provider import PanelProvider

        providers = []
        for member in self.members():
            try:
                providers.append(member.provider_now())
            except RubricflowError as error:
                raise type(error)(f"panel judge {member.member_label}: {error}") from None
        return PanelProvider(panel, providers)

    async def provider(self) -> LLMProvider:
        return self.provider_now()

    async def aclose(self) -> None:
        members, self._members = self._members, None
        for member in members or []:
            await member.aclose()
        provider, self._provider = self._provider, None
        if provider is not None and self._owned:
            await provider.aclose()
        if self._cache_resolved and self._owns_cache and isinstance(self._cache, SQLiteJudgeCache):
            self._cache.close()

    async def __aenter__(self) -> LLMSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- asking -----------------------------------------------------------------------

    async def ask(self, question: Question) -> Answer:
        """Ask, validate, re-ask once, cache; never raises for a judge failure. A panel's
        session hands a lone question (a feedback summary, a ranking) to its first judge;
        the judging strategies ask every judge (`rubricflow.llm.judges`)."""
        answer = Answer()
        try:
            provider = self.provider_now()
        except RubricflowError as error:
            answer.error = str(error)
            return answer
        if self.panel is not None:
            return await self.members()[0].ask(question)
        refusal = blind_refusal(provider, question.images)
        if refusal is not None:
            answer.error = refusal
            return answer
        settings = provider.settings
        temperature = (
            question.temperature if question.temperature is not None else settings.temperature
        )
        max_tokens = question.max_tokens or settings.max_tokens
        params = {
            "temperature": temperature,
            "max_tokens": max_tokens,
            "sample": question.sample,
            "reasoning_max_chars": settings.reasoning_max_chars,
            # only when asked, so answers cached without log-probabilities keep their keys
            **({"logprobs": True} if settings.logprobs else {}),
            **({"images": image_digests(question.images)} if question.images else {}),
        }
        messages = question.messages()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + settings.deadline
        attempt = 0
        keys: list[str] = []
        best: Reading | None = None
        last_error = ""
        rounds = settings.reask + 1
        for round_number in range(rounds):
            prompt_hash = _sha256(canonical_json(messages))
            key = cache_key(
                provider=provider.identity,
                params=params,
                messages=messages,
                schema=question.schema,
                rubric_hash=question.rubric_hash,
                messages_hash=prompt_hash,
            )
            keys.append(key)
            hit = await self._from_cache(provider, question, key, prompt_hash, attempt + 1)
            if hit is not None:
                answer.value = hit[0].value
                answer.calls.append(hit[1])
                answer.text, answer.logprobs = hit[2].text, hit[2].logprobs
                return answer
            request = ProviderRequest(
                messages=tuple(messages),
                schema=question.schema,
                schema_name=question.schema_name,
                max_tokens=max_tokens,
                temperature=temperature,
                images=question.images,
                sample=question.sample,
            )
            sent = await self._paid_transport(
                provider, request, question, prompt_hash, answer, attempt, deadline
            )
            if sent is None:
                if best is not None:
                    answer.value, answer.problems = best.value, best.problems
                return answer
            response, latency_ms, attempt = sent
            # a server may echo the credentials it received: they never go further
            response = scrubber_of(provider).response(response)
            reading, problem = _read_answer(question, response.text)
            if reading is not None and problem is not None:
                best = reading  # usable in part: kept should no round do better
            outcome: CallOutcome = "ok" if problem is None else "invalid_answer"
            answer.calls.append(
                self._record(
                    provider,
                    question,
                    prompt_hash,
                    response,
                    latency_ms,
                    attempt,
                    outcome,
                    problem,
                    messages=messages,
                )
            )
            if problem is None and reading is not None:
                answer.value = reading.value
                answer.problems = ()
                answer.text, answer.logprobs = response.text, response.logprobs
                await self._store(keys, response, provider, question)
                return answer
            last_error = problem or "unusable answer"
            logger.info("judge answer rejected (%s): %s", provider.label, redact(last_error))
            if round_number + 1 < rounds:
                messages = [
                    *messages,
                    {"role": "assistant", "content": response.text},
                    {"role": "user", "content": self._reask(question, last_error)},
                ]
        tries = f"{rounds} answer{'s' if rounds != 1 else ''}"
        answer.error = f"no valid judge answer after {tries}: {last_error}"
        if best is not None:
            answer.value, answer.problems = best.value, best.problems
        return answer

    def _reask(self, question: Question, error: str) -> str:
        if question.reask_text is not None:
            return question.reask_text(error)
        from rubricflow.llm.prompts import reask_message

        return reask_message(error, question.schema)

    def _record(
        self,
        provider: LLMProvider,
        question: Question,
        prompt_hash: str,
        response: ProviderResponse | None,
        latency_ms: float,
        attempt: int,
        outcome: CallOutcome,
        error: str | None,
        *,
        messages: Sequence[Message] = (),
    ) -> LLMCall:
        price = provider.settings.price
        scrubber = scrubber_of(provider)
        cost = None
        if response is not None and price is not None and outcome != "cached":
            cost = price.cost(response.input_tokens, response.output_tokens)
        call = LLMCall(
            provider=provider.kind,
            model=scrubber.scrub(
                response.model if response is not None and response.model else provider.model
            ),
            prompt_hash=prompt_hash,
            response_hash=_sha256(response.text) if response is not None else None,
            criterion_ids=question.criterion_ids,
            input_tokens=response.input_tokens if response is not None else None,
            output_tokens=response.output_tokens if response is not None else None,
            latency_ms=round(latency_ms, 3),
            attempt=attempt,
            outcome=outcome,
            error=scrubber.scrub(redact(error))[:500] if error else None,
            cost=cost,
            created_at=_now(),
        )
        observer = instrumentation.current()
        if observer.enabled and outcome != "cached":
            observer.judge_call(
                JudgeCall(
                    call=call,
                    provider=provider.kind,
                    request_model=provider.model,
                    endpoint=provider.endpoint,
                    messages=messages,
                    answer=response.text if response is not None else None,
                )
            )
        return call

    async def _paid_transport(
        self,
        provider: LLMProvider,
        request: ProviderRequest,
        question: Question,
        prompt_hash: str,
        answer: Answer,
        attempt: int,
        deadline: float,
    ) -> tuple[ProviderResponse, float, int] | None:
        """`_transport` within the session's budget: refused (`answer.error` starting
        with "budget") when the call's expected cost would pass it, else its cost charged."""
        budget, price = self.budget, provider.settings.price
        if budget is None or price is None:
            return await self._transport(
                provider, request, question, prompt_hash, answer, attempt, deadline
            )
        tokens = expected_input_tokens(request.messages)
        reserved = await budget.reserve(price, tokens, request.max_tokens)
        if reserved is None:
            answer.error = budget.refusal()
            return None
        before = len(answer.calls)
        sent = None
        try:
            sent = await self._transport(
                provider, request, question, prompt_hash, answer, attempt, deadline
            )
            return sent
        finally:
            cost = sum(call.cost or 0.0 for call in answer.calls[before:])
            if sent is not None:
                cost += price.cost(sent[0].input_tokens, sent[0].output_tokens) or 0.0
            await budget.settle(reserved, cost, sent[0].output_tokens if sent else None)

    async def _transport(
        self,
        provider: LLMProvider,
        request: ProviderRequest,
        question: Question,
        prompt_hash: str,
        answer: Answer,
        attempt: int,
        deadline: float,
    ) -> tuple[ProviderResponse, float, int] | None:
        """Send with retries. Failed attempts go to the ledger; on giving up, sets
        `answer.error` and returns None."""
        settings = provider.settings
        loop = asyncio.get_running_loop()
        failures = 0
        while True:
            attempt += 1
            remaining = deadline - loop.time()
            if remaining <= 0:
                answer.error = f"the {settings.deadline:g}s deadline passed before an answer"
                return None
            started = time.perf_counter()
            try:
                response = await provider.send(request, timeout=remaining)
            except TransportError as failed:
                # its message may quote an error body that echoes the credentials
                error = scrubber_of(provider).error(failed)
                latency = (time.perf_counter() - started) * 1000
                answer.calls.append(
                    self._record(
                        provider,
                        question,
                        prompt_hash,
                        None,
                        latency,
                        attempt,
                        error.outcome,
                        str(error),
                        messages=request.messages,
                    )
                )
                failures += 1
                if not error.retryable:
                    answer.error = f"judge call failed: {error}"
                    return None
                if failures >= settings.max_attempts:
                    tries = f"{failures} attempt{'s' * (failures != 1)}"
                    answer.error = f"judge call failed after {tries}: {error}"
                    return None
                delay = backoff_delay(failures, settings, error.retry_after)
                if loop.time() + delay >= deadline:
                    answer.error = (
                        f"judge call failed after {failures} attempt{'s' * (failures != 1)}; "
                        f"waiting {delay:.3g}s more would pass the {settings.deadline:g}s "
                        f"deadline: {error}"
                    )
                    return None
                logger.warning(
                    "%s attempt %d failed (%s); retrying in %.2fs",
                    provider.label,
                    attempt,
                    error,
                    delay,
                )
                await asyncio.sleep(delay)
                continue
            return response, (time.perf_counter() - started) * 1000, attempt

    async def _from_cache(
        self, provider: LLMProvider, question: Question, key: str, prompt_hash: str, attempt: int
    ) -> tuple[Reading, LLMCall, ProviderResponse] | None:
        if self.cache is None:
            return None
        started = time.perf_counter()
        try:
            raw = await self.cache.get(key)
        except Exception as error:
            logger.warning("judge cache lookup failed: %s", redact(str(error)))
            return None
        if raw is None:
            # a replay cache (rubricflow.llm.replay) notes what it had no answer for
            note_miss = getattr(self.cache, "note_miss", None)
            if note_miss is not None:
                note_miss(key, question.about)
            return None
        try:
            stored = json.loads(raw)
            text = scrubber_of(provider).scrub(stored["text"])
            cached = _read(question, text)
        except Exception:
            return None  # an entry this version cannot use is a miss, never an answer
        if cached.problems:
            return None
        response = ProviderResponse(
            text=text,
            model=scrubber_of(provider).scrub_optional(stored.get("model")),
            input_tokens=stored.get("input_tokens"),
            output_tokens=stored.get("output_tokens"),
            logprobs=_stored_logprobs(stored.get("logprobs")),
        )
        latency = (time.perf_counter() - started) * 1000
        record = self._record(
            provider, question, prompt_hash, response, latency, attempt, "cached", None
        )
        return cached, record, response

    async def _store(
        self,
        keys: list[str],
        response: ProviderResponse,
        provider: LLMProvider,
        question: Question,
    ) -> None:
        if self.cache is None or not keys:
            return
        entry: dict[str, Any] = {
            "text": response.text,
            "model": response.model,
            "input_tokens": response.input_tokens,
            "output_tokens": response.output_tokens,
            "created_at": _now(),
            "provider": provider.identity,
        }
        if response.logprobs is not None:
            entry["logprobs"] = [list(pair) for pair in response.logprobs]
        if question.about is not None:
            entry["about"] = dict(question.about)
        value = json.dumps(entry, ensure_ascii=False)
        for key in keys:
            try:
                await self.cache.put(key, value)
            except Exception as error:
                logger.warning("judge cache write failed: %s", redact(str(error)))
                return


def _stored_logprobs(raw: Any) -> tuple[tuple[str, float], ...] | None:
    """A cache entry's log-probabilities, or None when it has none usable."""
    if not isinstance(raw, list):
        return None
    try:
        return tuple((str(token), float(logprob)) for token, logprob in raw)
    except (TypeError, ValueError):
        return None


def _panel_label(judge: Any) -> str:
    if isinstance(judge, str):
        return redact(judge.strip())
    label = getattr(judge, "label", None)
    return label if isinstance(label, str) else getattr(judge, "__name__", type(judge).__name__)


def session_of(context: ScoringContext) -> LLMSession:
    """The session of an evaluation (set by the executor), or a new one from its options."""
    session = context.options.get(SESSION_OPTION)
    if isinstance(session, LLMSession):
        return session
    session = LLMSession.from_options(
        context.options, plugins=context.plugins, allow_import=context.allow_import
    )
    context.options[SESSION_OPTION] = session
    return session


@asynccontextmanager
async def llm_scope(context: ScoringContext) -> AsyncIterator[LLMSession]:
    """The session for one evaluation: the caller's (options `llm` holding an
    `LLMSession`, or one already in the context), else a new one closed afterwards.
    Nothing is opened until a judge asks."""
    existing = context.options.get(SESSION_OPTION)
    if isinstance(existing, LLMSession):
        yield existing
        return
    session = LLMSession.from_options(
        context.options, plugins=context.plugins, allow_import=context.allow_import
    )
    context.options[SESSION_OPTION] = session
    owned = session is not context.options.get("llm")
    try:
        yield session
    finally:
        if owned:
            await session.aclose()


@asynccontextmanager
async def shared_llm_session(evaluate_options: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    """For `evaluate_many`: one session (one HTTP client, one cache connection) shared by
    every target. Yields the keyword arguments for `evaluate` with the session in place."""
    inner = dict(evaluate_options.get("options") or {})
    if isinstance(inner.get("llm"), LLMSession):
        yield evaluate_options
        return
    session = LLMSession.from_options(
        inner,
        plugins=evaluate_options.get("plugins"),
        allow_import=bool(evaluate_options.get("allow_import", False)),
    )
    inner["llm"] = session
    try:
        yield {**evaluate_options, "options": inner}
    finally:
        await session.aclose()


def with_sample(question: Question, sample: int, temperature: float | None) -> Question:
    return replace(question, sample=sample, temperature=temperature)

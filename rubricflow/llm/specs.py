"""Provider spec strings and the built-in provider factories.

A spec is `PREFIX[:MODEL][@BASE_URL]`: `openai:gpt-4o-mini`,
`openai:qwen2.5@http://127.0.0.1:8000/v1`, `anthropic:claude-3-5-haiku-latest`,
`ollama:llama3.2[@http://host:11434]`, `local[:/path/model.gguf]`,
`python:package.module:function`. The prefix picks a factory registered through the
`rubricflow_llm_providers` hook; RUBRICFLOW_LLM holds the default spec.

Keys come from the environment, never from a spec or a rubric, and a key goes only where
it is meant to: OPENAI_API_KEY / ANTHROPIC_API_KEY only to the provider's own host
(api.openai.com, api.anthropic.com) or to the base URL configured for that provider
(OPENAI_BASE_URL / ANTHROPIC_BASE_URL); any other host gets RUBRICFLOW_LLM_API_KEY, if
set, and otherwise no key. A spec holding a `key=`-like setting is refused.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rubricflow.errors import ConfigurationError, UnsafeImportError
from rubricflow.llm.base import (
    LLMProvider,
    ProviderSettings,
    Secret,
    redact,
    secret_from_env,
)
from rubricflow.settings import current, env_name

if TYPE_CHECKING:
    from rubricflow.scoring import PluginSet

__all__ = [
    "BUILTIN_FACTORIES",
    "ENV_VARS",
    "KEY_ENV",
    "LLM_ENV",
    "ProviderSpec",
    "create_provider",
    "default_spec",
    "key_for",
    "parse_spec",
]

LLM_ENV = env_name("llm")
KEY_ENV = env_name("llm_api_key")
"""The key for a judge host that is not a provider's own (nor its configured base URL)."""
ENV_VARS = (
    LLM_ENV,
    KEY_ENV,
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OLLAMA_HOST",
    *(
        env_name(name)
        for name in (
            "local_model",
            "llm_timeout",
            "llm_deadline",
            "llm_max_attempts",
            "llm_concurrency",
            "llm_rpm",
            "llm_max_tokens",
            "llm_price",
            "llm_logprobs",
        )
    ),
)
"""Every environment variable the LLM layer reads (RUBRICFLOW_CACHE_DIR aside)."""


@dataclass(frozen=True)
class ProviderSpec:
    """A parsed spec handed to a provider factory: `prefix`, `model` (may be empty),
    `base_url` (None for the default), plus the caller's settings and options."""

    text: str
    prefix: str
    model: str
    base_url: str | None
    settings: ProviderSettings | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)
    allow_import: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return redact(self.text)

    def resolve_settings(self, base: ProviderSettings | None = None) -> ProviderSettings:
        """Explicit settings win; otherwise the provider's base, then RUBRICFLOW_LLM_*
        environment overrides, then the caller's overrides."""
        if self.settings is not None:
            return self.settings
        return ProviderSettings.from_env(base).with_overrides(**self.overrides)


def parse_spec(text: str) -> tuple[str, str, str | None]:
    """(prefix, model, base_url) of `PREFIX[:MODEL][@BASE_URL]`."""
    text = text.strip()
    if not text:
        raise ConfigurationError("an LLM spec is empty; write e.g. openai:gpt-4o-mini")
    prefix, _, rest = text.partition(":")
    prefix = prefix.strip().lower()
    model, at, url = rest.partition("@")
    if prefix == "python":
        return prefix, rest.strip(), None
    return prefix, model.strip(), (url.strip() or None) if at else None


_KEY_SETTING = re.compile(r"(?i)(api[_-]?key|\bkey|token|secret|passw(?:or)?d|credentials?)\s*=")
_PROVIDER_KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def _refuse_key_in_spec(prefix: str, model: str) -> None:
    """A spec never carries a key: it is stored with the run and shown in reports.
    (Credentials inside the base URL are the URL's, sent only to that host and masked
    wherever the URL is kept.)"""
    found = _KEY_SETTING.search(model)
    if found is None or prefix == "python":
        return
    own = _PROVIDER_KEYS.get(prefix)
    where = (
        f"export {own} (sent only to the provider's own API or to the base URL configured "
        f"for it), or {KEY_ENV} for any other host"
        if own
        else f"export {KEY_ENV} (the key for a judge host that is not a provider's own)"
    )
    raise ConfigurationError(
        f"the LLM spec for {prefix!r} holds a key setting ({found.group(1)}=...): keys are "
        f"never read from a spec, which is stored with every run and shown in reports; "
        f"remove it and {where}"
    )


def _origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of a URL, default ports filled in."""
    import httpx

    from rubricflow.llm.http import normalise_base_url

    try:
        parsed = httpx.URL(normalise_base_url(url))
    except Exception:
        return ("", url, None)
    default = {"http": 80, "https": 443}.get(parsed.scheme)
    return (parsed.scheme, parsed.host.lower(), parsed.port or default)


def key_for(
    base_url: str, *, key_env: str, default_url: str, base_env: str
) -> tuple[Secret | None, str | None]:
    """The key to send to `base_url`, and the variable it came from: `key_env` (the
    provider's own key) only when the URL is the provider's own host (`default_url`) or
    the base URL configured for it (`base_env`); for any other host, RUBRICFLOW_LLM_API_KEY
    if set; otherwise none."""
    own = {_origin(default_url)}
    configured = os.environ.get(base_env, "").strip()
    if configured:
        own.add(_origin(configured))
    if _origin(base_url) in own:
        return secret_from_env(key_env), key_env
    key = own_host_key()
    return key, KEY_ENV if key is not None else None


def default_spec() -> str | None:
    """The spec in `Settings.llm` (RUBRICFLOW_LLM), if set."""
    return current().llm


def own_host_key() -> Secret | None:
    """`Settings.llm_api_key` (RUBRICFLOW_LLM_API_KEY): the key for any other host."""
    key = current().llm_api_key
    return Secret(key.strip()) if key and key.strip() else None


def create_provider(
    spec: str | None = None,
    *,
    plugins: PluginSet | None = None,
    settings: ProviderSettings | Mapping[str, Any] | None = None,
    allow_import: bool = False,
    **options: Any,
) -> LLMProvider:
    """The provider a spec names (default: RUBRICFLOW_LLM). Raises `ConfigurationError`
    for an unknown prefix or a missing key, `UnsafeImportError` for `python:` without
    `allow_import`."""
    text = spec if spec is not None else default_spec()
    if text is None:
        raise ConfigurationError(
            f"no LLM judge is configured: pass --llm SPEC (or llm=... in Python) or set "
            f"{LLM_ENV}, e.g. openai:gpt-4o-mini, anthropic:claude-3-5-haiku-latest, "
            "ollama:llama3.2 or local"
        )
    prefix, model, base_url = parse_spec(text)
    _refuse_key_in_spec(prefix, model)
    vision = options.pop("vision", None)  # whether the judge sees images, for every provider
    if vision is not None and not isinstance(vision, bool):
        raise ConfigurationError(f"the judge option vision is true or false, got {vision!r}")
    if plugins is None:
        from rubricflow.plugins import default_plugins

        plugins = default_plugins()
    factories: Mapping[str, Callable[..., Any]] = plugins.providers
    factory = factories.get(prefix)
    if factory is None:
        known = ", ".join(sorted(factories)) or "none"
        raise ConfigurationError(
            f"unknown LLM provider {prefix!r} in spec {redact(text)!r}; known providers: {known}"
        )
    explicit = settings if isinstance(settings, ProviderSettings) else None
    overrides = dict(settings) if isinstance(settings, Mapping) else {}
    parsed = ProviderSpec(
        text=text,
        prefix=prefix,
        model=model,
        base_url=base_url,
        settings=explicit,
        overrides=overrides,
        allow_import=allow_import,
        options=options,
    )
    try:
        provider = factory(parsed)
    except (ConfigurationError, UnsafeImportError):
        raise
    except Exception as error:
        raise ConfigurationError(
            f"LLM provider {prefix!r} could not be created from {redact(text)!r}: "
            f"{type(error).__name__}: {redact(str(error))}"
        ) from None
    if not isinstance(provider, LLMProvider):
        raise ConfigurationError(
            f"LLM provider factory {prefix!r} returned {type(provider).__name__}, "
            "not an LLMProvider"
        )
    if vision is not None:
        provider.vision = vision
    return provider


def _need_model(spec: ProviderSpec, example: str) -> str:
    if not spec.model:
        raise ConfigurationError(
            f"LLM spec {spec.label!r} names no model; write e.g. {spec.prefix}:{example}"
        )
    return spec.model


def _openai(spec: ProviderSpec) -> LLMProvider:
    from rubricflow.llm.providers.openai import DEFAULT_OPENAI_URL, OpenAIProvider

    model = _need_model(spec, "gpt-4o-mini")
    base_url = spec.base_url or os.environ.get("OPENAI_BASE_URL", "").strip() or DEFAULT_OPENAI_URL
    key, source = key_for(
        base_url,
        key_env="OPENAI_API_KEY",
        default_url=DEFAULT_OPENAI_URL,
        base_env="OPENAI_BASE_URL",
    )
    if key is None and _origin(base_url)[1] == "api.openai.com":
        raise ConfigurationError(
            "OPENAI_API_KEY is not set (it is sent only to https://api.openai.com or to "
            "OPENAI_BASE_URL); export it, or point the spec at an OpenAI-compatible "
            "server that needs no key: openai:MODEL@http://127.0.0.1:8000/v1"
        )
    provider = OpenAIProvider(
        model,
        base_url=base_url,
        api_key=key,
        settings=spec.resolve_settings(),
        **dict(spec.options),
    )
    provider.key_source = source
    return provider


def _anthropic(spec: ProviderSpec) -> LLMProvider:
    from rubricflow.llm.providers.anthropic import DEFAULT_ANTHROPIC_URL, AnthropicProvider

    model = _need_model(spec, "claude-3-5-haiku-latest")
    base_url = (
        spec.base_url or os.environ.get("ANTHROPIC_BASE_URL", "").strip() or DEFAULT_ANTHROPIC_URL
    )
    key, source = key_for(
        base_url,
        key_env="ANTHROPIC_API_KEY",
        default_url=DEFAULT_ANTHROPIC_URL,
        base_env="ANTHROPIC_BASE_URL",
    )
    if key is None and _origin(base_url)[1] == "api.anthropic.com":
        raise ConfigurationError(
            "ANTHROPIC_API_KEY is not set (it is sent only to https://api.anthropic.com or "
            "to ANTHROPIC_BASE_URL); export it to use anthropic:"
        )
    provider = AnthropicProvider(
        model,
        base_url=base_url,
        api_key=key,
        settings=spec.resolve_settings(),
        **dict(spec.options),
    )
    provider.key_source = source
    return provider


def _ollama(spec: ProviderSpec) -> LLMProvider:
    from rubricflow.llm.providers.ollama import DEFAULT_OLLAMA_URL, OllamaProvider

    model = _need_model(spec, "llama3.2")
    base_url = spec.base_url or os.environ.get("OLLAMA_HOST", "").strip() or DEFAULT_OLLAMA_URL
    # Ollama has no key of its own: a gateway in front of it gets RUBRICFLOW_LLM_API_KEY
    key = own_host_key()
    provider = OllamaProvider(
        model,
        base_url=base_url,
        api_key=key,
        settings=spec.resolve_settings(),
        **dict(spec.options),
    )
    provider.key_source = KEY_ENV if key is not None else None
    return provider


def _local(spec: ProviderSpec) -> LLMProvider:
    from rubricflow.llm.providers.local import LOCAL_SETTINGS, LocalProvider

    return LocalProvider(
        spec.model or None,
        settings=spec.resolve_settings(LOCAL_SETTINGS),
        **dict(spec.options),
    )


def _python(spec: ProviderSpec) -> LLMProvider:
    from rubricflow.llm.providers.callable import CallableProvider

    name = spec.model
    if ":" not in name:
        raise ConfigurationError(
            f"LLM spec {spec.label!r} must name python:module:function "
            "(an async (system_prompt, user_prompt) -> str)"
        )
    if not spec.allow_import:
        raise UnsafeImportError(
            f"LLM spec {spec.label!r} names code to import; rubricflow imports it only when "
            "you allow it (allow_import=True or --allow-import)"
        )
    module_name, _, attribute = name.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except Exception as error:
        raise ConfigurationError(
            f"cannot import judge function {name!r}: {type(error).__name__}: {error}"
        ) from None
    if not callable(target):
        raise ConfigurationError(f"judge function {name!r} is not callable")
    return CallableProvider(target, name=name, settings=spec.resolve_settings())


BUILTIN_FACTORIES: dict[str, Callable[[ProviderSpec], LLMProvider]] = {
    "openai": _openai,
    "anthropic": _anthropic,
    "ollama": _ollama,
    "local": _local,
    "python": _python,
}

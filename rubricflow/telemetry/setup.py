"""Turning telemetry on and off: `instrument`, `uninstrument`, and `automatic` (what
the engine's instrumentation seam calls on the first evaluation)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any

import rubricflow.instrumentation as instrumentation
from rubricflow.errors import ConfigurationError
from rubricflow.telemetry import conventions as names
from rubricflow.telemetry.content import capture_content as content_setting

if TYPE_CHECKING:  # imported when instrumenting: the automatic path stays light
    from rubricflow.plugins import PluginRegistry
    from rubricflow.review.events import EventBus

__all__ = [
    "api_installed",
    "attach",
    "automatic",
    "instrument",
    "sdk_configured",
    "uninstrument",
]

INSTALL_HINT = "install it with: pip install 'rubricflow[otel]' (and an SDK to export spans)"


@dataclass
class _Installed:
    """What `instrument` did, so `uninstrument` can undo it."""

    listeners: list[tuple[EventBus, Callable[[Mapping[str, Any]], None]]] = field(
        default_factory=list
    )


_installed = _Installed()


def api_installed() -> bool:
    """Whether `opentelemetry-api` can be imported (without importing it)."""
    try:
        return importlib.util.find_spec("opentelemetry.trace") is not None
    except (ImportError, ValueError):
        return False


def sdk_configured() -> bool:
    """Whether the program set a real tracer provider (an SDK's), not the API's proxy or
    no-op one."""
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)


def _tracer(tracer_provider: Any | None) -> Any:
    from opentelemetry import trace

    return trace.get_tracer(
        names.INSTRUMENTATION_NAME,
        metadata.version("rubricflow"),
        tracer_provider=tracer_provider,
    )


def _plugins_of(target: Any) -> PluginRegistry:
    from rubricflow.plugins import PluginRegistry, default_plugins

    if target is None:
        return default_plugins()
    if isinstance(target, PluginRegistry):
        return target
    plugins = getattr(target, "plugins", None)
    if isinstance(plugins, PluginRegistry):
        return plugins
    raise ConfigurationError(
        f"cannot instrument a {type(target).__name__}: pass an Application, an "
        "ArtifactRegistry, a PluginRegistry, or nothing (the default plugin registry)"
    )


def instrument(
    target: Any = None,
    *,
    tracer_provider: Any | None = None,
    capture_content: bool | None = None,
) -> None:
    """Trace evaluations, criteria and judge calls, and record the review transitions of
    `target` (an `Application`, an `ArtifactRegistry` or a `PluginRegistry`; default: the
    default plugin registry) as span events, through `tracer_provider` (default: the global
    one). `capture_content` (default: the environment, see `rubricflow.telemetry.content`)
    puts prompts, answers and explanations on spans. Calling it again adds another
    registry's transitions and replaces the span settings."""
    if not api_installed():
        raise ConfigurationError(f"OpenTelemetry needs opentelemetry-api; {INSTALL_HINT}")
    from rubricflow.review.events import EventBus
    from rubricflow.telemetry.spans import SpanInstrumentation
    from rubricflow.telemetry.transitions import TransitionListener

    capture = content_setting(capture_content)
    tracer = _tracer(tracer_provider)
    instrumentation.install(SpanInstrumentation(tracer, capture_content=capture))
    bus = EventBus.of(_plugins_of(target))
    for index, (heard_on, listener) in enumerate(list(_installed.listeners)):
        if heard_on is bus:  # one listener per bus: the new settings replace the old
            bus.remove_callback(listener)
            del _installed.listeners[index]
    listener = TransitionListener(tracer, capture_content=capture)
    bus.add_callback(listener)
    _installed.listeners.append((bus, listener))


def attach(target: Any) -> Callable[[], None]:
    """For the long-running faces (the server, the CLI's commands and workers): when
    telemetry is on (an SDK tracer provider configured, or `RUBRICFLOW_OTEL=1`), record
    the review transitions of `target` (an `Application`, ...) with the spans' settings,
    and return what undoes it. When it is off this imports nothing and does nothing."""
    chosen = instrumentation.current()
    if not chosen.enabled:
        return _nothing
    from rubricflow.review.events import EventBus
    from rubricflow.telemetry.spans import SpanInstrumentation
    from rubricflow.telemetry.transitions import TransitionListener

    if not isinstance(chosen, SpanInstrumentation):
        return _nothing
    bus = EventBus.of(_plugins_of(target))
    listener = TransitionListener(chosen.tracer, capture_content=chosen.capture_content)
    bus.add_callback(listener)
    return lambda: bus.remove_callback(listener)


def _nothing() -> None:
    return None


def uninstrument() -> None:
    """Stop tracing: no more spans from evaluations, no more transition events."""
    for bus, listener in _installed.listeners:
        bus.remove_callback(listener)
    _installed.listeners.clear()
    instrumentation.install(None)


def automatic(*, required: bool = False) -> instrumentation.Instrumentation:
    """What the instrumentation seam uses when nobody called `instrument`: spans when an
    SDK tracer provider is configured (or, when `required` by `RUBRICFLOW_OTEL=1`, through
    the global provider whatever it is), else nothing."""
    if not api_installed():
        if required:
            raise ConfigurationError(
                f"{instrumentation.OTEL_ENV}=1 needs opentelemetry-api; {INSTALL_HINT}"
            )
        return instrumentation.Instrumentation()
    if not required and not sdk_configured():
        return instrumentation.Instrumentation()
    from rubricflow.telemetry.spans import SpanInstrumentation

    return SpanInstrumentation(_tracer(None), capture_content=content_setting())

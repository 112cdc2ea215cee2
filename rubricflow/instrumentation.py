"""The instrumentation seam: where the engine and the judge report what they time.

The executor opens a probe around an evaluation and around each criterion (or group of
criteria scored together), and the judge session reports every call it records in its
ledger. By default the probes are one shared do-nothing object and no call report is
built, so an uninstrumented evaluation pays for a few attribute lookups and nothing more.

`rubricflow.telemetry` plugs in here (OpenTelemetry spans); it sits far above this layer,
so it is found by module name (as the built-in plugins are), and only when it could be
wanted: `RUBRICFLOW_OTEL=1`, or `opentelemetry` already imported by the program (which is
how an SDK tracer provider gets configured). The choice is made once, on the first
evaluation, and cached; `install` and `reset` change it.
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rubricflow.settings import current as current_settings
from rubricflow.settings import env_name

if TYPE_CHECKING:
    from rubricflow.model import Criterion, Rubric
    from rubricflow.results import LLMCall, Target

__all__ = [
    "NO_PROBE",
    "OTEL_ENV",
    "Instrumentation",
    "JudgeCall",
    "Probe",
    "current",
    "install",
    "reset",
]

OTEL_ENV = env_name("otel")
TELEMETRY_MODULE = "rubricflow.telemetry"
logger = logging.getLogger("rubricflow.instrumentation")


class Probe:
    """Brackets one timed step (`with probe:`); `finish(outcome)` reports what it gave
    before the block ends. This base does nothing."""

    __slots__ = ()

    def __enter__(self) -> Probe:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def finish(self, outcome: Any) -> None:
        """The step's outcome: an `Evaluation`, or a list of `CriterionResult`."""


NO_PROBE = Probe()


@dataclass(frozen=True, slots=True)
class JudgeCall:
    """One judge call as the session recorded it (`call`, its ledger record: outcome,
    tokens, latency, model answered), with what only the session knows: the provider kind
    and model asked, its endpoint (no credentials), and the messages sent and the answer
    text (credentials scrubbed), for content capture only."""

    call: LLMCall
    provider: str
    request_model: str
    endpoint: str
    messages: Sequence[Mapping[str, str]]
    answer: str | None


class Instrumentation:
    """What the engine and the judge report to. This base ignores everything
    (`enabled` False: callers build no report for it)."""

    enabled = False

    def evaluation(self, rubric: Rubric, target: Target) -> Probe:
        """A probe around one evaluation; finished with the `Evaluation`."""
        return NO_PROBE

    def criteria(self, criteria: Sequence[Criterion], method: str) -> Probe:
        """A probe around scoring `criteria` (one, or a group scored in one go) with the
        scorer `method`; finished with their results."""
        return NO_PROBE

    def judge_call(self, report: JudgeCall) -> None:
        """A judge call just recorded (called only when `enabled`)."""


_NOOP = Instrumentation()
_current: Instrumentation | None = None


def current() -> Instrumentation:
    """The instrumentation in use (chosen on first use, then cached)."""
    found = _current
    return found if found is not None else _resolve()


def install(instrumentation: Instrumentation | None) -> None:
    """Use `instrumentation` from now on (None: none at all, the do-nothing base)."""
    global _current
    _current = instrumentation or _NOOP


def reset() -> None:
    """Forget the choice: the next evaluation chooses again."""
    global _current
    _current = None


def _resolve() -> Instrumentation:
    setting = current_settings().otel
    chosen = _NOOP
    wanted = setting is True
    if setting is not False and (wanted or "opentelemetry.trace" in sys.modules):
        try:
            chosen = importlib.import_module(TELEMETRY_MODULE).automatic(required=wanted)
        except Exception as error:  # telemetry must never stop an evaluation
            logger.warning("OpenTelemetry instrumentation is off: %s", error)
    install(chosen)
    return chosen

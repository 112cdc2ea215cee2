"""Whether content goes into telemetry: the content under review, the prompts and
answers of judge calls, judges' explanations and transition reasons. Off unless the
standard `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` or rubricflow's
`RUBRICFLOW_OTEL_CAPTURE_CONTENT` says true (or `instrument(capture_content=True)`). API
keys are never captured: the judge session scrubs them from everything it passes on."""

from __future__ import annotations

import os

from rubricflow.settings import current, env_name

STANDARD_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
RUBRICFLOW_ENV = env_name("otel_capture_content")
_TRUE = {"1", "true", "yes", "on"}


def capture_content(setting: bool | None = None) -> bool:
    """`setting` when given, else what the environment says (default: off)."""
    if setting is not None:
        return setting
    own = current().otel_capture_content
    if own is not None:
        return own
    return os.environ.get(STANDARD_ENV, "").strip().lower() in _TRUE

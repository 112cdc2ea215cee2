"""Regular expressions from rubrics, bounded where they run: see `rubricflow.scorers.patterns`
(it lives in the scorers layer so the schema scorer can bound JSON Schema patterns too)."""

from rubricflow.scorers.patterns import (
    REGEX_TIMEOUT_ENV,
    BoundedPattern,
    RegexLimitError,
    compile_bounded,
    regex_timeout,
)

__all__ = [
    "REGEX_TIMEOUT_ENV",
    "BoundedPattern",
    "RegexLimitError",
    "compile_bounded",
    "regex_timeout",
]

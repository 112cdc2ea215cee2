"""Registers the built-in rubric formats through the same hook a third party uses.

The plugin `builtin-formats`. It lives in the plugins layer, not in `rubricflow.formats`,
because the formats sit below the plugin machinery and may not import `hookimpl`.
"""

from __future__ import annotations

from collections.abc import Sequence

from rubricflow.formats.base import RubricFormat
from rubricflow.formats.builtin import builtin_formats
from rubricflow.hookspecs import hookimpl


@hookimpl
def rubricflow_formats() -> Sequence[RubricFormat]:
    return builtin_formats()

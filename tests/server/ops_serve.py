"""`rubricflow` with the review tests' check plugin registered, for server tests whose
embedded worker needs a slow check:

    python ops_serve.py serve --db URL ...   (RUBRICFLOW_TEST_MARKER=DIR: marker files)

Every plugin registry the server makes gets `review.checks_plugin.ReviewChecks`, so a
rubric can use `slow_non_empty` (which drops `DIR/<artifact>.started` when it begins).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from review.checks_plugin import ReviewChecks

import rubricflow.plugins as plugins

_create = plugins.create_plugin_manager


def _with_checks(*args: Any, **kwargs: Any) -> Any:
    extra = list(kwargs.pop("plugins", None) or [])
    marker = os.environ.get("RUBRICFLOW_TEST_MARKER")
    extra.append(ReviewChecks(marker=marker))
    return _create(*args, plugins=extra, **kwargs)


plugins.create_plugin_manager = _with_checks  # type: ignore[assignment]

if __name__ == "__main__":
    from rubricflow.cli import main

    sys.argv[0] = "rubricflow"
    raise SystemExit(main())

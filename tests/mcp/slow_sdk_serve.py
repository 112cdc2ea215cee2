"""`rubricflow` whose first import of the MCP SDK takes `RUBRICFLOW_TEST_SDK_DELAY`
seconds longer, as on a loaded machine (where it took 14.5 s), for the tests of a
server's first MCP request:

    python slow_sdk_serve.py serve --db URL ...
"""

from __future__ import annotations

import importlib.abc
import os
import sys
import time
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType


class _SlowSdk(importlib.abc.MetaPathFinder):
    """Sleep once, when the SDK's `mcp.server` is first imported (not when a host only
    looks for the `mcp` package); find nothing itself."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname == "mcp.server" and self.seconds:
            time.sleep(self.seconds)
            self.seconds = 0.0
        return None


sys.meta_path.insert(0, _SlowSdk(float(os.environ.get("RUBRICFLOW_TEST_SDK_DELAY", "0"))))

if __name__ == "__main__":
    from rubricflow.cli import main

    sys.argv[0] = "rubricflow"
    raise SystemExit(main())

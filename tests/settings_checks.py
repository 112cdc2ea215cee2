"""A check function for the settings tests (`settings_checks:in_this_process`, imported
with `allow_import`): whether it runs in the process that evaluates, or in the check
process pool."""

from __future__ import annotations

import os
from typing import Any


def in_this_process(target: Any) -> bool:
    """True when the check runs in the process whose id the target carries."""
    return os.getpid() == int(target.content["pid"])

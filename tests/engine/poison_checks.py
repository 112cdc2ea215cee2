"""Check functions that run away, for the isolation tests: rubrics name them as
`engine.poison_checks:NAME` and are evaluated with `allow_import=True`, so they run in the
check process pool."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from rubricflow.scoring import CheckResult


def spins(target: Any) -> bool:
    while True:
        pass


def backtracks(target: Any) -> bool:
    # Python's `re` backtracks exponentially here, holding the GIL all the while
    return re.match(r"^(a+)+$", "a" * 64 + "!") is not None


def eats_memory(target: Any) -> bool:
    hoard = bytearray(64 << 30)  # 64 GB: over any address-space limit
    return bool(hoard)


def exits(target: Any) -> bool:
    import os

    os._exit(3)


def non_empty(target: Any) -> bool:
    return bool(str(target.content).strip())


def level(target: Any, value: str = "good") -> str:
    return value


def fraction(target: Any) -> Fraction:
    return Fraction(2, 3)


def with_evidence(target: Any) -> CheckResult:
    return CheckResult(0.4, evidence=["found x", "found y"], notes="partly")


def raises(target: Any) -> bool:
    raise ValueError("the check blew up")


def unknown_level(target: Any) -> str:
    return "nope"


async def awaits(target: Any) -> bool:
    import asyncio

    await asyncio.sleep(0)
    return True

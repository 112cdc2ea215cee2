"""Workload `checks` (issue 16, item 6): every built-in check on adversarial text.

Each built-in check function (rubricflow/functions.py), each regular expression of the
rubric library (rubrics/*.yaml) and the metrics plugin's text patterns run on texts made
by repeating a short fragment chosen to make a backtracking pattern rescan (`1-1-1-...`
took the shipped e-mail check 26.6 s on 160 KB), at 100 KB and at 1 MB. A linear check
takes about 10x as long on 10x the text; the bar is at most 12x for every check.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from rubricflow.functions import BUILTIN_FUNCTIONS
from rubricflow.results import Target

ROOT = Path(__file__).resolve().parents[1]

SMALL, LARGE = 100_000, 1_000_000
FLOOR_S = 0.02
"""A 100 KB time below this counts as this much in the ratio. Below it the ratio measures
the CPU cache, not the check: 100 KB of text stays in cache and 1 MB does not, which
alone makes a plain scan (`str.encode`) 15-20x slower on 10x the text on the machine
the figures in docs/performance.md come from (`cache_reference_ratio` reports it). A
quadratic check is far above the floor: the old e-mail check took ~10 s on 100 KB."""

# fragments that make a pattern which can restart inside one long run rescan it
FAMILIES: tuple[str, ...] = (
    "1-",
    "ghp_",
    "a.",
    "1.",
    "1 ",
    "(1",
    "1,",
    "a@",
    "x@1.",
    "token",
    "secret=",
    "sk-",
    "xoxa-",
    "-----BEGIN A ",
    "AKIA",
    "[AAA ",
    "{",
    "- a\n",
    "a: 1\n",
)
QUICK_FAMILIES: tuple[str, ...] = ("1-", "ghp_", "secret", "- a\n")
# parsing a rubric out of the text is the meta checks' cost; these reach the parser
YAML_FAMILIES: tuple[str, ...] = ("- a\n", "a: 1\n", "1-")

CONFIGS: dict[str, dict[str, Any]] = {
    "word_count_between": {"min": 1, "max": 10},
    "char_count_between": {"min": 1, "max": 10},
    "contains_all": {"terms": ["please", "thanks"]},
    "contains_none": {"terms": ["as an AI", "lorem"]},
    "contains_any": {"terms": ["as an AI", "lorem"]},
    "json_has_keys": {"keys": ["a.b"]},
    "json_array_length": {"path": "items", "min": 1},
}

Check = Callable[[Target], Any]


def _library_patterns() -> dict[str, tuple[str, str]]:
    """`rubric-id/criterion-id` -> (function, pattern) for the library's regex criteria."""
    found: dict[str, tuple[str, str]] = {}
    for path in sorted((ROOT / "rubrics").glob("*.yaml")):
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        for criterion in document.get("criteria", []):
            scoring = criterion.get("scoring") or {}
            config = scoring.get("config") or {}
            if scoring.get("function") in ("matches_regex", "no_regex_match"):
                flags = str(config.get("flags", ""))
                pattern = ("(?i)" if "i" in flags else "") + str(config["pattern"])
                found[f"{document['id']}/{criterion['id']}"] = (scoring["function"], pattern)
    return found


def _metric_patterns() -> dict[str, re.Pattern[str]]:
    try:
        from rubricflow_metrics import metrics
    except ImportError:
        return {}
    return {
        f"rubricflow-metrics {name}": value
        for name, value in vars(metrics).items()
        if isinstance(value, re.Pattern)
    }


def checks() -> dict[str, tuple[Check, tuple[str, ...]]]:
    """Every built-in check, by name, with the fragment families it runs on."""
    table: dict[str, tuple[Check, tuple[str, ...]]] = {}
    for name, function in BUILTIN_FUNCTIONS.items():
        if name in ("matches_regex", "no_regex_match"):
            continue  # their patterns come from rubrics: the library's are below
        config = CONFIGS.get(name, {})
        families = YAML_FAMILIES if name.startswith("meta.") else FAMILIES
        table[name] = (_bound(function, config), families)
    for name, (function_name, pattern) in _library_patterns().items():
        check = _bound(BUILTIN_FUNCTIONS[function_name], {"pattern": pattern})
        table[name] = (check, FAMILIES)
    for name, compiled in _metric_patterns().items():
        table[name] = (_finder(compiled), FAMILIES)
    return table


def _bound(function: Callable[..., Any], config: dict[str, Any]) -> Check:
    def check(target: Target) -> Any:
        try:
            return function(target, **config)
        except Exception as error:  # a refused input is an outcome too (the meta checks)
            return error

    return check


def _finder(compiled: re.Pattern[str]) -> Check:
    def check(target: Target) -> Any:
        return sum(1 for _ in compiled.finditer(target.text))

    return check


def text(fragment: str, size: int) -> str:
    """`fragment` repeated to exactly `size` characters."""
    return (fragment * (size // len(fragment) + 1))[:size]


def _seconds(check: Check, content: str, repeat: int) -> float:
    target = Target(id="adversarial", content=content)
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        check(target)
        best = min(best, time.perf_counter() - started)
    return best


def measure(
    check: Check, families: tuple[str, ...], small: int = SMALL, large: int = LARGE
) -> dict[str, Any]:
    """The worst family's ratio of large to small time, with both times."""
    worst: dict[str, Any] = {"ratio": 0.0}
    for fragment in families:
        short = _seconds(check, text(fragment, small), repeat=3)
        long = _seconds(check, text(fragment, large), repeat=2 if short < 0.05 else 1)
        ratio = long / max(short, FLOOR_S)
        if ratio > worst["ratio"] or (long > worst.get("1mb_s", 0) and ratio == worst["ratio"]):
            worst = {"ratio": ratio, "fragment": fragment, "100kb_s": short, "1mb_s": long}
    return worst


async def run(quick: bool = False) -> dict[str, Any]:
    table = checks()
    rows: dict[str, Any] = {}
    for name, (check, families) in table.items():
        chosen = tuple(f for f in families if f in QUICK_FAMILIES) or families[:1]
        if quick and name.startswith("meta.") and name != "meta.criteria_coverage":
            continue  # the five meta checks share one parser; quick times one
        worst = measure(check, chosen if quick else families)
        rows[name] = {
            "worst_fragment": worst["fragment"],
            "100kb_s": round(worst["100kb_s"], 6),
            "1mb_s": round(worst["1mb_s"], 6),
            "ratio": round(worst["ratio"], 2),
        }
    worst_name = max(rows, key=lambda name: rows[name]["ratio"])
    plain_small = _seconds(lambda t: t.text.encode(), text("1-", SMALL), repeat=7)
    plain_large = _seconds(lambda t: t.text.encode(), text("1-", LARGE), repeat=5)
    return {
        "checks": len(rows),
        "cache_reference_ratio (str.encode, 1mb / 100kb)": round(plain_large / plain_small, 1),
        "families": len(QUICK_FAMILIES if quick else FAMILIES),
        "per_check": rows,
        "worst_check": worst_name,
        "slowest_1mb_s": max(row["1mb_s"] for row in rows.values()),
        "max 1mb / 100kb (bar <= 12)": rows[worst_name]["ratio"],
    }

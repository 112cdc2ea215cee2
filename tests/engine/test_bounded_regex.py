"""A rubric's regular expressions are bounded where they run (issue 16, item 4): on RE2
(`^(a+)+$` over 37 characters finishes at once, where `re` runs for hours holding the
GIL); what RE2 refuses (lookarounds, backreferences) runs on `regex` with a time limit,
and a criterion that exceeds it is `error`, naming the limit."""

from __future__ import annotations

import asyncio
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rubricflow.engine.executor import evaluate
from rubricflow.engine.patterns import compile_bounded
from rubricflow.model import Rubric, parse_rubric
from rubricflow.results import Target


def _rubric(pattern: str) -> Rubric:
    return parse_rubric(
        {
            "id": "poison",
            "name": "Poison",
            "version": "1.0.0",
            "criteria": [
                {
                    "id": "shape",
                    "description": "the text has the shape",
                    "scoring": {
                        "method": "deterministic",
                        "function": "matches_regex",
                        "config": {"pattern": pattern},
                    },
                }
            ],
        }
    )


def test_catastrophic_backtracking_finishes_at_once() -> None:
    started = time.monotonic()
    evaluation = asyncio.run(evaluate(_rubric("^(a+)+$"), Target(id="t", content="a" * 37 + "!")))
    assert time.monotonic() - started < 2
    result = evaluation.criteria[0]
    assert result.status == "scored" and result.passed is False


def test_a_fallback_pattern_past_its_time_limit_is_an_error_naming_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RUBRICFLOW_REGEX_TIMEOUT", "0.2")
    started = time.monotonic()
    evaluation = asyncio.run(
        evaluate(_rubric(r"^(a|a)+\1$"), Target(id="t", content="a" * 40 + "!"))
    )
    assert time.monotonic() - started < 5
    result = evaluation.criteria[0]
    assert result.status == "error"
    assert "0.2s regex time limit" in result.notes + " ".join(result.evidence)
    assert evaluation.verdict == "incomplete"


def test_lookarounds_still_work() -> None:
    pattern = compile_bounded(r"(?<=a)b")
    assert pattern.engine == "regex"
    assert pattern.search("ab") is not None and pattern.search("cb") is None


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["a+b", "^[a-c]*$", "(ab|ba)+", "x?y", "colou?r", "[0-9]{2,}"]),
    st.sampled_from(["", "i", "m", "s", "im"]),
    st.text(alphabet="abcxyABC019 \n", max_size=40),
)
def test_re2_agrees_with_re_on_ordinary_patterns(pattern: str, flags: str, text: str) -> None:
    import re

    value = 0
    for flag in flags:
        value |= {"i": re.I, "m": re.M, "s": re.S}[flag]
    expected = [m.group(0) for m in re.finditer(pattern, text, value)]
    bounded = compile_bounded(pattern, flags)
    # multiline patterns and end anchors keep Python's meaning on the time-limited
    # fallback (Python's `$` also matches before a final newline; RE2's does not)
    assert bounded.engine == ("regex" if "m" in flags or "$" in pattern else "re2")
    assert [m.group(0) for m in bounded.finditer(text)] == expected

"""`assert_passes`, the `rubric` fixture and marker, and the failure message, run by
pytester against the scripted judge."""

from __future__ import annotations

from pathlib import Path

import pytest
from llm.scripted import ScriptedServer

from .conftest import spec

TESTS = """
import pytest
from rubricflow.pytest_plugin import assert_passes

@pytest.mark.rubric("answer-quality@1.0.0")
def test_good(rubric):
    assert_passes(rubric, "Four. Happy to help!", id="good", query="2+2?")

@pytest.mark.rubric("answer-quality")
def test_wrong(rubric):
    assert_passes(rubric, "It is five, obviously wrong.", id="bad", query="2+2?")

def test_fixture_helper(assert_passes):
    assert_passes("answer-quality@1.0.0", "Four, you rude person.", id="rude")
"""


def test_pass_and_fail_with_feedback(
    pytester: pytest.Pytester, server: ScriptedServer, rubrics: Path
) -> None:
    pytester.makepyfile(test_answers=TESTS)
    result = pytester.runpytest_inprocess(
        "--rubric-llm", spec(server), "--rubric-dir", str(rubrics), "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1, failed=2)
    text = result.stdout.str()
    print(text)

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
    # pytest's assertion style: the test's line, then the feedback as the message
    result.stdout.fnmatch_lines(
        [
            '>       assert_passes(rubric, *, id="bad", query="2+2?")',
            "E       AssertionError: rubric answer-quality@1.0.0 did not pass for target bad: "
            "verdict FAIL, score 33.33% < pass mark 70%",
            "E         required criteria failed: correct",
            "E       failed criteria:",
            "E         - correct (Correct) [required]: UNMET (score 0.00)",
            "E             evidence: judge: The answer is wrong.",
            "E             fix: meet the requirement: The answer is correct.",
            "E       feedback:",
            "E         Evaluation FAILED for rubric 'Answer quality' (answer-quality@1.0.0).",
            "E         *REQUIRED Correct: meet the requirement: The answer is correct.*",
            "test_answers.py:10: AssertionError",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "E       AssertionError: rubric answer-quality@1.0.0 did not pass for target rude: "
            "verdict FAIL, score 66.67% < pass mark 70%",
            "E       failed criteria:",
            "E         - polite (Polite): UNMET (score 0.00)",
        ]
    )
    text = result.stdout.str()
    # the rude answer's own failure, before the summary (which, with CI set, pytest
    # prints untruncated, the other failures' messages included)
    rude = text.split("target rude")[1].split("short test summary info")[0]
    assert "failed criteria:" in rude and "required criteria failed" not in rude
    assert "Traceback" not in text and "run_blocking" not in text


def test_no_judge_configured_says_how_to_give_one(pytester: pytest.Pytester, rubrics: Path) -> None:
    pytester.makepyfile(
        test_nojudge="""
        from rubricflow.pytest_plugin import assert_passes

        def test_x():
            assert_passes("answer-quality", "Four.")
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--rubric-dir", str(rubrics))
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert (
        "rubric answer-quality@1.0.0 needs an LLM judge for correct, polite and none is "
        "configured: pass --rubric-llm SPEC (e.g. openai:gpt-4o-mini), set $RUBRICFLOW_LLM, "
        "or replay recorded answers with --rubric-replay FILE"
    ) in text

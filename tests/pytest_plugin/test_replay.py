"""Record judge answers against the scripted judge, stop it, replay offline: the same
verdicts and scores. A question with no recorded answer fails its test, naming the case
and why (the prompt template or the rubric changed, or it was never recorded)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from llm.scripted import ScriptedServer

from rubricflow.llm.replay import FORMAT_NAME, FORMAT_VERSION, read_answers

from .conftest import RUBRIC, spec

TESTS = """
import pytest
from rubricflow.pytest_plugin import assert_passes

CASES = [("good", "Four. Happy to help!"), ("wrong", "Five, which is wrong."),
         ("rude", "Four, you rude person.")]

@pytest.mark.rubric("answer-quality@1.0.0")
@pytest.mark.parametrize("target_id,answer", CASES)
def test_answer(rubric, target_id, answer):
    assert_passes(rubric, answer, id=target_id, query="2+2?")
"""


def _properties(path: Path) -> dict[str, list[tuple[str, str]]]:
    cases = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        props = [(p.get("name"), p.get("value")) for p in case.iter("property")]
        cases[case.get("name")] = [(str(k), str(v)) for k, v in props]
    return cases


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", *args)


@pytest.fixture
def recorded(pytester: pytest.Pytester, server: ScriptedServer, rubrics: Path) -> tuple[Path, Path]:
    """Answers recorded against the scripted judge (then stopped), and the run's JUnit."""
    pytester.makepyfile(test_answers=TESTS)
    answers, junit = pytester.path / "judge-answers.jsonl", pytester.path / "record.xml"
    result = _run(
        pytester,
        "--rubric-llm",
        spec(server),
        "--rubric-dir",
        str(rubrics),
        "--rubric-record",
        str(answers),
        f"--junitxml={junit}",
    )
    result.assert_outcomes(passed=1, failed=2)
    assert len(server.requests) == 6  # 3 targets x 2 criteria
    server.stop()
    return answers, junit


def test_replay_gives_the_same_verdicts_offline(
    pytester: pytest.Pytester, recorded: tuple[Path, Path], rubrics: Path
) -> None:
    answers, recording = recorded
    replayed = pytester.path / "replay.xml"
    # no --rubric-llm, no key, no server: the file names its judge
    result = _run(
        pytester,
        "--rubric-dir",
        str(rubrics),
        "--rubric-replay",
        str(answers),
        f"--junitxml={replayed}",
    )
    result.assert_outcomes(passed=1, failed=2)
    assert "no recorded judge answer" not in result.stdout.str()
    before, after = _properties(recording), _properties(replayed)
    assert before == after
    assert ("rubric_verdict", "fail") in after["test_answer[wrong-Five, which is wrong.]"]
    assert ("rubric_failed_criteria", "correct") in after[
        "test_answer[wrong-Five, which is wrong.]"
    ]
    assert ("rubric_verdict", "pass") in after["test_answer[good-Four. Happy to help!]"]


def test_the_file_is_versioned_sorted_and_stable(
    pytester: pytest.Pytester, recorded: tuple[Path, Path], rubrics: Path
) -> None:
    answers, _ = recorded
    lines = answers.read_text().splitlines()
    assert json.loads(lines[0]) == {"format": FORMAT_NAME, "format_version": FORMAT_VERSION}
    entries = [json.loads(line) for line in lines[1:]]
    assert len(entries) == 6
    assert [(e["target"], e["criteria"]) for e in entries] == sorted(
        (e["target"], e["criteria"]) for e in entries
    )
    first = entries[0]
    assert first["rubric"]["id"] == "answer-quality" and first["rubric"]["version"] == "1.0.0"
    assert (
        first["template"]["name"] == "rubricflow:verdict" and len(first["template"]["hash"]) == 64
    )
    assert first["provider"].startswith("openai:judge@http://127.0.0.1:")
    assert "created_at" not in json.dumps(first)
    # replaying and re-reading and re-writing give the same bytes
    from rubricflow.llm.replay import write_answers

    copy = pytester.path / "copy.jsonl"
    write_answers(copy, reversed(read_answers(answers)))
    assert copy.read_bytes() == answers.read_bytes()


def test_a_changed_template_names_the_cases_to_record_again(
    pytester: pytest.Pytester, recorded: tuple[Path, Path], rubrics: Path
) -> None:
    answers, _ = recorded
    # the file as an older prompt template left it: other keys, another template hash
    entries = [json.loads(line) for line in answers.read_text().splitlines()]
    for entry in entries[1:]:
        entry["key"] = "0" * 60 + entry["key"][:4]
        entry["template"]["hash"] = "f" * 64
    answers.write_text("".join(json.dumps(e) + "\n" for e in entries))
    result = _run(pytester, "--rubric-dir", str(rubrics), "--rubric-replay", str(answers))
    result.assert_outcomes(failed=3)
    text = result.stdout.str()
    assert "no recorded judge answer for 2 question(s) in test_answers.py::test_answer[good" in text
    assert (
        "rubric answer-quality@1.0.0, criterion correct, target good: the prompt template "
        "rubricflow:verdict changed since the answer was recorded (recorded ffffffffffff" in text
    )
    assert "pytest --rubric-record FILE" in text
    assert "rubricflow llm cache export FILE" in text


def test_a_changed_rubric_or_an_unrecorded_case_fails_naming_it(
    pytester: pytest.Pytester, recorded: tuple[Path, Path], rubrics: Path
) -> None:
    answers, _ = recorded
    (rubrics / "answer.yaml").write_text(
        RUBRIC.replace("The answer is polite.", "The answer is polite and warm.")
    )
    pytester.makepyfile(
        test_more="""
        from rubricflow.pytest_plugin import assert_passes

        def test_new_target():
            assert_passes("answer-quality", "Four.", id="never-recorded")
        """
    )
    result = _run(pytester, "--rubric-dir", str(rubrics), "--rubric-replay", str(answers))
    result.assert_outcomes(failed=4)
    text = result.stdout.str()
    assert "criterion polite, target good: the rubric changed since the answer was recorded" in text
    assert "criterion correct, target never-recorded: no answer was recorded for it" in text


def test_replay_and_record_together_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x(): pass")
    result = _run(pytester, "--rubric-replay", "a.jsonl", "--rubric-record", "b.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--rubric-replay and --rubric-record cannot be used together" in result.stderr.str()
    result = _run(pytester, "--rubric-record", "no-such-folder/answers.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "no-such-folder/answers.jsonl: its folder does not exist" in result.stderr.str()


def test_a_missing_replay_file_says_how_to_record(pytester: pytest.Pytester, rubrics: Path) -> None:
    pytester.makepyfile(
        test_x="""
        from rubricflow.pytest_plugin import assert_passes

        def test_x():
            assert_passes("answer-quality", "Four.")
        """
    )
    result = _run(pytester, "--rubric-dir", str(rubrics), "--rubric-replay", "nope.jsonl")
    result.assert_outcomes(failed=1)
    assert "nope.jsonl: no such recorded-answers file; record one with" in result.stdout.str()

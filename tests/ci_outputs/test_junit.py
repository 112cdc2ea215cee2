"""JUnit XML of a run: the shape CI readers parse (validated against tests/ci_outputs/
junit.xsd), a testcase per target, a failure per failed criterion saying what to fix,
incomplete targets as errors, and any text at all surviving the trip through XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from rubricflow.ci import CIOutputError, check_writable, junit_xml, write_junit
from rubricflow.ci.junit import xml_safe
from rubricflow.model import MAX_TARGET_ID_LENGTH
from rubricflow.results import CriterionResult
from rubricflow.runs import RunData

from .conftest import REPLY, evaluation, junit_schema, made_up_run

RUBRICS = {"reply@1.0.0": REPLY}


def cases(document: bytes) -> dict[str, ET.Element]:
    root = ET.fromstring(document)
    return {case.attrib["name"]: case for case in root.iter("testcase")}


def properties(element: ET.Element) -> dict[str, str]:
    found = element.find("properties")
    assert found is not None
    return {p.attrib["name"]: p.attrib["value"] for p in found.iter("property")}


def test_a_run_is_one_testcase_per_target_valid_against_the_schema(run_a: RunData) -> None:
    document = junit_xml(run_a, RUBRICS)
    junit_schema().assertValid(etree.fromstring(document))
    root = ET.fromstring(document)
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    counts = {k: suite.attrib[k] for k in ("tests", "failures", "errors", "skipped")}
    assert counts == {"tests": "8", "failures": "4", "errors": "1", "skipped": "0"}
    assert suite.attrib["name"] == "reply@1.0.0"
    assert suite.attrib["timestamp"] == "2025-03-01T10:00:00"
    assert properties(suite) == {
        "run": "run-a",
        "rubric": "reply",
        "version": "1.0.0",
        "source": "replies.jsonl",
        "status": "finished",
    }
    found = cases(document)
    assert list(found) == [e.target_id for e in run_a.evaluations]
    assert {case.attrib["classname"] for case in found.values()} == {"reply@1.0.0"}
    seconds = sum(float(case.attrib["time"]) for case in found.values())
    assert seconds == pytest.approx(float(suite.attrib["time"]), abs=0.01)
    t1 = properties(found["t1"])
    assert (t1["rubric"], t1["version"], t1["verdict"], t1["score"]) == (
        "reply",
        "1.0.0",
        "pass",
        "1",
    )
    assert found["t1"].find("failure") is None and found["t1"].find("error") is None


def test_a_failure_per_failed_criterion_says_what_to_fix(run_a: RunData) -> None:
    found = cases(junit_xml(run_a, RUBRICS))
    t4 = found["t4"].findall("failure")
    assert [f.attrib["message"] for f in t4] == [
        "REQUIRED greets: meet the requirement: Says hello",
        "REQUIRED length: meet the requirement: Three to thirty words",
    ]
    assert {f.attrib["type"] for f in t4} == {"criterion"}
    assert "evidence: missing: hello" in (t4[0].text or "")
    assert "score: 0.000" in (t4[0].text or "")
    t2 = found["t2"].findall("failure")
    assert [f.attrib["message"].split(":")[0] for f in t2] == ["REQUIRED tone"]
    assert "reasoning: the reply reads as UNMET" in (t2[0].text or "")
    assert properties(found["t2"])["verdict"] == "fail"
    assert "What to fix:" in (found["t2"].findtext("system-out") or "")
    # the rubric is what the fix comes from; without it the failure points at the evidence
    bare = cases(junit_xml(run_a))["t4"].findall("failure")
    assert (
        bare[0].attrib["message"] == "REQUIRED greets: below its bar (score 0.00): see the evidence"
    )


def test_an_incomplete_target_is_an_error_naming_the_unscored_criterion(run_a: RunData) -> None:
    t6 = cases(junit_xml(run_a, RUBRICS))["t6"]
    assert t6.find("failure") is None
    (error,) = t6.findall("error")
    assert error.attrib["type"] == "unable_to_evaluate"
    assert error.attrib["message"].startswith("tone: not scored (unable_to_evaluate): ")
    assert properties(t6)["verdict"] == "incomplete"
    assert float(properties(t6)["coverage"]) < 1


def test_a_score_below_the_mark_with_no_failed_criterion_is_one_failure() -> None:
    weak = CriterionResult(criterion_id="tone", status="scored", score=0.6, passed=True)
    run = made_up_run("run-x", [evaluation("t1", "fail", 0.6, [weak], feedback="below")])
    (failure,) = cases(junit_xml(run))["t1"].findall("failure")
    assert failure.attrib["type"] == "score"
    assert failure.attrib["message"].startswith("score 0.600 is below the pass mark 0.7")


def test_a_required_group_below_its_bar_is_the_failure_not_the_score() -> None:
    """A required group under its own bar fails the target while the score clears the
    pass mark: the failure names the group, and does not claim the score was too low."""
    fine = CriterionResult(criterion_id="safety.tone", status="scored", score=0.8, passed=True)
    gated = evaluation("t1", "fail", 0.8, [fine]).model_copy(
        update={"gating_failures": ("safety",)}
    )
    (failure,) = cases(junit_xml(made_up_run("run-x", [gated])))["t1"].findall("failure")
    assert failure.attrib["message"].startswith("REQUIRED group safety: ")
    assert "below the pass mark" not in failure.attrib["message"]


def test_an_unscored_required_criterion_counted_as_failed_is_its_failure() -> None:
    """Under `count_as_zero` a required criterion that could not be scored fails the
    target: the failure names it and why it was not scored."""
    lost = CriterionResult(
        criterion_id="tone", status="error", required=True, notes="the judge timed out"
    )
    gated = evaluation("t1", "fail", 0.5, [lost]).model_copy(update={"gating_failures": ("tone",)})
    (failure,) = cases(junit_xml(made_up_run("run-x", [gated])))["t1"].findall("failure")
    assert failure.attrib["message"].startswith("REQUIRED tone: not scored (error)")
    assert "the judge timed out" in failure.attrib["message"]


def test_a_target_without_an_id_is_named_by_its_content_hash() -> None:
    run = made_up_run("run-x", [evaluation(None, "pass", 1.0)])
    (name,) = cases(junit_xml(run))
    assert name.startswith("sha256:") and len(name) == len("sha256:") + 16


# Any unicode, in every place text from the content under review or the judge lands.
ANY_TEXT = st.text(st.characters(codec=None), max_size=200)
TARGET_ID = st.text(
    st.characters(blacklist_characters="\x00", codec=None), min_size=1, max_size=60
).filter(lambda s: len(s) <= MAX_TARGET_ID_LENGTH)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(target_id=TARGET_ID, evidence=ANY_TEXT, notes=ANY_TEXT, feedback=ANY_TEXT)
def test_any_text_parses_and_comes_back_minus_what_xml_cannot_hold(
    target_id: str, evidence: str, notes: str, feedback: str
) -> None:
    failed = CriterionResult(
        criterion_id="tone",
        status="scored",
        score=0.0,
        verdict="UNMET",
        passed=False,
        evidence=(evidence,),
        notes=notes,
    )
    unscored = CriterionResult(criterion_id="tone", status="error", notes=notes)
    run = made_up_run(
        "run-x",
        [
            evaluation(target_id, "fail", 0.0, [failed], feedback=feedback),
            evaluation(target_id + "-2", "incomplete", 0.0, [unscored]),
        ],
    )
    document = junit_xml(run)
    junit_schema().assertValid(etree.fromstring(document))  # it parses, and is valid
    first, second = ET.fromstring(document).iter("testcase")
    assert first.attrib["name"] == xml_safe(target_id)
    assert second.attrib["name"] == xml_safe(target_id + "-2")
    failure = first.find("failure")
    assert failure is not None
    assert f"evidence: {xml_safe(evidence)}\n" in (failure.text or "") + "\n"
    if xml_safe(notes):
        assert f"notes: {xml_safe(notes)}" in (failure.text or "")
    assert (first.findtext("system-out") or "") == xml_safe(feedback)
    error = second.find("error")
    assert error is not None
    assert error.attrib["message"] == f"tone: not scored (error): {xml_safe(notes) or 'error'}"


def test_xml_safe_drops_only_what_xml_cannot_hold() -> None:
    assert xml_safe("a\x00b\x1bc\x7fd\ud800e\ufffef\tg\nh\ri😀") == "abc\x7fdef\tg\nh\ri😀"


def test_written_atomically_and_the_folder_is_made(run_a: RunData, tmp_path: Path) -> None:
    path = tmp_path / "reports" / "nested" / "junit.xml"
    assert write_junit(run_a, path, RUBRICS) == path
    assert len(cases(path.read_bytes())) == 8
    assert sorted(p.name for p in path.parent.iterdir()) == ["junit.xml"]  # no temporary left
    write_junit(made_up_run("run-y", [evaluation("only", "pass", 1.0)]), path)
    assert list(cases(path.read_bytes())) == ["only"]


def test_a_path_that_cannot_be_written_is_a_clear_error(run_a: RunData, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    for path in (blocker / "junit.xml", tmp_path):
        with pytest.raises(CIOutputError, match="give a"):
            check_writable(path)
        with pytest.raises(CIOutputError, match="give a"):
            write_junit(run_a, path)
    assert blocker.read_text() == "not a folder"

"""A run as JUnit XML, the test report format GitHub, GitLab and Jenkins read.

One `<testsuite>` per run; in it one `<testcase>` per target (classname the rubric's
`id@version`, name the target id), with `<properties>` (rubric, version, verdict,
score, coverage). A failed target gets a `<failure>` per criterion that failed its bar
(message: the criterion id and what to fix; body: score, evidence, notes), one per
required criterion that could not be scored and so counted as failed (`count_as_zero`),
and one per required group under its own bar; a target whose score alone is below the
pass mark gets one `<failure>` saying so. An incomplete
target is an `<error>` (it was not judged, which is not a pass and not a fail): one per
criterion that could not be scored, naming why.

Every text is made XML-safe: characters XML 1.0 cannot hold (control characters other
than tab, newline and carriage return; lone surrogates; U+FFFE and U+FFFF) are dropped,
everything else is escaped, so the file always parses and gives back the text.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path

from rubricflow.ci.files import write_atomically
from rubricflow.engine.feedback import next_level_hint
from rubricflow.model import Rubric
from rubricflow.results import CriterionResult, Evaluation
from rubricflow.runs import RunData

__all__ = ["junit_xml", "rubric_label", "write_junit", "xml_safe"]

#: what XML 1.0 cannot hold (https://www.w3.org/TR/xml/#charsets): the complement of
#: tab, LF, CR, U+0020-U+D7FF, U+E000-U+FFFD and U+10000-U+10FFFF, written as the few
#: ranges it is (a positive class is several times faster than the negated one)
_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
#: a failure message is a one-line summary; the body holds the rest
MESSAGE_LIMIT = 1000


def xml_safe(text: object) -> str:
    """`text` with the characters XML 1.0 cannot hold removed."""
    return _ILLEGAL.sub("", str(text))


def rubric_label(rubric_id: str, version: str) -> str:
    return f"{rubric_id}@{version}"


def _short(text: str, limit: int = MESSAGE_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _seconds(milliseconds: float) -> str:
    return f"{max(milliseconds, 0.0) / 1000:.3f}"


def _timestamp(iso: str) -> str | None:
    """The JUnit schema's timestamp: an ISO date-time in UTC without a zone."""
    try:
        when = datetime.fromisoformat(iso)
    except ValueError:
        return None
    if when.tzinfo is not None:
        when = when.astimezone(timezone.utc).replace(tzinfo=None)
    return when.isoformat(timespec="seconds")


def _element(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    element = ET.SubElement(parent, tag, {k: xml_safe(v) for k, v in attrs.items()})
    if text:
        element.text = xml_safe(text)
    return element


def _properties(parent: ET.Element, values: Mapping[str, object]) -> None:
    properties = _element(parent, "properties")
    for name, value in values.items():
        if value is not None:
            _element(properties, "property", name=name, value=str(value))


def _outcome(result: CriterionResult) -> str:
    parts = [f"score: {result.score:.3f}" if result.score is not None else "not scored"]
    if result.level is not None:
        parts.append(f"level: {result.level}")
    if result.verdict is not None:
        parts.append(f"verdict: {result.verdict}")
    parts.append(f"weight: {result.weight:g}" + (", required" if result.required else ""))
    return "; ".join(parts)


def _body(result: CriterionResult) -> str:
    lines = [_outcome(result)]
    lines.extend(f"evidence: {item}" for item in result.evidence)
    if result.notes:
        lines.append(f"notes: {result.notes}")
    if result.reasoning:
        lines.append(f"reasoning: {result.reasoning}")
    return "\n".join(lines)


def _what_to_fix(result: CriterionResult, rubric: Rubric | None) -> str:
    criterion = None
    if rubric is not None:
        criterion = next((c for c in rubric.criteria if c.id == result.criterion_id), None)
    if criterion is not None:
        return next_level_hint(criterion, result)
    score = "" if result.score is None else f" (score {result.score:.2f})"
    return f"below its bar{score}: see the evidence"


def _failures(case: ET.Element, evaluation: Evaluation, rubric: Rubric | None) -> int:
    gating = evaluation.gating_failures
    failed = [r for r in evaluation.criteria if r.scored and r.passed is False]
    for result in failed:
        required = "REQUIRED " if result.criterion_id in gating else ""
        message = f"{required}{result.criterion_id}: {_what_to_fix(result, rubric)}"
        _element(case, "failure", _body(result), message=_short(message), type="criterion")
    # a required criterion not scored counts as failed under `count_as_zero`
    lost = [r for r in evaluation.criteria if not r.scored and r.criterion_id in gating]
    for result in lost:
        why = xml_safe(result.notes) or result.status.replace("_", " ")
        message = f"REQUIRED {result.criterion_id}: not scored ({result.status}): {why}"
        _element(case, "failure", _body(result), message=_short(message), type="criterion")
    # a required group under its own bar (its members may each have passed)
    criteria = {r.criterion_id for r in evaluation.criteria}
    groups = [gate for gate in gating if gate not in criteria]
    for group in groups:
        message = (
            f"REQUIRED group {group}: its score is below the group's bar; raise the scores "
            "of its criteria"
        )
        _element(case, "failure", evaluation.feedback, message=_short(message), type="group")
    shown = len(failed) + len(lost) + len(groups)
    if not shown and evaluation.verdict == "fail":
        message = (
            f"score {evaluation.score:.3f} is below the pass mark {evaluation.threshold:g}: "
            "raise the criteria scores (see the feedback)"
        )
        _element(case, "failure", evaluation.feedback, message=message, type="score")
        return 1
    return shown


def _errors(case: ET.Element, evaluation: Evaluation) -> None:
    unscored = [r for r in evaluation.criteria if not r.scored]
    for result in unscored:
        why = xml_safe(result.notes) or result.status.replace("_", " ")
        message = f"{result.criterion_id}: not scored ({result.status}): {why}"
        _element(case, "error", _body(result), message=_short(message), type=result.status)
    if not unscored:
        _element(
            case,
            "error",
            evaluation.feedback,
            message=f"incomplete: coverage {evaluation.coverage:.0%}; fix the cause and re-run",
            type="incomplete",
        )


def _testcase(suite: ET.Element, evaluation: Evaluation, rubric: Rubric | None) -> ET.Element:
    name = evaluation.target_id or f"sha256:{evaluation.target_hash[:16]}"
    case = _element(
        suite,
        "testcase",
        classname=rubric_label(evaluation.rubric_id, evaluation.rubric_version),
        name=name,
        time=_seconds(evaluation.duration_ms),
    )
    _properties(
        case,
        {
            "rubric": evaluation.rubric_id,
            "version": evaluation.rubric_version,
            "verdict": evaluation.verdict,
            "score": f"{evaluation.score:.6g}",
            "scaled_score": f"{evaluation.scaled_score:g}",
            "threshold": f"{evaluation.threshold:g}",
            "coverage": f"{evaluation.coverage:.6g}",
            "evaluation_id": evaluation.id,
        },
    )
    if evaluation.verdict == "incomplete":
        _errors(case, evaluation)
    elif evaluation.verdict == "fail":
        _failures(case, evaluation, rubric)
    if evaluation.feedback:
        _element(case, "system-out", evaluation.feedback)
    return case


def junit_xml(run: RunData, rubrics: Mapping[str, Rubric] | None = None) -> bytes:
    """The run as a JUnit XML document (UTF-8). `rubrics`, keyed `id@version`, lets a
    failure say what to fix (the next level up, or the requirement); without the rubric
    it points at the evidence."""
    known = rubrics or {}
    info = run.info
    evaluations = run.evaluations
    failures = sum(e.verdict == "fail" for e in evaluations)
    errors = sum(e.verdict == "incomplete" for e in evaluations)
    total_ms = sum(e.duration_ms for e in evaluations)
    counts = {
        "tests": str(len(evaluations)),
        "failures": str(failures),
        "errors": str(errors),
        "skipped": "0",
        "time": _seconds(total_ms),
    }
    root = ET.Element("testsuites", {"name": "rubricflow", **counts})
    suite_attrs = {"name": rubric_label(info.rubric_id, info.rubric_version), **counts}
    stamp = _timestamp(info.started_at) if info.started_at else None
    if stamp:
        suite_attrs["timestamp"] = stamp
    suite = _element(root, "testsuite", **suite_attrs)
    _properties(
        suite,
        {
            "run": info.id,
            "rubric": info.rubric_id,
            "version": info.rubric_version,
            "source": info.source,
            "status": info.status,
        },
    )
    for evaluation in evaluations:
        rubric = known.get(rubric_label(evaluation.rubric_id, evaluation.rubric_version))
        _testcase(suite, evaluation, rubric)
    ET.indent(root)
    document: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    # ElementTree leaves a carriage return in text as it is, and a parser reads it as a
    # newline; as a character reference it survives (attributes are escaped already)
    return document.replace(b"\r", b"&#13;") + b"\n"


def write_junit(
    run: RunData, path: str | Path, rubrics: Mapping[str, Rubric] | None = None
) -> Path:
    """Write the run's JUnit XML to `path` atomically; returns the path."""
    return write_atomically(path, junit_xml(run, rubrics))

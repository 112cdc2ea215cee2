"""The export of people's decisions and labels, as CSV or JSON Lines, streamed a line at a
time (the store reads them a page at a time): `GET /v1/decisions/export` and the
dashboard's download links share it.

- `rows=decisions` (the default): one row per decision and rubric: the artifact, who
  decided what and why, the judge's verdict and score of the decided revision, whether
  they agree, and the criteria the person marked the judge wrong on (JSON Lines also
  carries every criterion label).
- `rows=labels`: one row per criterion label: what the judge said and what the person
  holds.

A CSV cell that a spreadsheet would read as a formula (it starts with `=`, `+`, `-`, `@`,
a tab or a carriage return) is written with a leading `'`: the titles and reasons are
other people's text.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any

from rubricflow.application import Application, ExportedDecision

__all__ = ["DECISION_COLUMNS", "EXPORT_FORMATS", "EXPORT_ROWS", "LABEL_COLUMNS", "export_lines"]

EXPORT_FORMATS = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson"}
EXPORT_ROWS = ("decisions", "labels")
DECISION_COLUMNS = (
    "event_id",
    "decided_at",
    "artifact_id",
    "artifact_type",
    "title",
    "revision",
    "decision",
    "human_verdict",
    "actor",
    "reason",
    "rubric_id",
    "rubric_version",
    "evaluation_id",
    "judge_verdict",
    "score",
    "agrees",
    "corrected",
)
LABEL_COLUMNS = (
    "event_id",
    "decided_at",
    "artifact_id",
    "artifact_type",
    "revision",
    "decision",
    "actor",
    "rubric_id",
    "rubric_version",
    "evaluation_id",
    "criterion_id",
    "judge_passed",
    "human_passed",
)
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _decision_record(item: ExportedDecision) -> dict[str, Any]:
    return {
        "event_id": item.event_id,
        "decided_at": item.decided_at.isoformat(),
        "artifact_id": item.artifact_id,
        "artifact_type": item.artifact_type,
        "title": item.title,
        "revision": item.revision,
        "decision": item.decision,
        "human_verdict": item.human_verdict,
        "actor": item.actor,
        "reason": item.reason,
        "rubric_id": item.rubric_id,
        "rubric_version": item.rubric_version,
        "evaluation_id": item.evaluation_id,
        "judge_verdict": item.judge_verdict,
        "score": item.score,
        "agrees": None if item.judge_verdict is None else item.judge_verdict == item.human_verdict,
        "corrected": list(item.corrected),
    }


def _label_records(item: ExportedDecision) -> list[dict[str, Any]]:
    return [
        {
            "event_id": item.event_id,
            "decided_at": item.decided_at.isoformat(),
            "artifact_id": item.artifact_id,
            "artifact_type": item.artifact_type,
            "revision": item.revision,
            "decision": item.decision,
            "actor": item.actor,
            "rubric_id": item.rubric_id,
            "rubric_version": item.rubric_version,
            "evaluation_id": item.evaluation_id,
            "criterion_id": mark.criterion_id,
            "judge_passed": mark.judge_passed,
            "human_passed": mark.human_passed,
        }
        for mark in item.criteria
    ]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        value = ";".join(str(v) for v in value)
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def _csv_line(values: Sequence[Any]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerow([_cell(v) for v in values])
    return buffer.getvalue()


async def export_lines(
    application: Application,
    *,
    format: str,
    rows: str = "decisions",
    types: Sequence[str] | None = None,
    since: datetime | None = None,
) -> AsyncIterator[str]:
    """The export's lines: CSV with its header first, or one JSON object a line."""
    columns = LABEL_COLUMNS if rows == "labels" else DECISION_COLUMNS
    if format == "csv":
        yield _csv_line(columns)
    async for item in application.workbench.decisions(types=types, since=since):
        if rows == "labels":
            records = _label_records(item)
        else:
            record = _decision_record(item)
            record["criteria"] = [
                {
                    "criterion_id": m.criterion_id,
                    "judge_passed": m.judge_passed,
                    "human_passed": m.human_passed,
                }
                for m in item.criteria
            ]
            records = [record]
        for record in records:
            if format == "csv":
                yield _csv_line([record[c] for c in columns])
            else:
                yield json.dumps(record, ensure_ascii=False) + "\n"


def filename(format: str, rows: str) -> str:
    return f"rubricflow-{rows}.{format}"

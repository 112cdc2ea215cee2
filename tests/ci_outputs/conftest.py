"""Runs for the CI output tests: real evaluations of the report tests' rubric (three
deterministic criteria and an in-process judge; see tests/report/conftest.py for their
figures), and made-up evaluations where a test needs thousands of them or any text."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest
from lxml import etree
from report.conftest import (  # the report tests' runs, evaluated for real
    REPLY,
    TARGETS_A,
    TARGETS_B,
    evaluate_all,
    run_info,
)

from rubricflow.results import CriterionResult, Evaluation, Verdict
from rubricflow.runs import RunData
from rubricflow.store import DB_ENV

__all__ = ["REPLY", "evaluation", "junit_schema", "made_up_run"]

SCHEMA = Path(__file__).parent / "junit.xsd"


def junit_schema() -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(str(SCHEMA)))


def evaluation(
    target_id: str | None,
    verdict: Verdict,
    score: float,
    criteria: Sequence[CriterionResult] = (),
    *,
    feedback: str = "",
    rubric: tuple[str, str] = ("reply", "1.0.0"),
) -> Evaluation:
    """An evaluation as the engine would write it, without evaluating anything."""
    return Evaluation(
        id=uuid.uuid4().hex,
        rubric_id=rubric[0],
        rubric_version=rubric[1],
        rubric_hash="0" * 64,
        target_id=target_id,
        target_hash=uuid.uuid4().hex * 2,
        verdict=verdict,
        passed=verdict == "pass",
        score=score,
        scaled_score=score,
        raw_score=score,
        coverage=0.5 if verdict == "incomplete" else 1.0,
        threshold=0.7,
        unscored_policy="fail",
        criteria=tuple(criteria),
        feedback=feedback,
        duration_ms=12.5,
    )


def made_up_run(run_id: str, evaluations: Sequence[Evaluation]) -> RunData:
    return RunData(run_info(run_id), list(evaluations))


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No store, judge or key from the developer's environment; run in tmp_path."""
    from rubricflow.llm.specs import ENV_VARS

    for name in (*ENV_VARS, DB_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RUBRICFLOW_CACHE_DIR", str(tmp_path / "rf-cache"))
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="session")
def run_a() -> RunData:
    return RunData(run_info("run-a"), evaluate_all(REPLY, TARGETS_A))


@pytest.fixture(scope="session")
def run_b() -> RunData:
    return RunData(run_info("run-b"), evaluate_all(REPLY, TARGETS_B))

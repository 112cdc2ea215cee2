"""Runs: summaries of real evaluations, and results files written and read back."""

from __future__ import annotations

import io
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rubricflow.engine.executor import evaluate_sync
from rubricflow.model import parse_rubric
from rubricflow.results import Evaluation
from rubricflow.runs import (
    RunInfo,
    evaluation_line,
    finished_targets,
    latest_per_target,
    read_results_file,
    summarize,
    write_run_header,
)

RUBRIC = parse_rubric(
    {
        "id": "words",
        "name": "Words",
        "version": "1.0.0",
        "pass_threshold": 0.5,
        "criteria": [
            {
                "id": "short",
                "description": "At most five words",
                "scoring": {
                    "method": "deterministic",
                    "function": "word_count_between",
                    "config": {"max": 5},
                },
            },
            {
                "id": "polite",
                "description": "Says please",
                "scoring": {
                    "method": "deterministic",
                    "function": "contains_any",
                    "config": {"terms": ["please"]},
                },
            },
        ],
    }
)

_CACHE: dict[tuple[str, str], Evaluation] = {}


def _evaluate(target_id: str, text: str) -> Evaluation:
    key = (target_id, text)
    if key not in _CACHE:
        _CACHE[key] = evaluate_sync(RUBRIC, {"id": target_id, "content": text})
    return _CACHE[key]


texts = st.sampled_from(
    ["please", "no", "please do this now", "one two three four five six please", "a b c d e f g"]
)
items = st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d"]), texts), max_size=12)


@settings(max_examples=60, deadline=None)
@given(items)
def test_summary_figures_add_up(pairs: list[tuple[str, str]]) -> None:
    evaluations = [_evaluate(t, text) for t, text in pairs]
    summary = summarize(evaluations)
    assert summary.total == len(evaluations)
    assert summary.passed + summary.failed + summary.incomplete == summary.total
    assert sum(summary.histogram) == summary.total - summary.incomplete
    assert summary.passed == sum(e.verdict == "pass" for e in evaluations)
    for criterion in summary.criteria:
        assert criterion.scored + criterion.unscored == len(evaluations)
        expected = sum(
            bool(r.passed)
            for e in evaluations
            for r in e.criteria
            if r.criterion_id == criterion.criterion_id
        )
        assert criterion.passed == expected
    if evaluations:
        assert summary.pass_rate == summary.passed / len(evaluations)
        assert summary.mean_score is not None and 0.0 <= summary.mean_score <= 1.0


@settings(max_examples=60, deadline=None)
@given(items)
def test_results_file_round_trip_keeps_the_latest_per_target(pairs: list[tuple[str, str]]) -> None:
    evaluations = [
        _evaluate(t, text).model_copy(update={"id": f"e{i}"}) for i, (t, text) in enumerate(pairs)
    ]
    stream = io.StringIO()
    info = RunInfo(id="run-x", rubric_id="words", rubric_version="1.0.0", source="t.jsonl")
    write_run_header(stream, info)
    for evaluation in evaluations:
        stream.write(evaluation_line(evaluation, "run-x"))
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "res.jsonl"
        path.write_text(stream.getvalue())
        run = read_results_file(path)
    assert run.info.id == "run-x" and run.info.source == "t.jsonl"
    expected_order = list(dict.fromkeys(t for t, _ in pairs))
    assert [e.target_id for e in run.evaluations] == expected_order
    last = {t: f"e{i}" for i, (t, _) in enumerate(pairs)}
    assert {e.target_id: e.id for e in run.evaluations} == last
    assert run.evaluations == latest_per_target(evaluations)
    assert finished_targets(evaluations) == set(last)  # deterministic: never incomplete

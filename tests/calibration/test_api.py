"""The Python API in process: `calibrate` with a `ScriptedJudge`, labels checking, and the
report's figures against the hand-computed ones in data.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import rubricflow
from rubricflow import CalibrationError, calibrate, parse_rubric, read_labels
from rubricflow.calibration import CalibrationReport, LabelledExample
from rubricflow.model import Criterion
from rubricflow.results import Target
from rubricflow.testing import UNABLE, ScriptedJudge, make_plugins

from .data import EXAMPLES, JUDGE, check_report, rubric, write_files


def scripted() -> ScriptedJudge:
    def answer(criterion_id: str) -> Any:
        def pick(criterion: Criterion, target: Target) -> Any:
            value = JUDGE[str(target.id)][criterion_id]
            return UNABLE if value == "unable" else value

        return pick

    return ScriptedJudge({key: answer(key) for key in ("tone", "depth", "quality")})


async def run(examples: Any = None, **options: Any) -> CalibrationReport:
    judge = scripted()
    return await calibrate(
        rubric(), EXAMPLES if examples is None else examples, plugins=make_plugins(judge), **options
    )


async def test_calibrate_reports_the_hand_computed_figures() -> None:
    report = await run()
    as_dict = report.to_dict()
    check_report(as_dict)
    json.dumps(as_dict)  # every figure is plain JSON
    tone = report.criterion("tone")
    assert tone is not None and tone.kappa.interval is not None
    assert report.kappa_below(0.2) == ["tone"]
    assert report.kappa_undefined() == ["safe"]
    assert report.usage["llm_calls"] == 0  # a scripted judge makes no LLM calls


async def test_the_judge_is_asked_about_every_example_and_llm_criterion() -> None:
    judge = scripted()
    await calibrate(rubric(), EXAMPLES, plugins=make_plugins(judge), bootstrap=0)
    assert sorted((c.target_id, c.criterion_id) for c in judge.calls) == sorted(
        (example_id, criterion_id)
        for example_id in JUDGE
        for criterion_id in ("tone", "depth", "quality")
    )


async def test_intervals_hold_the_estimates_and_repeat_with_the_seed() -> None:
    first = await run(seed=7, bootstrap=300)
    again = await run(seed=7, bootstrap=300)
    other = await run(seed=8, bootstrap=300)
    assert first.to_dict()["criteria"] == again.to_dict()["criteria"]
    assert first.to_dict()["criteria"] != other.to_dict()["criteria"]
    for agreement in first.criteria:
        for estimate in (agreement.accuracy, agreement.kappa):
            if estimate.value is None:
                assert estimate.interval is None
                continue
            assert estimate.interval is not None
            assert estimate.interval.resamples == 300
            assert 0 < estimate.interval.used <= 300
            assert estimate.interval.confidence == 0.95
            assert estimate.interval.low <= estimate.interval.high
    tone = first.criterion("tone")
    assert tone is not None and tone.accuracy.interval is not None
    assert tone.accuracy.interval.low <= 0.6 <= tone.accuracy.interval.high


async def test_a_wider_confidence_gives_a_wider_interval() -> None:
    narrow = (await run(confidence=0.5)).overall.accuracy.interval
    wide = (await run(confidence=0.99)).overall.accuracy.interval
    assert narrow is not None and wide is not None
    assert wide.low <= narrow.low and narrow.high <= wide.high
    assert (wide.confidence, narrow.confidence) == (0.99, 0.5)


async def test_bootstrap_off_gives_figures_without_intervals() -> None:
    report = await run(bootstrap=0)
    check_report(report.to_dict())
    assert all(c.accuracy.interval is None and c.kappa.interval is None for c in report.criteria)
    assert report.to_dict()["bootstrap"]["resamples"] == 0


async def test_a_scorer_error_is_unscored_not_a_disagreement() -> None:
    judge = ScriptedJudge({"tone": RuntimeError, "depth": "good", "quality": 9})
    report = await calibrate(rubric(), EXAMPLES[:2], plugins=make_plugins(judge), bootstrap=0)
    tone = report.criterion("tone")
    assert tone is not None
    assert (tone.labelled, tone.n, tone.unscored) == (2, 0, 2)
    assert tone.accuracy.value is None and tone.accuracy.reason == "no items to compare"
    assert tone.kappa.value is None
    assert {d.status for d in report.unscored} == {"error"}
    assert "RuntimeError" in report.unscored[0].notes
    assert all(d.criterion_id != "tone" for d in report.disagreements)


async def test_labelled_examples_from_a_file_keep_their_targets(tmp_path: Path) -> None:
    rows = [
        {"content": "[e1] 30 days", "query": "q?", "reference": "ref", "labels": {"tone": "MET"}},
        {"id": 7, "content": {"json": True}, "metadata": {"k": 1}, "labels": {}},
    ]
    _rubric_file, labels = write_files(tmp_path, rows)
    examples = read_labels(labels, rubric())
    assert [e.target.id for e in examples] == ["line-1", "7"]
    assert examples[0].target.query == "q?" and examples[0].target.reference == "ref"
    assert examples[1].target.content == {"json": True}
    assert examples[0].labels == {"tone": "MET"} and examples[1].labels == {}
    assert isinstance(examples[0], LabelledExample)


def test_labels_are_normalised_per_criterion() -> None:
    examples = rubricflow.calibration.parse_examples(EXAMPLES, rubric())
    assert examples[1].labels == {
        "tone": "MET",
        "depth": "good",
        "quality": "MET",
        "refund": "MET",
        "safe": "MET",
    }
    assert "safe" not in examples[4].labels  # null: not labelled
    assert examples[3].labels["tone"] == "UNMET"


@pytest.mark.parametrize(
    ("example", "message"),
    [
        (
            {"content": "x", "labels": {"polite": "MET"}},
            "examples[0], field `labels.polite`: rubric 'answers' has no criterion 'polite'; "
            "use one of its criterion ids: tone, depth, quality, refund, safe",
        ),
        (
            {"content": "x", "labels": {"tone": "yes"}},
            'examples[0], field `labels.tone`: "yes" is not a valid label for binary '
            "criterion 'tone'; use one of: MET, UNMET, true, false",
        ),
        (
            {"content": "x", "labels": {"depth": "MET"}},
            'examples[0], field `labels.depth`: "MET" is not a valid level id for levels '
            "criterion 'depth'; use one of: shallow, adequate, good, thorough",
        ),
        (
            {"content": "x", "labels": {"quality": 7}},
            "examples[0], field `labels.quality`: 7 is not a valid label for bands criterion "
            "'quality'; use one of: MET, UNMET, true, false",
        ),
        ({"content": "x"}, "examples[0], field `labels`: missing; add the human labels"),
        (
            {"content": "x", "labels": ["MET"]},
            "examples[0], field `labels`: expected an object mapping criterion ids to labels",
        ),
        ({"labels": {}}, "examples[0]: a target needs `content`"),
        ("just text", "examples[0]: an example is a JSON object with `content` and `labels`"),
    ],
)
async def test_bad_examples_raise_calibration_errors(example: Any, message: str) -> None:
    with pytest.raises(CalibrationError) as caught:
        await run([example])
    assert message in str(caught.value)
    assert isinstance(caught.value, rubricflow.RubricflowError)


async def test_no_examples_is_an_error_and_settings_are_checked() -> None:
    with pytest.raises(CalibrationError, match="no labelled examples given"):
        await run([])
    with pytest.raises(ValueError, match="confidence"):
        await run(confidence=0.0)
    with pytest.raises(ValueError, match="bootstrap"):
        await run(bootstrap=-1)


async def test_a_deterministic_only_rubric_needs_no_judge() -> None:
    only_checks = parse_rubric(
        {
            "id": "checks",
            "criteria": [
                {
                    "id": "short",
                    "scoring": {
                        "method": "deterministic",
                        "function": "word_count_between",
                        "config": {"max": 3},
                    },
                }
            ],
        }
    )
    examples = [
        {"content": "one two", "labels": {"short": "MET"}},
        {"content": "one two three four", "labels": {"short": "MET"}},
        {"content": "a b c d e", "labels": {"short": "UNMET"}},
        {"content": "a", "labels": {"short": "UNMET"}},
    ]
    report = await calibrate(only_checks, examples, bootstrap=0)
    short = report.criterion("short")
    assert short is not None
    # rows human, columns check: UNMET (1 agree, 1 MET), MET (1 UNMET, 1 agree)
    assert short.confusion.counts == ((1, 1), (1, 1))
    assert short.accuracy.value == 0.5 and short.kappa.value == 0.0
    assert [d.example_id for d in report.disagreements] == ["example-2", "example-4"]


async def test_labelled_examples_are_checked_against_the_rubric_they_are_used_with(
    tmp_path: Path,
) -> None:
    other = parse_rubric(
        {
            "id": "other",
            "criteria": [
                {
                    "id": "depth",
                    "levels": [{"id": "low", "score": 0.0}, {"id": "high", "score": 1.0}],
                }
            ],
        }
    )
    _rubric_file, labels = write_files(tmp_path, [EXAMPLES[0]])
    examples = read_labels(labels, rubric())
    with pytest.raises(CalibrationError) as caught:
        await calibrate(other, examples, bootstrap=0)
    assert f"{labels} line 1, field `labels.tone`: rubric 'other' has no criterion" in str(
        caught.value
    )
    report = await run(examples, bootstrap=0)
    assert report.examples == 1 and report.criterion("tone") is not None

"""Metric criteria scored together with deterministic and LLM criteria (answered by a
scripted judge) under the one aggregation formula, including an imported OpenRubricRL
rubric whose hybrid metrics become metric criteria."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import rubricflow_metrics
import sacrebleu
from rouge_score import rouge_scorer

from rubricflow import Rubric, evaluate, load_file, parse_rubric
from rubricflow.formats.openrubricrl import METRIC_TYPES
from rubricflow.testing import ScriptedJudge, make_plugins, make_target

FIXTURES = Path(__file__).parent / "fixtures"


def exact(value: float) -> Fraction:
    """A float as the decimal it prints as, as the engine reads scores and weights."""
    return Fraction(repr(value))


def weighted(pairs: list[tuple[float, float]]) -> float:
    """The aggregation formula for positive weights: sum(w*s) / sum(w)."""
    total = sum(exact(w) * exact(s) for w, s in pairs)
    return float(total / sum(exact(w) for w, _ in pairs))


SUMMARY_RUBRIC = {
    "id": "release-note-summary",
    "version": "1.0.0",
    "pass_threshold": 0.6,
    "criteria": [
        {
            "id": "faithful",
            "description": "States only what the release notes say.",
            "weight": 2,
            "required": True,
        },
        {
            "id": "helpfulness",
            "description": "How useful is the summary to a user deciding whether to upgrade?",
            "weight": 1,
            "score_ranges": {"0": "useless", "4": "partly useful", "8": "very useful"},
        },
        {
            "id": "overlap",
            "weight": 1,
            "scoring": {"method": "metric", "metric": "rouge_l", "config": {"use_stemmer": True}},
        },
        {
            "id": "mentions-key-changes",
            "weight": 1,
            "scoring": {
                "method": "metric",
                "metric": "keyword_coverage",
                "config": {"keywords": ["dark mode", "export", "crash"]},
            },
        },
        {
            "id": "short",
            "weight": 1,
            "scoring": {
                "method": "deterministic",
                "function": "word_count_between",
                "config": {"min": 5, "max": 40},
            },
        },
    ],
}
SUMMARY = "Version 2.3 adds dark mode, fixes a crash on start-up and speeds up sync."
REFERENCE = "Release 2.3 introduces dark mode, PDF export and a fix for the start-up crash."


async def test_metric_deterministic_and_llm_criteria_blend_under_one_formula() -> None:
    judge = ScriptedJudge({"faithful": "MET", "helpfulness": 7})
    plugins = make_plugins(rubricflow_metrics, judge)
    rubric = parse_rubric(SUMMARY_RUBRIC)

    evaluation = await evaluate(
        rubric, make_target(SUMMARY, id="note-1", reference=REFERENCE), plugins=plugins
    )

    by_id = {r.criterion_id: r for r in evaluation.criteria}
    assert {r.status for r in evaluation.criteria} == {"scored"}
    assert {cid: r.scorer for cid, r in by_id.items()} == {
        "faithful": "llm_verdict",
        "helpfulness": "llm_score",
        "overlap": "metric",
        "mentions-key-changes": "metric",
        "short": "deterministic",
    }
    rouge = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True).score(REFERENCE, SUMMARY)
    assert by_id["overlap"].score == rouge["rougeL"].fmeasure
    assert by_id["mentions-key-changes"].score == 2 / 3
    assert by_id["faithful"].verdict == "MET"
    assert by_id["helpfulness"].score == 0.7 and by_id["helpfulness"].judge_score == 7
    assert by_id["short"].verdict == "MET"

    expected = weighted(
        [
            (2, 1.0),
            (1, 0.7),
            (1, rouge["rougeL"].fmeasure),
            (1, 2 / 3),
            (1, 1.0),
        ]
    )
    assert evaluation.score == expected
    assert evaluation.coverage == 1.0
    assert evaluation.verdict == ("pass" if expected >= 0.6 else "fail")
    assert sorted((c.criterion_id, c.scorer) for c in judge.calls) == [
        ("faithful", "llm_verdict"),
        ("helpfulness", "llm_score"),
    ]
    assert judge.calls_for("faithful")[0].target_id == "note-1"
    assert "missing: export" in by_id["mentions-key-changes"].evidence


async def test_a_failed_required_llm_criterion_fails_whatever_the_metrics_say() -> None:
    judge = ScriptedJudge({"faithful": "UNMET", "helpfulness": 10})
    plugins = make_plugins(rubricflow_metrics, judge)

    evaluation = await evaluate(
        parse_rubric(SUMMARY_RUBRIC), make_target(REFERENCE, reference=REFERENCE), plugins=plugins
    )

    overlap = evaluation.criterion("overlap")
    assert overlap is not None and overlap.score == 1.0
    assert evaluation.verdict == "fail"
    assert evaluation.gating_failures == ("faithful",)


async def test_a_metric_error_makes_the_evaluation_incomplete_not_a_pass() -> None:
    judge = ScriptedJudge({"faithful": "MET", "helpfulness": 10})
    plugins = make_plugins(rubricflow_metrics, judge)

    evaluation = await evaluate(
        parse_rubric(SUMMARY_RUBRIC), make_target(REFERENCE), plugins=plugins
    )  # no reference: ROUGE cannot be computed

    overlap = evaluation.criterion("overlap")
    assert overlap is not None and overlap.status == "error"
    assert "reference" in overlap.notes
    assert evaluation.verdict == "incomplete"
    assert not evaluation.passed
    assert evaluation.coverage == 5 / 6
    assert "overlap" in evaluation.feedback


# --- OpenRubricRL ---------------------------------------------------------------------------

QA_TARGETS = [
    {
        "id": "q1",
        "content": "Paris is the capital of France.",
        "reference": "Paris is the capital of France.",
        "metadata": {"expected_output": "Paris is the capital of France."},
    },
    {
        "id": "q2",
        "content": "The capital city of France is Paris.",
        "reference": "Paris is the capital of France.",
        "metadata": {"expected_output": "Paris is the capital of France."},
    },
]


def _qa_rubric() -> Rubric:
    loaded = load_file(FIXTURES / "openrubricrl_qa.json")
    assert loaded.format == "openrubricrl"
    (rubric,) = loaded.rubrics
    return rubric


def test_the_openrubricrl_fixture_imports_metrics_as_weighted_metric_criteria() -> None:
    rubric = _qa_rubric()

    weights = {c.id: c.weight for c in rubric.criteria}
    # the LLM share is 1 - (0.3 + 0.2) = 0.5, spread over the LLM criteria
    assert weights == pytest.approx(
        {"correctness": 0.3, "clarity": 0.2, "bleu_score": 0.3, "exact_answer": 0.2}
    )
    bleu = rubric.criterion("bleu_score")
    accuracy = rubric.criterion("exact_answer")
    assert bleu is not None and accuracy is not None
    assert bleu.scoring.method == "metric" and bleu.scoring.metric == "bleu"
    assert bleu.scoring.config == {"reference_key": "expected_output"}
    assert accuracy.scoring.metric == "accuracy"


@pytest.mark.parametrize("target", QA_TARGETS, ids=lambda t: t["id"])
async def test_an_imported_openrubricrl_rubric_blends_llm_and_metric_scores(
    target: dict[str, Any],
) -> None:
    rubric = _qa_rubric()
    judge = ScriptedJudge({"correctness": 8, "clarity": 9})
    plugins = make_plugins(rubricflow_metrics, judge)

    evaluation = await evaluate(rubric, target, plugins=plugins)

    scores = {r.criterion_id: r.score for r in evaluation.criteria}
    content, reference = str(target["content"]), str(target["reference"])
    bleu = min(1.0, sacrebleu.sentence_bleu(content, [reference]).score / 100)
    accuracy = 1.0 if content == reference else 0.0
    assert scores == {
        "correctness": 0.8,
        "clarity": 0.9,
        "bleu_score": bleu,
        "exact_answer": accuracy,
    }
    weights = {c.id: c.weight for c in rubric.criteria}
    expected = weighted([(weights[cid], float(score or 0)) for cid, score in scores.items()])
    assert evaluation.score == expected
    # with weights summing to 1 this is OpenRubricRL's blend: 0.5*LLM + 0.3*bleu + 0.2*acc
    llm = (0.6 * 0.8 + 0.4 * 0.9) / 1.0
    assert evaluation.score == pytest.approx(0.5 * llm + 0.3 * bleu + 0.2 * accuracy, abs=1e-12)
    assert evaluation.scaled_score == pytest.approx(evaluation.score * 10)
    assert evaluation.coverage == 1.0
    bleu_result = evaluation.criterion("bleu_score")
    assert bleu_result is not None
    assert "from target.metadata.expected_output" in bleu_result.evidence[-1]
    assert {c.criterion_id for c in judge.calls} == {"correctness", "clarity"}


def _openrubricrl(metrics: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": "blend",
        "version": "1.0.0",
        "scale": {"min": 0, "max": 1, "type": "continuous"},
        "criteria": [{"name": "quality", "description": "Overall quality.", "weight": 1.0}],
        "hybrid_metrics": metrics,
    }


async def test_every_openrubricrl_metric_type_is_handled(tmp_path: Path) -> None:
    metrics = [
        {"name": "bleu", "type": "bleu", "weight": 0.1},
        {"name": "rouge default", "type": "rouge", "weight": 0.1},
        {"name": "rouge one", "type": "rouge", "weight": 0.1, "config": {"variant": "rouge1"}},
        {"name": "accuracy", "type": "accuracy", "weight": 0.1},
        {"name": "perplexity", "type": "perplexity", "weight": 0.1},
        {"name": "custom bare", "type": "custom", "weight": 0.1},
        {"name": "custom named", "type": "custom", "weight": 0.1, "config": {"metric": "chrf"}},
    ]
    assert {m["type"] for m in metrics} == set(METRIC_TYPES)
    path = tmp_path / "blend.json"
    path.write_text(json.dumps(_openrubricrl(metrics)), encoding="utf-8")
    (rubric,) = load_file(path).rubrics
    plugins = make_plugins(rubricflow_metrics, ScriptedJudge({"quality": 6}))
    text = "The cat sat on the mat."

    evaluation = await evaluate(rubric, make_target(text, reference=text), plugins=plugins)

    status = {r.criterion_id: (r.status, r.score) for r in evaluation.criteria}
    assert status["bleu"] == ("scored", 1.0)
    assert status["rouge_default"] == ("scored", 1.0)
    assert status["rouge_one"] == ("scored", 1.0)
    assert status["accuracy"] == ("scored", 1.0)
    assert status["custom_named"] == ("scored", 1.0)
    assert status["perplexity"] == ("error", None)
    assert status["custom_bare"] == ("error", None)
    assert status["quality"] == ("scored", 0.6)
    notes = {r.criterion_id: r.notes for r in evaluation.criteria}
    assert "language model" in notes["perplexity"]
    assert "config.metric" in notes["custom_bare"]
    assert evaluation.verdict == "incomplete"


async def test_openrubricrl_blend_with_a_perplexity_metric_fails_closed(tmp_path: Path) -> None:
    """SEMANTICS' example blends LLM 0.8, accuracy 1.0 (w 0.3) and perplexity (w 0.2) into
    0.7755 using a perplexity score; without a language model that share cannot be
    scored, so the result is incomplete, over the scored criteria only."""
    metrics = [
        {"name": "accuracy", "type": "accuracy", "weight": 0.3},
        {"name": "perplexity", "type": "perplexity", "weight": 0.2},
    ]
    path = tmp_path / "semantics.json"
    path.write_text(json.dumps(_openrubricrl(metrics)), encoding="utf-8")
    (rubric,) = load_file(path).rubrics
    plugins = make_plugins(rubricflow_metrics, ScriptedJudge({"quality": 8}))

    evaluation = await evaluate(rubric, make_target("42", reference="42"), plugins=plugins)

    assert evaluation.verdict == "incomplete"
    assert evaluation.coverage == pytest.approx(0.8)
    assert evaluation.score == weighted([(0.5, 0.8), (0.3, 1.0)])  # 0.875
    assert evaluation.score == pytest.approx(0.875)


async def test_openrubricrl_accuracy_without_reference_is_no_longer_a_free_point(
    tmp_path: Path,
) -> None:
    path = tmp_path / "acc.json"
    path.write_text(
        json.dumps(_openrubricrl([{"name": "acc", "type": "accuracy", "weight": 0.5}])),
        encoding="utf-8",
    )
    (rubric,) = load_file(path).rubrics
    plugins = make_plugins(rubricflow_metrics, ScriptedJudge({"quality": 10}))

    evaluation = await evaluate(rubric, make_target("anything"), plugins=plugins)

    acc = evaluation.criterion("acc")
    assert acc is not None and acc.status == "error" and acc.score is None
    assert evaluation.verdict == "incomplete" and not evaluation.passed

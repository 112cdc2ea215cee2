"""Feedback says the verdict, the score, each criterion, and exactly what to fix."""

from __future__ import annotations

from rubricflow import parse_rubric
from rubricflow.engine import evaluate
from rubricflow.plugins import PluginRegistry

from .conftest import crit

LEVELS = [
    {"id": "poor", "label": "Poor", "description": "Misses the question", "score": 0.0},
    {"id": "fair", "label": "Fair", "description": "Answers part of it", "score": 0.5},
    {"id": "good", "label": "Good", "description": "Answers fully with a source", "score": 1.0},
]


async def test_feedback_names_the_next_level_up(scripted: PluginRegistry) -> None:
    r = parse_rubric(
        {
            "id": "answers",
            "name": "Answer quality",
            "criteria": [
                crit("accuracy", "fair", levels=LEVELS, name="Accuracy"),
                crit(
                    "cites", False, name="Cites a source", description="Links at least one source"
                ),
                crit("tone", True, name="Tone"),
            ],
        }
    )
    evaluation = await evaluate(r, "x", plugins=scripted)
    text = evaluation.feedback
    assert text.startswith("Evaluation FAILED for rubric 'Answer quality' (answers@1.0.0).")
    assert "Overall score: 50%" in text
    assert "- Accuracy: Fair (score: 0.50)" in text
    assert "- Tone: MET (score: 1.00)" in text
    fixes = text.split("What to fix:")[1]
    assert "Accuracy: reach 'Good': Answers fully with a source" in fixes
    assert "Cites a source: meet the requirement: Links at least one source" in fixes
    assert "Tone" not in fixes


async def test_feedback_lists_what_could_not_be_scored(scripted: PluginRegistry) -> None:
    r = parse_rubric(
        {"id": "r", "criteria": [crit("a", True), crit("b", status="raise", name="B")]}
    )
    text = (await evaluate(r, "x", plugins=scripted)).feedback
    assert text.startswith("Evaluation INCOMPLETE")
    assert "Coverage: 50%" in text
    assert (
        "- B: scorer 'scripted' raised RuntimeError: scorer exploded" in text.split("Not scored")[1]
    )


async def test_penalty_feedback_says_what_to_remove(scripted: PluginRegistry) -> None:
    r = parse_rubric(
        {
            "id": "r",
            "criteria": [
                crit("ok", True, 2),
                crit(
                    "secret",
                    True,
                    -1,
                    name="Hard-coded secret",
                    description="Code contains a credential",
                ),
            ],
            "pass_threshold": 0.9,
        }
    )
    text = (await evaluate(r, "x", plugins=scripted)).feedback
    assert (
        "Hard-coded secret: remove what triggered this penalty: Code contains a credential" in text
    )


async def test_band_feedback_names_the_next_band_up(scripted: PluginRegistry) -> None:
    bands = {"0": "Wrong", "5": "Partly right", "8": "Correct and complete"}
    r = parse_rubric(
        {
            "id": "r",
            "criteria": [
                crit("answer", 0.4, name="Answer", score_ranges=bands),
                crit("style", 0.9, name="Style", score_ranges=bands),
            ],
            "pass_threshold": 0.9,
        }
    )
    text = (await evaluate(r, "x", plugins=scripted)).feedback
    fixes = text.split("What to fix:")[1]
    assert "Answer: reach 5-7/10: Partly right" in fixes
    assert "Style" not in fixes  # already in the top band

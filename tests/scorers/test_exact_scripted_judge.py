"""The plugin-author kit's scripted judge maps its 0..10 answers exactly, as a real judge's
are (issue 15, exact scales): an 8.7 reaches a 0.87 bar."""

from __future__ import annotations

from rubricflow import evaluate, parse_rubric
from rubricflow.testing import ScriptedJudge, make_plugins

RUBRIC = parse_rubric(
    {
        "id": "answers",
        "pass_threshold": 0.87,
        "scale": {"min": 0, "max": 10},
        "criteria": [
            {
                "id": "helpful",
                "score_ranges": {0: "no help", 5: "some", 10: "complete"},
                "scoring": {"method": "llm"},
            }
        ],
    }
)


async def test_a_scripted_8_7_out_of_10_reaches_a_0_87_bar() -> None:
    plugins = make_plugins(ScriptedJudge({"helpful": 8.7}))
    evaluation = await evaluate(RUBRIC, "Here is the answer.", plugins=plugins)
    [result] = evaluation.criteria
    assert (result.score, result.judge_score, result.passed) == (0.87, 8.7, True)
    assert (evaluation.verdict, evaluation.score, evaluation.scaled_score) == ("pass", 0.87, 8.7)

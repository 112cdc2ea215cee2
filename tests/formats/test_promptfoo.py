"""promptfoo configs (issue 31, item 2): each test's assertions become its rubric, scored
as promptfoo scores a test (weighted mean; every assertion must pass unless the test has a
threshold; assert-sets as groups), `defaultTest` and `vars` merged, and what cannot be
mapped named. LLM assertions are judged over real HTTP by the scripted server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from llm.fixtures import clean_llm_env, server, session_for
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply
from typer.testing import CliRunner

from rubricflow import RubricValidationError, evaluate, load_document, load_file
from rubricflow.cli import app
from rubricflow.suites import load_suite

__all__ = ["clean_llm_env", "server"]

CONFIG: dict[str, Any] = {
    "description": "Support replies",
    "prompts": ["Answer: {{question}}"],
    "providers": ["openai:gpt-4o-mini"],
    "defaultTest": {
        "vars": {"shop": "Acme"},
        "assert": [{"type": "icontains", "value": "{{shop}}"}],
    },
    "tests": [
        {
            "description": "order status",
            "vars": {"order": "A-17", "output": "ACME: order A-17 ships today."},
            "assert": [
                {"type": "contains", "value": "{{order}}", "weight": 2, "metric": "order"},
                {"type": "not-contains", "value": "sorry"},
                {"type": "regex", "value": "ships (today|tomorrow)"},
            ],
        },
        {
            "description": "json reply",
            "vars": {"output": 'Here: {"ok": true}'},
            "threshold": 0.5,
            "assert": [
                {"type": "contains-json"},
                {"type": "is-json"},
                {"type": "levenshtein", "value": 'Here: {"ok": true}', "threshold": 2},
            ],
        },
    ],
}


def rubrics(document: Any) -> list[Any]:
    return load_document(document, format="promptfoo").rubrics


def test_a_config_is_detected_as_promptfoo_and_agentv_files_stay_agentv(tmp_path: Path) -> None:
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(CONFIG))
    loaded = load_file(path)
    assert loaded.format == "promptfoo"
    assert {w.path for w in loaded.warnings} == {"prompts", "providers"}
    agentv = {"tests": [{"id": "t", "assert": ["Mentions the order"]}]}
    assert load_document(agentv).format == "agentv"
    # AgentV-next's promptfoo-shaped file (ids, expected_output vars): read as promptfoo
    shaped = {
        "tests": [
            {
                "id": "t",
                "vars": {"expected_output": "x"},
                "assert": [{"type": "contains", "value": "x"}],
            }
        ]
    }
    assert load_document(shaped).format == "promptfoo"


async def test_every_assertion_must_pass_and_the_score_is_the_weighted_mean() -> None:
    first, _ = rubrics(CONFIG)
    assert first.name == "order status" and first.pass_threshold == 0
    assert [c.id for c in first.criteria] == ["icontains", "order", "not-contains", "regex"]
    assert all(c.required for c in first.criteria)
    assert first.metadata["promptfoo"]["metrics"] == {"order": "order"}
    good = await evaluate(first, "ACME: order A-17 ships today.")
    assert (good.verdict, good.score) == ("pass", 1.0)
    # one failing assertion of weight 1 out of 5: promptfoo scores 0.8 and fails the test
    sorry = await evaluate(first, "so sorry, Acme order A-17 ships today.")
    assert (sorry.verdict, sorry.score, sorry.gating_failures) == ("fail", 0.8, ("not-contains",))


async def test_a_test_threshold_replaces_the_all_pass_rule() -> None:
    _, second = rubrics(CONFIG)
    assert second.pass_threshold == 0.5 and not any(c.required for c in second.criteria)
    # defaultTest's icontains fails (no "acme") and is-json fails (text around the JSON):
    # two of four pass, 0.5 >= 0.5 passes, as in promptfoo
    outcome = await evaluate(second, 'Here: {"ok": true}')
    assert (outcome.verdict, outcome.score) == ("pass", 0.5)
    assert (await evaluate(second, 'Here: {"ok": 1}')).score == 0.25  # distance 4 > 2
    # nothing passes: 0 of 4
    assert (await evaluate(second, "none")).score == 0.0


async def test_an_assert_set_is_a_group_with_its_own_weight_and_threshold() -> None:
    config = {
        "tests": [
            {
                "assert": [
                    {"type": "contains", "value": "a", "weight": 1},
                    {
                        "type": "assert-set",
                        "weight": 3,
                        "threshold": 0.5,
                        "assert": [
                            {"type": "contains", "value": "b"},
                            {"type": "contains", "value": "c"},
                        ],
                    },
                ]
            }
        ]
    }
    (rubric,) = rubrics(config)
    assert [(g.weight, g.required, g.min_score) for g in rubric.groups] == [
        (1.0, False, None),
        (3.0, True, 0.5),
    ]
    # a passes; the set scores 0.5 (b only) and passes at its threshold: (1 + 3 * 0.5) / 4
    half = await evaluate(rubric, "a b")
    assert (half.verdict, half.score) == ("pass", 0.625)
    assert (await evaluate(rubric, "a")).verdict == "fail"  # the set at 0 < 0.5


def judge(request: Recorded) -> Reply:
    """MET, and 0.9 on a 0..1 scale, for a reply that mentions a refund."""
    met = "refund" in request.text
    schema = request.json.get("response_format", {}).get("json_schema", {}).get("schema", {})
    if "score" in schema.get("properties", {}):  # the answer schema asks for a score
        return openai_reply({"reasoning": "read it", "score": 0.9 if met else 0.1})
    return openai_reply({"reasoning": "read it", "verdict": "MET" if met else "UNMET"})


async def test_llm_assertions_are_judged_over_http(server: ScriptedServer) -> None:
    config = {
        "tests": [
            {
                "vars": {"policy": "30 days"},
                "assert": [
                    {"type": "llm-rubric", "value": "Explains the refund window of {{policy}}"},
                    {"type": "g-eval", "value": "Coherent"},
                    {"type": "factuality", "value": "Refunds within 30 days"},
                ],
            }
        ]
    }
    (rubric,) = rubrics(config)
    rubric_c, geval, fact = rubric.criteria
    assert rubric_c.description == "Explains the refund window of 30 days"
    assert rubric_c.scoring.method == "llm_verdict"
    assert (geval.scoring.method, geval.min_score) == ("llm_score", 0.7)
    assert "must not contradict" in fact.description
    server.responder = judge
    async with session_for(server) as session:
        outcome = await evaluate(rubric, "You get a refund in 30 days.", options={"llm": session})
    assert outcome.verdict == "pass", [
        (c.criterion_id, c.status, c.notes) for c in outcome.criteria
    ]


@pytest.mark.parametrize(
    ("assertion", "says"),
    [
        ({"type": "javascript", "value": "output.length > 3"}, "runs code"),
        ({"type": "python", "value": "len(output) > 3"}, "runs code"),
        ({"type": "similar", "value": "x"}, "embeddings"),
        ({"type": "starts-with", "value": "x"}, "not imported"),
        ({"type": "not-llm-rubric", "value": "x"}, "no inverted form"),
        ({"type": "not-contains-all", "value": ["x"]}, "not-contains-any"),
        ({"type": "contains", "value": "{{missing}}"}, "names no var"),
        ({"type": "contains", "value": "{% if x %}y{% endif %}"}, "template beyond"),
    ],
)
def test_what_cannot_be_mapped_is_named(assertion: dict[str, Any], says: str) -> None:
    with pytest.raises(RubricValidationError) as refused:
        rubrics({"tests": [{"assert": [{"type": "is-json"}, assertion]}]})
    messages = " ".join(
        p.message for p in refused.value.problems if p.path.startswith("tests[0].assert[1]")
    )
    assert says in messages, refused.value.problems


def test_eval_reads_a_config_directly_and_convert_writes_native(tmp_path: Path) -> None:
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(CONFIG))
    suite = load_suite(path)
    assert suite.format == "promptfoo" and [c.target.id for c in suite.cases] == [
        "order status",
        "json reply",
    ]
    runner = CliRunner()
    result = runner.invoke(app, ["eval", str(path), "--quiet"])
    assert result.exit_code == 0, result.output
    assert "2 passed, 0 failed" in result.output
    converted = runner.invoke(app, ["convert", str(path)])
    assert converted.exit_code == 0, converted.output
    assert "order_status" in converted.output

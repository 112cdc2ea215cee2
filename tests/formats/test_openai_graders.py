"""OpenAI graders (issue 31): an eval's testing_criteria, exported before OpenAI's hosted
Evals shut down, load as one rubric whose verdict passes when every grader passes, with
each grader's own pass rule. Model graders are judged over real HTTP by the scripted
OpenAI-compatible server; text similarity by the metrics plugin."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llm.fixtures import clean_llm_env, server, session_for
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply

from rubricflow import RubricValidationError, evaluate, load_document, load_file
from rubricflow.results import Target

__all__ = ["clean_llm_env", "server"]

STRING_CHECKS = [
    {
        "type": "string_check",
        "name": "Mentions the order",
        "input": "{{ sample.output_text }}",
        "reference": "{{ item.order_id }}",
        "operation": "like",
    },
    {
        "type": "string_check",
        "name": "Says sorry",
        "input": "{{sample.output_text}}",
        "reference": "SORRY",
        "operation": "ilike",
    },
]
SCORE = {
    "type": "score_model",
    "name": "Helpful",
    "model": "o4-mini",
    "input": [
        {"role": "system", "content": "Rate how helpful the reply is, from 1 to 7."},
        {"role": "user", "content": "Reply: {{ sample.output_text }}"},
    ],
    "range": [1, 7],
    "pass_threshold": 5,
}
SIMILAR = {
    "type": "text_similarity",
    "name": "Close",
    "input": "{{ sample.output_text }}",
    "reference": "{{ item.answer }}",
    "evaluation_metric": "rouge_l",
    "pass_threshold": 0.4,
}
LABEL = {
    "type": "label_model",
    "name": "Tone",
    "model": "gpt-4o-mini",
    "input": [{"role": "developer", "content": "Classify the tone of the reply."}],
    "labels": ["polite", "neutral", "rude"],
    "passing_labels": ["polite", "neutral"],
}


def one(document: Any) -> Any:
    (rubric,) = load_document(document, format="openai-graders").rubrics
    return rubric


async def test_an_eval_s_string_checks_pass_only_together() -> None:
    rubric = one({"name": "Support", "testing_criteria": STRING_CHECKS})
    assert rubric.id == "support" and rubric.pass_threshold == 0
    assert [c.scoring.function for c in rubric.criteria] == ["string_check"] * 2
    both = Target(content="Sorry, order A-17 ships today.", reference={"order_id": "A-17"})
    assert (await evaluate(rubric, both)).verdict == "pass"
    no_order = Target(content="Sorry for the wait.", reference={"order_id": "A-17"})
    outcome = await evaluate(rubric, no_order)
    assert (outcome.verdict, outcome.gating_failures) == ("fail", ("mentions_the_order",))
    # `like` is case-sensitive, `ilike` not
    shouted = Target(content="SORRY! a-17 ships.", reference={"order_id": "A-17"})
    assert (await evaluate(rubric, shouted)).gating_failures == ("mentions_the_order",)


@pytest.mark.parametrize(
    ("operation", "content", "passed"),
    [("eq", "yes", True), ("eq", "yes ", False), ("ne", "no", True), ("ne", "yes", False)],
)
async def test_eq_and_ne_compare_the_whole_text(operation: str, content: str, passed: bool) -> None:
    grader = {**STRING_CHECKS[1], "operation": operation, "reference": "yes"}
    evaluation = await evaluate(one(grader), content)
    assert evaluation.criteria[0].passed is passed


def judge(request: Recorded) -> Reply:
    """5 of 7 for a reply that says thanks, else 4; polite when it says please, else rude."""
    text = request.text
    if "Classify the tone" in text:
        level = "polite" if "please" in text else "rude"
        return openai_reply({"reasoning": "tone", "level_id": level})
    return openai_reply({"reasoning": "rated", "score": 5 if "thanks" in text else 4})


async def test_model_graders_pass_at_their_threshold_and_passing_labels(
    server: ScriptedServer,
) -> None:
    rubric = one([SCORE, LABEL])
    helpful, tone = rubric.criteria
    assert (helpful.scoring.method, helpful.scoring.config) == (
        "llm_score",
        {"min_score": 1.0, "max_score": 7.0},
    )
    assert [(level.label, level.score) for level in tone.levels] == [
        ("polite", 1.0),
        ("neutral", 1.0),
        ("rude", 0.0),
    ]
    assert rubric.metadata["openai"]["models"] == {"helpful": "o4-mini", "tone": "gpt-4o-mini"}
    server.responder = judge
    async with session_for(server) as session:
        good = await evaluate(rubric, "thanks, please wait", options={"llm": session})
        short = await evaluate(rubric, "please wait", options={"llm": session})
        rude = await evaluate(rubric, "thanks, wait", options={"llm": session})
    assert good.verdict == "pass"
    assert (short.verdict, short.gating_failures) == ("fail", ("helpful",))  # 4 < 5
    assert (rude.verdict, rude.gating_failures) == ("fail", ("tone",))


def test_text_similarity_uses_the_metrics_plugin_at_its_threshold() -> None:
    rubric = one(SIMILAR)
    (criterion,) = rubric.criteria
    assert (criterion.scoring.method, criterion.scoring.metric) == ("metric", "rouge_l")
    assert (criterion.min_score, criterion.scoring.config) == (0.4, {"reference_key": "answer"})


async def test_text_similarity_scores_against_each_item_s_reference() -> None:
    pytest.importorskip("rubricflow_metrics")  # installed by the README's test command
    rubric = one(SIMILAR)
    answer = {"answer": "the parcel ships on monday from the berlin depot"}
    near = await evaluate(
        rubric, Target(content="the parcel ships monday from berlin", reference=answer)
    )
    far = await evaluate(rubric, Target(content="we are closed today", reference=answer))
    assert (near.verdict, far.verdict) == ("pass", "fail")
    assert near.criteria[0].score > 0.4 > far.criteria[0].score


@pytest.mark.parametrize(
    ("grader", "path", "says"),
    [
        (
            {"type": "python", "name": "p", "source": "def grade(s, i): return 1"},
            ".source",
            "port it",
        ),
        (
            {
                "type": "multi",
                "name": "m",
                "graders": {"a": STRING_CHECKS[1]},
                "calculate_output": "__import__('os').system('x')",
            },
            ".calculate_output",
            "only the functions",
        ),
        (
            {"type": "multi", "name": "m", "graders": {"a": SCORE}, "calculate_output": "a"},
            ".graders.a.type",
            "import model graders as graders of their own",
        ),
        ({**STRING_CHECKS[0], "input": "{{ item.question }}"}, ".input", "sample.output_text"),
        (
            {**STRING_CHECKS[0], "type": "text_similarity", "evaluation_metric": "fuzzy_match"},
            ".evaluation_metric",
            "not imported",
        ),
        ({**LABEL, "passing_labels": ["kind"]}, ".passing_labels", "'kind'"),
        ({**SCORE, "pass_threshold": 9}, ".pass_threshold", "within the range 1..7"),
    ],
)
def test_what_cannot_be_imported_is_named_never_dropped(
    grader: dict[str, Any], path: str, says: str
) -> None:
    with pytest.raises(RubricValidationError) as refused:
        one({"name": "E", "testing_criteria": [STRING_CHECKS[1], grader]})
    problems = {p.path: p.message for p in refused.value.problems}
    assert says in problems[f"testing_criteria[1]{path}"], problems


def test_an_exported_eval_file_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "eval.json"
    path.write_text(json.dumps({"name": "Support", "testing_criteria": [*STRING_CHECKS, SCORE]}))
    loaded = load_file(path)
    assert loaded.format == "openai-graders"
    assert [w.path for w in loaded.warnings] == ["testing_criteria[2].model"]


MULTI = {
    "type": "multi",
    "name": "Blend",
    "graders": {
        "sorry": STRING_CHECKS[1],
        "close": {**SIMILAR, "evaluation_metric": "bleu"},
    },
    "calculate_output": "0.25 * sorry + 0.75 * max(close, sorry ^ 2 / 2)",
    "pass_threshold": 0.5,
}


async def test_a_multi_grader_computes_its_formula_safely() -> None:
    pytest.importorskip("rubricflow_metrics")
    rubric = one(MULTI)
    (criterion,) = rubric.criteria
    assert (criterion.scoring.function, criterion.min_score) == ("openai_multi", 0.5)
    far = Target(content="Sorry, we are closed.", reference={"answer": "ships monday"})
    outcome = await evaluate(rubric, far)
    # sorry = 1, close = bleu ~ 0: 0.25 + 0.75 * max(~0, 0.5) = 0.625
    assert outcome.criteria[0].score == pytest.approx(0.625)
    assert outcome.verdict == "pass"
    plain = await evaluate(rubric, Target(content="closed", reference={"answer": "ships"}))
    assert (plain.verdict, plain.criteria[0].score) == ("fail", 0.0)


@pytest.mark.parametrize(
    ("formula", "says"),
    [
        ("a.__class__", "Attribute is not arithmetic"),
        ("[a]", "List is not arithmetic"),
        ("open('x')", "only the functions"),
        ("a if a else 1", "IfExp is not arithmetic"),
        ("c + 1", "'c' is not a grader"),
        ("'1' + a", "is not a number"),
        ("a << 2", "LShift"),
        ("min(a, b=1)", "without keywords"),
        ("", "must be a formula"),
    ],
)
def test_a_formula_is_arithmetic_only(formula: str, says: str) -> None:
    from rubricflow.formats.arithmetic import FormulaError, check_formula

    with pytest.raises(FormulaError, match=re.escape(says)):
        check_formula(formula, ["a", "b"])


def test_formula_values_and_bounds() -> None:
    from rubricflow.formats.arithmetic import FormulaError, check_formula, evaluate_formula

    def value(formula: str, **names: float) -> float:
        return evaluate_formula(check_formula(formula, names), names)

    assert value("(a + b) / 2", a=1, b=0) == 0.5
    assert value("a ^ 2 + sqrt(b) - abs(-1) + floor(1.5) + ceil(0.2)", a=2, b=4) == 7
    assert value("log(exp(a)) * min(1, 2, 3) - -1", a=1) == 2
    for bad in ("a / b", "2 ^ 1000", "sqrt(-1)", "9 ^ 9 ^ 9"):
        with pytest.raises(FormulaError):
            value(bad, a=1, b=0)
    # a function's bare name is not a value: refused when checked, naming the fix
    for bare in ("ceil", "a + min", "sqrt * 2"):
        with pytest.raises(FormulaError, match="is a function: call it"):
            check_formula(bare, ["a"])
    # a grader may share a function's name; the name is then the grader's score
    assert value("min + min(1, 2)", min=0.5) == 1.5


@given(
    st.text(max_size=40)
    | st.lists(
        st.sampled_from(["a", "ceil", "min", "(", ")", "+", "^", ",", "1", "-", "*"]), max_size=12
    ).map(" ".join)
)
@settings(max_examples=300, deadline=None)
def test_any_text_is_refused_or_computed_never_run(text: str) -> None:
    from rubricflow.formats.arithmetic import FormulaError, check_formula, evaluate_formula

    try:
        tree = check_formula(text, ["a"])
        evaluate_formula(tree, {"a": 0.5})
    except FormulaError:
        pass

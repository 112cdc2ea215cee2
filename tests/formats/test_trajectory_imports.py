"""AgentV's multi-turn tests and the trajectory assertions of promptfoo and AgentV,
imported and then scored: per-turn graders judge their own turn (`scope: turn`), the turns
combine as AgentV combines them, and every trajectory assertion is a built-in check."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llm.fixtures import clean_llm_env
from llm.scripted import Recorded, Reply, ScriptedServer, openai_reply, verdict

from rubricflow import RubricflowError, evaluate, load_document, parse_rubric
from rubricflow.results import Target
from rubricflow.trajectory import tool_sequence

__all__ = ["clean_llm_env"]

CONVERSATION_TEST = {
    "tests": [
        {
            "id": "capitals",
            "mode": "conversation",
            "aggregation": "mean",
            "assert": ["Stays on the topic of geography"],
            "vars": {"input": [{"role": "system", "content": "You are a geography expert."}]},
            "turns": [
                {"input": "Capital of France?", "assert": ["Names Paris"]},
                {"input": "And of Germany?", "assert": ["Names Berlin"]},
            ],
        }
    ]
}
TALK = [
    {"role": "system", "content": "You are a geography expert."},
    {"role": "user", "content": "Capital of France?"},
    {"role": "assistant", "content": "Paris."},
    {"role": "user", "content": "And of Germany?"},
    {"role": "assistant", "content": "Munich."},
]


def judge(request: Recorded) -> Reply:
    """MET, except for the criterion naming Berlin when the judged turn does not."""
    prompt = request.text
    wrong = "Names Berlin" in prompt and "Berlin." not in prompt.replace("Names Berlin", "")
    return openai_reply(verdict("UNMET" if wrong else "MET"))


def test_a_conversation_test_imports_a_group_per_turn_and_one_for_the_whole() -> None:
    (rubric,) = load_document(CONVERSATION_TEST, format="agentv").rubrics
    assert [(g.id, g.weight) for g in rubric.groups] == [
        ("rubrics", 1.0),
        ("turn-1", 1.0),
        ("turn-2", 1.0),
    ]
    by_group = {c.group: c for c in rubric.criteria}
    assert (by_group["turn-1"].scope, by_group["turn-1"].turn) == ("turn", 1)
    assert (by_group["turn-2"].scope, by_group["turn-2"].turn) == ("turn", 2)
    assert by_group["rubrics"].scope is None  # the whole conversation


@pytest.mark.parametrize("aggregation", ["mean", "min"])
async def test_turns_combine_as_agentv_combines_them(aggregation: str) -> None:
    document = json.loads(json.dumps(CONVERSATION_TEST))
    document["tests"][0]["aggregation"] = aggregation
    (rubric,) = load_document(document, format="agentv").rubrics
    with ScriptedServer(judge) as server:
        evaluation = await evaluate(
            rubric,
            {"content": TALK},
            options={"llm": f"openai:judge@{server.url}/v1", "llm_cache": None},
        )
    assert evaluation.score == pytest.approx(float(Fraction(2, 3)), abs=1e-9)  # mean of 1, 1, 0
    assert not evaluation.passed
    turn_two = next(c for c in evaluation.criteria if c.criterion_id.startswith("turn-2"))
    assert turn_two.verdict == "UNMET"
    assert "reply to user message 2 (message 4)" in turn_two.evidence[0]
    if aggregation == "min":
        assert all(group.required for group in rubric.groups)


RUN = [
    {"role": "user", "content": "Book the morning flight."},
    {
        "role": "assistant",
        "tool_calls": [{"id": "1", "name": "search", "arguments": {"to": "LIS"}}],
    },
    {"role": "tool", "tool_call_id": "1", "content": "TP1"},
    {"role": "assistant", "tool_calls": [{"id": "2", "name": "log", "arguments": {}}]},
    {"role": "tool", "tool_call_id": "2", "content": "ok"},
    {
        "role": "assistant",
        "tool_calls": [{"id": "3", "name": "book", "arguments": {"id": "TP1", "n": 1}}],
    },
    {"role": "tool", "tool_call_id": "3", "content": "booked"},
    {"role": "assistant", "content": "Booked TP1."},
]
ASSERTIONS: list[tuple[dict[str, Any], str]] = [
    ({"type": "trajectory:tool-used", "value": "search"}, "MET"),
    ({"type": "trajectory:tool-used", "value": {"name": "search", "min": 2}}, "UNMET"),
    ({"type": "trajectory:tool-used", "value": ["search", "book"]}, "MET"),
    ({"type": "not-trajectory:tool-used", "value": "delete"}, "MET"),
    ({"type": "not-trajectory:tool-used", "value": ["log"]}, "UNMET"),
    (
        {
            "type": "trajectory:tool-sequence",
            "value": {"mode": "in_order", "steps": ["search", "book"]},
        },
        "MET",
    ),
    (
        {
            "type": "trajectory:tool-sequence",
            "value": {"mode": "exact", "steps": ["search", "book"]},
        },
        "UNMET",
    ),
    (
        {"type": "trajectory:tool-args-match", "value": {"name": "book", "args": {"id": "TP1"}}},
        "MET",
    ),
    (
        {
            "type": "trajectory:tool-args-match",
            "value": {"name": "book", "args": {"id": "TP1"}, "mode": "exact"},
        },
        "UNMET",
    ),
    ({"type": "trajectory:step-count", "value": {"type": "tool", "max": 2}}, "UNMET"),
    ({"type": "trajectory:step-count", "value": {"min": 1}}, "MET"),
    ({"type": "tool-trajectory", "mode": "any_order", "minimums": {"search": 1, "book": 1}}, "MET"),
    (
        {
            "type": "tool-trajectory",
            "mode": "in_order",
            "expected": [
                {"tool": "search", "args": {"to": "LIS"}},
                {"tool": "book", "args": "any"},
            ],
        },
        "MET",
    ),
]


@pytest.mark.parametrize("fmt", ["promptfoo", "agentv"])
async def test_every_trajectory_assertion_is_a_built_in_check(fmt: str) -> None:
    document = {"tests": [{"id": "run", "assert": [a for a, _ in ASSERTIONS]}]}
    if fmt == "agentv":
        document["tests"][0]["assert"].append("Answers politely")  # AgentV-only: a plain string
    (rubric,) = load_document(document, format=fmt).rubrics
    deterministic = [c for c in rubric.criteria if c.scoring.method == "deterministic"]
    assert {c.scoring.function for c in deterministic} >= {
        "trajectory.tool_used",
        "trajectory.tool_not_used",
        "trajectory.tool_sequence",
        "trajectory.tool_args",
        "trajectory.step_count",
    }
    data = rubric.model_dump(mode="json", exclude_none=True)
    data["groups"] = []
    data["criteria"] = [
        {**c, "id": c["id"].replace(".", "_"), "group": None}
        for c in data["criteria"]
        if c["scoring"]["method"] == "deterministic"
    ]
    checks = parse_rubric(data)
    evaluation = await evaluate(checks, {"content": RUN})
    verdicts = [r.verdict for r in evaluation.criteria]
    expected = [v for _, v in ASSERTIONS[:11]] + ["MET", "MET", "MET"]  # any_order: two tools
    assert verdicts == expected, [
        (r.criterion_id, r.verdict, r.evidence) for r in evaluation.criteria
    ]


def test_goal_success_is_a_judged_criterion_of_the_whole_run() -> None:
    document = {
        "tests": [{"assert": [{"type": "trajectory:goal-success", "value": {"goal": "Book it"}}]}]
    }
    (criterion,) = load_document(document, format="promptfoo").rubrics[0].criteria
    assert criterion.scoring.method == "llm" and "Book it" in criterion.description


@pytest.mark.parametrize(
    ("assertion", "path", "said"),
    [
        (
            {"type": "trajectory:tool-used", "value": {"pattern": "^search"}},
            "value.pattern",
            "pattern",
        ),
        (
            {"type": "trajectory:step-count", "value": {"type": "command", "max": 3}},
            "value.type",
            "tool-call steps",
        ),
        (
            {"type": "trajectory:tool-sequence", "value": {"mode": "random", "steps": ["a"]}},
            "value.mode",
            "in_order or exact",
        ),
        ({"type": "trajectory:tool-args-match", "value": {"name": "a"}}, "value.args", "arguments"),
        ({"type": "not-trajectory:step-count", "value": {"max": 1}}, "type", "only tool-used"),
        ({"type": "trajectory:tool-flying", "value": 1}, "type", "unknown trajectory assertion"),
    ],
)
def test_what_cannot_be_mapped_is_refused_naming_the_field(
    assertion: dict[str, Any], path: str, said: str
) -> None:
    with pytest.raises(RubricflowError) as raised:
        load_document({"tests": [{"assert": [assertion]}]}, format="promptfoo")
    message = str(raised.value)
    assert f"tests[0].assert[0].{path}" in message and said in message


# -- properties -----------------------------------------------------------------------------

_tools = st.sampled_from(["a", "b", "c"])


@settings(max_examples=200, deadline=None)
@given(calls=st.lists(_tools, max_size=6), expected=st.lists(_tools, min_size=1, max_size=4))
def test_in_order_is_a_subsequence_match(calls: list[str], expected: list[str]) -> None:
    content = [{"name": name, "arguments": {}} for name in calls]
    found = tool_sequence(Target(content=content), expected, mode="in_order")
    remaining = iter(calls)
    assert found.value == all(any(name == want for name in remaining) for want in expected)


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["a", "search", "", "any"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                ["name", "min", "max", "mode", "steps", "args", "type", "tool", "goal"]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=10,
)
_kinds = st.sampled_from(
    [
        "trajectory:tool-used",
        "not-trajectory:tool-used",
        "trajectory:tool-sequence",
        "trajectory:tool-args-match",
        "trajectory:step-count",
        "trajectory:goal-success",
        "tool-trajectory",
    ]
)


@settings(max_examples=200, deadline=None)
@given(kind=_kinds, value=_json, fmt=st.sampled_from(["promptfoo", "agentv"]))
def test_any_assertion_imports_or_is_refused_with_its_path(kind: str, value: Any, fmt: str) -> None:
    assertion = {"type": kind, "value": value, "mode": value, "minimums": value, "expected": value}
    try:
        load_document({"tests": [{"assert": [assertion]}]}, format=fmt)
    except RubricflowError as error:
        assert "tests[0]" in str(error)


_turn = st.fixed_dictionaries(
    {"input": st.sampled_from(["Hi?", "More?"])},
    optional={
        "assert": st.lists(
            st.sampled_from(["Answers", {"type": "trajectory:tool-used", "value": "x"}, 3]),
            max_size=3,
        )
    },
)


@settings(max_examples=150, deadline=None)
@given(
    turns=st.lists(_turn, max_size=4) | _json,
    aggregation=st.sampled_from(["mean", "min", "max", "median", 1]),
    top=st.lists(
        st.sampled_from(["Stays polite", {"type": "llm-rubric", "value": "Kind"}]), max_size=2
    ),
)
def test_any_conversation_test_imports_or_is_refused_with_its_path(
    turns: Any, aggregation: Any, top: list[Any]
) -> None:
    test = {"id": "c", "mode": "conversation", "turns": turns, "aggregation": aggregation}
    if top:
        test["assert"] = top
    try:
        loaded = load_document({"tests": [test]}, format="agentv")
    except RubricflowError as error:
        assert "tests[0]" in str(error) or "nothing to import" in str(error)
        return
    for rubric in loaded.rubrics:
        for criterion in rubric.criteria:
            assert (criterion.scope == "turn") == (criterion.turn is not None)
        unit = {g.id: g.id.split("-")[1] if g.id.startswith("turn-") else "" for g in rubric.groups}
        for turn in set(unit.values()):
            share = sum(g.weight for g in rubric.groups if unit[g.id] == turn)
            assert abs(share - 1.0) < 1e-9  # each turn, and the whole, weighs 1

"""Answer parsing: JSON (bare, fenced, embedded), schema validation messages, tags with the
last match winning, numbers, and delimiter escaping; property tests with hypothesis."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rubricflow.llm.answers import (
    DELIMITER_TAGS,
    AnswerError,
    escape_delimiters,
    extract_json,
    extract_tag,
    parse_number,
    validate_answer,
)
from rubricflow.llm.contracts import VERDICT_SCHEMA, level_schema, oneshot_schema, score_schema

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**12), max_value=10**12)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(max_size=30)
)
JSON_OBJECTS = st.dictionaries(
    st.text(max_size=10),
    st.recursive(
        JSON_SCALARS,
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
        ),
        max_leaves=12,
    ),
    max_size=5,
)
PROSE = st.text(alphabet=st.characters(blacklist_characters="`{}"), max_size=80)


def test_bare_json_is_read() -> None:
    assert extract_json('{"reasoning": "ok", "verdict": "MET"}') == {
        "reasoning": "ok",
        "verdict": "MET",
    }


def test_fenced_json_with_prose_around_it_is_read() -> None:
    text = (
        'Sure! Here is my answer:\n```json\n{"reasoning": "x", "verdict": "UNMET"}\n```\n'
        "Hope it helps."
    )
    assert extract_json(text) == {"reasoning": "x", "verdict": "UNMET"}


def test_unlabelled_fence_and_a_broken_first_fence() -> None:
    text = '```\nnot json\n```\nthen\n```\n{"a": 1}\n```'
    assert extract_json(text) == {"a": 1}


def test_json_embedded_in_prose_is_read() -> None:
    assert extract_json('My verdict: {"verdict": "MET", "reasoning": "r"} -- done') == {
        "verdict": "MET",
        "reasoning": "r",
    }


@pytest.mark.parametrize(
    "text", ["", "   ", "I think it is fine.", "{not json}", "```json\n{\n```"]
)
def test_garbage_is_an_answer_error(text: str) -> None:
    with pytest.raises(AnswerError):
        extract_json(text)


@pytest.mark.parametrize("text", ['{"score": NaN}', '{"score": Infinity}', '{"score": -Infinity}'])
def test_nan_and_infinity_are_refused(text: str) -> None:
    with pytest.raises(AnswerError):
        extract_json(text)


def test_schema_errors_name_the_place_and_the_problem() -> None:
    with pytest.raises(AnswerError) as caught:
        validate_answer({"reasoning": 3, "verdict": "maybe"}, VERDICT_SCHEMA)
    message = str(caught.value)
    assert "$.verdict: 'maybe' is not one of ['MET', 'UNMET']" in message
    assert "$.reasoning: 3 is not of type 'string'" in message


def test_missing_and_extra_properties_are_schema_errors() -> None:
    with pytest.raises(AnswerError, match="'verdict' is a required property"):
        validate_answer({"reasoning": "r"}, VERDICT_SCHEMA)
    with pytest.raises(AnswerError, match="Additional properties"):
        validate_answer({"reasoning": "r", "verdict": "MET", "score": 1}, VERDICT_SCHEMA)


def test_contract_schemas_accept_their_answers() -> None:
    validate_answer({"reasoning": "r", "verdict": "MET"}, VERDICT_SCHEMA)
    validate_answer({"reasoning": "r", "level_id": "good"}, level_schema(["poor", "good"]))
    validate_answer({"reasoning": "r", "score": 7}, score_schema(0, 10, integer=True))
    validate_answer(
        {"criteria": [{"id": "a", "reasoning": "r", "verdict": "UNMET"}]}, oneshot_schema(["a"])
    )
    with pytest.raises(AnswerError):
        validate_answer({"reasoning": "r", "score": 7.5}, score_schema(0, 10, integer=True))
    with pytest.raises(AnswerError):
        validate_answer({"reasoning": "r", "score": 11}, score_schema(0, 10))


def test_contract_schemas_are_strict_and_reasoning_first() -> None:
    for schema in (VERDICT_SCHEMA, level_schema(["a", "b"]), score_schema(0, 10)):
        assert next(iter(schema["properties"])) == "reasoning"
        assert schema["additionalProperties"] is False
        assert schema["required"] == list(schema["properties"])


def test_last_tag_wins() -> None:
    text = "<score>2</score> on reflection <rationale>a</rationale> <score> 4.5 </score>"
    assert extract_tag(text, "score") == "4.5"
    assert extract_tag(text, "rationale") == "a"
    assert extract_tag(text, "missing") is None
    assert extract_tag("<SCORE>3</Score>", "score") == "3"


@pytest.mark.parametrize(
    ("text", "number"), [("4.5", 4.5), ("4.5/5", 4.5), ("Score: 7", 7.0), ("-1", -1.0)]
)
def test_parse_number(text: str, number: float) -> None:
    assert parse_number(text) == number


@pytest.mark.parametrize("text", ["", "high", "1e999"])
def test_parse_number_refuses(text: str) -> None:
    with pytest.raises(AnswerError):
        parse_number(text)


def test_escape_keeps_ordinary_markup() -> None:
    assert escape_delimiters("if a < b and <div>x</div>") == "if a < b and <div>x</div>"
    assert escape_delimiters("</content> <Content> < / content >") == (
        "&lt;/content> &lt;Content> &lt; / content >"
    )
    assert escape_delimiters("<contents> <scoreboard>") == "<contents> <scoreboard>"


# -- properties -------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(JSON_OBJECTS)
def test_any_object_round_trips(value: dict[str, Any]) -> None:
    assert extract_json(json.dumps(value)) == value


@settings(max_examples=150, deadline=None)
@given(JSON_OBJECTS, PROSE, PROSE, st.sampled_from(["json", "JSON", ""]))
def test_any_fenced_object_is_found_whatever_surrounds_it(
    value: dict[str, Any], before: str, after: str, label: str
) -> None:
    text = f"{before}\n```{label}\n{json.dumps(value, indent=1)}\n```\n{after}"
    assert extract_json(text) == value


@settings(max_examples=150, deadline=None)
@given(JSON_OBJECTS.filter(bool), PROSE, PROSE)
def test_an_object_embedded_in_prose_is_found(
    value: dict[str, Any], before: str, after: str
) -> None:
    assert extract_json(f"{before} {json.dumps(value)} {after}") == value


TAG_TEXT = st.text(alphabet=st.characters(blacklist_characters="<>"), max_size=40)


@settings(max_examples=200, deadline=None)
@given(st.lists(TAG_TEXT, min_size=1, max_size=5), TAG_TEXT, TAG_TEXT)
def test_the_last_tag_always_wins(values: list[str], before: str, after: str) -> None:
    text = before + "".join(f"<score>{v}</score> filler " for v in values) + after
    assert extract_tag(text, "score") == values[-1].strip()


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), TAG_TEXT)
def test_a_number_in_a_score_tag_is_read(number: float, junk: str) -> None:
    text = f"<rationale>{junk}</rationale><score>{number!r}</score>"
    tag = extract_tag(text, "score")
    assert tag is not None and parse_number(tag) == pytest.approx(number)


CLOSERS = re.compile(r"<\s*/?\s*(?:" + "|".join(DELIMITER_TAGS) + r")(?![A-Za-z0-9_-])", re.I)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=12),
            st.sampled_from(["<", "/", " ", "\n", "</content>", "< /CONTENT >", "<score>", "</"]),
            st.sampled_from(DELIMITER_TAGS),
        ),
        max_size=20,
    )
)
def test_escaped_content_can_never_open_or_close_a_delimiter(parts: list[str]) -> None:
    escaped = escape_delimiters("".join(parts))
    assert CLOSERS.search(escaped) is None

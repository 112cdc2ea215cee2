"""Per-prompt rubric cells and the aggregation formulas, under hypothesis."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from rubricflow.engine.aggregate import weighted_score
from rubricflow.rewards import RubricColumnCache, completion_text, prompt_text

words = st.text(st.characters(categories=["L", "N"]), min_size=1, max_size=12)
weights = st.integers(-10, 10).filter(lambda w: w != 0)
rar_items = st.lists(
    st.fixed_dictionaries({"title": words, "description": words, "weight": weights}),
    min_size=1,
    max_size=8,
)
pkg_items = st.lists(
    st.fixed_dictionaries({"requirement": words, "weight": weights}), min_size=1, max_size=8
)


@settings(max_examples=60, deadline=None)
@given(rar_items)
def test_rar_items_keep_every_weight_and_description_in_order(items: list[dict[str, Any]]) -> None:
    rubric = RubricColumnCache().rubric(items)
    assert [c.weight for c in rubric.criteria] == [float(i["weight"]) for i in items]
    assert [c.description for c in rubric.criteria] == [i["description"] for i in items]
    assert rubric.score_formula == "rar"
    assert len({c.id for c in rubric.criteria}) == len(items)


@settings(max_examples=60, deadline=None)
@given(pkg_items)
def test_rubric_package_lists_and_their_text_forms_are_one_rubric(
    items: list[dict[str, Any]],
) -> None:
    cache = RubricColumnCache()
    parsed = cache.rubric(items)
    assert [c.weight for c in parsed.criteria] == [float(i["weight"]) for i in items]
    assert parsed.score_formula == "clamp"
    # the same content again (a new list, JSON text) is not parsed again
    assert cache.rubric(json.loads(json.dumps(items))) is parsed
    assert cache.parses == 1
    as_text = cache.rubric(yaml.safe_dump(items))
    assert as_text.criteria == parsed.criteria and cache.parses == 2


@settings(max_examples=40, deadline=None)
@given(st.lists(rar_items, min_size=1, max_size=6), st.data())
def test_a_batch_parses_each_distinct_rubric_once(
    distinct: list[list[dict[str, Any]]], data: st.DataObject
) -> None:
    cache = RubricColumnCache()
    column = data.draw(st.lists(st.sampled_from(distinct), min_size=1, max_size=30))
    for cell in column:
        cache.rubric(cell)
    assert cache.parses == len({json.dumps(cell, sort_keys=True) for cell in column})


def test_native_cells_get_an_id_by_content() -> None:
    cache = RubricColumnCache()
    one = cache.rubric({"criteria": [{"id": "a", "description": "x"}]})
    two = cache.rubric("criteria:\n  - id: a\n    description: y\n")
    assert one.id.startswith("prompt-") and two.id.startswith("prompt-") and one.id != two.id


pairs = st.lists(
    st.tuples(st.integers(-10, 10), st.sampled_from([0, 1, Fraction(1, 2)])), min_size=1
)


@given(pairs)
def test_rar_formula_is_s_over_the_sum_of_absolute_weights(pairs: list[Any]) -> None:
    total = sum((Fraction(w) * Fraction(s) for w, s in pairs), Fraction(0))
    magnitude = sum(abs(w) for w, _ in pairs)
    score, raw = weighted_score(pairs, formula="rar")
    assert raw == total
    if magnitude:
        assert score == min(Fraction(1), max(Fraction(0), total / magnitude))
    # with no penalty criterion both formulas agree
    if all(w >= 0 for w, _ in pairs):
        assert score == weighted_score(pairs)[0]
    # a pitfall's weight counts in the denominator: never above the clamp(S/P) score
    assert score <= weighted_score(pairs)[0] or magnitude == 0


@given(st.text(max_size=40))
def test_completion_text_reads_plain_and_chat_shapes(text: str) -> None:
    assert completion_text(text) == text
    assert completion_text([{"role": "assistant", "content": text}]) == text
    assert (
        completion_text([{"role": "assistant", "content": [{"type": "text", "text": text}]}])
        == text
    )
    assert prompt_text([{"role": "user", "content": text}]) == f"user: {text}"

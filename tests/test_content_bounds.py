"""`rubricflow.content_bounds`: which JSON values keep the bounds (depth, items per
container, string length, total size), what the refusal names, and how stored content
deeper than can be shown is cut."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rubricflow.content_bounds import (
    CUT_MARKER,
    MAX_SHOWN_DEPTH,
    ContentBounds,
    check_content_bounds,
    shown_within_depth,
)
from rubricflow.errors import ContentBoundsError

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=3), children, max_size=4)
    ),
    max_leaves=40,
)


def depth_of(value: Any) -> int:
    """Levels of objects and lists: a scalar is 0, `[]` is 1."""
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(json_values, st.integers(min_value=1, max_value=6))
def test_depth_is_refused_exactly_past_the_bound(value: Any, max_depth: int) -> None:
    bounds = ContentBounds(max_depth=max_depth)
    if depth_of(value) <= max_depth:
        check_content_bounds(value, bounds=bounds)
    else:
        with pytest.raises(ContentBoundsError) as refused:
            check_content_bounds(value, bounds=bounds)
        assert refused.value.bound == "max_depth"
        assert refused.value.path.startswith("$")


@settings(max_examples=300, deadline=None)
@given(json_values, st.integers(min_value=1, max_value=6))
def test_shown_content_is_whole_within_the_depth_and_cut_past_it(
    value: Any, max_depth: int
) -> None:
    shown = shown_within_depth(value, max_depth)
    if depth_of(value) <= max_depth:
        assert shown is value
    else:
        assert depth_of(shown) <= max_depth
        assert CUT_MARKER in json.dumps(shown)
        assert shown_within_depth(shown, max_depth) is shown


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_total_size_bound_follows_the_json_text(value: Any) -> None:
    """Within a small margin of the compact JSON text's size (the walk estimates numbers
    and escapes): far under passes, far over is refused."""
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
    check_content_bounds(value, bounds=ContentBounds(max_total_bytes=2 * size + 64))
    if size > 200:
        with pytest.raises(ContentBoundsError, match="max_total_bytes"):
            check_content_bounds(value, bounds=ContentBounds(max_total_bytes=size // 4))


def test_messages_name_the_bound_the_limit_and_the_path() -> None:
    bounds = ContentBounds(max_depth=3, max_items=2, max_string_length=4, max_total_bytes=10_000)
    cases = [
        ({"a": [{"b c": [[1]]}]}, "max_depth", "$.a[0]['b c']", "more than 3 levels deep"),
        ({"a": [1, 2, 3]}, "max_items", "$.a", "a list of 3 items"),
        ({"k": {"x": 1, "y": 2, "z": 3}}, "max_items", "$.k", "an object of 3 keys"),
        ({"k": ["fine", "toolong"]}, "max_string_length", "$.k[1]", "7 characters"),
        ({"toolong": 1}, "max_string_length", "$.toolong", "more than 4"),
        (["x" * 4, [[["x"]]]], "max_depth", "$[1][0][0]", "3 levels"),
    ]
    for value, bound, path, words in cases:
        with pytest.raises(ContentBoundsError) as refused:
            check_content_bounds(value, "artifact content", bounds)
        message = str(refused.value)
        assert (refused.value.bound, refused.value.path) == (bound, path), message
        assert message.startswith("artifact content ")
        assert bound in message and path in message and words in message


def test_a_long_path_keeps_its_start_and_end() -> None:
    value: Any = "x"
    for _ in range(100):
        value = {"level": value}
    with pytest.raises(ContentBoundsError) as refused:
        check_content_bounds({"top": value})
    # the container at depth 64 is 64 keys in: 6 shown first, 4 last
    assert refused.value.path == "$.top.level.level.level.level.level(...54 more...)" + (
        ".level" * 4
    )


def test_huge_numbers_and_deep_stored_rows_do_not_crash() -> None:
    check_content_bounds({"n": 10**5000})  # the walk never turns it into text
    deep: Any = "x"
    for _ in range(5000):  # deeper than Python's recursion limit
        deep = [deep]
    with pytest.raises(ContentBoundsError):
        check_content_bounds(deep)
    shown = shown_within_depth(deep)
    assert depth_of(shown) == MAX_SHOWN_DEPTH


def test_bounds_are_checked_when_made() -> None:
    with pytest.raises(ValueError, match="max_items"):
        ContentBounds(max_items=0)
    with pytest.raises(ValueError, match=f"at most {MAX_SHOWN_DEPTH}"):
        ContentBounds(max_depth=MAX_SHOWN_DEPTH + 1)

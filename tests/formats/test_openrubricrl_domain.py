"""OpenRubricRL's `domain` is one of code, dialogue, creative_writing, reasoning, general;
its validator refuses anything else. rubricflow imports the rubric (the domain is only
metadata) but warns at `domain`, as it does for weights OpenRubricRL would refuse."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rubricflow import load_document

DOMAINS = ("code", "dialogue", "creative_writing", "reasoning", "general")


def rubric(domain: Any) -> dict[str, Any]:
    return {
        "name": "answers",
        "version": "1.0.0",
        "domain": domain,
        "scale": {"min": 0, "max": 10, "type": "continuous"},
        "criteria": [
            {"name": "accuracy", "description": "Is it right", "weight": 0.6},
            {"name": "clarity", "description": "Is it clear", "weight": 0.4},
        ],
    }


@pytest.mark.parametrize("domain", DOMAINS)
def test_a_domain_of_the_enum_imports_without_warning(domain: str) -> None:
    loaded = load_document(rubric(domain))
    assert loaded.format == "openrubricrl"
    assert loaded.warnings == []
    assert loaded.rubrics[0].metadata["domain"] == domain


def test_no_domain_or_a_null_one_is_fine() -> None:
    assert load_document(rubric(None)).warnings == []  # the field is optional
    without = rubric("code")
    del without["domain"]
    assert load_document(without, format="openrubricrl").warnings == []


@pytest.mark.parametrize("domain", ["medical", "Code", "", 3, ["code"]])
def test_a_domain_outside_the_enum_warns_and_still_imports(domain: Any) -> None:
    loaded = load_document(rubric(domain), format="openrubricrl")
    [warning] = loaded.warnings
    assert warning.path == "domain"
    assert "OpenRubricRL refuses" in warning.message
    for name in DOMAINS:
        assert name in warning.message
    assert loaded.rubrics[0].metadata["domain"] == domain  # kept as written


@given(
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=20).filter(
        lambda text: text not in DOMAINS
    )
)
def test_any_other_text_warns(domain: str) -> None:
    loaded = load_document(rubric(domain), format="openrubricrl")
    assert [w.path for w in loaded.warnings] == ["domain"]

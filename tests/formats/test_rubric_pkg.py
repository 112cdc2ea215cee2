"""`rubric` package import: flat lists, `{criteria}`, `{rubric: {id, sections}}`, negative
weights, section titles, default ids and errors at source paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rubricflow import RubricValidationError, load_document, load_file
from rubricflow.formats.loader import LoadedFile

FOLDER = Path(__file__).resolve().parent.parent / "fixtures" / "formats" / "rubric-pkg"


def load(name: str) -> LoadedFile:
    loaded = load_file(FOLDER / name)
    assert loaded.format == "rubric-pkg"
    assert loaded.warnings == []
    return loaded


def rows(loaded: LoadedFile) -> list[tuple[Any, ...]]:
    return [(c.id, c.weight, c.description, c.section) for c in loaded.rubrics[0].criteria]


def test_flat_list_gets_numbered_ids_and_the_file_name_as_id() -> None:
    loaded = load("earnings_flat.json")
    rubric = loaded.rubrics[0]
    assert rubric.id == "earnings_flat"
    assert rubric.version == "1.0.0"
    assert rubric.metadata == {"imported_from": "rubric-pkg"}
    assert rows(loaded) == [
        ("c1", 5.0, "Reports Q2 revenue of $41.2M", None),
        ("c2", 3.0, "Attributes the margin change to freight costs", None),
        ("c3", 2.5, "Mentions the updated full-year guidance", None),
        ("c4", -4.0, "Confuses bookings with revenue", None),
    ]


def test_every_criterion_is_a_met_unmet_verdict() -> None:
    rubric = load("earnings_flat.json").rubrics[0]
    assert all(c.kind == "binary" and c.scoring.method == "llm_verdict" for c in rubric.criteria)
    assert not any(c.required for c in rubric.criteria)


def test_sections_keep_their_titles_on_each_criterion() -> None:
    loaded = load("contract_review_sections.yaml")
    assert loaded.rubrics[0].id == "contract-review"
    assert rows(loaded) == [
        ("lists-parties", 2.0, "Names both contracting parties", "Obligations"),
        ("c2", 3.0, "Summarises each party's payment obligations", "Obligations"),
        ("flags-auto-renewal", 4.0, "Flags the automatic renewal clause", "risk"),  # no title: id
        ("invents-clauses", -5.0, "Describes a clause that is not in the contract", "risk"),
    ]


def test_criteria_mapping_with_only_negative_weights() -> None:
    loaded = load("hallucination_penalties.yml")
    assert loaded.rubrics[0].id == "hallucination_penalties"
    assert [(c.id, c.weight) for c in loaded.rubrics[0].criteria] == [
        ("c1", -3.0),
        ("c2", -1.0),
        ("c3", -1.0),
    ]


def test_document_without_a_source_gets_a_generic_id() -> None:
    loaded = load_document([{"weight": 1, "requirement": "Is polite"}])
    assert loaded.format == "rubric-pkg"
    assert loaded.rubrics[0].id == "rubric"


def test_criteria_mapping_with_an_id() -> None:
    document = {"id": "Tone Check", "criteria": [{"weight": 1, "requirement": "Calm"}]}
    assert load_document(document).rubrics[0].id == "tone_check"


def test_all_zero_weights_draw_a_warning() -> None:
    loaded = load_document([{"weight": 0, "requirement": "a"}, {"weight": 0, "requirement": "b"}])
    assert [w.path for w in loaded.warnings] == [""]
    assert "every weight is zero" in loaded.warnings[0].message


@pytest.mark.parametrize(
    ("document", "path", "words"),
    [
        (
            [{"weight": 1, "requirement": "a"}, {"weight": "much", "requirement": "b"}],
            "[1].weight",
            "expected a number",
        ),
        ([{"weight": 1, "requirement": "a"}, {"requirement": "b"}], "[1].weight", "missing"),
        ([{"weight": 1}], "[0].requirement", "missing"),
        ([{"weight": 1, "requirement": "a"}, "b"], "[1]", "expected a mapping"),
        (
            [
                {"id": "x", "weight": 1, "requirement": "a"},
                {"id": "x", "weight": 2, "requirement": "b"},
            ],
            "[1].id",
            "duplicate criterion id 'x'",
        ),
        (
            {
                "rubric": {
                    "sections": [
                        {"title": "S", "criteria": [{"weight": float("inf"), "requirement": "a"}]}
                    ]
                }
            },
            "rubric.sections[0].criteria[0].weight",
            "finite number",
        ),
        (
            {
                "rubric": {
                    "sections": [
                        {
                            "title": "S",
                            "criteria": [{"id": "bad id", "weight": 1, "requirement": "a"}],
                        }
                    ]
                }
            },
            "rubric.sections[0].criteria[0].id",
            "letters, digits",
        ),
        (
            {"rubric": {"sections": [{"title": "S", "criteria": "none"}]}},
            "rubric.sections[0].criteria",
            "expected a list",
        ),
        ({"rubric": {"sections": []}}, "rubric.sections", "at least one criterion"),
        ([], "criteria", "at least one criterion"),
        ({"rubric": ["x"]}, "rubric", "expected a mapping"),
        ({"criteria": []}, "criteria", "at least one criterion"),
    ],
)
def test_errors_name_the_source_path(document: Any, path: str, words: str) -> None:
    with pytest.raises(RubricValidationError) as caught:
        load_document(document, format="rubric-pkg")
    matching = [p.message for p in caught.value.problems if p.path == path]
    assert matching, [str(p) for p in caught.value.problems]
    assert words in matching[0]

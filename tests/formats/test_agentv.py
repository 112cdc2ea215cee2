"""AgentV import: v2 `evalcases` and v4 `tests` become one rubric per case, with AgentV's
defaults (required true, pass at 0.8), score-range mode, and errors at source paths."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from rubricflow import RubricValidationError, load_document, load_file
from rubricflow.formats.loader import LoadedFile
from rubricflow.model import Criterion, Rubric

FOLDER = Path(__file__).resolve().parent.parent / "fixtures" / "formats" / "agentv"


def load(name: str) -> LoadedFile:
    loaded = load_file(FOLDER / name)
    assert loaded.format == "agentv"
    return loaded


def by_id(loaded: LoadedFile) -> dict[str, Rubric]:
    return {rubric.id: rubric for rubric in loaded.rubrics}


def summary(criterion: Criterion) -> tuple[Any, ...]:
    return (
        criterion.id,
        criterion.weight,
        criterion.required,
        criterion.min_score,
        criterion.scoring.method,
    )


def reject(document: Any) -> list[tuple[str, str]]:
    with pytest.raises(RubricValidationError) as caught:
        load_document(document, format="agentv")
    return [(p.path, p.message) for p in caught.value.problems]


# -- v2 ------------------------------------------------------------------------------


def test_v2_each_case_becomes_a_rubric() -> None:
    loaded = load("v2_support_bot.yaml")
    assert [(r.id, r.name) for r in loaded.rubrics] == [
        ("refund-window", "refund-window"),
        ("invoice_dispute", "Invoice Dispute"),
        ("plan-downgrade", "plan-downgrade"),
    ]
    for rubric in loaded.rubrics:
        assert rubric.version == "1.0.0"
        assert rubric.pass_threshold == 0.8
        assert rubric.metadata["imported_from"] == "agentv-v2"
    rubrics = by_id(loaded)
    assert rubrics["refund-window"].description.startswith("Explains the 30-day refund window")
    assert rubrics["refund-window"].metadata["agentv"]["input"][0]["role"] == "user"
    assert (
        rubrics["refund-window"]
        .metadata["agentv"]["expected_output"][0]["content"]
        .startswith("Yes")
    )
    assert rubrics["invoice_dispute"].metadata["agentv"] == {
        "input": "My invoice has a charge I do not recognise."
    }


def test_v2_items_strings_objects_and_file_level_rubric_evaluators() -> None:
    rubric = by_id(load("v2_support_bot.yaml"))["refund-window"]
    assert [g.id for g in rubric.groups] == ["rubrics", "house_style"]  # one per grader
    assert [summary(c) for c in rubric.criteria] == [
        ("rubrics.rubric-1", 1.0, True, None, "llm"),
        ("rubrics.rubric-2", 1.0, True, None, "llm"),
        ("rubrics.empathy", 2.0, True, None, "llm"),  # required defaults to true (AgentV code)
        ("rubrics.no-promises", 1.5, False, None, "llm"),
        ("house_style.no-jargon", 0.5, False, None, "llm"),  # the file-level rubric evaluator
    ]
    descriptions = [c.description for c in rubric.criteria]
    assert descriptions[0] == "States that refunds are possible within 30 days"
    assert descriptions[3] == "Does not promise a refund amount before review"  # `outcome` alias
    assert all(c.kind == "binary" for c in rubric.criteria)


def test_v2_score_ranges_switch_every_item_of_that_grader_to_llm_score() -> None:
    rubric = by_id(load("v2_support_bot.yaml"))["invoice_dispute"]
    assert [summary(c) for c in rubric.criteria] == [
        ("rubrics.asks-for-invoice-number", 1.0, True, 0.8, "llm_score"),  # required_min_score
        ("rubrics.explains-next-steps", 2.0, True, 1.0, "llm_score"),  # v2: required is 10/10
        ("case_rubric.cites-policy", 1.0, True, 0.7, "llm"),  # another grader: MET/UNMET
        ("house_style.no-jargon", 0.5, False, None, "llm"),
    ]
    asks, steps = rubric.criteria[:2]
    assert [(b.min, b.max) for b in asks.score_ranges] == [(0, 3), (4, 7), (8, 9), (10, 10)]
    assert asks.score_ranges[2].description == "Asks for the invoice number"
    assert [(b.min, b.max, b.description) for b in steps.score_ranges] == [
        (0, 2, "No next steps"),
        (3, 6, "Vague next steps"),
        (7, 10, "Clear timeline and owner"),
    ]


def test_v2_case_with_only_shared_items_uses_them() -> None:
    rubric = by_id(load("v2_support_bot.yaml"))["plan-downgrade"]
    assert [summary(c) for c in rubric.criteria] == [("no-jargon", 0.5, False, None, "llm")]


def test_v2_non_rubric_evaluators_are_skipped_with_a_warning() -> None:
    warnings = {w.path: w.message for w in load("v2_support_bot.yaml").warnings}
    assert set(warnings) == {"execution.evaluators[1]", "evalcases[1].execution.evaluators[1]"}
    assert "'latency' is not a rubric; skipped" in warnings["execution.evaluators[1]"]
    assert "'code_judge'" in warnings["evalcases[1].execution.evaluators[1]"]


def test_v2_case_without_rubrics_grades_its_expected_outcome() -> None:
    document = {"evalcases": [{"id": "summary", "expected_outcome": "Summarises in 50 words"}]}
    loaded = load_document(document)
    criterion = loaded.rubrics[0].criteria[0]
    assert (criterion.description, criterion.required, criterion.weight) == (
        "Summarises in 50 words",
        True,
        1.0,
    )
    assert [w.path for w in loaded.warnings] == ["evalcases[0]"]
    assert "no rubrics" in loaded.warnings[0].message


def test_v2_case_with_nothing_to_grade_is_skipped() -> None:
    document = {"evalcases": [{"id": "empty"}, {"id": "ok", "rubrics": ["Is polite"]}]}
    loaded = load_document(document)
    assert [r.id for r in loaded.rubrics] == ["ok"]
    assert loaded.warnings[0].path == "evalcases[0]"
    assert "skipped" in loaded.warnings[0].message


def test_v2_file_with_no_gradable_case_is_an_error() -> None:
    problems = reject({"evalcases": [{"id": "empty"}]})
    assert problems[0] == ("", "no case holds rubric items; nothing to import")


V2: dict[str, Any] = {
    "evalcases": [
        {"id": "first", "expected_outcome": "x", "rubrics": ["Is polite"]},
        {
            "id": "second",
            "expected_outcome": "y",
            "rubrics": [
                {"id": "cites", "expected_outcome": "Cites a source"},
                {"id": "brief", "expected_outcome": "Under 100 words", "weight": 2},
                {"id": "tone", "expected_outcome": "Calm"},
            ],
        },
    ]
}


def v2_with(change: Any) -> dict[str, Any]:
    document = copy.deepcopy(V2)
    change(document)
    return document


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (
            lambda d: d["evalcases"][1]["rubrics"][2].update(id="cites"),
            "evalcases[1].rubrics[2].id",
            "duplicate criterion id 'cites'",
        ),
        (
            lambda d: d["evalcases"][1]["rubrics"][1].update(weight="double"),
            "evalcases[1].rubrics[1].weight",
            "expected a number",
        ),
        (
            lambda d: d["evalcases"][1]["rubrics"][0].update(required="yes"),
            "evalcases[1].rubrics[0].required",
            "true or false",
        ),
        (
            lambda d: d["evalcases"][1]["rubrics"][0].update(
                score_ranges={"2": "bad", "10": "good"}
            ),
            "evalcases[1].rubrics[0].score_ranges",
            "nothing covers 0-1",
        ),
        (
            lambda d: d["evalcases"][1]["rubrics"][0].update(
                score_ranges=[
                    {"score_range": [0, 5], "outcome": "a"},
                    {"score_range": [5, 10], "outcome": "b"},
                ]
            ),
            "evalcases[1].rubrics[0].score_ranges",
            "overlap",
        ),
        (
            lambda d: d["evalcases"][1]["rubrics"][0].update(
                score_ranges=[{"score_range": [0, 4]}, {"score_range": [5, 11], "outcome": "b"}]
            ),
            "evalcases[1].rubrics[0].score_ranges[1].score_range[1]",
            "less than or equal to 10",
        ),
        (
            lambda d: d["evalcases"][1]["rubrics"][0].update(
                score_ranges=[{"score_range": "0-10"}]
            ),
            "evalcases[1].rubrics[0].score_ranges[0].score_range",
            "expected [low, high]",
        ),
        (
            lambda d: d["evalcases"][1]["rubrics"][0].update(min_score=8),
            "evalcases[1].rubrics[0].min_score",
            "less than or equal to 1",
        ),
        (
            lambda d: d["evalcases"][1].update(id="first"),
            "evalcases[1].id",
            "give every case its own id",
        ),
        (lambda d: d["evalcases"][0].pop("id"), "evalcases[0].id", "missing"),
        (
            lambda d: d["evalcases"][1].update(rubrics="Cites a source"),
            "evalcases[1].rubrics",
            "expected a list",
        ),
        (
            lambda d: d["evalcases"][1]["rubrics"].append(7),
            "evalcases[1].rubrics[3]",
            "expected a mapping",
        ),
        (
            lambda d: d.update(execution={"evaluators": ["rubric"]}),
            "execution.evaluators[0]",
            "expected a mapping",
        ),
    ],
)
def test_v2_errors_name_the_source_path(change: Any, path: str, words: str) -> None:
    problems = reject(v2_with(change))
    matching = [message for where, message in problems if where == path]
    assert matching, problems
    assert words in matching[0]


def test_v2_base_document_loads() -> None:
    loaded = load_document(V2)
    assert loaded.format == "agentv"
    assert [len(r.criteria) for r in loaded.rubrics] == [1, 3]


# -- v4 ------------------------------------------------------------------------------


def test_v4_tests_become_rubrics_with_string_and_llm_rubric_asserts() -> None:
    loaded = load("v4_onboarding.yaml")
    rubrics = by_id(loaded)
    assert list(rubrics) == ["reset-password", "invite-teammates", "test-3"]
    reset = rubrics["reset-password"]
    assert reset.description == "Password reset walkthrough"
    assert reset.pass_threshold == 0.8
    assert reset.metadata == {
        "imported_from": "agentv-v4",
        "agentv": {
            "input": "I forgot my password",
            "expected_output": 'Use "Forgot password" on the sign-in page.',
        },
    }
    assert [summary(c) for c in reset.criteria] == [  # the plain strings form one grader
        ("rubrics.rubric-1", 1.0, True, None, "llm"),
        ("rubrics.rubric-2", 1.0, True, None, "llm"),  # from defaultTest
        ("grader-2.steps-in-order", 2.0, True, None, "llm"),
        ("grader-2.security-note", 1.0, False, 0.5, "llm"),
        ("grader-2.rubric-3", 1.0, True, None, "llm"),
    ]
    assert reset.criteria[2].description == "Gives the steps in the order the user sees them"
    assert reset.criteria[4].description == "Offers further help"
    assert reset.criteria[1].description == "Replies in the user's language"


def test_v4_llm_rubric_with_string_value_and_score_ranges() -> None:
    rubric = by_id(load("v4_onboarding.yaml"))["invite-teammates"]
    assert rubric.description == "Onboarding assistant answers, v4 suite"  # the file's
    assert [summary(c) for c in rubric.criteria] == [
        ("grader-1.rubric-1", 1.0, True, None, "llm"),
        ("grader-2.seat-limits", 1.5, False, None, "llm_score"),  # v4: gates via min_score only
        ("rubrics.rubric-1", 1.0, True, None, "llm"),  # a plain string: MET/UNMET, not 0..10
    ]
    assert rubric.criteria[0].description == "Explains the Settings > Members > Invite flow"
    assert [(b.min, b.max) for b in rubric.criteria[1].score_ranges] == [(0, 4), (5, 8), (9, 10)]


def test_v4_test_without_id_is_numbered_and_non_rubric_asserts_warn() -> None:
    loaded = load("v4_onboarding.yaml")
    assert [c.id for c in by_id(loaded)["test-3"].criteria] == ["rubric-1"]
    warnings = {w.path: w.message for w in loaded.warnings}
    assert set(warnings) == {"tests[0].assert[2]", "tests[2].assert[0]"}
    assert "'contains' is not a rubric; skipped" in warnings["tests[0].assert[2]"]
    assert "'javascript'" in warnings["tests[2].assert[0]"]


V4: dict[str, Any] = {
    "tests": [
        {
            "id": "quicksort",
            "assert": [
                "Mentions divide-and-conquer",
                {
                    "type": "llm-rubric",
                    "value": [
                        {"id": "core", "outcome": "Explains the pivot", "weight": 2},
                        {"id": "complexity", "outcome": "States O(n log n)", "min_score": 0.6},
                    ],
                },
            ],
        }
    ]
}


def test_v4_objects_default_to_required_and_keep_min_score() -> None:
    rubric = load_document(V4).rubrics[0]
    assert [summary(c) for c in rubric.criteria] == [
        ("rubrics.rubric-1", 1.0, True, None, "llm"),
        ("grader-2.core", 2.0, True, None, "llm"),
        ("grader-2.complexity", 1.0, True, 0.6, "llm"),
    ]


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (
            lambda d: d["tests"][0]["assert"][1]["value"][0].update(weight="heavy"),
            "tests[0].assert[1].value[0].weight",
            "expected a number",
        ),
        (
            lambda d: d["tests"][0]["assert"][1]["value"][1].update(id="core"),
            "tests[0].assert[1].value[1].id",
            "duplicate criterion id 'grader-2.core' in group 'grader-2'",
        ),
        (
            lambda d: d["tests"][0]["assert"][1]["value"][1].update(min_score=1.5),
            "tests[0].assert[1].value[1].min_score",
            "less than or equal to 1",
        ),
        (
            lambda d: d["tests"][0]["assert"][1].update(value={"id": "x"}),
            "tests[0].assert[1].value",
            "expected a list",
        ),
        (
            lambda d: d["tests"][0]["assert"].append(3),
            "tests[0].assert[2]",
            "rubric item text or an assert",
        ),
        (
            lambda d: d["tests"][0]["assert"][1]["value"][0].update(id="has space"),
            "tests[0].assert[1].value[0].id",
            "letters, digits",
        ),
    ],
)
def test_v4_errors_name_the_source_path(change: Any, path: str, words: str) -> None:
    document = copy.deepcopy(V4)
    change(document)
    problems = reject(document)
    matching = [message for where, message in problems if where == path]
    assert matching, problems
    assert words in matching[0]


# -- v4.42: `assertions`, `type: rubrics` + `criteria`, operators ----------------------

# the two "Basic Usage" forms of AgentV's v4.42 rubric docs, as whole files
PLAIN_STRINGS: dict[str, Any] = {
    "tests": [
        {
            "id": "binary-search",
            "criteria": "Explain how binary search works",
            "input": "Explain binary search",
            "assertions": [
                "Says the list must be sorted",
                "Explains halving the range",
                "States O(log n) time",
            ],
        }
    ]
}
FULL_FORM: dict[str, Any] = {
    "tests": [
        {
            "id": "binary-search",
            "criteria": "Explain how binary search works",
            "input": "Explain binary search",
            "assertions": [
                {
                    "type": "rubrics",
                    "criteria": [
                        "Says the list must be sorted",
                        "Explains halving the range",
                        "States O(log n) time",
                    ],
                }
            ],
        }
    ]
}


@pytest.mark.parametrize("document", [PLAIN_STRINGS, FULL_FORM], ids=["strings", "full-form"])
def test_v4_42_documented_forms_are_detected_and_loaded(document: dict[str, Any]) -> None:
    from rubricflow.formats.agentv import AgentVFormat

    assert AgentVFormat().detect(document) == 0.95
    loaded = load_document(document)  # detected, no format given
    assert loaded.format == "agentv"
    assert loaded.warnings == []
    (rubric,) = loaded.rubrics
    assert (rubric.id, rubric.description) == ("binary-search", "Explain how binary search works")
    assert rubric.metadata == {
        "imported_from": "agentv-v4",
        "agentv": {"input": "Explain binary search"},
    }
    assert [summary(c) for c in rubric.criteria] == [
        ("rubric-1", 1.0, True, None, "llm"),
        ("rubric-2", 1.0, True, None, "llm"),
        ("rubric-3", 1.0, True, None, "llm"),
    ]
    assert rubric.criteria[1].description == "Explains halving the range"


def test_v4_42_fixture_strings_full_form_suite_assertions_and_skip_defaults() -> None:
    loaded = load("v4_assertions_mergesort.yaml")
    rubrics = by_id(loaded)
    assert list(rubrics) == [
        "mergesort-plain",
        "mergesort-full-form",
        "mergesort-checklist",
        "mergesort-analytic",
    ]
    plain = rubrics["mergesort-plain"]
    assert plain.description == "Explain how merge sort works"  # the test's `criteria`
    assert plain.metadata["agentv"] == {"input": "Explain the merge sort algorithm"}
    assert [summary(c) for c in plain.criteria] == [
        ("rubric-1", 1.0, True, None, "llm"),
        ("rubric-2", 1.0, True, None, "llm"),
        ("rubric-3", 1.0, True, None, "llm"),
        ("rubric-4", 1.0, True, None, "llm"),  # the file's suite-level `assertions`
    ]
    assert plain.criteria[3].description == "Uses words a first-year student can follow"
    full = rubrics["mergesort-full-form"]
    assert [(c.id, c.description) for c in full.criteria] == [
        ("grader-1.rubric-1", "Mentions splitting the list into halves"),
        ("grader-1.rubric-2", "Explains the merge step"),
        ("rubrics.rubric-1", "Uses words a first-year student can follow"),  # its own grader
    ]
    checklist = rubrics["mergesort-checklist"]  # execution.skip_defaults: true
    assert [summary(c) for c in checklist.criteria] == [
        ("core-idea", 2.0, True, None, "llm"),
        ("stability", 1.5, True, None, "llm"),  # required defaults to true
        ("memory", 1.0, False, None, "llm"),
    ]
    assert checklist.metadata["agentv"]["expected_output"][0]["role"] == "assistant"
    assert checklist.pass_threshold == 0.8
    assert {w.path: w.message for w in loaded.warnings} == {
        "tests[2].assertions[1]": "assert type 'code-grader' is not a rubric; skipped"
    }


def test_v4_42_fixture_score_ranges() -> None:
    rubric = by_id(load("v4_assertions_mergesort.yaml"))["mergesort-analytic"]
    assert [summary(c) for c in rubric.criteria] == [
        ("grader-1.accuracy", 2.0, True, 0.7, "llm_score"),
        ("grader-1.brevity", 1.0, True, 0.5, "llm_score"),  # required_min_score 5 -> 0.5
        ("rubrics.rubric-1", 1.0, True, None, "llm"),  # suite-level string: its own grader
    ]
    accuracy, brevity = rubric.criteria[:2]
    assert [(b.min, b.max) for b in accuracy.score_ranges] == [
        (0, 2),
        (3, 4),
        (5, 6),
        (7, 9),
        (10, 10),
    ]
    assert accuracy.score_ranges[0].description == "Wrong algorithm or wrong complexity"
    assert [(b.min, b.max) for b in brevity.score_ranges] == [(0, 4), (5, 7), (8, 9), (10, 10)]


def test_v4_42_operators_legacy_assert_and_criteria_only_tests() -> None:
    loaded = load("v4_assertions_operators.yaml")
    rubrics = by_id(loaded)
    revenue = rubrics["q3-revenue"]
    assert [summary(c) for c in revenue.criteria] == [
        ("states-revenue", 1.0, True, None, "llm"),
        ("no-revenue-conflict", 1.0, True, None, "llm"),
        ("cites-filing", 0.5, False, None, "llm"),
    ]
    correctness, contradiction, plain = (c.description for c in revenue.criteria)
    assert correctness == "States that revenue rose to $12M"  # a plain requirement
    assert contradiction == (  # a guard: met unless the answer contradicts the outcome
        "Makes no claim that contradicts the following (the answer need not mention it): "
        "Revenue rose to $12M in Q3"
    )
    assert plain == "Cites the Q3 filing"
    headcount = rubrics["q3-headcount"]  # the older `assert` + `type: llm-rubric` form
    assert [(c.id, c.required) for c in headcount.criteria] == [
        ("states-hires", True),
        ("rubric-2", True),
    ]
    assert headcount.metadata["agentv"] == {"input": "How many people joined in Q3?"}
    outlook = rubrics["q3-outlook"]  # no assertions: its `criteria` is graded
    assert [(c.id, c.description, c.required) for c in outlook.criteria] == [
        ("rubric-1", "Summarises the Q4 outlook without inventing figures", True)
    ]
    assert [w.path for w in loaded.warnings] == ["tests[2]"]
    assert "grade its `criteria`" in loaded.warnings[0].message


@pytest.mark.parametrize("name", ["v4_assertions_mergesort.yaml", "v4_assertions_operators.yaml"])
def test_v4_42_fixtures_validate(name: str) -> None:
    from typer.testing import CliRunner

    from rubricflow.cli import app

    for extra in ([], ["--format", "agentv"]):
        result = CliRunner().invoke(app, ["validate", *extra, str(FOLDER / name)])
        assert result.exit_code == 0, result.output
        assert result.output.startswith("valid ")


def v442_with(change: Any) -> dict[str, Any]:
    document = copy.deepcopy(FULL_FORM)
    change(document)
    return document


def first_test(document: dict[str, Any]) -> dict[str, Any]:
    test: dict[str, Any] = document["tests"][0]
    return test


def first_item(document: dict[str, Any]) -> dict[str, Any]:
    item: dict[str, Any] = {"id": "sorted", "outcome": "Says the list must be sorted"}
    first_test(document)["assertions"][0]["criteria"][0] = item
    return item


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (  # an operator AgentV does not have
            lambda d: first_item(d).update(operator="similarity"),
            "tests[0].assertions[0].criteria[0].operator",
            "unknown rubric item operator 'similarity'; AgentV knows correctness, contradiction",
        ),
        (
            lambda d: first_item(d).update(operator=["contradiction"]),
            "tests[0].assertions[0].criteria[0].operator",
            "remove `operator`",
        ),
        (  # a misspelt `assertions` holding the items: never silently dropped
            lambda d: first_test(d).update(assertion=first_test(d).pop("assertions")),
            "tests[0].assertion",
            "rubricflow does not read `assertion` in an AgentV v4 test",
        ),
        (
            lambda d: first_test(d).update(rubrics=["Cites a source"]),
            "tests[0].rubrics",
            "move them into the test's `assertions`",
        ),
        (
            lambda d: d.update(asserts=["Is polite"]),
            "asserts",
            "rubricflow does not read `asserts` in an AgentV v4 file",
        ),
        (
            lambda d: first_test(d).update(
                execution={"evaluators": [{"type": "rubric", "rubrics": ["Is polite"]}]}
            ),
            "tests[0].execution.evaluators",
            "holds rubric items that would be ignored",
        ),
        (
            lambda d: first_test(d)["assertions"][0].update(items=["Cites a source"]),
            "tests[0].assertions[0].items",
            "rubricflow does not read `items` in an AgentV rubrics assertion",
        ),
        (
            lambda d: first_test(d)["assertions"][0].pop("criteria"),
            "tests[0].assertions[0].criteria",
            "a `rubrics` assert needs `criteria`: a list of rubric items",
        ),
        (
            lambda d: first_test(d)["assertions"][0].update(value=["Cites a source"]),
            "tests[0].assertions[0].value",
            "give them once, under `criteria`",
        ),
        (
            lambda d: first_test(d).update(assert_=None, **{"assert": ["Is polite"]}),
            "tests[0].assert",
            "move these entries into `assertions`",
        ),
        (
            lambda d: first_test(d).update(criteria=["Says the list must be sorted"]),
            "tests[0].criteria",
            "put the items in the test's `assertions`",
        ),
        (  # an item written straight into the assertions list
            lambda d: first_test(d)["assertions"].append({"id": "x", "outcome": "Is short"}),
            "tests[0].assertions[1]",
            "put it in the `criteria` list of a `type: rubrics` assertion",
        ),
        (
            lambda d: first_test(d)["assertions"][0].update(criteria={"id": "x"}),
            "tests[0].assertions[0].criteria",
            "expected a list",
        ),
    ],
)
def test_v4_42_errors_name_the_field_and_the_fix(change: Any, path: str, words: str) -> None:
    problems = reject(v442_with(change))
    matching = [message for where, message in problems if where == path]
    assert matching, problems
    assert words in matching[0]


def test_v4_42_lists_that_hold_no_rubric_items_are_left_alone() -> None:
    document = v442_with(
        lambda d: first_test(d).update(
            tags=["search", "algorithms"], input_files=["notes.md"], metadata={"x": [1]}
        )
    )
    document["providers"] = ["default"]
    loaded = load_document(document)
    assert loaded.warnings == []
    assert len(loaded.rubrics[0].criteria) == 3


def test_v4_42_default_test_assertions_are_shared() -> None:
    document = v442_with(lambda d: d.update(defaultTest={"assertions": ["Is polite"]}))
    rubric = load_document(document).rubrics[0]
    assert [c.description for c in rubric.criteria][-1] == "Is polite"


def test_v2_unread_keys_holding_items_are_refused_and_operators_apply() -> None:
    problems = dict(
        reject(
            v2_with(
                lambda d: d.update(
                    assertions=["Is polite"],
                    execution={"evaluators": [{"type": "rubric", "criteria": ["Is brief"]}]},
                )
            )
        )
    )
    assert "rubricflow does not read `assertions` in an AgentV v2 file" in problems["assertions"]
    assert "`criteria`" in problems["execution.evaluators[0].criteria"]
    document = v2_with(lambda d: d["evalcases"][1]["rubrics"][0].update(operator="contradiction"))
    cites = load_document(document).rubrics[1].criteria[0]
    assert cites.description.endswith("(the answer need not mention it): Cites a source")

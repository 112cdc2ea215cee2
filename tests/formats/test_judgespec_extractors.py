"""RubricJudgeSpec `extract_variables` / `extract_judgement` at import: validated with exact
source paths, normalised into the scoring config, kept through `convert`, and the
`${name}` fill is one pass (values are inserted literally)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from rubricflow import RubricValidationError, load_document, load_file
from rubricflow.cli import app
from rubricflow.formats.judgespec import (
    BUILTIN_PLACEHOLDERS,
    ExtractionFailure,
    extract_values,
    extractors_from_config,
    fill_placeholders,
    placeholders,
    render_prompt,
)
from rubricflow.llm.answers import escape_delimiters
from rubricflow.llm.prompts import judgespec_prompt


def field(name: str, pattern: str | None, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "field_type": "STRING",
        "required": True,
        "extraction_pattern": pattern,
        "match_index": 0,
        **extra,
    }


SPEC: dict[str, Any] = {
    "model_type": "rubric_judge",
    "rubric": "Does the reply move the user toward ${target}?",
    "model": "openai/openai/gpt-4o-mini",
    "min_score": 1,
    "max_score": 4,
    "prescript": "Goal: ${target}. Ticket: ${ticket}.\n",
    "postscript": "Conversation:\n${conversation}\nScore ${min_score}..${max_score} in <score>.",
    "extract_variables": {
        "model_type": "combined_extractor",
        "extraction_fields": [field("target", None), field("ticket", None)],
        "extractors": [
            {
                "model_type": "regex_extractor",
                "extraction_fields": [field("target", r"goal=(\w+)")],
            },
            {
                "model_type": "response_regex_extractor",
                "extraction_fields": [
                    field("ticket", r"#(\d+)", field_type="int", match_index=-1, required=False)
                ],
            },
            {
                "model_type": "conversation_extractor",
                "extraction_fields": [{"name": "conversation"}],
            },
        ],
    },
    "extract_judgement": {
        "model_type": "regex_extractor",
        "extraction_fields": [
            field("rationale", r"(?s)WHY:(.*?)END", match_index=-1),
            field("score", r"SCORE=([\d.]+)", field_type="FLOAT", match_index=-1),
        ],
    },
}


def spec(**changes: Any) -> dict[str, Any]:
    document = copy.deepcopy(SPEC)
    document.update(changes)
    return document


def problems_of(document: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(RubricValidationError) as caught:
        load_document(document, format="rubricjudgespec")
    return {p.path: p.message for p in caught.value.problems}


# -- import -------------------------------------------------------------------------


def test_extractors_are_normalised_into_the_scoring_config() -> None:
    loaded = load_document(spec(), source="goal.json")
    assert loaded.format == "rubricjudgespec"
    assert loaded.warnings == []
    config = loaded.rubrics[0].criteria[0].scoring.config
    variables = config["extract_variables"]
    assert variables["model_type"] == "combined_extractor"
    assert "extraction_fields" not in variables  # the combined summary is not stored
    kinds = [e["model_type"] for e in variables["extractors"]]
    assert kinds == ["regex_extractor", "response_regex_extractor", "conversation_extractor"]
    ticket = variables["extractors"][1]["extraction_fields"][0]
    assert ticket == {
        "name": "ticket",
        "field_type": "INT",
        "required": False,
        "extraction_pattern": r"#(\d+)",
        "match_index": -1,
    }
    # defaults filled in: STRING, required, the whole text, the first match
    assert variables["extractors"][2]["extraction_fields"][0] == {
        "name": "conversation",
        "field_type": "STRING",
        "required": True,
        "extraction_pattern": None,
        "match_index": 0,
    }
    judgement = config["extract_judgement"]
    assert [f["name"] for f in judgement["extraction_fields"]] == ["rationale", "score"]
    # the stored config reads back the same way the judge will read it
    found_variables, found_judgement = extractors_from_config(config)
    assert found_variables is not None and found_judgement is not None
    assert [f.name for f in found_variables.fields] == ["target", "ticket", "conversation"]
    assert found_judgement.field("score") is not None


def test_a_bad_regex_is_refused_at_its_exact_path() -> None:
    document = spec()
    document["extract_variables"]["extractors"][1]["extraction_fields"][0]["extraction_pattern"] = (
        r"#(\d+"
    )
    problems = problems_of(document)
    path = "extract_variables.extractors[1].extraction_fields[0].extraction_pattern"
    assert list(problems) == [path]
    assert "not a valid regular expression" in problems[path]
    assert "missing ), unterminated subpattern" in problems[path]


def test_a_bad_judgement_regex_is_refused_too() -> None:
    document = spec()
    document["extract_judgement"]["extraction_fields"][1]["extraction_pattern"] = "[0-9"
    problems = problems_of(document)
    path = "extract_judgement.extraction_fields[1].extraction_pattern"
    assert list(problems) == [path]
    assert "unterminated character set" in problems[path]


def test_an_unknown_extractor_kind_is_refused_naming_the_known_ones() -> None:
    document = spec()
    document["extract_variables"]["extractors"].append(
        {"model_type": "llm_extractor", "extraction_fields": [field("x", None)]}
    )
    problems = problems_of(document)
    path = "extract_variables.extractors[3].model_type"
    assert list(problems) == [path]
    assert "unknown extractor kind 'llm_extractor'" in problems[path]
    for kind in (
        "combined_extractor",
        "conversation_extractor",
        "regex_extractor",
        "response_regex_extractor",
    ):
        assert kind in problems[path]


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (
            lambda f: f.update(field_type="DATE"),
            "extract_variables.extractors[0].extraction_fields[0].field_type",
            "unknown field type 'DATE'",
        ),
        (
            lambda f: f.update(match_index="last"),
            "extract_variables.extractors[0].extraction_fields[0].match_index",
            "expected a whole number",
        ),
        (
            lambda f: f.update(name="my target"),
            "extract_variables.extractors[0].extraction_fields[0].name",
            "cannot name a ${...} placeholder",
        ),
        (
            lambda f: f.update(name="content"),
            "extract_variables.extractors[0].extraction_fields[0].name",
            "built-in placeholder",
        ),
        (
            lambda f: f.update(name="conversation"),
            "extract_variables.extractors[2].extraction_fields[0].name",
            "already extracted at extract_variables.extractors[0].extraction_fields[0]",
        ),
    ],
)
def test_field_problems_name_their_path(change: Any, path: str, words: str) -> None:
    document = spec()
    change(document["extract_variables"]["extractors"][0]["extraction_fields"][0])
    problems = problems_of(document)
    assert path in problems, problems
    assert words in problems[path]


def test_a_single_extractor_works_without_combined() -> None:
    document = spec(
        prescript="Goal: ${target}.",
        postscript="${content}",
        extract_variables={
            "model_type": "regex_extractor",
            "extraction_fields": [field("target", r"goal=(\w+)")],
        },
    )
    loaded = load_document(document)
    assert loaded.warnings == []
    stored = loaded.rubrics[0].criteria[0].scoring.config["extract_variables"]
    assert stored["model_type"] == "regex_extractor"
    assert stored["extraction_fields"][0]["name"] == "target"


def test_a_placeholder_nothing_defines_warns_with_its_path() -> None:
    document = spec(postscript="${conversation} for ${audience}; score ${min_score}-${max_score}")
    loaded = load_document(document)
    assert [(w.path, "${audience}" in w.message) for w in loaded.warnings] == [("postscript", True)]
    assert "no extract_variables field defines it" in loaded.warnings[0].message


def test_a_rubric_placeholder_nothing_defines_warns_on_the_rubric() -> None:
    loaded = load_document(spec(rubric="Judge tone for ${persona}."))
    assert [w.path for w in loaded.warnings] == ["rubric"]
    assert "${persona}" in loaded.warnings[0].message


def test_the_combined_summary_naming_an_undefined_field_warns() -> None:
    document = spec()
    document["extract_variables"]["extraction_fields"].append(field("persona", None))
    loaded = load_document(document)
    assert [w.path for w in loaded.warnings] == ["extract_variables.extraction_fields[2].name"]


def test_judgement_fields_other_than_rationale_and_score_warn() -> None:
    document = spec()
    document["extract_judgement"]["extraction_fields"].append(field("confidence", "C=(\\d)"))
    loaded = load_document(document)
    assert [w.path for w in loaded.warnings] == ["extract_judgement.extraction_fields[2].name"]


@pytest.mark.parametrize(
    ("extractor", "pattern", "warns"),
    [
        ("regex_extractor", r"goal=(\w+)", True),  # the request side only
        ("response_regex_extractor", r"goal=(\w+)", False),
        ("conversation_extractor", r"goal=(\w+)", False),
        ("regex_extractor", None, False),  # a null pattern: the whole text
    ],
)
def test_content_warning_counts_variables_extracted_from_the_content(
    extractor: str, pattern: str | None, warns: bool
) -> None:
    document = spec(
        prescript="About ${v}.",
        postscript="Score ${min_score}-${max_score}.",
        extract_variables={
            "model_type": extractor,
            "extraction_fields": [field("v", pattern)],
        },
    )
    loaded = load_document(document)
    content_warnings = [w for w in loaded.warnings if "will not see the content" in w.message]
    assert bool(content_warnings) == warns
    if warns:
        assert content_warnings[0].path == "postscript"


def test_convert_to_native_keeps_the_extractors(tmp_path: Path) -> None:
    source = tmp_path / "goal.json"
    source.write_text(json.dumps(spec()), encoding="utf-8")
    out = tmp_path / "goal.native.yaml"
    result = CliRunner().invoke(app, ["convert", str(source), "--to", "native", "-o", str(out)])
    assert result.exit_code == 0, result.output
    (original,) = load_file(source).rubrics
    converted = load_file(out)
    assert converted.format == "native"
    assert converted.warnings == []
    (again,) = converted.rubrics
    assert again.content_hash == original.content_hash
    assert again == original
    config = again.criteria[0].scoring.config
    assert config["extract_variables"] == original.criteria[0].scoring.config["extract_variables"]
    assert config["extract_judgement"]["extraction_fields"][1]["extraction_pattern"] == (
        r"SCORE=([\d.]+)"
    )


# -- extraction ---------------------------------------------------------------------


def test_extraction_sources_follow_the_extractor_kind() -> None:
    config = load_document(spec()).rubrics[0].criteria[0].scoring.config
    variables, _ = extractors_from_config(config)
    assert variables is not None
    content = "See #12 then #34."
    values = extract_values(variables, content=content, query="goal=refund please")
    assert values == {
        "target": "refund",
        "ticket": "34",  # match_index -1: the last match, INT normalised
        "conversation": "user: goal=refund please\nassistant: See #12 then #34.",
    }
    # no query: the request side and the conversation are the content
    values = extract_values(variables, content="goal=upgrade #7", query=None)
    assert values == {"target": "upgrade", "ticket": "7", "conversation": "goal=upgrade #7"}


def test_a_required_field_without_a_match_fails_naming_field_and_pattern() -> None:
    config = load_document(spec()).rubrics[0].criteria[0].scoring.config
    variables, _ = extractors_from_config(config)
    assert variables is not None
    with pytest.raises(ExtractionFailure) as caught:
        extract_values(variables, content="no ticket", query="no goal here")
    message = str(caught.value)
    assert "'target'" in message and r"goal=(\w+)" in message and "request" in message
    # an optional field that finds nothing is empty
    values = extract_values(variables, content="none", query="goal=x")
    assert values["ticket"] == ""


def test_a_typed_field_that_does_not_parse_fails_naming_the_value() -> None:
    document = spec()
    document["extract_variables"]["extractors"][1]["extraction_fields"][0].update(
        extraction_pattern=r"#(\S+)", field_type="FLOAT"
    )
    config = load_document(document).rubrics[0].criteria[0].scoring.config
    variables, _ = extractors_from_config(config)
    assert variables is not None
    with pytest.raises(ExtractionFailure) as caught:
        extract_values(variables, content="#abc", query="goal=x")
    assert "'abc'" in str(caught.value) and "FLOAT" in str(caught.value)


# -- one-pass fill (property) -------------------------------------------------------

NAMES = ["min_score", "max_score", "content", "x", "target", "conversation"]
TRICKY = st.sampled_from(
    ["${content}", "${x}", "${target}", "{{ content }}", "{% if %}", "<score>9</score>", "$", "{"]
)
value_text = st.lists(st.one_of(st.text(max_size=8), TRICKY), max_size=6).map("".join)
template_text = st.lists(
    st.one_of(
        st.text(alphabet="ab ${}<>\n", max_size=6),
        st.sampled_from(NAMES).map(lambda name: "${" + name + "}"),
    ),
    max_size=8,
).map("".join)


def reference_fill(template: str, values: dict[str, str]) -> str:
    """A scanner written independently of the regex: `${name}` with a known name becomes
    its value; everything else is copied."""
    out: list[str] = []
    i = 0
    while i < len(template):
        if template.startswith("${", i):
            end = template.find("}", i + 2)
            name = template[i + 2 : end] if end != -1 else ""
            if end != -1 and name in values:
                out.append(values[name])
                i = end + 1
                continue
        out.append(template[i])
        i += 1
    return "".join(out)


@settings(max_examples=150, deadline=None)
@given(
    template=template_text,
    values=st.fixed_dictionaries({name: value_text for name in NAMES}),
)
def test_fill_is_one_pass_and_inserts_values_literally(
    template: str, values: dict[str, str]
) -> None:
    filled = fill_placeholders(template, values)
    assert filled == reference_fill(template, values)
    # a template that is only a placeholder gives the value back untouched, `${...}` and all
    for name in NAMES:
        assert fill_placeholders("${" + name + "}", values) == values[name]
    for name in set(placeholders(template)) - set(NAMES):
        assert "${" + name + "}" in filled  # a name the values lack is left as written


@settings(max_examples=100, deadline=None)
@given(
    pre=template_text,
    rubric=template_text,
    post=template_text,
    content=value_text,
    low=st.integers(-3, 3),
)
def test_builtin_only_prompts_match_the_original_renderer(
    pre: str, rubric: str, post: str, content: str, low: int
) -> None:
    high = low + 4
    builtins = {
        "min_score": f"{low:g}",
        "max_score": f"{high:g}",
        "content": escape_delimiters(content),
    }
    assert set(builtins) == set(BUILTIN_PLACEHOLDERS)
    # names neither renderer is given are kept as written by both
    assert render_prompt(pre, rubric, post, builtins) == judgespec_prompt(
        pre, rubric, post, low=low, high=high, content=content
    )


# -- default_extractor (the RubricJudgeSpec server's own default spec) ------------------

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "formats" / "rubricjudgespec"
SERVER_DEFAULT = FIXTURES / "ticket_triage_server_default.json"


def default_spec(*fields: dict[str, Any], **changes: Any) -> dict[str, Any]:
    document = json.loads(SERVER_DEFAULT.read_text(encoding="utf-8"))
    if fields:
        document["extract_variables"]["extraction_fields"] = list(fields)
    document.update(changes)
    return document


def test_the_server_default_spec_with_default_extractor_loads() -> None:
    loaded = load_file(SERVER_DEFAULT)
    assert loaded.format == "rubricjudgespec"
    assert loaded.warnings == []
    (rubric,) = loaded.rubrics
    assert rubric.id == "ticket_triage_server_default"
    assert (rubric.scale.min, rubric.scale.max) == (1, 4)
    config = rubric.criteria[0].scoring.config
    assert config["extract_variables"] == {
        "model_type": "default_extractor",
        "extraction_fields": [
            {
                "name": "content",
                "field_type": "STRING",
                "required": True,
                "extraction_pattern": "",  # kept as written; it means "no pattern"
                "match_index": 0,
            }
        ],
    }
    variables, judgement = extractors_from_config(config)
    assert variables is not None and judgement is not None
    (content,) = variables.fields
    assert (content.name, content.pattern, content.source) == ("content", None, "response")
    assert content.covers_content


@pytest.mark.parametrize("query", [None, "Which team handles refunds?"])
def test_a_default_extractor_field_is_the_whole_content(query: str | None) -> None:
    config = load_file(SERVER_DEFAULT).rubrics[0].criteria[0].scoring.config
    variables, _ = extractors_from_config(config)
    assert variables is not None
    content = "Routed to Billing.\nSummary: customer was charged twice for order #88."
    # the whole response, never the request, whatever the empty pattern would match
    assert extract_values(variables, content=content, query=query) == {"content": content}


def test_the_server_default_prompt_shows_the_judge_the_whole_content() -> None:
    (rubric,) = load_file(SERVER_DEFAULT).rubrics
    criterion = rubric.criteria[0]
    config = criterion.scoring.config
    variables, _ = extractors_from_config(config)
    assert variables is not None
    content = "Routed to Billing.\nSummary: charged twice for order #88."
    values = extract_values(variables, content=content, query="help")
    values.update(min_score="1", max_score="4")
    prompt = render_prompt(config["prescript"], criterion.description, config["postscript"], values)
    assert f"<content>\n{content}\n</content>" in prompt
    assert "${" not in prompt
    assert prompt == judgespec_prompt(
        config["prescript"],
        criterion.description,
        config["postscript"],
        low=1,
        high=4,
        content=content,
    )


def test_a_default_extractor_field_with_another_name_fills_it_with_the_content() -> None:
    document = default_spec(
        field("answer", None),
        postscript="Answer:\n${answer}\nGive <score>${min_score}-${max_score}</score>.",
    )
    loaded = load_document(document, source="answer.json")
    assert loaded.warnings == []  # `${answer}` shows the judge the content
    variables, _ = extractors_from_config(loaded.rubrics[0].criteria[0].scoring.config)
    assert variables is not None
    assert extract_values(variables, content="the reply", query="the ask") == {
        "answer": "the reply"
    }


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (
            {"extraction_pattern": "Routed to (\\w+)"},
            "extract_variables.extraction_fields[0].extraction_pattern",
            "a default_extractor passes the whole response through and takes no pattern",
        ),
        (
            {"name": "max_score"},
            "extract_variables.extraction_fields[0].name",
            "built-in placeholder",
        ),
    ],
)
def test_default_extractor_problems_name_their_path(
    change: dict[str, Any], path: str, words: str
) -> None:
    document = default_spec({**field("content", ""), **change})
    problems = problems_of(document)
    assert path in problems, problems
    assert words in problems[path]
    if "pattern" in words:
        assert "response_regex_extractor" in problems[path]  # the fix


def test_content_is_still_reserved_for_the_other_extractor_kinds() -> None:
    document = default_spec()
    document["extract_variables"]["model_type"] = "response_regex_extractor"
    problems = problems_of(document)
    assert "built-in placeholder" in problems["extract_variables.extraction_fields[0].name"]


def test_validate_accepts_the_server_default_spec() -> None:
    result = CliRunner().invoke(app, ["validate", str(SERVER_DEFAULT)])
    assert result.exit_code == 0, result.output
    assert "valid" in result.output and "rubricjudgespec" in result.output

"""Whatever document arrives, loading it returns rubrics or raises a `RubricflowError`.

Hypothesis builds arbitrary JSON-like documents plus near-miss documents for each format:
documents in the format's shape where one to three nodes, at any depth, were swapped for
junk (a wrong type, an out-of-range or oversized number, a broken schema or band map). They go to
`load_document` with detection and with every explicit `format=`. Any other exception
(KeyError, TypeError, OverflowError, ...) is a crash in an importer.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rubricflow.errors import RubricflowError
from rubricflow.formats.loader import LoadedFile, load_document
from rubricflow.model import Rubric, parse_rubric
from rubricflow.plugins import create_plugin_manager

REGISTRY = create_plugin_manager(load_entry_points=False)
FORMAT_NAMES = sorted(REGISTRY.formats)
EXAMPLES = 300
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# -- arbitrary JSON-like values ----------------------------------------------------------

huge = st.sampled_from([10**400, -(10**400), 2**63, 1e308, -1e308])
tricky = st.sampled_from(
    [
        "",
        " ",
        "0",
        "1.0.0",
        "nan",
        "inf",
        "1e999",
        "${content}",
        "{{ x }}",
        "{% if %}",
        "a:b",
        "10",
        {"$schema": 5},
        {"$schema": ["x"]},
        {"type": 5},
        {"pattern": "("},
        {"0": "a", "x": "b"},
        {"3": "a", "3.0": "b"},
        [0, 10],
        [10, 0],
    ]
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    huge,
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
keys = st.one_of(
    st.text(max_size=8),
    st.sampled_from(
        [
            "id",
            "name",
            "criteria",
            "weight",
            "levels",
            "score",
            "rubrics",
            "sections",
            "requirement",
            "type",
            "value",
            "assert",
            "tests",
            "evalcases",
            "score_ranges",
            "scoring_method",
            "model_type",
        ]
    ),
)
json_values = st.recursive(
    st.one_of(scalars, tricky),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(keys, children, max_size=4),
    ),
    max_leaves=6,
)


def shaped(
    required: dict[str, st.SearchStrategy[Any]],
    optional: dict[str, st.SearchStrategy[Any]] | None = None,
) -> st.SearchStrategy[dict[str, Any]]:
    """A mapping with a format's keys and valid values (`mutated` breaks them)."""
    return st.fixed_dictionaries(required, optional=optional or {})


ident = st.sampled_from(["c1", "c2", "clarity", "tone", "x_9", "a.b", "q-3"])
words = st.sampled_from(["Clarity", "Is correct", "Mentions X", "Cites 2 sources", "ok"])
unit = st.floats(min_value=0, max_value=1)
signed = st.floats(min_value=-3, max_value=3)
semver = st.sampled_from(["1.0.0", "0.2.1", "2.1.3-rc.1", "1.0.0+build.5"])
small_json = st.dictionaries(ident, st.one_of(st.integers(-9, 9), words, st.booleans()), max_size=2)

# fixed valid pieces keep generation cheap; `mutated` supplies the variety of junk
band_map = st.sampled_from(
    [
        {"0": "wrong", "5": "right"},
        {"0": "a", "3": "b", "7": "c", "10": "d"},
        {"0": "only band"},
        {"0": "low", "1": "mid", "9": "high"},
    ]
)
band_list = st.sampled_from(
    [
        [{"min": 0, "max": 10, "description": "all"}],
        [{"min": 0, "max": 4}, {"min": 5, "max": 10, "description": "top"}],
        [{"min": 6, "max": 10}, {"min": 0, "max": 2}, {"min": 3, "max": 5}],
    ]
)
level_lists = st.sampled_from(
    [
        [{"id": "fail", "score": 0.0}, {"id": "pass", "score": 1.0}],
        [
            {"id": "low", "label": "Low", "score": 0.0, "indicators": ["vague"]},
            {"id": "mid", "description": "Some", "score": 0.5},
            {"id": "high", "label": "High", "score": 1.0, "indicators": []},
        ],
        [{"id": "x", "score": 0.3}, {"id": "y", "score": 0.3}],
    ]
)
schemas = st.sampled_from(
    [{"type": "object"}, {"type": "object", "required": ["questions"]}, {"type": "string"}]
)

# -- documents in each format's shape ------------------------------------------------------

native_scoring = st.one_of(
    shaped({"method": st.just("llm")}, {"model": words, "config": small_json}),
    shaped({"method": st.just("deterministic"), "function": ident}),
    shaped({"method": st.just("schema"), "schema": schemas}),
    shaped({"method": st.just("schema"), "schema_ref": st.just("missing.schema.json")}),
    shaped({"method": st.just("metric"), "metric": st.sampled_from(["bleu", "rouge"])}),
    shaped({"method": st.just("llm_decode"), "template": st.just("Rate {{ content }}")}),
)
native_criterion = st.one_of(
    shaped({"id": ident}, {"weight": signed, "required": st.booleans(), "scoring": native_scoring}),
    shaped({"id": ident, "levels": level_lists}, {"weight": signed, "min_score": unit}),
    shaped({"id": ident, "score_ranges": st.one_of(band_map, band_list)}, {"weight": signed}),
)
native_rubric = shaped(
    {
        "id": ident,
        "criteria": st.lists(
            native_criterion, min_size=1, max_size=3, unique_by=lambda c: str(c.get("id"))
        ),
    },
    {
        "version": semver,
        "pass_threshold": unit,
        "scale": shaped({"min": st.just(0), "max": st.integers(1, 10)}),
        "metadata": small_json,
        "unscored_policy": st.sampled_from(["fail_closed", "exclude", "count_as_zero"]),
    },
)
native_doc = st.one_of(
    native_rubric, shaped({"rubrics": st.lists(native_rubric, min_size=1, max_size=2)})
)

orl_example = shaped({"output": words}, {"input": words, "score": st.floats(0, 10)})
orl_criterion = shaped(
    {"name": words, "description": words, "weight": unit},
    {
        "examples": st.dictionaries(
            st.sampled_from(["excellent", "good", "poor"]), st.lists(orl_example, max_size=2)
        ),
        "subcriteria": st.lists(shaped({"name": words}, {"description": words}), max_size=2),
    },
)
orl_doc = shaped(
    {
        "name": words,
        "version": st.just("1.0.0"),
        "criteria": st.lists(orl_criterion, min_size=1, max_size=3, unique_by=lambda c: str(c)),
    },
    {
        "domain": st.sampled_from(["code", "general", "dialogue"]),
        "scale": shaped(
            {"min": st.just(0), "max": st.integers(1, 10)},
            {"type": st.sampled_from(["continuous", "discrete"])},
        ),
        "hybrid_metrics": st.lists(
            shaped(
                {
                    "name": words,
                    "type": st.sampled_from(["bleu", "rouge", "accuracy", "custom"]),
                    "weight": st.floats(0, 0.5),
                },
                {"config": small_json},
            ),
            max_size=2,
        ),
        "metadata": small_json,
    },
)

agentv_item = st.one_of(
    words,
    shaped(
        {"id": ident},
        {
            "expected_outcome": words,
            "weight": st.floats(0.1, 3),
            "required": st.booleans(),
            "min_score": unit,
            "required_min_score": st.integers(0, 10),
        },
    ),
    shaped(
        {"id": ident, "outcome": words, "score_ranges": st.one_of(band_map, band_list)},
        {"weight": st.floats(0.1, 3)},
    ),
    shaped(
        {
            "id": ident,
            "score_ranges": st.sampled_from(
                [
                    [{"score_range": [0, 10], "outcome": "all"}],
                    [{"score_range": [0, 2]}, {"score_range": [3, 10], "outcome": "ok"}],
                ]
            ),
        }
    ),
)
agentv_items = st.lists(agentv_item, min_size=1, max_size=3)
agentv_execution = shaped(
    {
        "evaluators": st.lists(
            st.one_of(
                shaped({"name": words, "type": st.just("rubric"), "rubrics": agentv_items}),
                shaped({"name": words, "type": st.just("code_judge")}),
            ),
            max_size=2,
        )
    }
)
agentv_v2 = shaped(
    {
        "evalcases": st.lists(
            shaped(
                {"id": ident},
                {
                    "expected_outcome": words,
                    "rubrics": agentv_items,
                    "execution": agentv_execution,
                    "input": st.just([{"role": "user", "content": "hi"}]),
                },
            ),
            min_size=1,
            max_size=3,
        )
    },
    {"execution": agentv_execution, "description": words},
)
v4_assert = st.one_of(
    words,
    shaped({"type": st.just("llm-rubric"), "value": st.one_of(words, agentv_items)}),
    shaped({"type": st.just("contains"), "value": words}),
)
agentv_v4 = shaped(
    {
        "tests": st.lists(
            shaped(
                {"assert": st.lists(v4_assert, min_size=1, max_size=3)},
                {"id": ident, "vars": shaped({"input": words}), "description": words},
            ),
            min_size=1,
            max_size=3,
        )
    },
    {"defaultTest": shaped({"assert": st.lists(v4_assert, max_size=2)})},
)

pkg_item = shaped({"requirement": words, "weight": signed}, {"id": ident})
pkg_doc = st.one_of(
    st.lists(pkg_item, min_size=1, max_size=4),
    shaped({"criteria": st.lists(pkg_item, min_size=1, max_size=3)}, {"id": ident}),
    shaped(
        {
            "rubric": shaped(
                {
                    "sections": st.lists(
                        shaped({"criteria": st.lists(pkg_item, max_size=3)}, {"title": words}),
                        min_size=1,
                        max_size=3,
                    )
                },
                {"id": ident},
            )
        }
    ),
)

dk_scoring = st.one_of(
    shaped(
        {
            "type": st.just("deterministic"),
            "function_ref": st.sampled_from(
                ["app.checks:count", "dataknobs_bots.rubrics.meta:check_level_ordering"]
            ),
        }
    ),
    shaped({"type": st.just("schema"), "schema": schemas}),
    shaped({"type": st.just("schema"), "schema_ref": st.just("missing.schema.json")}),
    shaped(
        {"type": st.just("llm_decode"), "decode_prompt": st.just("Grade {{ content }}")},
        {"decode_output_schema": schemas},
    ),
)
dk_rubric = shaped(
    {
        "id": ident,
        "name": words,
        "version": semver,
        "criteria": st.lists(
            shaped(
                {"id": ident, "scoring_method": dk_scoring, "levels": level_lists},
                {"weight": unit, "name": words, "required": st.booleans()},
            ),
            min_size=1,
            max_size=3,
            unique_by=lambda c: str(c.get("id")),
        ),
    },
    {"pass_threshold": unit, "metadata": small_json, "target_type": words},
)
dk_doc = st.one_of(dk_rubric, shaped({"rubrics": st.lists(dk_rubric, min_size=1, max_size=2)}))

rar_item = shaped({"description": words, "weight": signed}, {"title": words})
rar_items = st.lists(rar_item, min_size=1, max_size=4)
rar_row = shaped({"rubric": rar_items}, {"question": words, "reference_answer": words, "id": ident})
rar_doc = st.one_of(rar_items, rar_row, st.lists(rar_row, min_size=1, max_size=3))
hb_item = shaped(
    {"criterion": words, "points": st.integers(-10, 10)},
    {"tags": st.lists(st.sampled_from(["axis:accuracy", "level:example"]), max_size=2)},
)
hb_row = shaped(
    {"rubrics": st.lists(hb_item, min_size=1, max_size=4)},
    {"prompt": st.just([{"role": "user", "content": "hi"}]), "prompt_id": ident},
)
hb_doc = st.one_of(hb_row, st.lists(hb_row, min_size=1, max_size=3))
_sample = st.sampled_from(["{{ sample.output_text }}", "{{sample.output_text}}", "{{ item.q }}"])
_reference = st.one_of(words, st.sampled_from(["{{ item.answer }}", "{{ item.x }} and more"]))
_messages = st.lists(shaped({"role": st.sampled_from(["system", "user"]), "content": words}, {}))
openai_grader = st.one_of(
    shaped(
        {
            "type": st.just("string_check"),
            "name": words,
            "input": _sample,
            "reference": _reference,
            "operation": st.sampled_from(["eq", "ne", "like", "ilike", "glob"]),
        },
        {},
    ),
    shaped(
        {
            "type": st.just("text_similarity"),
            "name": words,
            "input": _sample,
            "reference": _reference,
            "evaluation_metric": st.sampled_from(["bleu", "rouge_l", "fuzzy_match"]),
        },
        {"pass_threshold": st.floats(-1, 2, allow_nan=False)},
    ),
    shaped(
        {"type": st.just("score_model"), "name": words, "model": words, "input": _messages},
        {
            "range": st.lists(st.integers(-5, 10), min_size=2, max_size=2),
            "pass_threshold": st.integers(-5, 10),
        },
    ),
    shaped(
        {
            "type": st.just("label_model"),
            "name": words,
            "model": words,
            "input": _messages,
            "labels": st.lists(words, min_size=1, max_size=3),
            "passing_labels": st.lists(words, max_size=2),
        },
        {},
    ),
    shaped({"type": st.sampled_from(["python", "multi"]), "name": words}, {"source": words}),
)
openai_doc = st.one_of(
    openai_grader,
    st.lists(openai_grader, min_size=1, max_size=3),
    shaped({"testing_criteria": st.lists(openai_grader, min_size=1, max_size=3)}, {"name": words}),
)
promptfoo_assertion = shaped(
    {
        "type": st.sampled_from(
            [
                "contains",
                "not-icontains",
                "contains-any",
                "regex",
                "is-json",
                "llm-rubric",
                "g-eval",
                "levenshtein",
                "bleu",
                "similar",
                "python",
                "starts-with",
            ]
        )
    },
    {
        "value": st.one_of(words, st.lists(words, max_size=2), st.just("{{ shop }}")),
        "weight": st.floats(-1, 3, allow_nan=False),
        "threshold": st.floats(-1, 6, allow_nan=False),
        "metric": words,
    },
)
promptfoo_doc = shaped(
    {
        "tests": st.lists(
            shaped(
                {"assert": st.lists(promptfoo_assertion, min_size=1, max_size=3)},
                {"vars": st.just({"shop": "Acme"}), "threshold": unit, "description": words},
            ),
            min_size=1,
            max_size=3,
        )
    },
    {"defaultTest": shaped({"assert": st.lists(promptfoo_assertion, max_size=2)})},
)
judge_doc = shaped(
    {
        "model_type": st.just("rubric_judge"),
        "rubric": words,
        "model": words,
        "min_score": st.integers(-2, 2),
        "max_score": st.integers(3, 10),
    },
    {
        "prescript": words,
        "postscript": st.sampled_from(["Judge ${content}", "no placeholder"]),
        "extract_variables": small_json,
        "extract_judgement": small_json,
    },
)


def _replace_somewhere(document: Any, choices: list[int], value: Any) -> Any:
    """A copy of `document` with the node reached by following `choices` replaced by `value`."""
    if not choices or not isinstance(document, dict | list) or not document:
        return value
    if isinstance(document, dict):
        key = list(document)[choices[0] % len(document)]
        return {**document, key: _replace_somewhere(document[key], choices[1:], value)}
    index = choices[0] % len(document)
    copy = list(document)
    copy[index] = _replace_somewhere(document[index], choices[1:], value)
    return copy


def mutated(documents: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Documents of a format with one to three nodes, at any depth, swapped for arbitrary
    JSON: a wrong type, an out-of-range number, a missing list, a bad schema..."""
    walks = st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=7)
    swaps = st.lists(st.tuples(walks, json_values), min_size=1, max_size=3)

    def apply(document: Any, changes: list[tuple[list[int], Any]]) -> Any:
        for walk, value in changes:
            document = _replace_somewhere(document, walk, value)
        return document

    return st.builds(apply, documents, swaps)


SHAPES: dict[str, st.SearchStrategy[Any]] = {
    "native": native_doc,
    "openrubricrl": orl_doc,
    "agentv": st.one_of(agentv_v2, agentv_v4),
    "rubric-pkg": pkg_doc,
    "dataknobs": dk_doc,
    "rubricjudgespec": judge_doc,
    "rar": rar_doc,
    "healthbench": hb_doc,
    "openai-graders": openai_doc,
    "promptfoo": promptfoo_doc,
}
NEAR_MISS = {name: st.one_of(shape, mutated(shape)) for name, shape in SHAPES.items()}
any_document = st.one_of(json_values, *NEAR_MISS.values())


def _check(document: Any, fmt: str | None) -> LoadedFile | None:
    before = repr(document)
    try:
        loaded = load_document(document, format=fmt, plugins=REGISTRY)
    except RubricflowError:
        return None
    finally:
        assert repr(document) == before, "loading must not change the caller's document"
    assert isinstance(loaded, LoadedFile)
    assert loaded.rubrics, "a successful load returns at least one rubric"
    for rubric in loaded.rubrics:
        assert isinstance(rubric, Rubric)
        assert all(math.isfinite(c.weight) for c in rubric.criteria)
        # whatever an importer accepts is a rubric that survives a native round trip
        again = parse_rubric(rubric.to_dict())
        assert again == rubric
        assert again.content_hash == rubric.content_hash
    return loaded


def test_every_builtin_format_is_fuzzed() -> None:
    assert set(SHAPES) == set(FORMAT_NAMES)


@SETTINGS
@given(document=any_document)
def test_any_document_loads_or_raises_a_rubricflow_error(document: Any) -> None:
    for fmt in [None, *FORMAT_NAMES]:
        _check(document, fmt)


@pytest.mark.parametrize("fmt", FORMAT_NAMES)
@SETTINGS
@given(document=st.data())
def test_near_miss_documents_never_crash_their_importer(fmt: str, document: Any) -> None:
    doc = document.draw(NEAR_MISS[fmt])
    _check(doc, fmt)
    _check(doc, None)


def test_oversized_integers_are_reported_not_crashed() -> None:
    """Python refuses to print ints over 4300 digits; messages must not try."""
    big = 10**5000
    documents = [
        {"id": "r", "criteria": [{"id": "c", "weight": big}]},
        {"id": "r", "criteria": [{"id": "c"}], "metadata": {"n": big}},
        {"id": "r", "criteria": [{"id": "c", "score_ranges": {0: "a", big: "b"}}]},
        [{"requirement": "x", "weight": big}],
        {"evalcases": [{"id": "a", "rubrics": [{"id": "x", "weight": big}]}]},
    ]
    for document in documents:
        with pytest.raises(RubricflowError):
            load_document(document, plugins=REGISTRY)

"""Edge cases: empty content, missing or odd references, unknown names and options, the
OpenRubricRL types that give no score, and never touching the network."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import rubricflow_metrics
from rubricflow_metrics import MetricError, compute_metric, known_metric_names

from rubricflow import CriterionResult

ScoreOf = Callable[..., Awaitable[CriterionResult]]

REFERENCE_METRICS = [
    "bleu",
    "chrf",
    "ter",
    "rouge1",
    "rouge2",
    "rougeL",
    "exact_match",
    "accuracy",
    "normalized_match",
    "numeric_tolerance",
]


def _error(result: CriterionResult) -> str:
    assert result.status == "error", (result.status, result.score, result.evidence)
    assert result.score is None and result.verdict is None and result.passed is None
    return result.notes


# --- empty content --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "metric", ["bleu", "chrf", "ter", "rouge1", "rouge2", "rougeL", "exact_match", "accuracy"]
)
async def test_an_empty_hypothesis_scores_zero_against_a_reference(
    score_of: ScoreOf, metric: str
) -> None:
    result = await score_of(metric, "", "The parcel arrives on Monday.")

    assert result.status == "scored", result.notes
    assert result.score == 0.0
    assert result.evidence


async def test_empty_content_has_no_readability(score_of: ScoreOf) -> None:
    result = await score_of("readability", "   ")

    assert result.status == "scored" and result.score == 0.0
    assert "nothing to read" in result.notes


async def test_empty_content_is_too_short_and_has_no_keywords(score_of: ScoreOf) -> None:
    short = await score_of("length", "", None, {"min": 1})
    keywords = await score_of("keyword_coverage", "", None, {"keywords": ["a"]})
    regex = await score_of("regex", "", None, {"pattern": "x"})

    assert (short.score, keywords.score, regex.score) == (0.0, 0.0, 0.0)


# --- references -----------------------------------------------------------------------------


@pytest.mark.parametrize("metric", REFERENCE_METRICS)
@pytest.mark.parametrize("reference", [None, []])
async def test_a_metric_that_needs_a_reference_and_has_none_is_an_error(
    score_of: ScoreOf, metric: str, reference: Any
) -> None:
    result = await score_of(metric, "The parcel arrives on Monday.", reference)

    notes = _error(result)
    assert "reference" in notes and "there is none" in notes
    assert repr(metric) in notes


async def test_an_empty_text_is_still_a_reference(score_of: ScoreOf) -> None:
    empty = await score_of("exact_match", "", "")
    bleu = await score_of("bleu", "The parcel arrives on Monday.", "")

    assert empty.status == "scored" and empty.score == 1.0
    assert bleu.status == "scored" and bleu.score == 0.0


async def test_openrubricrl_accuracy_without_a_reference_is_an_error_not_1(
    score_of: ScoreOf,
) -> None:
    """OpenRubricRL returns 1.0 here; rubricflow says it cannot score."""
    notes = _error(await score_of("accuracy", "Paris"))

    assert "accuracy" in notes and "reference" in notes


async def test_the_reference_may_come_from_the_criterion_config(score_of: ScoreOf) -> None:
    result = await score_of("exact_match", "Paris", None, {"reference": "Paris"})
    overridden = await score_of("exact_match", "Paris", "Lyon", {"reference": "Paris"})

    assert result.score == 1.0
    assert overridden.score == 1.0
    assert "compared with 1 reference from config.reference" in result.evidence


async def test_reference_key_reads_a_field_of_the_reference_or_the_metadata(
    score_of: ScoreOf,
) -> None:
    from_reference = await score_of(
        "exact_match", "Paris", {"expected_output": "Paris"}, {"reference_key": "expected_output"}
    )
    from_metadata = await score_of(
        "exact_match",
        "Paris",
        None,
        {"reference_key": "expected_output"},
        metadata={"expected_output": "Paris"},
    )
    missing = await score_of("exact_match", "Paris", None, {"reference_key": "expected_output"})

    assert from_reference.score == 1.0
    assert "target.reference.expected_output" in from_reference.evidence[-1]
    assert from_metadata.score == 1.0
    assert "target.metadata.expected_output" in from_metadata.evidence[-1]
    assert "expected_output" in _error(missing)


async def test_a_mapping_reference_for_a_text_metric_is_an_error_with_a_hint(
    score_of: ScoreOf,
) -> None:
    notes = _error(await score_of("bleu", "text", {"answer": "text"}))

    assert "reference_key" in notes


async def test_json_path_equals_without_expected_or_reference_is_an_error(
    score_of: ScoreOf,
) -> None:
    none = _error(await score_of("json_path_equals", {"a": 1}, None, {"path": "a"}))
    not_there = _error(await score_of("json_path_equals", {"a": 1}, {"b": 1}, {"path": "a"}))
    not_json = _error(await score_of("json_path_equals", {"a": 1}, "{oops", {"path": "a"}))

    assert "config.expected" in none
    assert "no value at a" in not_there
    assert "not JSON" in not_json


async def test_a_reference_without_a_number_is_an_error(score_of: ScoreOf) -> None:
    notes = _error(await score_of("numeric_tolerance", "42", "forty-two"))

    assert "no number" in notes


# --- names and options ----------------------------------------------------------------------


async def test_an_unknown_metric_is_an_error_listing_the_known_ones(score_of: ScoreOf) -> None:
    notes = _error(await score_of("bluer", "text", "text"))

    assert "unknown metric 'bluer'" in notes
    for name in ("bleu", "chrf", "ter", "rouge1", "rougeL", "rouge_l", "readability"):
        assert name in notes


def test_every_documented_metric_name_is_known() -> None:
    documented = {
        "bleu",
        "chrf",
        "ter",
        "rouge1",
        "rouge2",
        "rougeL",
        "rouge_l",
        "rouge",
        "readability",
        "exact_match",
        "normalized_match",
        "regex",
        "keyword_coverage",
        "length",
        "json_path_equals",
        "numeric_tolerance",
        "accuracy",
        "perplexity",
        "custom",
    }
    assert documented <= set(known_metric_names())


async def test_perplexity_is_an_error_never_a_score(score_of: ScoreOf) -> None:
    notes = _error(await score_of("perplexity", "Some fluent text.", "reference"))

    assert "language model" in notes


async def test_custom_without_a_metric_name_is_an_error_explaining_config_metric(
    score_of: ScoreOf,
) -> None:
    bare = _error(await score_of("custom", "text", "text"))
    unknown = _error(await score_of("custom", "text", "text", {"metric": "sql_exec_match"}))
    named = await score_of("custom", "Paris", "Paris", {"metric": "exact_match"})

    assert "config.metric" in bare
    assert "unknown metric" in unknown and "sql_exec_match" in unknown
    assert named.status == "scored" and named.score == 1.0


async def test_an_unknown_option_is_an_error_naming_the_accepted_ones(score_of: ScoreOf) -> None:
    notes = _error(await score_of("rouge1", "a b", "a b", {"use_stemer": True}))

    assert "config.use_stemer" in notes
    assert "use_stemmer" in notes and "measure" in notes


@pytest.mark.parametrize(
    ("metric", "config", "fragment"),
    [
        ("bleu", {"tokenize": "flores200"}, "download"),
        ("bleu", {"tokenize": "ja-mecab"}, "extra packages"),
        ("bleu", {"smooth": True, "smooth_method": "exp"}, "not both"),
        ("bleu", {"max_order": 0}, "config.max_order"),
        ("rouge1", {"measure": "f1"}, "fmeasure"),
        ("rouge", {"variant": "rouge3"}, "variant"),
        ("chrf", {"lowercase": "yes"}, "true or false"),
        ("regex", {}, "config.pattern"),
        ("regex", {"pattern": "(unclosed"}, "not a valid regular expression"),
        ("regex", {"pattern": "a", "flags": "q"}, "config.flags"),
        ("keyword_coverage", {"keywords": []}, "config.keywords"),
        ("length", {}, "config.min"),
        ("length", {"min": 5, "max": 2}, "above"),
        ("length", {"min": 1, "ramp": 0}, "config.ramp"),
        ("numeric_tolerance", {"abs_tol": -1}, "config.abs_tol"),
        ("json_path_equals", {"path": ""}, "config.path"),
        ("readability", {"lang": 5}, "config.lang"),
    ],
)
async def test_bad_options_are_errors_that_name_the_option(
    score_of: ScoreOf, metric: str, config: dict[str, Any], fragment: str
) -> None:
    notes = _error(await score_of(metric, "text 12", "text 12", config))

    assert fragment in notes


async def test_openrubricrl_metadata_in_config_is_accepted(score_of: ScoreOf) -> None:
    """An imported `custom` metric keeps `metric` in its config next to scoring.metric."""
    result = await score_of("exact_match", "a", "a", {"metric": "exact_match"})

    assert result.status == "scored"


# --- offline --------------------------------------------------------------------------------

OFFLINE_SCRIPT = textwrap.dedent(
    """
    import socket

    def refuse(*args, **kwargs):
        raise OSError("network access attempted")

    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse
    import nltk

    def no_download(*args, **kwargs):
        raise RuntimeError("nltk.download was called")

    nltk.download = no_download

    from rubricflow_metrics import METRICS, compute_metric

    SAMPLES = {
        "json_path_equals": ({"a": 1}, None, {"path": "a", "expected": 1}),
        "regex": ("Order 7", None, {"pattern": "Order"}),
        "keyword_coverage": ("cats and dogs", None, {"keywords": ["cats"]}),
        "length": ("two words", None, {"max": 3}),
        "numeric_tolerance": ("it is 42", "42", {}),
    }
    for name in METRICS:
        content, reference, config = SAMPLES.get(
            name, ("The cats were running home.", "The cat runs home.", {})
        )
        extra = {"use_stemmer": True} if name.startswith("rouge") else {}
        value = compute_metric(name, content, reference, {**config, **extra})
        assert 0.0 <= value.score <= 1.0, (name, value)
    print("offline:", len(METRICS))
    """
)


def test_no_metric_touches_the_network_or_downloads_data(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "NLTK_DATA": str(tmp_path / "nltk_data"),
        "HOME": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "-c", OFFLINE_SCRIPT],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
        cwd=tmp_path,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"offline: {len(rubricflow_metrics.METRICS)}"


def test_a_textstat_that_would_download_its_dictionary_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """textstat 0.7.10+ calls nltk.download('cmudict') when the corpus is missing; the
    plugin refuses to score instead of fetching it."""
    import nltk
    import textstat.backend.utils

    newer = types.ModuleType("textstat.backend.utils._get_cmudict")
    newer.nltk = nltk  # type: ignore[attr-defined]
    monkeypatch.setattr(textstat.backend.utils, "_get_cmudict", newer, raising=False)
    monkeypatch.setitem(sys.modules, "textstat.backend.utils._get_cmudict", newer)

    def missing(resource: str) -> None:
        raise LookupError(resource)

    def no_download(*args: object, **kwargs: object) -> None:
        raise AssertionError("nltk.download was called")

    monkeypatch.setattr(nltk.data, "find", missing)
    monkeypatch.setattr(nltk, "download", no_download)

    with pytest.raises(MetricError, match="never downloads"):
        compute_metric("readability", "The cat sat on the mat.")

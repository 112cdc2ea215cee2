"""Each metric's value equals its library computed directly on the same strings (with the
documented mapping to 0..1), scored through a real evaluation."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import sacrebleu
import textstat
from rouge_score import rouge_scorer
from sacrebleu.metrics import BLEU, CHRF, TER

from rubricflow import CriterionResult

ScoreOf = Callable[..., Awaitable[CriterionResult]]

PAIRS = [
    ("the cat sat on the mat", "the cat sat on a mat"),
    ("A quick brown fox jumps over the lazy dog.", "The quick brown fox jumped over a lazy dog."),
    ("Refunds are issued within five working days.", "We refund you in 5 business days."),
    ("identical text here", "identical text here"),
    ("completely unrelated words", "nothing in common at all"),
]
MULTI_REFERENCES = [
    "The cat is sitting on the mat.",
    "A cat sat upon the mat.",
    "There is a cat on the mat.",
]
HYPOTHESIS = "The cat sat on the mat."


def _unit(value: float) -> float:
    return min(1.0, max(0.0, value))


def _scored(result: CriterionResult) -> float:
    assert result.status == "scored", result.notes
    assert isinstance(result.score, float)
    return result.score


# --- sacrebleu ------------------------------------------------------------------------------


@pytest.mark.parametrize(("hypothesis", "reference"), PAIRS)
async def test_bleu_is_sacrebleu_sentence_bleu_over_100(
    score_of: ScoreOf, hypothesis: str, reference: str
) -> None:
    result = await score_of("bleu", hypothesis, reference)

    expected = sacrebleu.sentence_bleu(hypothesis, [reference]).score / 100
    assert _scored(result) == _unit(expected)
    assert result.scorer == "metric"
    assert re.fullmatch(
        r"bleu=\d+\.\d\d \(sacrebleu 2\.\S+, 13a tokenizer, 1 reference\)", result.evidence[0]
    ), result.evidence


async def test_bleu_of_identical_text_is_exactly_one_not_a_float_overshoot(
    score_of: ScoreOf,
) -> None:
    raw = sacrebleu.sentence_bleu("identical text here", ["identical text here"]).score
    result = await score_of("bleu", "identical text here", "identical text here")

    assert raw / 100 >= 1.0  # sacrebleu gives 100.00000000000004 here
    assert _scored(result) == 1.0
    assert result.verdict == "MET"


async def test_bleu_with_several_references(score_of: ScoreOf) -> None:
    result = await score_of("bleu", HYPOTHESIS, MULTI_REFERENCES)

    expected = sacrebleu.sentence_bleu(HYPOTHESIS, MULTI_REFERENCES).score / 100
    single = sacrebleu.sentence_bleu(HYPOTHESIS, MULTI_REFERENCES[:1]).score / 100
    assert _scored(result) == pytest.approx(expected, abs=0) and expected != single
    assert "3 references" in result.evidence[0]
    assert "compared with 3 references from target.reference" in result.evidence


async def test_bleu_options_reach_sacrebleu(score_of: ScoreOf) -> None:
    hyp, ref = PAIRS[1]
    char = await score_of("bleu", hyp, ref, {"tokenize": "char", "lowercase": True})
    unsmoothed = await score_of("bleu", hyp, ref, {"smooth": False, "max_order": 4})
    bigram = await score_of("bleu", hyp, ref, {"max_ngram_order": 2, "smooth_method": "floor"})

    assert _scored(char) == _unit(
        sacrebleu.sentence_bleu(hyp, [ref], tokenize="char", lowercase=True).score / 100
    )
    assert "char tokenizer" in char.evidence[0]
    assert _scored(unsmoothed) == _unit(
        BLEU(smooth_method="none", effective_order=True).sentence_score(hyp, [ref]).score / 100
    )
    assert _scored(bigram) == _unit(
        BLEU(max_ngram_order=2, smooth_method="floor", effective_order=True)
        .sentence_score(hyp, [ref])
        .score
        / 100
    )


@pytest.mark.parametrize(("hypothesis", "reference"), PAIRS)
async def test_chrf_is_sacrebleu_sentence_chrf_over_100(
    score_of: ScoreOf, hypothesis: str, reference: str
) -> None:
    result = await score_of("chrf", hypothesis, reference)

    assert _scored(result) == _unit(sacrebleu.sentence_chrf(hypothesis, [reference]).score / 100)
    assert result.evidence[0].startswith("chrf=")
    assert "sacrebleu" in result.evidence[0]


async def test_chrf_plus_plus_and_several_references(score_of: ScoreOf) -> None:
    plus = await score_of("chrf", HYPOTHESIS, MULTI_REFERENCES, {"word_order": 2})

    expected = CHRF(word_order=2).sentence_score(HYPOTHESIS, MULTI_REFERENCES).score / 100
    assert _scored(plus) == _unit(expected)
    assert "chrF2++" in plus.evidence[0]


@pytest.mark.parametrize(("hypothesis", "reference"), PAIRS)
async def test_ter_is_one_minus_sacrebleu_ter_over_100(
    score_of: ScoreOf, hypothesis: str, reference: str
) -> None:
    result = await score_of("ter", hypothesis, reference)

    ter = sacrebleu.sentence_ter(hypothesis, [reference]).score
    assert _scored(result) == max(0.0, 1 - ter / 100)
    assert result.evidence[0].startswith(f"ter={ter:.2f} (sacrebleu")
    assert "max(0, 1 - TER/100)" in result.evidence[0]


async def test_ter_above_100_maps_to_zero(score_of: ScoreOf) -> None:
    hypothesis = "many extra words that the short reference never had"
    ter = sacrebleu.sentence_ter(hypothesis, ["short"]).score
    result = await score_of("ter", hypothesis, "short")

    assert ter > 100
    assert _scored(result) == 0.0


async def test_ter_options_reach_sacrebleu(score_of: ScoreOf) -> None:
    hyp, ref = "The Cat, sat!", "the cat sat"
    result = await score_of("ter", hyp, ref, {"case_sensitive": True, "no_punct": True})

    ter = TER(case_sensitive=True, no_punct=True).sentence_score(hyp, [ref]).score
    assert _scored(result) == max(0.0, 1 - ter / 100)


# --- rouge-score ----------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["rouge1", "rouge2", "rougeL"])
@pytest.mark.parametrize(("hypothesis", "reference"), PAIRS)
async def test_rouge_is_rouge_score_fmeasure(
    score_of: ScoreOf, variant: str, hypothesis: str, reference: str
) -> None:
    result = await score_of(variant, hypothesis, reference)

    scorer = rouge_scorer.RougeScorer([variant])
    expected = scorer.score(reference, hypothesis)[variant].fmeasure
    assert _scored(result) == expected
    assert result.evidence[0].startswith(f"{variant} fmeasure=")
    assert "rouge-score 0.1" in result.evidence[0]


@pytest.mark.parametrize("measure", ["precision", "recall", "fmeasure"])
async def test_rouge_measure_and_stemming_options(score_of: ScoreOf, measure: str) -> None:
    hypothesis, reference = "the cats were running quickly", "the cat runs quick"
    stemmed = await score_of(
        "rouge1", hypothesis, reference, {"measure": measure, "use_stemmer": True}
    )
    plain = await score_of("rouge1", hypothesis, reference, {"measure": measure})

    with_stem = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    without = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=False)
    assert _scored(stemmed) == getattr(with_stem.score(reference, hypothesis)["rouge1"], measure)
    assert _scored(plain) == getattr(without.score(reference, hypothesis)["rouge1"], measure)
    assert _scored(stemmed) > _scored(plain)
    assert "stemmer on" in stemmed.evidence[0]


async def test_rouge_with_several_references_takes_the_best(score_of: ScoreOf) -> None:
    result = await score_of("rougeL", HYPOTHESIS, MULTI_REFERENCES)

    scorer = rouge_scorer.RougeScorer(["rougeL"])
    each = [scorer.score(ref, HYPOTHESIS)["rougeL"].fmeasure for ref in MULTI_REFERENCES]
    assert _scored(result) == max(each)
    assert _scored(result) == scorer.score_multi(MULTI_REFERENCES, HYPOTHESIS)["rougeL"].fmeasure
    assert "best of 3 references" in result.evidence[0]


@pytest.mark.parametrize(
    ("name", "config", "variant"),
    [
        ("rouge_l", {}, "rougeL"),
        ("rouge", {}, "rougeL"),
        ("rouge", {"variant": "rouge1"}, "rouge1"),
        ("rouge", {"variant": "rouge-2"}, "rouge2"),
        ("ROUGEL", {}, "rougeL"),
    ],
)
async def test_rouge_aliases_and_openrubricrl_rouge(
    score_of: ScoreOf, name: str, config: dict[str, str], variant: str
) -> None:
    hypothesis, reference = PAIRS[1]
    result = await score_of(name, hypothesis, reference, config)

    expected = rouge_scorer.RougeScorer([variant]).score(reference, hypothesis)[variant]
    assert _scored(result) == expected.fmeasure
    assert result.evidence[0].startswith(variant)


# --- textstat -------------------------------------------------------------------------------

HARD_TEXT = (
    "Notwithstanding the aforementioned considerations, the committee's deliberations "
    "necessitated comprehensive reconsideration of organisational responsibilities."
)
EASY_TEXT = "The cat sat. The dog ran. We had fun."
MIDDLE_TEXT = (
    "The library opens at nine in the morning. Members can borrow up to six books, "
    "and children under twelve need a parent to sign their application form."
)


@pytest.mark.parametrize("text", [HARD_TEXT, EASY_TEXT, MIDDLE_TEXT])
async def test_readability_is_textstat_flesch_reading_ease_over_100_clamped(
    score_of: ScoreOf, text: str
) -> None:
    result = await score_of("readability", text)

    ease = textstat.flesch_reading_ease(text)
    assert _scored(result) == _unit(ease / 100)
    assert result.evidence[0].startswith(f"flesch_reading_ease={ease:.2f}")
    assert "textstat" in result.evidence[0]


def test_the_readability_samples_cover_both_clamped_ends() -> None:
    assert textstat.flesch_reading_ease(EASY_TEXT) > 100
    assert textstat.flesch_reading_ease(HARD_TEXT) < 0
    assert 0 < textstat.flesch_reading_ease(MIDDLE_TEXT) < 100


async def test_readability_needs_no_reference_and_openrubricrl_custom_names_it(
    score_of: ScoreOf,
) -> None:
    custom = await score_of("custom", MIDDLE_TEXT, None, {"metric_function": "flesch_reading_ease"})

    assert _scored(custom) == _unit(textstat.flesch_reading_ease(MIDDLE_TEXT) / 100)


# --- matching -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "content", "reference", "config", "expected"),
    [
        ("exact_match", "Paris", "Paris", {}, 1.0),
        ("exact_match", "  Paris\n", "Paris", {}, 1.0),
        ("exact_match", "  Paris\n", "Paris", {"strip": False}, 0.0),
        ("exact_match", "paris", "Paris", {}, 0.0),
        ("exact_match", "Lyon", ["Paris", "Lyon"], {}, 1.0),
        ("accuracy", "42", "42", {}, 1.0),
        ("accuracy", "42", 42, {}, 1.0),
        ("accuracy", "41", "42", {}, 0.0),
        ("normalized_match", "  THE answer: Paris!! ", "the answer paris", {}, 1.0),
        ("normalized_match", "Paris,\tFrance.", "paris france", {}, 1.0),
        ("normalized_match", "The Paris", "paris", {}, 0.0),
        ("normalized_match", "The Paris", "paris", {"remove_articles": True}, 1.0),
        ("normalized_match", "Pariss", "Paris", {}, 0.0),
        ("numeric_tolerance", "The answer is 42.", "42", {}, 1.0),
        ("numeric_tolerance", "About 3.14159 metres", "3.14", {"abs_tol": 0.01}, 1.0),
        ("numeric_tolerance", "About 3.16 metres", "3.14", {"abs_tol": 0.01}, 0.0),
        ("numeric_tolerance", "Revenue was 1,050,000 dollars", 1_000_000, {"rel_tol": 0.05}, 1.0),
        ("numeric_tolerance", "Revenue was 1,060,000 dollars", 1_000_000, {"rel_tol": 0.05}, 0.0),
        ("numeric_tolerance", "It fell to -7.5e1 today", "-75", {}, 1.0),
        ("numeric_tolerance", "Step 1: 6*7. Answer: 42", "42", {}, 0.0),
        ("numeric_tolerance", "Step 1: 6*7. Answer: 42", "42", {"which": "last"}, 1.0),
        ("numeric_tolerance", "No digits here", "42", {}, 0.0),
    ],
)
async def test_reference_matching_metrics(
    score_of: ScoreOf,
    metric: str,
    content: str,
    reference: Any,
    config: dict[str, Any],
    expected: float,
) -> None:
    result = await score_of(metric, content, reference, config)

    assert _scored(result) == expected, result.evidence
    assert result.verdict == ("MET" if expected == 1.0 else "UNMET")
    assert result.evidence


@pytest.mark.parametrize(
    ("metric", "content", "config", "expected"),
    [
        ("regex", "Order #12345 shipped", {"pattern": r"#\d{5}"}, 1.0),
        ("regex", "Order #12345 shipped", {"pattern": r"#\d{5}", "mode": "full"}, 0.0),
        ("regex", "#12345", {"pattern": r"#\d{5}", "mode": "full"}, 1.0),
        ("regex", "ORDER shipped", {"pattern": "order", "flags": "i"}, 1.0),
        ("regex", "ORDER shipped", {"pattern": "order"}, 0.0),
        (
            "keyword_coverage",
            "Reset the router, then the modem.",
            {"keywords": ["router", "modem", "cable", "power"]},
            0.5,
        ),
        ("keyword_coverage", "Categories: none", {"keywords": ["cat"]}, 0.0),
        ("keyword_coverage", "Categories: none", {"keywords": ["cat"], "whole_word": False}, 1.0),
        ("keyword_coverage", "Use C++ here", {"keywords": ["C++"]}, 1.0),
        ("keyword_coverage", "use router", {"keywords": ["Router"], "case_sensitive": True}, 0.0),
        ("length", "one two three four five", {"min": 3, "max": 5}, 1.0),
        ("length", "one two", {"min": 3, "max": 5}, 0.0),
        ("length", "one two", {"min": 3, "ramp": 4}, 0.75),
        ("length", "one two three four five six seven", {"max": 5, "ramp": 4}, 0.5),
        ("length", "one two three four five six seven eight nine", {"max": 5, "ramp": 4}, 0.0),
        ("length", "abcdef", {"unit": "characters", "max": 5}, 0.0),
        ("length", "abcde", {"unit": "chars", "min": 5, "max": 5}, 1.0),
    ],
)
async def test_content_only_metrics(
    score_of: ScoreOf, metric: str, content: str, config: dict[str, Any], expected: float
) -> None:
    result = await score_of(metric, content, None, config)

    assert _scored(result) == expected, result.evidence
    assert result.evidence


ORDER = {"order": {"id": 7, "items": [{"sku": "A1", "qty": 2}], "paid": True, "total": 19.5}}


@pytest.mark.parametrize(
    ("content", "reference", "config", "expected"),
    [
        (ORDER, None, {"path": "order.items[0].sku", "expected": "A1"}, 1.0),
        (ORDER, None, {"path": "order.items.0.qty", "expected": 2.0}, 1.0),
        (ORDER, None, {"path": "$.order.paid", "expected": True}, 1.0),
        (ORDER, None, {"path": "order.id", "expected": True}, 0.0),  # true is not 7
        (ORDER, None, {"path": "order.paid", "expected": 1}, 0.0),  # 1 is not true
        (json.dumps(ORDER), None, {"path": "order.total", "expected": 19.5}, 1.0),
        (ORDER, ORDER, {"path": "order.items"}, 1.0),
        (ORDER, json.dumps({"order": {"total": 20}}), {"path": "order.total"}, 0.0),
        (ORDER, None, {"path": "order.missing", "expected": None}, 0.0),
        ({"answer": None}, None, {"path": "answer", "expected": None}, 1.0),
        ("not json at all", None, {"path": "a", "expected": 1}, 0.0),
    ],
)
async def test_json_path_equals(
    score_of: ScoreOf, content: object, reference: object, config: dict[str, Any], expected: float
) -> None:
    result = await score_of("json_path_equals", content, reference, config)

    assert _scored(result) == expected, result.evidence
    assert result.evidence[0]

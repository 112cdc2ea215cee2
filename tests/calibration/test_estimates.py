"""`estimate_pass_rate` (issue 28, item 7) equals ppi-python's mean estimate and interval on
the same data, and its corrected interval covers the truth where the naive one does not."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate

from rubricflow import estimate_pass_rate
from rubricflow.calibration.stats import UndefinedStatisticError

verdict_lists = st.lists(st.booleans(), min_size=2, max_size=60)


@settings(max_examples=200, deadline=None)
@given(
    labelled=st.lists(st.tuples(st.booleans(), st.booleans()), min_size=2, max_size=60),
    unlabelled=st.lists(st.booleans(), min_size=1, max_size=200),
    confidence=st.sampled_from([0.8, 0.9, 0.95, 0.99]),
)
def test_it_equals_ppi_python(
    labelled: list[tuple[bool, bool]], unlabelled: list[bool], confidence: float
) -> None:
    judge = [j for j, _ in labelled]
    # ppi-python divides by the judge's variance; where it is 0 it answers nan
    assume(len(set(judge + unlabelled)) == 2)
    verdicts = {f"l{i}": j for i, j in enumerate(judge)}
    verdicts |= {f"u{i}": v for i, v in enumerate(unlabelled)}
    labels = {f"l{i}": h for i, (_, h) in enumerate(labelled)}
    result = estimate_pass_rate(verdicts, labels, confidence=confidence)

    y = np.array([h for _, h in labelled], dtype=float)
    yhat = np.array(judge, dtype=float)
    yhat_u = np.array(unlabelled, dtype=float)
    alpha = 1 - confidence
    assert result.corrected is not None
    assert result.corrected.estimate == pytest.approx(
        np.asarray(ppi_mean_pointestimate(y, yhat, yhat_u)).item(), abs=1e-9
    )
    low, high = ppi_mean_ci(y, yhat, yhat_u, alpha=alpha)
    assert (result.corrected.low, result.corrected.high) == pytest.approx(
        (np.asarray(low).item(), np.asarray(high).item()), abs=1e-9
    )
    naive_low, naive_high = classical_mean_ci(np.concatenate([yhat, yhat_u]), alpha=alpha)
    assert (result.naive.low, result.naive.high) == pytest.approx(
        (np.asarray(naive_low).item(), np.asarray(naive_high).item()), abs=1e-9
    )
    assert (result.labelled, result.unlabelled) == (len(labelled), len(unlabelled))


def test_a_judge_that_never_varies_leaves_the_labels_alone() -> None:
    """With one verdict everywhere the judge says nothing: lambda is 0 and the corrected
    rate is the human labels' own (ppi-python answers nan here)."""
    verdicts = {str(i): True for i in range(10)}
    labels = {"0": True, "1": False, "2": False, "3": True}
    result = estimate_pass_rate(verdicts, labels)
    assert result.power == 0
    assert result.corrected is not None
    assert result.corrected.estimate == pytest.approx(0.5)
    assert result.naive.estimate == 1.0


def test_without_labels_only_the_naive_rate_is_given() -> None:
    result = estimate_pass_rate({"a": True, "b": False}, {})
    assert result.corrected is None
    assert result.naive.estimate == 0.5
    assert result.to_dict()["corrected"] is None


@pytest.mark.parametrize(
    ("verdicts", "labels", "message"),
    [
        ({"a": True}, {"b": True}, "no machine verdict"),
        ({}, {}, "at least one"),
        ({"a": 2.0}, {}, "true/false"),
    ],
)
def test_bad_input_is_named(
    verdicts: dict[str, float], labels: dict[str, bool], message: str
) -> None:
    with pytest.raises((ValueError, UndefinedStatisticError), match=message):
        estimate_pass_rate(verdicts, labels)


def test_the_corrected_interval_covers_a_biased_judge_s_truth() -> None:
    """A judge that passes 15% of the failures: over 300 simulated datasets the naive 95%
    interval misses the true pass rate almost always, the corrected one about 95% of the
    time (at least 90% here, to leave room for chance)."""
    rng = random.Random(20261128)
    naive_hits = corrected_hits = 0
    rounds = 300
    for _ in range(rounds):
        truth = [rng.random() < 0.6 for _ in range(1000)]
        judge = [t or rng.random() < 0.15 for t in truth]
        verdicts = {str(i): j for i, j in enumerate(judge)}
        labels = {str(i): truth[i] for i in rng.sample(range(1000), 100)}
        result = estimate_pass_rate(verdicts, labels)
        assert result.corrected is not None
        true_rate = sum(truth) / len(truth)
        naive_hits += result.naive.low <= true_rate <= result.naive.high
        corrected_hits += result.corrected.low <= true_rate <= result.corrected.high
    assert naive_hits / rounds < 0.1
    assert corrected_hits / rounds >= 0.9

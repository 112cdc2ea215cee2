"""Agreement between people (issue 28, item 5): Cohen's kappa for two reviewers, and
Krippendorff's alpha for more, equal scikit-learn's and the `krippendorff` package's
figures on the same data to 1e-9, with a bootstrap 95% interval."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from rubricflow.calibration.human_agreement import human_agreement

LABELS = ["approve", "reject"]
label = st.sampled_from(LABELS)


def _package_alpha(units: list[list[str]]) -> float:
    width = max(len(u) for u in units)
    data = np.full((width, len(units)), np.nan)
    for column, unit in enumerate(units):
        for row, value in enumerate(unit):
            data[row, column] = LABELS.index(value)
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


@pytest.mark.filterwarnings("ignore::UserWarning")  # scikit-learn on one label throughout
@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(label, label), min_size=2, max_size=40))
def test_two_reviewers_kappa_equals_scikit_learn(pairs: list[tuple[str, str]]) -> None:
    found = human_agreement([list(p) for p in pairs], resamples=50)
    assert found.statistic == "cohen_kappa" and found.units == len(pairs)
    first, second = [p[0] for p in pairs], [p[1] for p in pairs]
    if found.value is None:  # chance agreement is 1: kappa is 0/0 (scikit-learn: nan)
        with np.errstate(all="ignore"):
            assert math.isnan(cohen_kappa_score(first, second))
        return
    assert math.isclose(found.value, cohen_kappa_score(first, second), abs_tol=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(label, min_size=2, max_size=5), min_size=2, max_size=30))
def test_more_reviewers_alpha_equals_krippendorff(units: list[list[str]]) -> None:
    if all(len(u) == 2 for u in units):
        units = [*units, ["approve", "reject", "reject"]]
    found = human_agreement(units, resamples=50)
    assert found.statistic == "krippendorff_alpha"
    if found.value is None:
        assert len({v for u in units for v in u}) == 1
        return
    assert math.isclose(found.value, _package_alpha(units), abs_tol=1e-9)


def test_the_interval_is_a_seeded_bootstrap_around_the_figure() -> None:
    units = (
        [["approve", "approve"]] * 30 + [["reject", "reject"]] * 12 + [["approve", "reject"]] * 6
    )
    one = human_agreement(units, seed=3)
    assert one == human_agreement(units, seed=3)
    assert one.value is not None and one.interval is not None
    assert one.interval.low <= one.value <= one.interval.high
    assert one.interval.confidence == 0.95 and one.interval.resamples == 1000
    assert (one.units, one.agreeing) == (48, 42)


def test_units_with_one_label_do_not_count_and_nothing_is_undefined() -> None:
    empty = human_agreement([["approve"], []])
    assert (empty.value, empty.units, empty.interval) == (None, 0, None)
    assert empty.why

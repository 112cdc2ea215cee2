"""Krippendorff's alpha equals the `krippendorff` package's on the same data, to 1e-9, at
every level of measurement, with missing values; and Krippendorff's own worked example."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rubricflow.calibration.alpha import LevelOfMeasurement, krippendorff_alpha
from rubricflow.calibration.stats import UndefinedStatisticError

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: four
# observers, twelve units, values 1-5, with gaps; his figures to three places.
WORKED = [
    [1, 1, None, 1],
    [2, 2, 3, 2],
    [3, 3, 3, 3],
    [3, 3, 3, 3],
    [2, 2, 2, 2],
    [1, 2, 3, 4],
    [4, 4, 4, 4],
    [1, 1, 2, 1],
    [2, 2, 2, 2],
    [None, 5, 5, 5],
    [None, None, 1, 1],
    [None, None, 3, None],
]


@pytest.mark.parametrize(
    ("level", "expected"), [("nominal", 0.743), ("interval", 0.849), ("ratio", 0.797)]
)
def test_krippendorff_s_worked_example(level: LevelOfMeasurement, expected: float) -> None:
    assert round(krippendorff_alpha(WORKED, level), 3) == expected


def reliability_data(units: list[list[int | None]]) -> np.ndarray:
    """The package's layout: one row per reviewer, nan where a value is missing."""
    return np.array([[math.nan if v is None else float(v) for v in unit] for unit in units]).T


units_strategy = st.integers(min_value=2, max_value=5).flatmap(
    lambda reviewers: st.lists(
        st.lists(
            st.one_of(st.none(), st.integers(min_value=1, max_value=5)),
            min_size=reviewers,
            max_size=reviewers,
        ),
        min_size=2,
        max_size=25,
    )
)


@settings(max_examples=300, deadline=None)
@given(units=units_strategy, level=st.sampled_from(["nominal", "ordinal", "interval", "ratio"]))
def test_it_equals_the_krippendorff_package(
    units: list[list[int | None]], level: LevelOfMeasurement
) -> None:
    try:
        ours = krippendorff_alpha(units, level)
    except UndefinedStatisticError:
        return  # nothing pairable, or one value only: the package divides by zero there
    theirs = krippendorff.alpha(
        reliability_data=reliability_data(units), level_of_measurement=level
    )
    assert ours == pytest.approx(float(theirs), abs=1e-9)


def test_two_reviewers_nominal_alpha_tracks_cohen_s_kappa() -> None:
    """For two reviewers and many units, nominal alpha is close to Cohen's kappa (they
    differ only in how chance is estimated)."""
    first = ["pass"] * 40 + ["fail"] * 10 + ["pass"] * 5 + ["fail"] * 45
    second = ["pass"] * 40 + ["pass"] * 10 + ["fail"] * 5 + ["fail"] * 45
    alpha = krippendorff_alpha(list(zip(first, second, strict=True)))
    from sklearn.metrics import cohen_kappa_score

    assert alpha == pytest.approx(cohen_kappa_score(first, second), abs=0.01)


@pytest.mark.parametrize(
    ("units", "message"),
    [
        ([[1, None], [None, 2]], "pairable"),
        ([[1, 1], [1, 1]], "0/0"),
    ],
)
def test_undefined_alpha_says_why(units: list[list[int | None]], message: str) -> None:
    with pytest.raises(UndefinedStatisticError, match=message):
        krippendorff_alpha(units)


def test_labels_need_the_nominal_level() -> None:
    with pytest.raises(ValueError, match="nominal"):
        krippendorff_alpha([["pass", "fail"], ["pass", "pass"]], "interval")


@settings(max_examples=200, deadline=None)
@given(
    pairs=st.lists(
        st.tuples(
            st.sampled_from(["pass", "fail", "n/a"]), st.sampled_from(["pass", "fail", "n/a"])
        ),
        min_size=2,
        max_size=60,
    )
)
def test_cohen_s_kappa_equals_scikit_learn_s(pairs: list[tuple[str, str]]) -> None:
    """The kappa between two reviewers is scikit-learn's `cohen_kappa_score`, to 1e-9."""
    from sklearn.metrics import cohen_kappa_score

    from rubricflow.calibration.stats import cohen_kappa

    first, second = [a for a, _ in pairs], [b for _, b in pairs]
    labels = sorted(set(first) | set(second))
    try:
        ours = cohen_kappa(first, second, labels)
    except UndefinedStatisticError:
        return  # chance agreement is 1: scikit-learn answers nan
    assert ours == pytest.approx(cohen_kappa_score(first, second), abs=1e-9)

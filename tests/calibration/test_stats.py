"""The agreement statistics against figures computed by hand, plus their properties."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rubricflow.calibration.stats import (
    ConfusionMatrix,
    UndefinedStatisticError,
    Weights,
    accuracy,
    bootstrap_interval,
    cohen_kappa,
    confusion_matrix,
    kappa_from_matrix,
    percentile,
    pooled_kappa,
    weighted_kappa,
)


def expand(matrix: list[list[int]], labels: list[str]) -> tuple[list[str], list[str]]:
    """Two raters' label lists whose confusion matrix is `matrix`."""
    rater_a: list[str] = []
    rater_b: list[str] = []
    for i, row in enumerate(matrix):
        for j, count in enumerate(row):
            rater_a += [labels[i]] * count
            rater_b += [labels[j]] * count
    return rater_a, rater_b


# -- hand-computed figures -------------------------------------------------------------


def test_cohen_kappa_of_a_2x2_table_by_hand() -> None:
    # 50 items; rows rater A, columns rater B:
    #            B yes  B no
    #   A yes      20     5     (A said yes 25 times)
    #   A no       10    15     (A said no  25 times)
    #  (B said yes 30 times, no 20 times)
    # p_o = (20 + 15) / 50 = 0.7
    # p_e = (25/50)(30/50) + (25/50)(20/50) = 0.30 + 0.20 = 0.5
    # kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    a, b = expand([[20, 5], [10, 15]], ["yes", "no"])
    matrix = confusion_matrix(a, b, ["yes", "no"])
    assert matrix.counts == ((20, 5), (10, 15))
    assert accuracy(matrix) == pytest.approx(0.7)
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa(a, b, ["no", "yes"]) == pytest.approx(0.4)  # order is irrelevant


# Three ordered labels, n = 14; rows rater A, columns rater B:
#            low  mid  high | r
#   low       4    2    1   | 7
#   mid       1    3    1   | 5
#   high      0    0    2   | 2
#   c         5    5    4   | 14
# Cohen:  p_o = 9/14 = 126/196; p_e = (7*5 + 5*5 + 2*4)/196 = 68/196
#         kappa = (126 - 68) / (196 - 68) = 58/128 = 29/64
# Linear weights (1, 1/2, 0 by distance 0, 1, 2):
#   p_o(w) = (9 + 4/2 + 0) / 14 = 11/14 = 154/196
#   adjacent products r_i c_j: 7*5 + 5*5 + 5*4 + 2*5 = 90, so p_e(w) = (68 + 90/2)/196 = 113/196
#   kappa_w = (154 - 113) / (196 - 113) = 41/83
#   (check with disagreement weights |i-j|: 1 - (6/14) / (166/196) = 1 - 84/166 = 41/83)
# Quadratic weights (1, 3/4, 0):
#   p_o(w) = (9 + 3/4 * 4) / 14 = 168/196; p_e(w) = (68 + 3/4 * 90)/196 = 135.5/196
#   kappa_w = (168 - 135.5) / (196 - 135.5) = 32.5/60.5 = 65/121
#   (check with (i-j)^2: observed 4 + 1*4 = 8 -> 112/196; expected 90 + 4*(7*4 + 2*5)
#    = 242 -> 1 - 112/242 = 65/121)
ORDINAL = [[4, 2, 1], [1, 3, 1], [0, 0, 2]]
LEVELS = ["low", "mid", "high"]


def test_weighted_kappa_with_three_ordered_labels_by_hand() -> None:
    a, b = expand(ORDINAL, LEVELS)
    assert cohen_kappa(a, b, LEVELS) == pytest.approx(29 / 64)
    assert weighted_kappa(a, b, LEVELS, "linear") == pytest.approx(41 / 83)
    assert weighted_kappa(a, b, LEVELS, "quadratic") == pytest.approx(65 / 121)


def test_weighted_kappa_depends_on_the_order_of_the_labels() -> None:
    a, b = expand(ORDINAL, LEVELS)
    shuffled = weighted_kappa(a, b, ["mid", "low", "high"], "linear")
    assert shuffled != pytest.approx(41 / 83)


def test_an_unused_level_still_counts_for_the_distances() -> None:
    # the same table inside a 4-level scale: linear weights are now 1, 2/3, 1/3, 0
    a, b = expand(ORDINAL, LEVELS)
    four = [*LEVELS, "top"]
    # p_o(w) = (9 + 2/3*4 + 1/3*1) / 14 = 12/14; p_e(w) = (68 + 2/3*90 + 1/3*38) / 196
    # = (204 + 180 + 38) / 588 = 422/588; kappa = (504/588 - 422/588) / (166/588) = 82/166
    assert weighted_kappa(a, b, four, "linear") == pytest.approx(82 / 166)


def test_kappa_below_chance_is_negative() -> None:
    # complete disagreement on a balanced 2x2: p_o = 0, p_e = 0.5 -> kappa = -1
    assert cohen_kappa(["x", "y"], ["y", "x"]) == pytest.approx(-1.0)


def test_kappa_is_undefined_when_both_raters_use_one_label() -> None:
    with pytest.raises(UndefinedStatisticError, match="both raters labelled all 3 item"):
        cohen_kappa(["MET"] * 3, ["MET"] * 3, ["UNMET", "MET"])
    with pytest.raises(UndefinedStatisticError, match="no items"):
        cohen_kappa([], [], ["UNMET", "MET"])
    with pytest.raises(UndefinedStatisticError):
        weighted_kappa(["mid"] * 2, ["mid"] * 2, LEVELS, "quadratic")
    # one rater all MET, the other mixed: p_e = p_o, so kappa is 0, not undefined
    assert cohen_kappa(["MET"] * 4, ["MET", "MET", "UNMET", "UNMET"]) == 0.0


def test_confusion_matrix_rejects_a_label_outside_the_scale() -> None:
    with pytest.raises(ValueError, match="'maybe' is not one of"):
        confusion_matrix(["MET"], ["maybe"], ["UNMET", "MET"])
    with pytest.raises(ValueError, match="labelled 1 and 2 items"):
        confusion_matrix(["MET"], ["MET", "MET"])


ORDINAL_TWO = [[1, 0, 0], [0, 1, 0], [0, 0, 0]]


def test_pooled_kappa_by_hand() -> None:
    # item 1 (2 labels, n=4): p_o = 2/4, p_e = (2*2 + 2*2)/16 = 1/2
    # item 2 (3 labels, n=2): p_o = 2/2, p_e = (1*1 + 1*1 + 0)/4 = 1/2
    # pooled: p_o = (4*1/2 + 2*1)/6 = 4/6, p_e = (4*1/2 + 2*1/2)/6 = 1/2
    # kappa = (2/3 - 1/2) / (1 - 1/2) = 1/3
    one = confusion_matrix(*expand([[1, 1], [1, 1]], ["n", "y"]), ["n", "y"])
    two = confusion_matrix(*expand(ORDINAL_TWO, LEVELS), LEVELS)
    assert pooled_kappa([one, two]) == pytest.approx(1 / 3)
    single = confusion_matrix(["a"], ["a"], ["a", "b"])
    with pytest.raises(UndefinedStatisticError, match="chance agreement is 1"):
        pooled_kappa([single, single])


def test_percentile_interpolates_between_order_statistics() -> None:
    values = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert percentile(values, 0.0) == 1.0
    assert percentile(values, 1.0) == 5.0
    assert percentile(values, 0.5) == 3.0
    assert percentile(values, 0.1) == pytest.approx(1.4)  # h = 4 * 0.1 = 0.4


def test_bootstrap_of_a_constant_statistic_is_a_point() -> None:
    interval = bootstrap_interval([1, 2, 3], lambda _items: 0.5, resamples=50)
    assert (interval.low, interval.high, interval.used, interval.resamples) == (0.5, 0.5, 50, 50)


def test_bootstrap_leaves_out_resamples_where_the_statistic_is_undefined() -> None:
    items = [("MET", "MET"), ("UNMET", "UNMET")]

    def kappa(pairs: list[tuple[str, str]] | tuple[tuple[str, str], ...]) -> float:
        return cohen_kappa([a for a, _ in pairs], [b for _, b in pairs], ["UNMET", "MET"])

    interval = bootstrap_interval(items, kappa, resamples=400, seed=3)
    # a resample of two items is all-MET or all-UNMET with probability 1/2
    assert 0 < interval.used < 400
    assert interval.low == interval.high == 1.0
    with pytest.raises(UndefinedStatisticError, match="every resample"):
        bootstrap_interval([("MET", "MET")], kappa, resamples=10)


def test_bootstrap_checks_its_settings() -> None:
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_interval([1], lambda _items: 1.0, confidence=1.0)
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_interval([1], lambda _items: 1.0, resamples=0)


# -- properties -------------------------------------------------------------------------

LABELS = ["a", "b", "c", "d"]
rating = st.lists(st.sampled_from(LABELS), min_size=1, max_size=40)


@st.composite
def two_raters(draw: st.DrawFn, labels: list[str] = LABELS) -> tuple[list[str], list[str]]:
    first = draw(st.lists(st.sampled_from(labels), min_size=1, max_size=40))
    second = draw(st.lists(st.sampled_from(labels), min_size=len(first), max_size=len(first)))
    return first, second


def reference_kappa(matrix: ConfusionMatrix, weights: Weights | None) -> Fraction:
    """The textbook formula, in fractions: (p_o - p_e) / (1 - p_e) with agreement weights."""
    k, n = len(matrix.labels), matrix.n
    span = k - 1

    def w(i: int, j: int) -> Fraction:
        if weights is None:
            return Fraction(int(i == j))
        if weights == "linear":
            return 1 - Fraction(abs(i - j), span)
        return 1 - Fraction((i - j) ** 2, span**2)

    rows, columns = matrix.row_totals, matrix.column_totals
    p_o = sum(
        (w(i, j) * Fraction(matrix.counts[i][j], n) for i in range(k) for j in range(k)),
        Fraction(0),
    )
    p_e = sum(
        (
            w(i, j) * Fraction(rows[i], n) * Fraction(columns[j], n)
            for i in range(k)
            for j in range(k)
        ),
        Fraction(0),
    )
    return (p_o - p_e) / (1 - p_e)


@given(two_raters(), st.sampled_from([None, "linear", "quadratic"]))
def test_kappa_matches_the_textbook_formula(
    raters: tuple[list[str], list[str]], weights: Weights | None
) -> None:
    matrix = confusion_matrix(*raters, LABELS)
    try:
        value = kappa_from_matrix(matrix, weights)
    except UndefinedStatisticError:
        return
    assert value == pytest.approx(float(reference_kappa(matrix, weights)), abs=1e-12)
    assert -1.0 <= value <= 1.0 + 1e-12


@given(rating)
def test_kappa_of_identical_labels_is_one_when_defined(labels: list[str]) -> None:
    if len(set(labels)) < 2:
        with pytest.raises(UndefinedStatisticError):
            cohen_kappa(labels, labels, LABELS)
        return
    assert cohen_kappa(labels, labels, LABELS) == 1.0
    assert weighted_kappa(labels, labels, LABELS, "linear") == 1.0
    assert weighted_kappa(labels, labels, LABELS, "quadratic") == 1.0


@given(two_raters(), st.sampled_from([None, "linear", "quadratic"]))
def test_kappa_is_symmetric_in_rater_order(
    raters: tuple[list[str], list[str]], weights: Weights | None
) -> None:
    first, second = raters
    forward = confusion_matrix(first, second, LABELS)
    backward = confusion_matrix(second, first, LABELS)
    try:
        value = kappa_from_matrix(forward, weights)
    except UndefinedStatisticError:
        with pytest.raises(UndefinedStatisticError):
            kappa_from_matrix(backward, weights)
        return
    assert kappa_from_matrix(backward, weights) == value


@given(two_raters())
def test_accuracy_is_a_share_and_the_matrix_counts_every_item(
    raters: tuple[list[str], list[str]],
) -> None:
    first, second = raters
    matrix = confusion_matrix(first, second, LABELS)
    assert matrix.n == len(first)
    assert sum(sum(row) for row in matrix.counts) == len(first)
    assert matrix.row_totals == tuple(first.count(label) for label in LABELS)
    assert matrix.column_totals == tuple(second.count(label) for label in LABELS)
    assert 0.0 <= accuracy(matrix) <= 1.0
    assert accuracy(matrix) == sum(a == b for a, b in zip(first, second, strict=True)) / len(first)


@given(two_raters(["no", "yes"]), st.sampled_from(["linear", "quadratic"]))
def test_weighted_kappa_equals_cohen_kappa_for_two_labels(
    raters: tuple[list[str], list[str]], weights: Weights
) -> None:
    labels = ["no", "yes"]
    try:
        expected = cohen_kappa(*raters, labels)
    except UndefinedStatisticError:
        with pytest.raises(UndefinedStatisticError):
            weighted_kappa(*raters, labels, weights)
        return
    assert weighted_kappa(*raters, labels, weights) == expected


def mean(values: list[int] | tuple[int, ...]) -> float:
    return sum(values) / len(values)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 1), min_size=1, max_size=60),
    st.integers(0, 2**32),
    st.sampled_from([0.8, 0.9, 0.95]),
)
def test_bootstrap_interval_holds_the_estimate_and_repeats_with_the_seed(
    hits: list[int], seed: int, confidence: float
) -> None:
    # accuracy is the mean of per-item agreement (1) / disagreement (0)
    interval = bootstrap_interval(hits, mean, resamples=300, seed=seed, confidence=confidence)
    assert interval.low <= mean(hits) <= interval.high
    assert 0.0 <= interval.low <= interval.high <= 1.0
    again = bootstrap_interval(hits, mean, resamples=300, seed=seed, confidence=confidence)
    assert again == interval

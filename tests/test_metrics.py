"""Tests for mccard_dist.metrics against independent computations (numpy, scikit-learn)."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.metrics import (
    f1_score,
    precision_score,
    recall_score,
    root_mean_squared_error,
)

from mccard_dist.metrics import (
    EVALUATION_KEYS,
    correlation,
    evaluate,
    rmse,
    selection_counts,
    selection_scores,
)


@pytest.fixture
def no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def _pair(min_size):
    """Two equal-length vectors of small integers (well conditioned for any implementation)."""
    return st.integers(min_size, 30).flatmap(
        lambda n: st.tuples(
            *(hnp.arrays(float, n, elements=st.integers(-50, 50).map(float)) for _ in range(2))
        )
    )


# --- correlation ----------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(_pair(min_size=2))
def test_correlation_matches_numpy_corrcoef(pair):
    y_true, y_pred = pair
    r = correlation(y_true, y_pred)
    if np.ptp(y_true) == 0 or np.ptp(y_pred) == 0:
        assert math.isnan(r)
    else:
        assert r == pytest.approx(np.corrcoef(y_true, y_pred)[0, 1], abs=1e-12)
        assert -1.0 <= r <= 1.0


def test_correlation_of_linear_relations_is_plus_minus_one():
    x = np.linspace(-3, 7, 11)
    assert correlation(x, 2.5 * x - 4) == pytest.approx(1.0)
    assert correlation(x, -0.1 * x + 9) == pytest.approx(-1.0)
    assert correlation(1e200 * x, 1e-200 * x) == pytest.approx(1.0)


def test_correlation_of_constant_input_is_nan_without_warning(no_warnings):
    x = np.arange(5.0)
    assert math.isnan(correlation(x, np.full(5, 0.3)))
    assert math.isnan(correlation(np.zeros(5), x))
    assert math.isnan(correlation(np.full(5, 0.1), np.full(5, 0.1)))


def test_correlation_of_non_finite_input_is_nan_without_warning(no_warnings):
    x = np.arange(5.0)
    assert math.isnan(correlation(x, np.array([0.0, 1.0, np.nan, 3.0, 4.0])))
    assert math.isnan(correlation(x, np.array([0.0, 1.0, np.inf, 3.0, 4.0])))


def test_correlation_returns_python_float():
    assert type(correlation([1, 2, 3], [1, 3, 2])) is float


# --- rmse -----------------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(_pair(min_size=1))
def test_rmse_matches_sklearn(pair):
    y_true, y_pred = pair
    value = rmse(y_true, y_pred)
    assert type(value) is float
    assert value == pytest.approx(root_mean_squared_error(y_true, y_pred), rel=1e-12, abs=1e-12)


def test_rmse_simple_value():
    assert rmse([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 6.0]) == pytest.approx(1.0)


@pytest.mark.parametrize("function", [correlation, rmse])
def test_prediction_metrics_validate_shapes(function):
    with pytest.raises(ValueError, match="y_true and y_pred must have the same length, got 3 and 2"):
        function([1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(ValueError, match=r"y_pred must be 1-D, got an array of shape \(3, 1\)"):
        function([1.0, 2.0, 3.0], [[1.0], [2.0], [3.0]])
    with pytest.raises(ValueError, match="y_true must have at least"):
        function([], [])


def test_correlation_needs_two_samples():
    with pytest.raises(ValueError, match=r"y_true must have at least 2 element\(s\), got 1"):
        correlation([1.0], [1.0])


# --- selection ------------------------------------------------------------------------------------

def _coefs():
    """coef and coef_true of equal length, with many exact zeros."""
    values = st.one_of(st.just(0.0), st.floats(-5, 5, allow_nan=False))
    return st.integers(1, 40).flatmap(
        lambda n: st.tuples(hnp.arrays(float, n, elements=values),
                            hnp.arrays(float, n, elements=values))
    )


@settings(max_examples=30, deadline=None)
@given(_coefs())
@pytest.mark.slow  # keeps the fast subset under its 30 s
def test_selection_scores_match_sklearn_on_support_masks(pair):
    coef, coef_true = pair
    selected, relevant = coef != 0, coef_true != 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scores = selection_scores(coef, coef_true)
    assert scores["n_selected"] == int(selected.sum())
    assert scores["tp"] + scores["fp"] + scores["fn"] + scores["tn"] == coef.size
    kwargs = dict(y_true=relevant, y_pred=selected, zero_division=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn may warn about a single label
        assert scores["precision"] == pytest.approx(precision_score(**kwargs))
        assert scores["recall"] == pytest.approx(recall_score(**kwargs))
        assert scores["f1"] == pytest.approx(f1_score(**kwargs))


def test_selection_counts_simple_example():
    counts = selection_counts([1.5, 0.0, -2.0, 0.0, 3.0], [1.0, 1.0, 0.0, 0.0, 2.0])
    assert counts == {"tp": 2, "fp": 1, "fn": 1, "tn": 1}
    assert all(type(value) is int for value in counts.values())


def test_nothing_selected_gives_zero_precision_and_f1_without_warning(no_warnings):
    coef_true = np.r_[np.ones(3), np.zeros(7)]
    scores = selection_scores(np.zeros(10), coef_true)
    assert scores == {
        "n_selected": 0, "tp": 0, "fp": 0, "fn": 3, "tn": 7,
        "precision": 0.0, "recall": 0.0, "f1": 0.0,
    }


def test_no_relevant_features_gives_zero_recall_without_warning(no_warnings):
    scores = selection_scores(np.r_[1.0, np.zeros(4)], np.zeros(5))
    assert scores["recall"] == 0.0 and scores["precision"] == 0.0 and scores["f1"] == 0.0
    empty = selection_scores(np.zeros(5), np.zeros(5))
    assert (empty["precision"], empty["recall"], empty["f1"]) == (0.0, 0.0, 0.0)
    assert empty["tn"] == 5


def test_perfect_selection():
    coef_true = np.r_[np.ones(3), np.zeros(2)]
    scores = selection_scores(coef_true * 0.5, coef_true)
    assert (scores["precision"], scores["recall"], scores["f1"]) == (1.0, 1.0, 1.0)


@pytest.mark.parametrize("function", [selection_counts, selection_scores])
def test_selection_validates_shapes(function):
    with pytest.raises(ValueError, match="coef and coef_true must have the same length, got 3 and 4"):
        function(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match=r"coef must be 1-D, got an array of shape \(1, 3\)"):
        function(np.zeros((1, 3)), np.zeros(3))


# --- evaluate -------------------------------------------------------------------------------------

def test_evaluate_matches_independent_computation():
    rng = np.random.default_rng(0)
    X_test = rng.standard_normal((20, 6))
    coef_true = np.array([1.0, -2.0, 0.5, 0.0, 0.0, 0.0])
    y_test = X_test @ coef_true
    coef = np.array([0.9, -1.8, 0.0, 0.3, 0.0, 0.0])
    intercept = 0.25
    scores = evaluate(coef, intercept, X_test, y_test, coef_true)
    assert tuple(scores) == EVALUATION_KEYS
    y_pred = X_test @ coef + intercept
    assert scores["r"] == pytest.approx(np.corrcoef(y_test, y_pred)[0, 1], abs=1e-12)
    assert scores["rmse"] == pytest.approx(np.sqrt(np.mean((y_test - y_pred) ** 2)))
    assert scores["n_selected"] == 3
    assert (scores["tp"], scores["fp"], scores["fn"], scores["tn"]) == (2, 1, 1, 2)
    assert scores["precision"] == pytest.approx(2 / 3)
    assert scores["recall"] == pytest.approx(2 / 3)
    assert scores["f1"] == pytest.approx(2 / 3)


def test_evaluate_zero_model_is_defined_without_warning(no_warnings):
    X_test = np.arange(12.0).reshape(4, 3)
    coef_true = np.array([1.0, 0.0, 0.0])
    y_test = X_test @ coef_true
    scores = evaluate(np.zeros(3), 0.0, X_test, y_test, coef_true)
    assert math.isnan(scores["r"])  # constant prediction
    assert scores["rmse"] == pytest.approx(np.sqrt(np.mean(y_test**2)))
    assert scores["n_selected"] == 0 and scores["precision"] == 0.0 and scores["f1"] == 0.0


def test_evaluate_accepts_numpy_scalar_and_length_one_intercept():
    X_test = np.eye(3)
    coef = np.array([1.0, 2.0, 3.0])
    a = evaluate(coef, np.float32(1.0), X_test, coef, coef)
    b = evaluate(coef, np.array([1.0]), X_test, coef, coef)
    assert a == b
    assert a["rmse"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (dict(X_test=np.zeros(4)), r"X_test must be 2-D, got an array of shape \(4,\)"),
        (dict(X_test=np.zeros((4, 2))), "X_test has 2 features but coef has 3 entries"),
        (dict(y_test=np.zeros(5)), "X_test and y_test must have the same number of samples, got 4 and 5"),
        (dict(coef_true=np.zeros(2)), "coef and coef_true must have the same length, got 3 and 2"),
        (dict(intercept=np.zeros(2)), "intercept must be a real scalar"),
        (dict(intercept="0"), "intercept must be a real scalar"),
        (dict(intercept=None), "intercept must be a real scalar"),
    ],
)
def test_evaluate_validates_inputs(arguments, message):
    kwargs = dict(
        coef=np.ones(3), intercept=0.0, X_test=np.ones((4, 3)), y_test=np.arange(4.0),
        coef_true=np.ones(3),
    )
    kwargs.update(arguments)
    with pytest.raises(ValueError, match=message):
        evaluate(**kwargs)


@pytest.mark.slow  # 1,000 cells through scikit-learn's validated metrics: ~10 s
def test_the_evaluation_of_a_cell_equals_scikit_learns_metrics_on_1000_paper_size_cells():
    """Every metric of a cell's evaluation, from one set of confusion counts, against the
    scikit-learn functions a cell's evaluation does not call (1,000 cells at the paper's size:
    D = 1,000, 300 test samples, 30 relevant features, selections of 0 to 300 features)."""
    from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

    rng = np.random.default_rng(20261202)
    n_test, n_features = 300, 1000
    for _ in range(1000):
        coef_true = np.zeros(n_features)
        coef_true[:30] = rng.standard_normal(30)
        coef = np.zeros(n_features)
        kept = rng.choice(n_features, size=rng.integers(0, 301), replace=False)
        coef[kept] = rng.standard_normal(kept.size)
        X_test = rng.standard_normal((n_test, n_features))
        y_test = X_test @ coef_true
        intercept = float(rng.normal())
        scores = evaluate(coef, intercept, X_test, y_test, coef_true)
        y_pred = X_test @ coef + intercept
        relevant, selected = coef_true != 0, coef != 0
        tn, fp, fn, tp = confusion_matrix(relevant, selected, labels=[False, True]).ravel()
        precision, recall, f1, _ = precision_recall_fscore_support(
            relevant, selected, average="binary", pos_label=True, zero_division=0.0)
        assert (scores["tp"], scores["fp"], scores["fn"], scores["tn"]) == (tp, fp, fn, tn)
        assert scores["n_selected"] == tp + fp
        assert (scores["precision"], scores["recall"], scores["f1"]) == (precision, recall, f1)
        assert scores["rmse"] == root_mean_squared_error(y_test, y_pred)
        if kept.size:
            assert scores["r"] == pytest.approx(np.corrcoef(y_test, y_pred)[0, 1], abs=1e-13)
        else:
            assert math.isnan(scores["r"])

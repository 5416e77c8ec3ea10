"""``sample_weight`` in every estimator's ``fit``: an integer weight is that many copies of the
sample, a weight of 0 removes it, and the CV estimators weight their fits and their scores."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics import mean_absolute_error
from sklearn.model_selection import KFold

from mccard_dist import (
    LSARDRegressor,
    MCCARDRegressor,
    MCCARDRegressorCV,
    MCCL1Regressor,
    MCCL1RegressorCV,
    make_paper_data,
)

#: (estimator, tolerance on predictions relative to the spread of y)
CASES = [
    (MCCARDRegressor(1.0), 1e-9),
    (MCCARDRegressor(1.0, likelihood="proper", curvature="exact"), 1e-9),
    (MCCARDRegressor(1.0, init="zero", h_factor="printed"), 1e-9),
    (MCCARDRegressor("auto"), 1e-9),
    # the sequential solver's greedy steps can stop one rounding apart: its tolerance, not 1e-9
    (MCCARDRegressor(1.0, solver="sequential"), 1e-4),
    (MCCARDRegressor("auto", solver="sequential"), 1e-4),
    (LSARDRegressor(), 1e-9),
    (LSARDRegressor(solver="sequential"), 1e-4),
    (MCCL1Regressor(1.0, 0.05), 1e-9),
    (MCCL1Regressor(1.0, 0.05, solver="lasso"), 1e-9),
    (MCCL1Regressor(1.0, 0.05, solver="em"), 1e-9),
    (MCCL1Regressor("auto", 0.05), 1e-9),
]


def ids(case):
    est = case[0] if isinstance(case, tuple) else case
    params = est.get_params()
    return f"{type(est).__name__}-{params.get('kernel_width', '')}-{params.get('solver', '')}"


def paper_like(seed=0, n_train=60, n_features=30):
    d = make_paper_data(seed=seed, psi=0.3, tau=5.0, n_train=n_train, n_features=n_features,
                        n_relevant=5)
    return d.X_train, d.y_train, d.X_test


def fit_quietly(estimator, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return clone(estimator).fit(*args, **kwargs)


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_integer_weights_are_repeated_samples(case):
    estimator, rtol = case
    X, y, X_test = paper_like()
    rng = np.random.default_rng(3)
    weights = rng.integers(0, 4, y.size)
    order = rng.permutation(int(weights.sum()))  # the copies in another order than the rows
    X_rep, y_rep = np.repeat(X, weights, axis=0)[order], np.repeat(y, weights)[order]
    weighted = fit_quietly(estimator, X, y, sample_weight=weights.astype(float))
    repeated = fit_quietly(estimator, X_rep, y_rep)
    scale = np.std(y)
    np.testing.assert_allclose(weighted.predict(X_test), repeated.predict(X_test), rtol=0,
                               atol=rtol * scale)
    assert weighted.active_.sum() == repeated.active_.sum()
    if estimator.get_params().get("kernel_width") == "auto":
        assert weighted.kernel_width_ == pytest.approx(repeated.kernel_width_, rel=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=ids)
def test_zero_weight_removes_the_sample(case):
    estimator, rtol = case
    X, y, X_test = paper_like(seed=1)
    weights = np.ones(y.size)
    weights[::4] = 0.0
    y_wild = y.copy()
    y_wild[::4] += 1e3  # what a zero weight must ignore
    weighted = fit_quietly(estimator, X, y_wild, sample_weight=weights)
    dropped = fit_quietly(estimator, X[weights > 0], y[weights > 0])
    np.testing.assert_allclose(weighted.predict(X_test), dropped.predict(X_test), rtol=0,
                               atol=rtol * np.std(y))


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=ids)
def test_the_weights_change_the_fit_and_are_not_modified(case):
    estimator, _ = case
    X, y, X_test = paper_like(seed=2)
    weights = np.linspace(0.2, 3.0, y.size)
    given = weights.copy()
    weighted = fit_quietly(estimator, X, y, sample_weight=weights)
    plain = fit_quietly(estimator, X, y)
    assert np.array_equal(weights, given)
    assert not np.allclose(weighted.predict(X_test), plain.predict(X_test), rtol=0, atol=1e-6)


def test_ls_ard_weights_are_noise_precisions():
    """A weighted LS-ARD fit is the posterior mean of a Gaussian model with noise variance
    ``noise_var_ / c_n``: its coefficients solve the weighted normal equations (textbook ridge
    form, computed here with numpy) at the fit's own relevances and variance."""
    X, y, _ = paper_like(seed=4, n_train=80, n_features=10)
    c = np.random.default_rng(4).uniform(0.5, 2.0, y.size)
    model = fit_quietly(LSARDRegressor(fit_intercept=False), X, y, sample_weight=c)
    Xa = X[:, model.active_]
    precision = (Xa.T * (c / model.noise_var_)) @ Xa + np.diag(model.relevance_[model.active_])
    mean = np.linalg.solve(precision, (Xa.T * (c / model.noise_var_)) @ y)
    np.testing.assert_allclose(model.coef_[model.active_], mean, rtol=1e-8)


@pytest.mark.slow  # cross-validation, fold by fold
def test_mcc_ard_cv_weights_its_fits_and_its_scores():
    X, y, _ = paper_like(seed=5)
    weights = np.random.default_rng(5).uniform(0.0, 2.0, y.size)
    splits = list(KFold(3).split(X))
    widths = [0.3, 3.0]
    cv = MCCARDRegressorCV(kernel_widths=widths, cv=splits).fit(X, y, sample_weight=weights)
    for i, h in enumerate(widths):
        for k, (train, test) in enumerate(splits):
            fold = fit_quietly(MCCARDRegressor(h), X[train], y[train],
                               sample_weight=weights[train])
            expected = -mean_absolute_error(y[test], fold.predict(X[test]),
                                            sample_weight=weights[test])
            assert cv.cv_results_[f"split{k}_test_score"][i] == pytest.approx(expected, rel=1e-10)
    final = fit_quietly(MCCARDRegressor(cv.kernel_width_), X, y, sample_weight=weights)
    np.testing.assert_allclose(cv.coef_, final.coef_, rtol=1e-12, atol=0)


@pytest.mark.slow  # cross-validation, fold by fold
@pytest.mark.parametrize("path", ["none", "penalty", "width"])
def test_mcc_l1_cv_weights_its_fits_and_its_scores(path):
    """Integer weights equal repeated samples when each fold holds a sample's copies together
    (the folds of the weighted rows, mapped to the copies)."""
    X, y, X_test = paper_like(seed=6)
    weights = np.random.default_rng(6).integers(1, 4, y.size)
    splits = list(KFold(3).split(X))
    rows = np.repeat(np.arange(y.size), weights)
    rep_splits = [(np.flatnonzero(np.isin(rows, tr)), np.flatnonzero(np.isin(rows, te)))
                  for tr, te in splits]
    params = {"kernel_widths": (0.5, 5.0), "n_alphas": 4, "path": path}
    weighted = MCCL1RegressorCV(cv=splits, **params)
    repeated = MCCL1RegressorCV(cv=rep_splits, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        weighted.fit(X, y, sample_weight=weights.astype(float))
        repeated.fit(X[rows], y[rows])
    np.testing.assert_allclose(weighted.cv_results_["mean_test_score"],
                               repeated.cv_results_["mean_test_score"], rtol=1e-8)
    assert (weighted.kernel_width_, weighted.alpha_) == pytest.approx(
        (repeated.kernel_width_, repeated.alpha_))
    np.testing.assert_allclose(weighted.predict(X_test), repeated.predict(X_test), rtol=0,
                               atol=1e-8 * np.std(y))


@pytest.mark.parametrize("estimator", [c[0] for c in CASES[:1] + CASES[6:7] + CASES[8:9]],
                         ids=ids)
@pytest.mark.parametrize("weights, message", [
    (-np.ones(20), "Negative values"),
    (np.ones(19), "sample_weight.shape"),
    (np.zeros(20), "at least one non-zero"),
    (np.full(20, np.nan), "NaN"),
])
def test_bad_weights_are_refused(estimator, weights, message):
    X, y, _ = paper_like(n_train=20, n_features=5)
    with pytest.raises(ValueError, match=message):
        clone(estimator).fit(X, y, sample_weight=weights)


def test_ls_ard_sequential_collapses_when_weights_below_one_use_up_the_degrees_of_freedom():
    """With weights summing to less than 1 + the intercept's degree of freedom, no noise variance
    can be estimated: both LS-ARD solvers stop as collapsed (the variance at its floor, flagged)
    instead of dividing by a vanishing or negative number of degrees of freedom."""
    X, y, _ = paper_like(seed=7, n_train=40, n_features=60)
    weights = np.full(y.size, 0.02)  # sum 0.8
    for solver in ("pruning", "sequential"):
        model = fit_quietly(LSARDRegressor(solver=solver), X, y, sample_weight=weights)
        assert model.degenerate_, solver
        assert np.isfinite(model.noise_var_) and model.noise_var_ <= np.var(y), solver

"""LS-ARD against scikit-learn's ARDRegression run as a plain MacKay ARD."""

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import ARDRegression

from mccard_dist import LSARDRegressor


def sparse_problem(n, d, seed, noise=0.1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    coef = np.zeros(d)
    coef[:4] = [2.0, -1.5, 1.0, 0.7]
    return X, X @ coef + noise * rng.standard_normal(n), coef


@pytest.mark.parametrize("n,d", [(100, 20), pytest.param(60, 100, marks=pytest.mark.slow)])
def test_matches_sklearn_ard_without_hyperpriors(n, d):
    X, y, coef = sparse_problem(n, d, seed=n + d)
    ours = LSARDRegressor(fit_intercept=False, tol=1e-12, max_iter=5000).fit(X, y)
    ref = ARDRegression(alpha_1=0.0, alpha_2=0.0, lambda_1=0.0, lambda_2=0.0,
                        threshold_lambda=1e6, fit_intercept=False, tol=1e-14, max_iter=5000)
    ref.fit(X, y)
    assert ours.converged_
    np.testing.assert_array_equal(ours.active_, ref.lambda_ < 1e6)
    # both are fixed-point iterations stopped by a tolerance: scikit-learn 1.9.1 stops 1.1e-6
    # (relative) from ours at n=60, d=100
    np.testing.assert_allclose(ours.coef_, ref.coef_, rtol=1e-5, atol=1e-8)
    assert ours.noise_var_ == pytest.approx(1.0 / ref.alpha_, rel=1e-5)
    assert ours.active_[coef != 0].all()


def test_default_sklearn_prior_never_prunes_at_the_paper_threshold():
    # With lambda_2 = 1e-6 the relevance is bounded by (1 + 2 lambda_1) / (2 lambda_2) = 5e5.
    X, y, _ = sparse_problem(60, 40, seed=1)
    ref = ARDRegression(threshold_lambda=1e6, fit_intercept=False).fit(X, y)
    assert np.all(ref.coef_ != 0) and ref.lambda_.max() < 1e6
    ours = LSARDRegressor(fit_intercept=False).fit(X, y)
    assert ours.active_.sum() < 40


def test_intercept_is_unpenalised():
    X, y, _ = sparse_problem(100, 20, seed=2)
    a = LSARDRegressor().fit(X, y)
    b = LSARDRegressor().fit(X, y + 50.0)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-6, atol=1e-9)
    assert b.intercept_ - a.intercept_ == pytest.approx(50.0, rel=1e-8)


@pytest.mark.parametrize("solver", ["pruning", "sequential"])
def test_a_collapsed_noise_variance_is_floored_flagged_and_warned(solver):
    """Noise-free targets and more features than samples: LS-ARD interpolates, its noise
    variance goes to 0. It must stop at its floor (1e-12 of var(y)), not at a ratio of two
    vanishing numbers, and say so."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 60))
    y = X @ rng.standard_normal(60)
    with pytest.warns(ConvergenceWarning, match="collapsed"):
        model = LSARDRegressor(solver=solver).fit(X, y)
    assert model.degenerate_
    if solver == "pruning":  # the variance's floor
        assert 0 < model.noise_var_ <= 1e-12 * (np.var(y) + np.finfo(float).eps) * (1 + 1e-9)
    else:  # stopped where the model interpolates
        assert 0 < model.noise_var_ < 1e-3 * np.var(y) and model.active_.sum() >= 20 - 2
    assert np.all(np.isfinite(model.coef_))


def test_a_noise_variance_that_does_not_collapse_is_not_flagged():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((100, 10))
    y = X[:, 0] + 0.5 * rng.standard_normal(100)
    model = LSARDRegressor().fit(X, y)
    assert not model.degenerate_
    assert model.noise_var_ == pytest.approx(0.25, rel=0.3)

"""Approximate leave-one-out residuals (``cv.scheme=alo``) against explicit leave-one-out refits.

For each estimator the hat matrix is the one of the final weighted least-squares problem with the
fit's sample weights, relevances or active set held fixed. Refitting that problem without sample n
by dense normal equations must give exactly ``e_n / (1 - H_nn)``.
"""

import numpy as np
import pytest
from _references import refit_without

from mccard_dist import LSARDRegressor, MCCARDRegressor, MCCL1Regressor, make_paper_data
from mccard_dist.models._likelihoods import kernel
from mccard_dist.models._linalg import hat_diagonal, loo_from_leverage


@pytest.fixture(scope="module")
def data():
    return make_paper_data(seed=3, psi=0.3, tau=5.0, n_train=80, n_features=40, n_relevant=5)


@pytest.mark.parametrize("likelihood", ["deviant", "proper"])
def test_mcc_ard_loo_matches_explicit_refits(data, likelihood):
    X, y = data.X_train, data.y_train
    # converged tightly, so that the weights of the final residuals are the fit's own weights
    model = MCCARDRegressor(1.0, likelihood=likelihood, tol=1e-12, max_iter=3000).fit(X, y)
    loo = model.loo_residuals(X, y)
    e = y - model.predict(X)
    s = model._precisions(e, model.kernel_width_)
    Xa, a = X[:, model.active_], model.relevance_[model.active_]
    explicit = np.array([refit_without(Xa, y, s, a, n) for n in range(len(y))])
    np.testing.assert_allclose(loo, explicit, rtol=1e-7, atol=1e-9)
    # outliers (weight ~0) keep their residual; inliers' held-out residuals are larger
    assert np.all(np.abs(loo) >= np.abs(e) - 1e-12)


@pytest.mark.slow  # keeps the fast subset under its 30 s
def test_ls_ard_loo_matches_explicit_refits(data):
    X, y = data.X_train, data.y_train
    model = LSARDRegressor(tol=1e-10, max_iter=3000).fit(X, y)
    loo = model.loo_residuals(X, y)
    s = np.full(len(y), 1.0 / model.noise_var_)
    Xa, a = X[:, model.active_], model.relevance_[model.active_]
    explicit = np.array([refit_without(Xa, y, s, a, n) for n in range(len(y))])
    np.testing.assert_allclose(loo, explicit, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_mcc_l1_loo_matches_explicit_refits(data, fit_intercept):
    X, y = data.X_train, data.y_train
    model = MCCL1Regressor(2.0, 0.05, fit_intercept=fit_intercept, tol=1e-13,
                           max_iter=5000).fit(X, y)
    assert 0 < model.active_.sum() < 30
    loo = model.loo_residuals(X, y)
    psi = kernel(y - model.predict(X), 2.0)
    # the weighted Lasso at the fit's fixed point, active set and signs held fixed: normal
    # equations Z^T Psi (y - Z theta) = N alpha [0, sign(w)], dense, without sample n
    Xa, sign = X[:, model.active_], np.sign(model.coef_[model.active_])
    Z = np.hstack([np.ones((len(y), 1)), Xa]) if fit_intercept else Xa
    lin = len(y) * 0.05 * (np.concatenate([[0.0], sign]) if fit_intercept else sign)
    explicit = []
    for n in range(len(y)):
        keep = np.arange(len(y)) != n
        Zk, pk = Z[keep], psi[keep]
        theta = np.linalg.solve(Zk.T @ (pk[:, None] * Zk), Zk.T @ (pk * y[keep]) - lin)
        explicit.append(y[n] - Z[n] @ theta)
    np.testing.assert_allclose(loo, explicit, rtol=1e-5, atol=1e-6)  # CD stops at ~1e-8


def test_mcc_l1_loo_is_infinite_where_the_fit_interpolates():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((12, 30))
    y = X[:, :3].sum(axis=1) + 0.1 * rng.standard_normal(12)
    model = MCCL1Regressor(100.0, 1e-4).fit(X, y)
    assert model.active_.sum() >= 11  # as many free parameters as samples
    assert np.all(np.isinf(model.loo_residuals(X, y)))


def test_hat_diagonal_against_dense_hat_matrix():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((20, 4))
    s = rng.uniform(0.0, 2.0, 20)
    s[3] = 0.0
    a = rng.uniform(0.1, 1.0, 4)
    Z = np.hstack([np.ones((20, 1)), X])
    M = Z.T @ (s[:, None] * Z) + np.diag(np.concatenate([[0.0], a]))
    H = Z @ np.linalg.solve(M, Z.T * s[None, :])
    xbar = s @ X / s.sum()
    sigma = np.linalg.inv((X - xbar).T @ (s[:, None] * (X - xbar)) + np.diag(a))
    np.testing.assert_allclose(hat_diagonal(X, s, sigma), np.diag(H), rtol=1e-10, atol=1e-12)
    assert hat_diagonal(X, s, sigma)[3] == 0.0


def test_loo_from_leverage():
    out = loo_from_leverage(np.array([1.0, -2.0, 0.5]), np.array([0.5, 0.0, 1.0]))
    np.testing.assert_array_equal(out, [2.0, -2.0, np.inf])


def test_loo_residuals_checks_its_input(data):
    X, y = data.X_train, data.y_train
    model = MCCARDRegressor(1.0).fit(X, y)
    with pytest.raises(ValueError, match="shape"):
        model.loo_residuals(X, y[:-1])
    with pytest.raises(ValueError, match="features"):
        model.loo_residuals(X[:, :-1], y)

"""``predict(X, return_std=True)`` of the ARD estimators: against a dense textbook computation of
the Gaussian predictive distribution, and its coverage on clean paper-like data."""

import warnings

import numpy as np
import pytest

from mccard_dist import LSARDRegressor, MCCARDRegressor, make_paper_data


def textbook_std(est, X_train, y_train, X_new, weights, noise):
    """Predictive std from the joint precision of (intercept, kept coefficients), inverted densely:
    ``P = Z^T S Z + diag(0, a)``, ``var = z^T P^-1 z + noise`` with ``z = [1, x_kept]``."""
    keep = est.active_
    if est.fit_intercept:
        Z, Znew = (np.column_stack([np.ones(len(X)), X[:, keep]]) for X in (X_train, X_new))
        prior = np.r_[0.0, est.relevance_[keep]]
    else:
        Z, Znew, prior = X_train[:, keep], X_new[:, keep], est.relevance_[keep]
    P = Z.T @ (weights[:, None] * Z) + np.diag(prior)
    cov = np.linalg.inv(P)
    return np.sqrt(np.einsum("ij,jk,ik->i", Znew, cov, Znew) + noise)


def mcc_weights(est, X, y):
    """The Laplace approximation's sample precisions at the final fit: ``-(d log p / de) / e``,
    from the densities ``log C = exp(-e^2/2h)`` and ``log C' = log(exp(exp(-e^2/2h)) - 1)``."""
    h = est.kernel_width_
    e = y - X @ est.coef_ - est.intercept_
    k = np.exp(-e * e / (2 * h))
    omega = k if est.likelihood == "deviant" else k * np.exp(k) / np.expm1(k)
    return omega / h


@pytest.mark.parametrize("likelihood", ["deviant", "proper"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_mcc_ard_std_matches_the_dense_posterior(likelihood, fit_intercept):
    d = make_paper_data(3, 0.2, 5.0, n_train=80, n_test=20, n_features=40, n_relevant=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = MCCARDRegressor(kernel_width=0.3, likelihood=likelihood,
                              fit_intercept=fit_intercept).fit(d.X_train, d.y_train)
    mean, std = est.predict(d.X_test, return_std=True)
    np.testing.assert_array_equal(mean, est.predict(d.X_test))
    expected = textbook_std(est, d.X_train, d.y_train, d.X_test,
                            mcc_weights(est, d.X_train, d.y_train), est.kernel_width_)
    np.testing.assert_allclose(std, expected, rtol=1e-8)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_ls_ard_std_matches_the_dense_posterior(fit_intercept):
    d = make_paper_data(4, 0.0, 5.0, n_train=80, n_test=20, n_features=30, n_relevant=5)
    est = LSARDRegressor(fit_intercept=fit_intercept).fit(d.X_train, d.y_train)
    _, std = est.predict(d.X_test, return_std=True)
    weights = np.full(len(d.y_train), 1.0 / est.noise_var_)
    expected = textbook_std(est, d.X_train, d.y_train, d.X_test, weights, est.noise_var_)
    np.testing.assert_allclose(std, expected, rtol=1e-8)


@pytest.mark.slow
@pytest.mark.parametrize("make", [lambda: MCCARDRegressor(kernel_width=0.05), LSARDRegressor],
                         ids=["mcc_ard", "ls_ard"])
def test_about_95_percent_of_new_clean_targets_fall_in_the_196_std_band(make):
    """Clean paper-like data (no outliers, D = 100 < N = 300), MCC-ARD's h at the true inlier
    variance 0.05: noise-free test targets plus fresh inlier noise, pooled over 5 seeds."""
    inside = []
    for seed in range(5):
        d = make_paper_data(seed, 0.0, 5.0, n_features=100)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mean, std = make().fit(d.X_train, d.y_train).predict(d.X_test, return_std=True)
        fresh = d.y_test + np.sqrt(0.05) * np.random.default_rng(100 + seed).standard_normal(300)
        inside.append(np.abs(fresh - mean) <= 1.96 * std)
    coverage = np.mean(inside)
    assert 0.90 <= coverage <= 0.98, coverage

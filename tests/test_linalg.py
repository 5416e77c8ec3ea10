"""The shared weighted ridge solve against a dense numpy.linalg computation."""

import numpy as np
import pytest

from mccard_dist.models._linalg import posterior_covariance, weighted_ridge


def dense_reference(X, t, s, a, fit_intercept):
    """Normal equations of sum s (t - b - Xw)^2 + sum a w^2 with [b, w] solved jointly."""
    n, k = X.shape
    if fit_intercept:
        Z = np.hstack([np.ones((n, 1)), X])
        P = np.diag(np.concatenate([[0.0], a]))
    else:
        Z, P = X, np.diag(a)
    M = Z.T @ (s[:, None] * Z) + P
    theta = np.linalg.solve(M, Z.T @ (s * t))
    cov = np.linalg.inv(M)
    if fit_intercept:
        b, w, sigma = theta[0], theta[1:], cov[1:, 1:]
    else:
        b, w, sigma = 0.0, theta, cov
    return w, b, sigma


def problem(n, k, seed, zero_weights=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, k))
    t = X[:, :3] @ np.array([1.0, -2.0, 0.5]) + 0.3 + 0.1 * rng.standard_normal(n)
    s = rng.uniform(0.2, 3.0, n)
    s[:zero_weights] = 0.0
    a = np.exp(rng.uniform(np.log(1e-2), np.log(1e3), k))
    return X, t, s, a


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("n,k", [(40, 12), (25, 70)])
@pytest.mark.parametrize("form", ["primal", "dual"])
@pytest.mark.parametrize("zero_weights", [0, 5])
def test_solve_matches_dense(n, k, form, fit_intercept, zero_weights):
    X, t, s, a = problem(n, k, seed=n + k, zero_weights=zero_weights)
    w_ref, b_ref, sigma_ref = dense_reference(X, t, s, a, fit_intercept)
    sol = weighted_ridge(X, t, s, a, fit_intercept=fit_intercept, form=form)
    np.testing.assert_allclose(sol.coef, w_ref, rtol=1e-8, atol=1e-10)
    assert sol.intercept == pytest.approx(b_ref, rel=1e-8, abs=1e-10)
    np.testing.assert_allclose(sol.gamma, 1.0 - a * np.diag(sigma_ref), rtol=1e-7, atol=1e-10)
    full = posterior_covariance(X, s, a, fit_intercept=fit_intercept)
    np.testing.assert_allclose(full, sigma_ref, rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("form", ["primal", "dual"])
def test_zero_weight_equals_dropping_the_sample(form):
    X, t, s, a = problem(30, 50, seed=3, zero_weights=4)
    t = t.copy()
    t[:4] = 1e6  # gross values on the zero-weight samples must have no effect at all
    sol = weighted_ridge(X, t, s, a, form=form)
    ref = weighted_ridge(X[4:], t[4:], s[4:], a, form=form)
    np.testing.assert_allclose(sol.coef, ref.coef, rtol=1e-10, atol=1e-12)
    assert sol.intercept == pytest.approx(ref.intercept, rel=1e-10)
    assert np.all(np.isfinite(sol.gamma))


def test_gamma_keeps_relative_accuracy_at_large_relevance():
    # gamma_d ~ ||x_d||^2 s / a_d for a huge a_d: both no-cancellation forms must agree to many
    # digits, where 1 - a_d Sigma_dd would keep only about 16 - log10(a_d) of them.
    X, t, s, a = problem(40, 30, seed=5)
    a[:10] = np.logspace(6, 12, 10)
    primal = weighted_ridge(X, t, s, a, form="primal")
    dual = weighted_ridge(X, t, s, a, form="dual")
    np.testing.assert_allclose(primal.gamma, dual.gamma, rtol=1e-9)
    # Leading order in 1/a_d: gamma_d = b_d^T K^{-1} b_d / a_d with K = I + B A^{-1} B^T built from
    # the moderate-relevance features only (an independent, well-conditioned dense computation).
    B = np.sqrt(s)[:, None] * (X - np.average(X, axis=0, weights=s))
    K = np.eye(40) + (B[:, 10:] / a[10:]) @ B[:, 10:].T
    approx = np.einsum("ij,ij->j", B[:, :10], np.linalg.solve(K, B[:, :10])) / a[:10]
    np.testing.assert_allclose(primal.gamma[:10], approx, rtol=1e-4)
    assert np.all(primal.gamma > 0)


def test_all_weights_zero_gives_zero_coefficients():
    X, t, s, a = problem(20, 10, seed=1)
    sol = weighted_ridge(X, t, np.zeros(20), a)
    assert np.all(sol.coef == 0.0) and np.all(sol.gamma == 0.0)
    assert np.isfinite(sol.intercept)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("n,k", [(40, 12), (25, 70)])
@pytest.mark.parametrize("zero_weights", [0, 5])
@pytest.mark.parametrize("compute_gamma", [False, True])
def test_ridge_steps_match_dense_for_changing_weights(n, k, fit_intercept, zero_weights,
                                                      compute_gamma):
    from mccard_dist.models._linalg import RidgeSteps

    X, t, _, a = problem(n, k, seed=n * k, zero_weights=0)
    steps = RidgeSteps(X, a, fit_intercept=fit_intercept)
    assert steps.form == ("dual" if k > n else "primal")
    rng = np.random.default_rng(k)
    for _ in range(3):  # the kernel is reused across solves with new weights
        s = rng.uniform(0.0, 2.0, n)
        s[:zero_weights] = 0.0
        w_ref, b_ref, sigma_ref = dense_reference(X, t, s, a, fit_intercept)
        sol = steps.solve(t, s, compute_gamma=compute_gamma)
        np.testing.assert_allclose(sol.coef, w_ref, rtol=1e-8, atol=1e-10)
        assert sol.intercept == pytest.approx(b_ref, rel=1e-8, abs=1e-10)
        if compute_gamma:
            np.testing.assert_allclose(sol.gamma, 1.0 - a * np.diag(sigma_ref), rtol=1e-7,
                                       atol=1e-10)

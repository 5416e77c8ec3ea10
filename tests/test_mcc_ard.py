"""MCC-ARD against finite differences, dense reference computations and known limits."""

import warnings

import numpy as np
import pytest

from mccard_dist import LSARDRegressor, MCCARDRegressor
from mccard_dist.models._likelihoods import irls_weight, log_density, neg_second_derivative


def contaminated(n=100, d=40, n_relevant=5, outlier_frac=0.15, outlier_scale=20.0, seed=0,
                 intercept=0.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    coef = np.zeros(d)
    coef[:n_relevant] = rng.choice([-1, 1], n_relevant) * rng.uniform(1.0, 2.0, n_relevant)
    noise = 0.1 * rng.standard_normal(n)
    out = rng.random(n) < outlier_frac
    noise[out] = outlier_scale * np.abs(rng.standard_normal(out.sum())) + outlier_scale
    return X, X @ coef + intercept + noise, coef, out


# -- the likelihood terms ----------------------------------------------------------------------
@pytest.mark.parametrize("likelihood", ["deviant", "proper"])
@pytest.mark.parametrize("h", [0.3, 2.0])
def test_weights_and_curvature_match_finite_differences(likelihood, h):
    e = np.linspace(-4.0, 4.0, 41) + 0.013  # avoid e = 0 exactly for the ratio
    step = 1e-5
    f = lambda x: log_density(x, h, likelihood)  # noqa: E731
    d1 = (f(e + step) - f(e - step)) / (2 * step)
    d2 = (f(e + step) - 2 * f(e) + f(e - step)) / step**2
    # d log p / de = -(e / h) omega
    np.testing.assert_allclose(irls_weight(e, h, likelihood), -d1 * h / e, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(neg_second_derivative(e, h, likelihood), -d2, rtol=1e-4, atol=1e-5)


def test_proper_weights_range_and_tails():
    e = np.array([0.0, 1e-8, 1.0, 30.0, 1e3])
    omega = irls_weight(e, 1.0, "proper")
    assert omega[0] == pytest.approx(np.e / (np.e - 1), rel=1e-12)  # perfect inlier ~ 1.582
    assert omega[-1] == pytest.approx(1.0)  # gross outlier
    assert np.all(np.diff(omega) <= 0)
    # log C'(e) has Gaussian tails, finite where psi underflows
    assert np.isfinite(log_density(e, 1.0, "proper")).all()
    assert log_density(np.array([1e3]), 1.0, "proper")[0] == pytest.approx(-5e5)


# -- the fitted estimator ------------------------------------------------------------------------
def objective(X, y, w, b, a, h, likelihood):
    return log_density(y - b - X @ w, h, likelihood).sum() - 0.5 * np.sum(a * w**2)


@pytest.mark.parametrize("likelihood", ["deviant", "proper"])
def test_gradient_of_log_joint_vanishes_at_convergence(likelihood):
    X, y, _, _ = contaminated(seed=1)
    h = 0.5
    model = MCCARDRegressor(h, likelihood=likelihood, tol=1e-9, max_iter=3000, w_steps=50)
    model.fit(X, y)
    assert model.converged_
    act = model.active_
    Xa, w, a, b = X[:, act], model.coef_[act], model.relevance_[act], model.intercept_

    # finite-difference gradient of L = sum log p(e_n) - w^T A w / 2 (independent of the code)
    def L(wv, bv):
        return objective(Xa, y, wv, bv, a, h, likelihood)

    step = 1e-6
    grad = np.array([(L(w + step * u, b) - L(w - step * u, b)) / (2 * step)
                     for u in np.eye(w.size)])
    grad_b = (L(w, b + step) - L(w, b - step)) / (2 * step)
    scale = np.abs(a * w).max()
    assert np.abs(grad).max() < 1e-5 * scale
    assert abs(grad_b) < 1e-5 * scale


def test_printed_and_consistent_readings_coincide_at_unit_width():
    X, y, _, _ = contaminated(seed=2)
    a = MCCARDRegressor(1.0, h_factor="consistent").fit(X, y)
    b = MCCARDRegressor(1.0, h_factor="printed").fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    c = MCCARDRegressor(4.0, h_factor="consistent").fit(X, y)
    d = MCCARDRegressor(4.0, h_factor="printed").fit(X, y)
    assert not np.allclose(c.coef_, d.coef_)


def gaussian_ard_fixed_noise(X, y, noise_var, iters=3000):
    """Textbook dense ARD with a known noise variance (no intercept): the h -> infinity limit."""
    n, d = X.shape
    a = np.ones(d)
    keep = np.ones(d, bool)
    mu = np.zeros(d)
    for _ in range(iters):
        Xk = X[:, keep]
        Sigma = np.linalg.inv(Xk.T @ Xk / noise_var + np.diag(a[keep]))
        m = Sigma @ Xk.T @ y / noise_var
        g = 1 - a[keep] * np.diag(Sigma)
        a[keep] = g / m**2
        mu[:] = 0
        mu[keep] = m
        keep &= a < 1e6
        mu[~keep] = 0
    return mu


@pytest.mark.slow  # keeps the fast subset under its 30 s
def test_large_width_tends_to_gaussian_ard():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((2000, 10))
    coef = np.array([3.0, -2.0, 1.5] + [0.0] * 7)
    y = X @ coef + 2.0 * rng.standard_normal(2000)
    errors, min_weight = [], []
    for h in [10.0, 100.0, 1000.0]:
        model = MCCARDRegressor(h, fit_intercept=False, tol=1e-10, max_iter=3000, w_steps=20)
        model.fit(X, y)
        ref = gaussian_ard_fixed_noise(X, y, h)
        errors.append(np.abs(model.coef_ - ref).max() / np.abs(ref).max())
        min_weight.append(model.outlier_weights_.min())
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 2e-3
    assert min_weight[0] < min_weight[1] < min_weight[2] and min_weight[2] > 0.95


def test_recovers_support_under_gross_outliers_where_ls_ard_does_not():
    X, y, coef, out = contaminated(seed=4, intercept=1.5)
    mcc = MCCARDRegressor(0.1).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ls = LSARDRegressor().fit(X, y)
    truth = coef != 0
    np.testing.assert_array_equal(mcc.active_, truth)
    assert not np.array_equal(ls.active_, truth)
    np.testing.assert_allclose(mcc.coef_[truth], coef[truth], atol=0.1)
    # the robust intercept is not dragged by one-sided outliers
    assert mcc.intercept_ == pytest.approx(1.5, abs=0.1)
    # outliers are the samples the fit gave (almost) no weight
    assert mcc.outlier_weights_[out].max() < 1e-3
    assert np.median(mcc.outlier_weights_[~out]) > 0.9


def test_primal_and_dual_forms_agree():
    X, y, _, _ = contaminated(n=40, d=80, seed=5)
    fits = [MCCARDRegressor(0.5, form=f, tol=1e-8, max_iter=2000).fit(X, y)
            for f in ("primal", "dual", "auto")]
    for other in fits[1:]:
        np.testing.assert_array_equal(fits[0].active_, other.active_)
        np.testing.assert_allclose(fits[0].coef_, other.coef_, rtol=1e-6, atol=1e-8)


def test_no_stop_before_the_first_a_step():
    X, y, _, _ = contaminated(seed=6)
    with pytest.warns(Warning, match="did not converge"):
        one = MCCARDRegressor(0.5, max_iter=1).fit(X, y)
    assert one.n_iter_ == 1 and not one.converged_
    full = MCCARDRegressor(0.5).fit(X, y)
    assert full.n_iter_ > 1 and full.active_.sum() < X.shape[1]


def test_exact_curvature_is_guarded(monkeypatch):
    """Residuals with e^2 > h that still carry weight make the exact negative Hessian of the
    deviant likelihood indefinite (its second derivative changes sign at e^2 = h): the guard must
    fire, say so, and hand the a-step only gammas in [0, 1]."""
    from mccard_dist.models import _pruning_fits

    used, exact_gamma = [], _pruning_fits._exact_gamma

    def recording(*args):
        gamma, bad = exact_gamma(*args)
        used.append(gamma)
        return gamma, bad

    monkeypatch.setattr(_pruning_fits, "_exact_gamma", recording)
    X, y, _, _ = contaminated(seed=7)
    with pytest.warns(RuntimeWarning, match="the Fisher curvature was used"):
        model = MCCARDRegressor(0.5, curvature="exact").fit(X, y)
    assert model.n_curvature_fallbacks_ > 0
    assert used and all(np.all((g >= 0) & (g <= 1)) for g in used)
    assert np.all(np.isfinite(model.coef_))
    assert np.all(model.relevance_[model.active_] > 0)


def test_intercept_equivariance():
    X, y, _, _ = contaminated(seed=8)
    a = MCCARDRegressor(0.5).fit(X, y)
    b = MCCARDRegressor(0.5).fit(X, y + 100.0)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-6, atol=1e-9)
    assert b.intercept_ - a.intercept_ == pytest.approx(100.0, rel=1e-8)


def test_tiny_width_with_a_zero_start_degenerates_with_a_warning():
    X, y, _, _ = contaminated(seed=9)
    with pytest.warns(Warning, match="zero weight"):
        model = MCCARDRegressor(1e-6, init="zero").fit(X, y * 1e3)
    assert model.degenerate_ and not MCCARDRegressor(0.5).fit(X, y).degenerate_
    assert not model.active_.any() and np.all(model.coef_ == 0)
    assert np.all(np.isfinite(model.predict(X)))


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_exact_gamma_keeps_its_digits_where_the_relevance_is_large(fit_intercept):
    """gamma_d = 1 - a_d (H^{-1})_dd against exact rational arithmetic (fractions) on a small
    problem whose relevances reach 1e10, where the subtraction in floating point keeps only
    about 7 digits of gamma. With an intercept, H has its column, with a zero prior."""
    from fractions import Fraction

    from mccard_dist.models._likelihoods import neg_second_derivative

    rng = np.random.default_rng(3)
    X = rng.standard_normal((12, 3))
    e = 0.3 * rng.standard_normal(12)
    relevance = np.array([1e-2, 1e4, 1e10])
    model = MCCARDRegressor(2.0, curvature="exact", fit_intercept=fit_intercept)
    from mccard_dist.models._pruning_fits import _exact_gamma

    gamma, bad = _exact_gamma(model, X, e, relevance, np.full(3, np.nan), 2.0)
    assert bad == 0
    # the same H = Z^T diag(c) Z + A (Z = [X, 1] with an intercept, whose prior is 0), exactly
    c = model._weight_scale(2.0) * 2.0 * neg_second_derivative(e, 2.0, "deviant")
    Z = np.hstack([X, np.ones((12, 1))]) if fit_intercept else X
    prior = [*relevance, 0.0] if fit_intercept else list(relevance)
    G = (Z * c[:, None]).T @ Z
    k = Z.shape[1]
    H = [[Fraction(G[i, j]) + (Fraction(prior[i]) if i == j else 0) for j in range(k)]
         for i in range(k)]
    inv = [[Fraction(int(i == j)) for j in range(k)] for i in range(k)]
    for col in range(k):  # Gauss-Jordan, exact
        pivot = H[col][col]
        H[col] = [v / pivot for v in H[col]]
        inv[col] = [v / pivot for v in inv[col]]
        for row in range(k):
            if row != col:
                f = H[row][col]
                H[row] = [a - f * b for a, b in zip(H[row], H[col])]
                inv[row] = [a - f * b for a, b in zip(inv[row], inv[col])]
    exact = np.array([float(1 - Fraction(relevance[d]) * inv[d][d]) for d in range(3)])
    assert exact[2] < 1e-8  # a nearly pruned feature
    np.testing.assert_allclose(gamma, exact, rtol=1e-9)

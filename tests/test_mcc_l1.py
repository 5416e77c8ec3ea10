"""MCC-L1: the coordinate-descent and EM solvers, alpha_max, and the Lasso limit."""

import numpy as np
import pytest
from sklearn.linear_model import Lasso

from mccard_dist import MCCL1Regressor, mcc_l1_alpha_max, mcc_l1_objective


def contaminated(n=80, d=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    coef = np.zeros(d)
    coef[:4] = [2.0, -1.5, 1.0, 0.8]
    y = X @ coef + 0.5 + 0.1 * rng.standard_normal(n)
    out = rng.random(n) < 0.15
    y[out] += 15.0 + 5 * rng.standard_normal(out.sum())
    return X, y, coef


@pytest.mark.parametrize("d", [30, 120])
def test_cd_and_em_reach_the_same_objective(d):
    X, y, _ = contaminated(d=d, seed=d)
    h = 1.0
    alpha = 0.1 * mcc_l1_alpha_max(X, y, h)
    cd = MCCL1Regressor(h, alpha, solver="cd", tol=1e-10, max_iter=2000).fit(X, y)
    em = MCCL1Regressor(h, alpha, solver="em", tol=1e-12, max_iter=20000).fit(X, y)
    assert cd.objective_ == pytest.approx(em.objective_, rel=1e-5)
    assert cd.objective_ == pytest.approx(
        mcc_l1_objective(X, y, cd.coef_, cd.intercept_, h, alpha), rel=1e-12)
    np.testing.assert_allclose(cd.coef_, em.coef_, atol=1e-3)
    # the objective is at a minimum: small perturbations do not lower it
    rng = np.random.default_rng(0)
    for _ in range(20):
        w = cd.coef_ + 1e-3 * rng.standard_normal(d)
        assert mcc_l1_objective(X, y, w, cd.intercept_, h, alpha) >= cd.objective_ - 1e-12


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_cd_and_the_lasso_estimator_route_reach_the_same_fit(fit_intercept):
    # "cd" calls the coordinate-descent path on data it weights and centres itself; "lasso" goes
    # through scikit-learn's Lasso estimator with sample weights: the same weighted Lasso steps
    X, y, _ = contaminated(d=60, seed=3)
    h = 1.0
    alpha = 0.2 * mcc_l1_alpha_max(X, y, h, fit_intercept=fit_intercept)
    kw = dict(tol=1e-12, max_iter=3000, fit_intercept=fit_intercept)
    cd = MCCL1Regressor(h, alpha, solver="cd", **kw).fit(X, y)
    lasso = MCCL1Regressor(h, alpha, solver="lasso", **kw).fit(X, y)
    assert cd.converged_ and lasso.converged_
    assert cd.objective_ == pytest.approx(lasso.objective_, rel=1e-8)
    np.testing.assert_allclose(cd.coef_, lasso.coef_, atol=1e-6)
    assert cd.intercept_ == pytest.approx(lasso.intercept_, abs=1e-6)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_working_set_and_full_sweeps_reach_the_same_fit(fit_intercept):
    # the working set only skips columns whose zero coefficient is optimal already
    X, y, _ = contaminated(n=60, d=150, seed=5)
    h = 1.0
    alpha = 0.5 * mcc_l1_alpha_max(X, y, h, fit_intercept=fit_intercept)
    kw = dict(tol=1e-12, max_iter=3000, fit_intercept=fit_intercept)
    ws = MCCL1Regressor(h, alpha, working_set=True, **kw).fit(X, y)
    full = MCCL1Regressor(h, alpha, working_set=False, **kw).fit(X, y)
    assert ws.converged_ and full.converged_
    assert 0 < ws.active_.sum() < 50  # most of the 150 columns stay outside the working set
    assert ws.objective_ == pytest.approx(full.objective_, rel=1e-9)
    np.testing.assert_allclose(ws.coef_, full.coef_, atol=1e-6)
    assert ws.intercept_ == pytest.approx(full.intercept_, abs=1e-6)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("working_set", [True, False])
def test_weighted_lasso_step_satisfies_the_optimality_conditions(fit_intercept, working_set):
    # one compiled weighted-Lasso step with an ample sweep budget, checked against the KKT
    # conditions on every column of the explicitly weighted (and centred) design, and against
    # scikit-learn's Lasso on that design
    from mccard_dist.models._lasso_kernels import weighted_lasso_step

    rng = np.random.default_rng(2)
    n, d = 50, 200
    X = rng.standard_normal((n, d)) + 0.5
    y = X[:, :5] @ [3.0, -2.0, 1.5, 1.0, -1.0] + rng.standard_normal(n) + 2.0
    s = rng.uniform(0.1, 1.9, n)
    s[:3] = 0.0  # samples the kernel has dropped
    s *= n / s.sum()
    root = np.sqrt(s)
    x_mean = s @ X / n if fit_intercept else np.zeros(d)
    y_mean = s @ y / n if fit_intercept else 0.0
    z = (y - y_mean) * root
    Xs = (X - x_mean) * root[:, None]
    alpha = 0.1 * np.max(np.abs(Xs.T @ z)) / n
    start = np.zeros(d)
    start[7] = 0.3  # a coefficient the solution does not keep
    coef, intercept, sweeps = weighted_lasso_step(np.ascontiguousarray(X.T), y, s, start, alpha,
                                                  alpha, 5000, 1e-12, fit_intercept,
                                                  working_set)
    assert start[7] == 0.3 and np.count_nonzero(start) == 1  # the start is not modified
    assert 1 <= sweeps < 5000
    grad = Xs.T @ (z - Xs @ coef) / n
    nz = coef != 0
    assert 0 < nz.sum() < n and not nz[7]
    np.testing.assert_allclose(grad[nz], alpha * np.sign(coef[nz]), atol=1e-6 * alpha)
    assert np.all(np.abs(grad[~nz]) <= alpha * (1 + 1e-6))
    assert intercept == pytest.approx(y_mean - x_mean @ coef, abs=1e-12)
    ref = Lasso(alpha=alpha, fit_intercept=False, tol=1e-12, max_iter=100000).fit(Xs, z)
    np.testing.assert_allclose(coef, ref.coef_, atol=1e-6)


def test_the_step_keeps_to_its_sweep_budget_and_the_stop_rules():
    from mccard_dist.models._lasso_kernels import weighted_lasso_step

    X, y, _ = contaminated(d=60, seed=4)
    start = np.full(60, 0.01)
    s = np.ones(X.shape[0])
    coef, _, sweeps = weighted_lasso_step(np.ascontiguousarray(X.T), y, s, start, 0.05, 0.05, 3,
                                          1e-8, True, True)
    assert np.all(start == 0.01) and not np.allclose(coef, start) and sweeps == 3
    # cd stops on the relative decrease of F; the lasso route and EM also need w to settle
    model = MCCL1Regressor(1.0, 0.1)
    assert model._stop(1.0, 1.0 - 1e-7, np.zeros(3), np.ones(3))
    for solver in ("lasso", "em"):
        model.solver = solver
        assert not model._stop(1.0, 1.0 - 1e-7, np.zeros(3), np.ones(3))
        assert model._stop(1.0, 1.0 - 1e-7, np.ones(3), np.ones(3))


def test_alpha_max_is_the_first_order_threshold_at_zero():
    # F is non-convex, so alpha_max is where w = 0 (with the robust intercept) stops being a
    # stationary point: checked by one-sided finite differences of F along every coordinate.
    from mccard_dist.models.mcc_l1 import _robust_location

    X, y, _ = contaminated(seed=1)
    h = 2.0
    amax = mcc_l1_alpha_max(X, y, h)
    b0 = _robust_location(y, h)
    zero = np.zeros(X.shape[1])
    step = 1e-7

    def slopes(alpha):
        f0 = mcc_l1_objective(X, y, zero, b0, h, alpha)
        return np.array([[(mcc_l1_objective(X, y, sign * step * u, b0, h, alpha) - f0) / step
                          for u in np.eye(X.shape[1])] for sign in (1, -1)])

    assert slopes(1.01 * amax).min() > 0  # no descent direction from w = 0
    assert slopes(0.99 * amax).min() < 0  # some coordinate descends
    # and a fit at 0.9 alpha_max keeps features
    assert MCCL1Regressor(h, 0.9 * amax).fit(X, y).active_.any()


def test_large_width_tends_to_the_lasso():
    X, y, _ = contaminated(seed=2)
    y = y - 15 * (y > 8)  # remove the outliers: a clean problem
    alpha = 0.05
    ref = Lasso(alpha=alpha, tol=1e-12, max_iter=100000).fit(X, y)
    model = MCCL1Regressor(1e6, alpha, tol=1e-12).fit(X, y)
    np.testing.assert_allclose(model.coef_, ref.coef_, atol=1e-4)
    assert model.intercept_ == pytest.approx(ref.intercept_, abs=1e-4)


def test_robust_to_outliers_where_the_lasso_is_not():
    X, y, coef = contaminated(seed=3)
    model = MCCL1Regressor(0.5, 0.02).fit(X, y)
    lasso = Lasso(alpha=0.02).fit(X, y)
    err_mcc = np.abs(model.coef_ - coef).max()
    err_lasso = np.abs(lasso.coef_ - coef).max()
    assert err_mcc < 0.1 < err_lasso
    assert model.intercept_ == pytest.approx(0.5, abs=0.1)


def test_capped_inner_solves_do_not_warn_only_the_outer_loop_does():
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    X, y, _ = contaminated(d=120, seed=5)
    alpha = 0.05 * mcc_l1_alpha_max(X, y, 0.5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        MCCL1Regressor(0.5, alpha, max_iter=3).fit(X, y)
    messages = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(messages) == 1 and messages[0].startswith("MCC-L1 (cd) did not converge")

"""MCC-L1 paths: warm-started fits against independent ones, the first-order conditions at every
penalty, the strong rule's screening, and MCCL1RegressorCV against GridSearchCV."""

import warnings

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.utils.estimator_checks import parametrize_with_checks

from mccard_dist import (
    MCCL1Regressor,
    MCCL1RegressorCV,
    make_paper_data,
    mcc_l1_alpha_max,
    mcc_l1_objective,
    mcc_l1_path,
)
from mccard_dist.models._likelihoods import kernel


def contaminated(n=80, d=60, seed=0, share=0.15):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    coef = np.zeros(d)
    coef[:4] = [2.0, -1.5, 1.0, 0.8]
    y = X @ coef + 0.5 + 0.1 * rng.standard_normal(n)
    out = rng.random(n) < share
    y[out] += 15.0 + 5 * rng.standard_normal(out.sum())
    return X, y


def first_order_violation(X, y, coef, intercept, h, alpha):
    """Largest violation of MCC-L1's first-order conditions, relative to alpha:
    g_j = (1/N) sum_n kappa_n e_n x_nj must equal alpha sign(w_j) where w_j != 0 and lie in
    [-alpha, alpha] where w_j = 0; the intercept's gradient sum_n kappa_n e_n must vanish."""
    e = y - intercept - X @ coef
    weighted = kernel(e, h) * e
    g = X.T @ weighted / len(y)
    active = coef != 0
    on = np.abs(g[active] - alpha * np.sign(coef[active]))
    off = np.maximum(np.abs(g[~active]) - alpha, 0.0)
    return max(np.max(on, initial=0.0), np.max(off, initial=0.0)) / alpha, \
        abs(weighted.mean()) / alpha


@pytest.mark.parametrize("h", [2.0, 20.0])
def test_every_fit_of_the_path_meets_the_first_order_conditions(h):
    X, y = contaminated(seed=1)
    alphas = np.array([0.9, 0.6, 0.3, 0.15, 0.08]) * mcc_l1_alpha_max(X, y, h)
    path = mcc_l1_path(X, y, h, alphas=alphas, tol=1e-12, max_iter=3000)
    assert path.converged.all()
    for k, alpha in enumerate(path.alphas):
        features, intercept = first_order_violation(X, y, path.coefs[:, k], path.intercepts[k],
                                                    h, alpha)
        assert features < 1e-4 and intercept < 1e-4, (k, features, intercept)


def test_the_path_equals_independent_fits_where_the_objective_has_one_minimum_in_reach():
    # light contamination and widths large against the inliers' residuals: a fit from w = 0
    # and the warm fit reach the same point
    X, y = contaminated(seed=2, share=0.05)
    for h in (5.0, 50.0):
        alphas = np.geomspace(0.9, 0.05, 8) * mcc_l1_alpha_max(X, y, h)
        path = mcc_l1_path(X, y, h, alphas=alphas[::-1], tol=1e-12, max_iter=3000)
        np.testing.assert_array_equal(path.alphas, alphas)  # fitted and returned decreasing
        np.testing.assert_array_equal(path.order, np.arange(8)[::-1])
        for k, alpha in enumerate(alphas):
            alone = MCCL1Regressor(h, alpha, tol=1e-12, max_iter=3000).fit(X, y)
            np.testing.assert_allclose(path.coefs[:, k], alone.coef_, atol=1e-5)
            assert path.intercepts[k] == pytest.approx(alone.intercept_, abs=1e-5)


def test_without_warm_start_the_path_is_the_independent_fits():
    X, y = contaminated(seed=3)
    h = 0.5
    alphas = np.array([0.8, 0.3, 0.1]) * mcc_l1_alpha_max(X, y, h)
    path = mcc_l1_path(X, y, h, alphas=alphas, warm_start=False)
    for k, alpha in enumerate(alphas):
        alone = MCCL1Regressor(h, alpha).fit(X, y)
        np.testing.assert_array_equal(path.coefs[:, k], alone.coef_)
        assert path.n_iter[k] == alone.n_iter_


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_the_strong_rule_screens_nothing_away(fit_intercept):
    # D > N: the strong rule's first working set and the later checks against full sweeps
    X, y = contaminated(n=50, d=200, seed=4)
    h = 3.0
    alphas = np.geomspace(0.95, 0.1, 10) * mcc_l1_alpha_max(X, y, h, fit_intercept)
    kw = dict(tol=1e-12, max_iter=3000, fit_intercept=fit_intercept)
    screened = mcc_l1_path(X, y, h, alphas=alphas, **kw)
    full = mcc_l1_path(X, y, h, alphas=alphas, working_set=False, **kw)
    np.testing.assert_allclose(screened.coefs, full.coefs, atol=1e-6)
    np.testing.assert_allclose(screened.intercepts, full.intercepts, atol=1e-6)


def test_the_default_penalties_run_from_alpha_max_down():
    X, y = contaminated(seed=5)
    path = mcc_l1_path(X, y, 1.0, n_alphas=6, eps=0.01)
    alpha_max = mcc_l1_alpha_max(X, y, 1.0)
    np.testing.assert_allclose(path.alphas, np.geomspace(alpha_max, alpha_max / 100, 6))
    assert np.count_nonzero(path.coefs[:, -1]) > np.count_nonzero(path.coefs[:, 0])
    np.testing.assert_allclose(path.predict(X[:3]),
                               X[:3] @ path.coefs + path.intercepts[None, :])


@pytest.mark.slow  # keeps the fast subset under its 30 s
def test_at_a_small_width_a_warm_fit_can_end_at_another_stationary_point():
    # the documented non-convexity: at h = 0.3 the warm path keeps the sparse fits' view of
    # which samples are outliers and ends at other fits, here at a lower objective
    d = make_paper_data(seed=1, psi=0.3, tau=2.0, n_train=200, n_features=1000)
    h = 0.3
    alphas = np.array([0.97, 0.9, 0.6, 0.4]) * mcc_l1_alpha_max(d.X_train, d.y_train, h)
    warm = mcc_l1_path(d.X_train, d.y_train, h, alphas=alphas)
    cold = mcc_l1_path(d.X_train, d.y_train, h, alphas=alphas, warm_start=False)
    f = [[mcc_l1_objective(d.X_train, d.y_train, p.coefs[:, k], p.intercepts[k], h, a)
          for k, a in enumerate(alphas)] for p in (warm, cold)]
    np.testing.assert_allclose(warm.coefs[:, 0], cold.coefs[:, 0])  # the same first fit
    assert np.abs(warm.coefs[:, 2:] - cold.coefs[:, 2:]).max() > 0.1
    assert f[0][2] < 0.9 * f[1][2] and f[0][3] < 0.9 * f[1][3]


@pytest.mark.parametrize("kwargs, message", [
    (dict(kernel_width="auto"), "numeric kernel_width"),
    (dict(kernel_width=1.0, solver="em"), "solver='cd' or 'lasso'"),
    (dict(kernel_width=1.0, alphas=[0.1, -1.0]), "alphas must be"),
    (dict(kernel_width=1.0, alphas=[]), "alphas must be"),
    (dict(kernel_width=1.0, n_alphas=0), "n_alphas"),
    (dict(kernel_width=1.0, eps=2.0), "eps"),
    (dict(kernel_width=-1.0), "kernel_width"),
])
def test_bad_path_arguments_are_refused(kwargs, message):
    X, y = contaminated()
    with pytest.raises(ValueError, match=message):
        mcc_l1_path(X, y, **kwargs)


# --- MCCL1RegressorCV ------------------------------------------------------------------------

WIDTHS = [0.1, 1.0, 10.0]


def data():
    return make_paper_data(2, 0.3, 5.0, n_train=90, n_test=30, n_features=40, n_relevant=5)


@pytest.mark.slow
@parametrize_with_checks([MCCL1RegressorCV(kernel_widths=(0.3, 3.0), n_alphas=3, cv=3)])
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        check(estimator)


def grid_search(model, X, y, folds, widths=WIDTHS):
    grid = [{"kernel_width": [h], "alpha": list(model.alphas_[i])} for i, h in enumerate(widths)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return GridSearchCV(MCCL1Regressor(), grid, cv=folds,
                            scoring="neg_mean_absolute_error").fit(X, y)


@pytest.mark.slow
def test_without_paths_it_is_grid_search_cv():
    d = data()
    folds = KFold(4, shuffle=True, random_state=0)
    ours = MCCL1RegressorCV(WIDTHS, n_alphas=5, cv=folds, path="none")
    ours.fit(d.X_train, d.y_train)
    grid = grid_search(ours, d.X_train, d.y_train, folds)
    assert (ours.kernel_width_, ours.alpha_) == (grid.best_params_["kernel_width"],
                                                 grid.best_params_["alpha"])
    np.testing.assert_allclose(ours.cv_results_["mean_test_score"],
                               grid.cv_results_["mean_test_score"], rtol=1e-12)
    np.testing.assert_array_equal(ours.cv_results_["rank_test_score"],
                                  grid.cv_results_["rank_test_score"])
    np.testing.assert_array_equal(ours.coef_, grid.best_estimator_.coef_)
    np.testing.assert_allclose(ours.predict(d.X_test), grid.predict(d.X_test), rtol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("path", ["width", "penalty"])
def test_paths_start_as_grid_search_cv_and_choose_as_it_here(path):
    d = data()
    folds = KFold(4, shuffle=True, random_state=0)
    ours = MCCL1RegressorCV(WIDTHS, n_alphas=5, cv=folds, path=path).fit(d.X_train, d.y_train)
    grid = grid_search(ours, d.X_train, d.y_train, folds)
    # each path's first fit starts from w = 0: the widest width (width paths) or the largest
    # penalty of each width (penalty paths) scores exactly as GridSearchCV's fits
    if path == "width":
        first = ours.cv_results_["param_kernel_width"] == max(WIDTHS)
    else:
        first = np.arange(len(WIDTHS) * 5) % 5 == 0
    np.testing.assert_allclose(ours.cv_results_["mean_test_score"][first],
                               grid.cv_results_["mean_test_score"][first], rtol=1e-12)
    # at widths large against the residuals the fits agree; here the choice does too
    wide = [2.0, 20.0, 200.0]
    ours = MCCL1RegressorCV(wide, n_alphas=5, cv=folds, path=path).fit(d.X_train, d.y_train)
    grid = grid_search(ours, d.X_train, d.y_train, folds, wide)
    assert (ours.kernel_width_, ours.alpha_) == (grid.best_params_["kernel_width"],
                                                 grid.best_params_["alpha"])
    far = ours.cv_results_["param_kernel_width"] == 200.0
    np.testing.assert_allclose(ours.cv_results_["mean_test_score"][far],
                               grid.cv_results_["mean_test_score"][far], rtol=1e-3)
    np.testing.assert_allclose(ours.coef_, grid.best_estimator_.coef_, atol=1e-3)


def test_bad_cv_arguments_are_refused_before_any_fit():
    d = data()
    for kwargs, message in ((dict(kernel_widths=[]), "non-empty"),
                            (dict(kernel_widths=[1.0, -2.0]), "positive finite"),
                            (dict(alphas=[0.1, np.nan]), "alphas must be"),
                            (dict(n_alphas=0), "n_alphas"),
                            (dict(eps=0.0), "eps"),
                            (dict(solver="em"), "solver"),
                            (dict(path="lambda"), "path"),
                            (dict(max_iter=0), "max_iter")):
        with pytest.raises(ValueError, match=message):
            MCCL1RegressorCV(**kwargs).fit(d.X_train, d.y_train)


@pytest.mark.slow
@pytest.mark.cluster
def test_the_dask_joblib_backend_chooses_as_n_jobs_1():
    import joblib
    from distributed import Client, LocalCluster

    d = data()
    serial = MCCL1RegressorCV(WIDTHS, n_alphas=5, cv=4, n_jobs=1).fit(d.X_train, d.y_train)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        with joblib.parallel_backend("dask"):
            spread = MCCL1RegressorCV(WIDTHS, n_alphas=5, cv=4, n_jobs=-1)
            spread.fit(d.X_train, d.y_train)
        ran_on = client.run(lambda: True)
    assert len(ran_on) == 2
    assert (spread.kernel_width_, spread.alpha_) == (serial.kernel_width_, serial.alpha_)
    np.testing.assert_array_equal(spread.cv_results_["mean_test_score"],
                                  serial.cv_results_["mean_test_score"])
    np.testing.assert_array_equal(spread.coef_, serial.coef_)


def test_a_path_has_n_alphas_penalties_even_when_alpha_max_is_zero():
    """A constant y has alpha_max 0: the path still has the n_alphas fits asked for."""
    X = np.random.default_rng(0).standard_normal((30, 8))
    path = mcc_l1_path(X, np.full(30, 2.0), 1.0, n_alphas=10)
    assert path.alphas.shape == (10,) and path.coefs.shape == (8, 10)
    assert not path.coefs.any()


def test_the_cv_estimators_final_fit_warns_as_a_plain_fit_does():
    """The CV fits are quiet; the refit on all the data is the estimator's own fit and says it
    did not converge, as MCCL1Regressor does."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from mccard_dist import MCCL1Regressor, MCCL1RegressorCV

    d = make_paper_data(seed=2, psi=0.3, tau=5.0, n_train=60, n_features=30, n_relevant=5)
    with pytest.warns(ConvergenceWarning):
        MCCL1Regressor(kernel_width=1.0, alpha=0.01, max_iter=1).fit(d.X_train, d.y_train)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cv = MCCL1RegressorCV(kernel_widths=[1.0, 3.0], n_alphas=3, max_iter=1, cv=3).fit(
            d.X_train, d.y_train)
    assert not cv.converged_
    assert sum(issubclass(w.category, ConvergenceWarning) for w in caught) == 1

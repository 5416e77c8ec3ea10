"""The peer baselines: scikit-learn's Lasso and Huber regression, Huber regression with an L1 or
MCP penalty (skglm) and LAD-Lasso, as estimators and as methods of the pipeline."""

import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import HuberRegressor, Lasso, LassoCV, QuantileRegressor
from sklearn.metrics import check_scoring
from sklearn.model_selection import KFold
from sklearn.utils.estimator_checks import parametrize_with_checks

from mccard_dist import MethodCV
from mccard_dist.config import ConfigError, from_dictconfig
from mccard_dist.data import make_paper_data
from mccard_dist.methods import kind_of
from mccard_dist.models import (HuberL1Regressor, HuberMCPRegressor, LADLassoRegressor,
                                huber_alpha_max, huber_scale, lad_alpha_max, lasso_alpha_max,
                                mcp_gamma_bound)
from mccard_dist.models.search import Search, choose


def test_lasso_alpha_max_is_where_the_lasso_keeps_no_feature():
    d = make_paper_data(3, 0.2, 5.0, n_train=80, n_features=40, n_relevant=5)
    top = lasso_alpha_max(d.X_train, d.y_train)
    assert not np.any(Lasso(alpha=top * 1.0001).fit(d.X_train, d.y_train).coef_)
    assert np.any(Lasso(alpha=top * 0.95).fit(d.X_train, d.y_train).coef_)


@pytest.mark.parametrize("overrides, message", [
    (["methods.huber.grid.epsilon=auto"], "methods.huber.grid.epsilon: cannot be auto"),
    (["+methods.lasso.grid.kernel_width=[1.0]"], "methods.lasso.grid.kernel_width: is not a "
     "grid name of LassoBaseline, which takes alpha_ratio, copy_X"),
    (["+methods.huber.kernel_width=[1.0]"], "methods.huber.kernel_width: unknown key"),
    (["+methods.huber.params.epsilon=2.0"], "epsilon must not be set here"),
    (["methods.lasso.grid.alpha_ratio=[]"], "methods.lasso.grid.alpha_ratio: must not be empty"),
    (["cv=alo"], "cv.scheme: alo needs leave-one-out residuals, which lasso, huber do not give"),
])
def test_peer_grids_are_checked_like_the_others(compose, overrides, message):
    with pytest.raises(ConfigError, match=message):
        from_dictconfig(compose(["experiment=smoke", "experiment.methods=[lasso,huber]",
                                 *overrides]))


@pytest.mark.slow
def test_peer_cells_refit_what_cv_chose_as_scikit_learn_would(smoke_spec):
    from mccard_dist import grid
    from mccard_dist.runner import run_serial
    from mccard_dist.store import open_results, store_path

    spec = smoke_spec("experiment.methods=[lasso,huber]", "data.n_features=40", name="peers")
    run_serial(spec)
    ds = open_results(store_path(spec)).load()
    assert (ds["status"] == 1).all()
    for cell in grid.cells(spec):
        data = spec.data.make_data(cell.seed, cell.psi, cell.tau)
        stored = ds.sel(model=cell.method, tau=cell.tau, psi=cell.psi, seed=cell.seed)
        alpha = float(stored["chosen_alpha"])
        if cell.method == "lasso":
            ratio = float(stored["chosen_alpha_ratio"])
            assert ratio in spec.method("lasso").grid["alpha_ratio"]
            assert alpha == pytest.approx(ratio * lasso_alpha_max(data.X_train, data.y_train))
            assert "chosen_kernel_width" not in ds  # neither peer has a kernel width
            ref = Lasso(alpha=alpha, max_iter=5000, tol=1e-4)
        else:
            # Huber's values under Huber's names: epsilon, and alpha itself
            epsilon = float(stored["chosen_epsilon"])
            assert epsilon in spec.method("huber").grid["epsilon"]
            assert alpha in spec.method("huber").grid["alpha"]
            assert np.isnan(float(stored["chosen_alpha_ratio"]))
            ref = HuberRegressor(epsilon=epsilon, alpha=alpha, max_iter=1000)
        scores = stored["cv_score"]
        n_candidates = len(grid.cv_candidates(spec.method(cell.method)))
        assert np.isfinite(scores.isel(candidate=slice(0, n_candidates)).values).all()
        assert np.isnan(scores.isel(candidate=slice(n_candidates, None)).values).all()
        ref.fit(data.X_train, data.y_train)
        np.testing.assert_allclose(stored["coef"].values, ref.coef_, rtol=1e-7, atol=1e-10)
    # the candidates' values, each under its method's names
    huber = ds.sel(model="huber")
    grid_ = spec.method("huber").grid
    np.testing.assert_array_equal(huber["epsilon"].values,
                                  np.repeat(grid_["epsilon"], len(grid_["alpha"])))
    np.testing.assert_array_equal(huber["alpha"].values, grid_["alpha"] * len(grid_["epsilon"]))
    assert np.isnan(huber["alpha_ratio"].values).all()
    assert np.isnan(ds["epsilon"].sel(model="lasso").values).all()
    # Huber's epsilon is not a kernel width: no CV-curve or chosen-width panel for either peer
    from mccard_dist.analysis.plotting import FigureUnavailable
    from mccard_dist.analysis.width_figures import fig_chosen_kernel_width

    with pytest.raises(FigureUnavailable):
        fig_chosen_kernel_width(ds)


# -- Huber + L1 / MCP and LAD-Lasso --------------------------------------------------------------

@pytest.mark.slow  # skglm compiles its solver on first use, and 160 checks fit LAD's programme
@parametrize_with_checks([HuberL1Regressor(), HuberMCPRegressor(gamma=20.0), LADLassoRegressor()])
def test_sklearn_estimator_checks_of_the_robust_sparse_peers(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        check(estimator)


def _huber_l1_by_scipy(X, y, delta, alpha):
    """Huber + L1 with an intercept by L-BFGS-B on ``w = u - v``, ``u, v >= 0`` (a smooth,
    bound-constrained form of the same objective)."""
    n, d = X.shape

    def objective(z):
        u, v, b = z[:d], z[d:2 * d], z[-1]
        r = y - X @ (u - v) - b
        small = np.abs(r) <= delta
        loss = np.where(small, 0.5 * r ** 2, delta * np.abs(r) - 0.5 * delta ** 2).mean()
        score = np.clip(r, -delta, delta)
        g = -X.T @ score / n
        return loss + alpha * (u.sum() + v.sum()), np.concatenate(
            [g + alpha, -g + alpha, [-score.mean()]])

    z0 = np.zeros(2 * d + 1)
    z0[-1] = np.median(y)
    res = minimize(objective, z0, jac=True, method="L-BFGS-B",
                   bounds=[(0, None)] * (2 * d) + [(None, None)],
                   options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 20000})
    return res.x[:d] - res.x[d:2 * d], res.x[-1]


@pytest.mark.slow  # skglm compiles its solver on first use (seconds)
def test_huber_l1_minimises_its_objective_as_an_independent_solver_does():
    d = make_paper_data(4, 0.3, 5.0, n_train=60, n_features=12, n_relevant=4)
    X, y = d.X_train, d.y_train
    for epsilon, ratio in ((0.1, 0.3), (1.0, 0.05)):
        alpha = ratio * huber_alpha_max(X, y, epsilon)
        model = HuberL1Regressor(epsilon=epsilon, alpha=alpha, tol=1e-10).fit(X, y)
        assert model.converged_ and model.delta_ == pytest.approx(epsilon * huber_scale(y))
        coef, intercept = _huber_l1_by_scipy(X, y, model.delta_, alpha)
        np.testing.assert_allclose(model.coef_, coef, atol=1e-5)
        assert model.intercept_ == pytest.approx(intercept, abs=1e-5)


@pytest.mark.slow  # skglm compiles its solver on first use (seconds)
def test_huber_with_a_threshold_beyond_every_residual_is_the_lasso():
    d = make_paper_data(5, 0.0, 5.0, n_train=60, n_features=30, n_relevant=4)
    X, y = d.X_train, d.y_train
    alpha = 0.1 * lasso_alpha_max(X, y)
    huber = HuberL1Regressor(epsilon=1e6, alpha=alpha, tol=1e-10).fit(X, y)
    lasso = Lasso(alpha=alpha, tol=1e-12, max_iter=100_000).fit(X, y)
    np.testing.assert_allclose(huber.coef_, lasso.coef_, atol=1e-6)
    assert huber.intercept_ == pytest.approx(lasso.intercept_, abs=1e-6)


@pytest.mark.slow  # skglm compiles its solver on first use (seconds)
@pytest.mark.parametrize("make", [lambda a: HuberL1Regressor(epsilon=0.3, alpha=a),
                                  lambda a: HuberMCPRegressor(epsilon=0.3, alpha=a, gamma=2.0),
                                  lambda a: LADLassoRegressor(alpha=a)],
                         ids=["huber_l1", "huber_mcp", "lad_lasso"])
@pytest.mark.parametrize("n_train", [41, 40])  # LAD's median: one free sample, or none
def test_alpha_max_is_where_each_peer_keeps_no_feature(make, n_train):
    d = make_paper_data(6, 0.2, 5.0, n_train=n_train, n_features=25, n_relevant=4)
    X, y = d.X_train, d.y_train
    kind = type(make(1.0))
    top = lad_alpha_max(X, y) if kind is LADLassoRegressor else huber_alpha_max(X, y, 0.3)
    assert not np.any(make(top * 1.001).fit(X, y).coef_)
    assert np.any(make(top * 0.97).fit(X, y).coef_)


def _shifted_data(seed=1, n=60):
    """Columns with mean 1 and an intercept of 3 (centring matters), heavy-tailed noise, and
    integer weights with zeros (weighting matters)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 10)) + 1.0
    y = X[:, 0] - X[:, 1] + 3.0 + 0.3 * rng.standard_t(2, n)
    return X, y, rng.integers(0, 4, n).astype(float)


@pytest.mark.parametrize("fit_intercept, weighted", [(False, False), (True, True),
                                                     (False, True)])
def test_lasso_and_lad_alpha_max_follow_the_intercept_and_the_weights(fit_intercept, weighted):
    """The scales are where scikit-learn's own Lasso and QuantileRegressor, with the same
    fit_intercept and sample weights, keep no feature (and one at 0.97 times it); the Lasso's is
    LassoCV's largest penalty."""
    X, y, w = _shifted_data()
    w = w if weighted else None
    top = lasso_alpha_max(X, y, None, fit_intercept, w)
    ref = LassoCV(fit_intercept=fit_intercept, alphas=2, cv=2).fit(X, y, sample_weight=w)
    assert top == pytest.approx(ref.alphas_.max(), rel=1e-12)
    for scale, model in ((top, lambda a: Lasso(alpha=a, fit_intercept=fit_intercept, tol=1e-12,
                                                max_iter=100_000)),
                         (lad_alpha_max(X, y, None, fit_intercept, w),
                          lambda a: QuantileRegressor(quantile=0.5, alpha=a,
                                                      fit_intercept=fit_intercept))):
        assert not np.any(model(scale * 1.001).fit(X, y, sample_weight=w).coef_)
        assert np.any(model(scale * 0.97).fit(X, y, sample_weight=w).coef_)


@pytest.mark.slow  # skglm compiles its solver on first use (seconds)
def test_huber_alpha_max_without_an_intercept_is_where_huber_l1_keeps_no_feature():
    X, y, _ = _shifted_data()
    top = huber_alpha_max(X, y, 1.0, fit_intercept=False)
    assert top != pytest.approx(huber_alpha_max(X, y, 1.0))
    for make in (HuberL1Regressor, lambda **kw: HuberMCPRegressor(gamma=3.0, **kw)):
        fit = [make(epsilon=1.0, alpha=r * top, fit_intercept=False, tol=1e-10).fit(X, y).coef_
               for r in (1.001, 0.97)]
        assert not np.any(fit[0]) and np.any(fit[1])


def test_a_ratio_is_scaled_as_the_estimator_it_builds_sees_the_data():
    """The registry scales alpha_ratio by the alpha_max of the built estimator's own
    fit_intercept and of the sample weights (LassoCV's largest penalty for the same problem)."""
    X, y, w = _shifted_data()
    for fit_intercept in (True, False):
        for weights in (None, w):
            est, alpha = kind_of("mccard_dist.models:LassoBaseline").build({"fit_intercept": fit_intercept},
                                              {"alpha_ratio": 0.97}, X, y, sample_weight=weights)
            ref = LassoCV(fit_intercept=fit_intercept, alphas=2, cv=2).fit(
                X, y, sample_weight=weights).alphas_.max()
            assert alpha == est.alpha == pytest.approx(0.97 * ref, rel=1e-12)


def test_method_cv_refuses_sample_weights_its_estimator_has_none_before_any_fit():
    X, y, w = _shifted_data()
    with pytest.raises(ValueError, match="MethodCV\\('huber_l1'\\): HuberL1Regressor takes no "
                                         "sample_weight; fit without it"):
        MethodCV("huber_l1").fit(X, y, sample_weight=w)


def test_lad_lasso_is_quantile_regression_at_the_median():
    d = make_paper_data(7, 0.3, 5.0, n_train=50, n_features=20, n_relevant=4)
    X, y = d.X_train, d.y_train
    ours = LADLassoRegressor(alpha=0.01).fit(X, y)
    ref = QuantileRegressor(quantile=0.5, alpha=0.01, solver="highs").fit(X, y)
    np.testing.assert_allclose(ours.coef_, ref.coef_, atol=1e-10)
    assert ours.converged_



def test_lad_lasso_keeps_the_solvers_warning_and_records_it(monkeypatch):
    """HiGHS stopped early gives no solution at all (scikit-learn then fails), so the warning a
    solved but inexact programme gives is simulated: it reaches the caller and sets
    ``converged_`` False."""
    def fit(self, X, y, sample_weight=None):
        warnings.warn("Linear programming for QuantileRegressor did not succeed.",
                      ConvergenceWarning)
        self.coef_, self.intercept_ = np.zeros(X.shape[1]), 0.0
        return self

    monkeypatch.setattr(QuantileRegressor, "fit", fit)
    with pytest.warns(ConvergenceWarning, match="did not succeed"):
        model = LADLassoRegressor().fit(np.eye(3), np.arange(3.0))
    assert not model.converged_


def test_mcp_refuses_a_concavity_its_coordinate_steps_cannot_take():
    d = make_paper_data(8, 0.0, 5.0, n_train=40, n_features=10, n_relevant=3)
    X = d.X_train / 10.0  # ||x_d||^2 / n = 0.01: gamma must exceed ~100
    with pytest.raises(ValueError, match=r"gamma=3.0 must exceed n / \|\|x_d\|\|\^2"):
        HuberMCPRegressor(gamma=3.0).fit(X, d.y_train)


@pytest.mark.slow  # skglm compiles its solver on first use (seconds)
def test_mcp_candidates_below_a_folds_gamma_bound_are_skipped_there_with_one_warning():
    """Fold 0's training rows hold only the small values of column 0, so that fold needs a
    gamma above 7: the grid's 2 and 5 score NaN on fold 0 alone (never chosen), are not counted
    as failed fits, and one warning names fold 0's bound."""
    import re

    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 5))
    X[:10, 0] *= 4.0
    X[10:, 0] *= 0.5
    y = X[:, 1] + 0.1 * rng.standard_normal(30)
    folds = list(KFold(3).split(X))
    bounds = [mcp_gamma_bound(X[train]) for train, _ in folds]
    assert bounds[0] > 7.0 and max(bounds[1:]) < 2.0
    candidates = [{"epsilon": 1.0, "alpha_ratio": 0.3, "gamma": g} for g in (2.0, 5.0, 10.0)]
    search = Search(candidates, [(0,), (1,), (2,)],
                    lambda *a: kind_of("mccard_dist.models:HuberMCPRegressor").fit_members({}, *a))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scores, failed, _ = search.fold_scores(
            X, y, folds, check_scoring(HuberMCPRegressor(), "neg_mean_absolute_error"))
    skipped = [str(w.message) for w in caught if "skipped" in str(w.message)]
    assert len(skipped) == 1
    assert re.search(rf"2 candidate fit\(s\) skipped: .*gamma > {re.escape(f'{bounds[0]:.4g}')} "
                     rf"on fold 0", skipped[0]), skipped[0]
    assert failed == 0
    assert np.isnan(scores[:2, 0]).all() and np.isfinite(scores[:2, 1:]).all()
    assert np.isfinite(scores[2]).all() and choose(scores) == 2


def _gamma_bound_tool():
    path = Path(__file__).resolve().parents[1] / "docs" / "tools" / "mcp_gamma_bound.py"
    spec = importlib.util.spec_from_file_location("mcp_gamma_bound", path)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


@pytest.mark.slow  # skglm compiles its solver on first use (seconds)
def test_mcp_refuses_exactly_below_n_over_the_smallest_squared_column_norm():
    rng = np.random.default_rng(8)
    signs = rng.choice([-1.0, 1.0], size=(40, 10))
    scales = np.linspace(0.8, 1.2, 10)
    X = signs * scales  # ||x_d||^2 / n = scales_d^2 exactly: the 0.8 column binds
    y = X[:, :3] @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.standard_normal(40)
    assert mcp_gamma_bound(X) == pytest.approx(1 / 0.8**2, rel=1e-12)
    with pytest.raises(ValueError, match="must exceed"):
        HuberMCPRegressor(gamma=0.999 / 0.8**2).fit(X, y)
    HuberMCPRegressor(gamma=1.001 / 0.8**2, alpha=0.1).fit(X, y)


@pytest.mark.slow  # builds the paper's data at D = 1000 for every seed
@pytest.mark.parametrize("experiment", ["robust_peers", "diabetes"])
def test_the_shipped_mcp_grids_start_above_the_gamma_every_fold_admits(experiment):
    tool = _gamma_bound_tool()
    config, spec = tool.compose(experiment, None)
    lowest = min(config["methods"]["huber_mcp"]["grid"]["gamma"])
    assert tool.seed_bounds(spec).max() < lowest


def test_huber_peers_without_skglm_are_refused_in_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "skglm", None)  # import skglm raises ImportError
    d = make_paper_data(8, 0.0, 5.0, n_train=30, n_features=5, n_relevant=2)
    with pytest.raises(ImportError, match=r"^HuberL1Regressor needs skglm, which is not "
                                          r"installed: pip install 'mccard-dist\[peers\]'"):
        HuberL1Regressor().fit(d.X_train, d.y_train)


@pytest.mark.slow  # keeps the fast subset under its 30 s
def test_an_experiment_with_a_huber_peer_is_refused_without_skglm(compose, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "skglm" else real(name, *a))
    with pytest.raises(ConfigError, match=r"^experiment.methods: huber_l1, huber_mcp need skglm, "
                                          r"which is not installed: pip install 'mccard-dist\[peers\]'"):
        from_dictconfig(compose(["experiment=robust_peers"]))
    # an experiment without them does not need it
    from_dictconfig(compose(["experiment=smoke"]))


@pytest.mark.parametrize("overrides, message", [
    (["methods.huber_mcp.grid.gamma=[3.0,1.0]"], r"methods.huber_mcp.grid.gamma: The 'gamma' "
     r"parameter of HuberMCPRegressor must be a float in the range \(1.0, inf\). Got 1.0"),
    (["+methods.huber_mcp.params.gamma=3.0"], "gamma must not be set here"),
    (["methods.huber_l1.grid.alpha_ratio=[0.5,1.0]"], "values must be < 1"),
])
def test_the_robust_peers_grids_are_checked(compose, overrides, message):
    with pytest.raises(ConfigError, match=message):
        from_dictconfig(compose(["experiment=robust_peers", *overrides]))


@pytest.mark.parametrize("fit_intercept, weighted", [(True, False), (False, True)])
def test_method_cv_scales_each_folds_penalty_as_a_hand_written_search_does(fit_intercept,
                                                                           weighted):
    """MethodCV over the Lasso's alpha_ratio grid against a loop over folds with scikit-learn's
    Lasso at ``ratio`` times each training fold's largest LassoCV penalty (its alpha_max, with
    the same fit_intercept and weights), scored by the weighted mean absolute error."""
    d = make_paper_data(9, 0.2, 5.0, n_train=60, n_features=30, n_relevant=4)
    X, y = d.X_train, d.y_train + 2.0
    w = np.random.default_rng(9).integers(1, 4, len(y)).astype(float) if weighted else None
    ratios = [0.9, 0.5, 0.2, 0.05]
    folds = KFold(3, shuffle=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a choice at a grid edge
        cv = MethodCV("lasso", grid={"alpha_ratio": ratios}, cv=folds,
                      params={"fit_intercept": fit_intercept}).fit(X, y, sample_weight=w)

    def lasso(alpha, rows):
        sw = None if w is None else w[rows]
        with warnings.catch_warnings():  # LassoCV's own fits, at penalties far below alpha_max
            warnings.simplefilter("ignore", ConvergenceWarning)
            top = LassoCV(fit_intercept=fit_intercept, alphas=2, cv=2).fit(
                X[rows], y[rows], sample_weight=sw).alphas_.max()
        return Lasso(alpha=alpha * top, fit_intercept=fit_intercept, max_iter=5000,
                     tol=1e-4).fit(X[rows], y[rows], sample_weight=sw)

    expected = np.zeros((len(ratios), 3))
    for k, (train, test) in enumerate(folds.split(X)):
        for c, ratio in enumerate(ratios):
            error = np.abs(y[test] - lasso(ratio, train).predict(X[test]))
            expected[c, k] = -np.average(error, weights=None if w is None else w[test])
    got = np.column_stack([cv.cv_results_[f"split{k}_test_score"] for k in range(3)])
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    best = int(np.argmax(expected.mean(axis=1)))
    assert cv.best_params_ == {"alpha_ratio": ratios[best]} and cv.alpha_ratio_ == ratios[best]
    np.testing.assert_allclose(cv.coef_, lasso(ratios[best], np.arange(len(y))).coef_,
                               rtol=1e-10)


def test_method_cv_refuses_an_unknown_method_and_a_bad_grid():
    X, y = np.random.default_rng(0).standard_normal((30, 4)), np.arange(30.0)
    with pytest.raises(ValueError, match="method 'hubr_l1' has no file .*known methods: .*huber_l1"):
        MethodCV("hubr_l1").fit(X, y)
    with pytest.raises(ValueError, match="methods.huber_mcp.grid.gamma: must not be empty"):
        MethodCV("huber_mcp", grid={"gamma": []}).fit(X, y)


@pytest.mark.slow
def test_robust_peer_cells_store_their_three_axes_and_refit_what_cv_chose(smoke_spec):
    """huber_mcp through the pipeline: the chosen epsilon, alpha_ratio and gamma are grid
    values, the stored coefficients are the refit at them, and the candidates' values are in
    the store under the estimator's names."""
    from mccard_dist import grid
    from mccard_dist.runner import run_serial
    from mccard_dist.store import open_results, store_path

    spec = smoke_spec("experiment.methods=[huber_mcp,lad_lasso]", "data.n_features=30",
                      "methods.huber_mcp.grid.epsilon=[0.1,1.0]",
                      "methods.huber_mcp.grid.alpha_ratio=[0.5,0.1]",
                      "methods.huber_mcp.grid.gamma=[2.0,8.0]", name="robust-peers")
    run_serial(spec)
    ds = open_results(store_path(spec)).load()
    assert (ds["status"] == 1).all()
    for cell in grid.cells(spec):
        if cell.method != "huber_mcp":
            continue
        data = spec.data.make_data(cell.seed, cell.psi, cell.tau)
        stored = ds.sel(model=cell.method, tau=cell.tau, psi=cell.psi, seed=cell.seed)
        epsilon, ratio, gamma = (float(stored[f"chosen_{n}"])
                                 for n in ("epsilon", "alpha_ratio", "gamma"))
        assert (epsilon, ratio, gamma) in {(e, r, g) for e in (0.1, 1.0) for r in (0.5, 0.1)
                                           for g in (2.0, 8.0)}
        alpha = ratio * huber_alpha_max(data.X_train, data.y_train, epsilon)
        assert float(stored["chosen_alpha"]) == pytest.approx(alpha, rel=1e-12)
        ref = HuberMCPRegressor(epsilon=epsilon, alpha=alpha, gamma=gamma, tol=1e-5)
        np.testing.assert_allclose(stored["coef"].values,
                                   ref.fit(data.X_train, data.y_train).coef_, atol=1e-12)
    mcp = ds.sel(model="huber_mcp")
    np.testing.assert_array_equal(mcp["gamma"].values[:8], [2.0, 8.0] * 4)
    assert np.isnan(ds["gamma"].sel(model="lad_lasso").values).all()

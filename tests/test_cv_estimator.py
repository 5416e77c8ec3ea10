"""MCCARDRegressorCV: scikit-learn's conventions, the same choice as GridSearchCV, and the same
choice on a Dask cluster through joblib as with n_jobs=1."""

import warnings

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.utils.estimator_checks import parametrize_with_checks

from mccard_dist import MCCARDRegressor, MCCARDRegressorCV, make_paper_data

WIDTHS = [0.1, 0.5, 2.0, 10.0]


def data():
    return make_paper_data(2, 0.3, 5.0, n_train=90, n_test=30, n_features=40, n_relevant=5)


@pytest.mark.slow  # scikit-learn's estimator checks, several fits each
@parametrize_with_checks([MCCARDRegressorCV(kernel_widths=(0.3, 3.0), cv=3)])
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        check(estimator)


@pytest.mark.slow
@pytest.mark.parametrize("likelihood", ["deviant", "proper"])
def test_the_choice_and_scores_equal_grid_search_cv(likelihood):
    d = data()
    folds = KFold(4, shuffle=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = MCCARDRegressorCV(WIDTHS, cv=folds, likelihood=likelihood).fit(d.X_train, d.y_train)
        grid = GridSearchCV(MCCARDRegressor(likelihood=likelihood), {"kernel_width": WIDTHS},
                            cv=folds, scoring="neg_mean_absolute_error").fit(d.X_train, d.y_train)
    assert ours.kernel_width_ == grid.best_params_["kernel_width"]
    np.testing.assert_allclose(ours.cv_results_["mean_test_score"],
                               grid.cv_results_["mean_test_score"], rtol=1e-12)
    np.testing.assert_array_equal(ours.cv_results_["rank_test_score"],
                                  grid.cv_results_["rank_test_score"])
    np.testing.assert_allclose(ours.coef_, grid.best_estimator_.coef_, rtol=1e-12)
    mean, std = ours.predict(d.X_test, return_std=True)
    np.testing.assert_allclose(mean, grid.predict(d.X_test), rtol=1e-12)
    assert np.all(std > 0)


def test_bad_widths_are_refused_before_any_fit():
    d = data()
    for widths, message in (([], "non-empty"), ([1.0, -2.0], "positive finite"),
                            ([1.0, np.nan], "positive finite"), (["a"], "positive finite")):
        with pytest.raises(ValueError, match=message):
            MCCARDRegressorCV(widths).fit(d.X_train, d.y_train)
    with pytest.raises(ValueError, match="likelihood"):
        MCCARDRegressorCV(WIDTHS, likelihood="other").fit(d.X_train, d.y_train)


@pytest.mark.slow
@pytest.mark.cluster
def test_the_dask_joblib_backend_chooses_as_n_jobs_1():
    import joblib
    from distributed import Client, LocalCluster

    d = data()
    serial = MCCARDRegressorCV(WIDTHS, cv=4, n_jobs=1).fit(d.X_train, d.y_train)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        with joblib.parallel_backend("dask"):
            spread = MCCARDRegressorCV(WIDTHS, cv=4, n_jobs=-1).fit(d.X_train, d.y_train)
        ran_on = client.run(lambda: True)
    assert len(ran_on) == 2
    assert spread.kernel_width_ == serial.kernel_width_
    np.testing.assert_array_equal(spread.cv_results_["mean_test_score"],
                                  serial.cv_results_["mean_test_score"])
    np.testing.assert_array_equal(spread.coef_, serial.coef_)


def test_every_mcc_ard_parameter_but_the_width_reaches_the_fits():
    """MCCARDRegressorCV mirrors MCCARDRegressor's parameters (as LassoCV mirrors Lasso's):
    each one is passed to the candidates' fits and to the refit."""
    import inspect

    from mccard_dist import MCCARDRegressor, MCCARDRegressorCV

    own = set(inspect.signature(MCCARDRegressor).parameters) - {"kernel_width",
                                                                 "final_width_ratio"}
    assert own <= set(inspect.signature(MCCARDRegressorCV).parameters)
    values = {"likelihood": "proper", "h_factor": "printed", "curvature": "exact", "init": "zero",
              "w_steps": 3, "max_iter": 7, "tol": 1e-3, "relevance_max": 1e5,
              "fit_intercept": False, "form": "primal", "solver": "pruning",
              "warm_start": False, "relevance_update": "tail-exact"}
    assert set(values) == own
    base = MCCARDRegressorCV(**values)._base(kernel_width=2.0)
    assert base.get_params() == {**MCCARDRegressor().get_params(), **values,
                                 "kernel_width": 2.0}


def test_a_parameter_pair_no_fit_accepts_is_refused_before_the_cv():
    from mccard_dist import MCCARDRegressorCV

    X, y = np.random.default_rng(0).standard_normal((30, 4)), np.arange(30.0)
    with pytest.raises(ValueError, match="curvature='exact' needs solver='pruning'"):
        MCCARDRegressorCV([1.0, 2.0], curvature="exact", solver="sequential", cv=3).fit(X, y)


@pytest.mark.slow  # n_jobs=2 starts joblib's worker processes
def test_what_scikit_learn_accepts_is_accepted():
    # a generator of folds with parallel jobs (only the base estimator travels to the workers),
    # verbose=True, and a single width or penalty given as a number
    from sklearn.model_selection import KFold

    from mccard_dist import MCCL1RegressorCV

    d = data()
    X, y = d.X_train, d.y_train
    folds = (split for split in KFold(3).split(X))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = MCCARDRegressorCV([0.5, 2.0], cv=folds, n_jobs=2).fit(X, y)
        assert model.kernel_width_ in (0.5, 2.0)
        assert MCCARDRegressorCV(1.0, cv=3, verbose=True).fit(X, y).kernel_width_ == 1.0
        l1 = MCCL1RegressorCV(1.0, alphas=0.01, cv=3, verbose=True).fit(X, y)
    assert (l1.kernel_width_, l1.alpha_) == (1.0, 0.01)


def test_a_cv_fits_runtime_warning_reaches_the_user(monkeypatch):
    # the CV hides its fits' convergence warnings only; a floating-point or curvature warning
    # (RuntimeWarning) of a fold's fit is shown, as a plain fit shows it
    real_fit = MCCARDRegressor.fit

    d = data()

    def warning_fit(self, X, y, **kw):
        if len(y) < len(d.y_train):  # a fold's fit, not the refit
            warnings.warn("a fold's fit warns", RuntimeWarning)
        return real_fit(self, X, y, **kw)

    monkeypatch.setattr(MCCARDRegressor, "fit", warning_fit)
    with pytest.warns(RuntimeWarning, match="a fold's fit warns"):
        MCCARDRegressorCV([0.5, 2.0], cv=3).fit(d.X_train, d.y_train)

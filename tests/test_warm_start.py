"""solver="auto" and warm-started width grids: which solver runs, what a warm start starts from,
and the CV estimator's and the pipeline's paths against the same fits made by hand."""

import warnings

import numpy as np
import pytest
from sklearn.model_selection import KFold

from mccard_dist import (LSARDRegressor, MCCARDRegressor, MCCARDRegressorCV, make_paper_data,
                         resolve_relevance_update, resolve_solver)


def quietly(model, X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(X, y, **kw)


@pytest.mark.parametrize("shape, solver", [
    ((300, 1000), "pruning"),      # the paper's size
    ((300, 3000), "pruning"),      # D = 10 N, cost 2.7e8
    ((300, 10_000), "sequential"),  # D >> N
    ((1000, 1000), "sequential"),  # N D min(N, D) = 1e9
    ((3000, 3000), "sequential"),
    ((442, 10), "pruning"),        # the diabetes data
])
def test_auto_takes_pruning_at_the_papers_sizes_and_sequential_beyond(shape, solver):
    assert resolve_solver("auto", *shape) == solver
    assert resolve_solver("pruning", *shape) == "pruning"


@pytest.mark.parametrize("shape, solver", [
    ((300, 1000), "pruning"),
    ((300, 10_000), "pruning"),
    ((1000, 3000), "pruning"),
    ((3000, 1000), "sequential"),   # fewer features than samples
    ((3000, 10_000), "sequential"),  # a pruning iteration: N D min(N, D) = 9e10
])
def test_with_the_width_set_in_the_fit_auto_prunes_where_features_outnumber_samples(
        shape, solver):
    assert resolve_solver("auto", *shape, auto_width=True) == solver


@pytest.mark.parametrize("shape, solver, likelihood, update", [
    ((300, 1000), "pruning", "deviant", "tail-exact"),   # MCC-ARD at every size
    ((300, 1000), "pruning", "proper", "tail-exact"),
    ((300, 10_000), "pruning", "deviant", "tail-exact"),
    ((300, 1000), "pruning", "gaussian", "mackay"),      # LS-ARD at the paper's size
    ((300, 10_000), "pruning", "gaussian", "tail-exact"),  # LS-ARD beyond it
    ((1000, 3000), "pruning", "gaussian", "tail-exact"),
    ((3000, 1000), "sequential", "deviant", "mackay"),   # the sequential solver: not its choice
])
def test_auto_runs_the_exact_tail_step_for_mcc_ard_and_for_ls_ard_beyond_the_papers_sizes(
        shape, solver, likelihood, update):
    assert resolve_relevance_update("auto", solver, *shape, likelihood) == update
    assert resolve_relevance_update("mackay", solver, *shape, likelihood) == "mackay"


def test_the_pipeline_resolves_the_update_as_the_estimator_would_without_a_likelihood_given():
    # a method file naming MCCARDRegressor without its likelihood: the estimator's default
    # (deviant) decides the update, as a direct fit would, not LS-ARD's rule
    from mccard_dist.methods import kind_of

    mcc = kind_of("mccard_dist.models:MCCARDRegressor").resolve({"solver": "pruning"}, 300, 1000)
    ls = kind_of("mccard_dist.models:LSARDRegressor").resolve({"solver": "pruning"}, 300, 1000)
    assert (mcc["relevance_update"], ls["relevance_update"]) == ("tail-exact", "mackay")


def test_the_estimators_say_which_update_ran_at_the_papers_size():
    d = make_paper_data(seed=0, psi=0.2, tau=5.0, n_train=60, n_features=100, n_relevant=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert MCCARDRegressor(1.0).fit(d.X_train, d.y_train).relevance_update_ == "tail-exact"
        assert LSARDRegressor().fit(d.X_train, d.y_train).relevance_update_ == "mackay"
        paper = MCCARDRegressor(1.0, relevance_update="mackay").fit(d.X_train, d.y_train)
    assert paper.relevance_update_ == "mackay"


@pytest.mark.slow  # keeps the fast subset under its 30 s
def test_the_default_keeps_the_converged_pruning_selection_where_features_far_outnumber_samples():
    """80 rows of 900 features (D > 10 N: beyond the paper's sizes), width set in the fit: the
    sequential solver settles at a narrow width and keeps three times the features; the default
    keeps the selection of the pruning solver with MacKay's update run to convergence, and
    converges without a warning in fewer iterations."""
    for seed in range(3):
        d = make_paper_data(seed=seed, psi=0.2, tau=5.0, n_train=80, n_features=900,
                            n_relevant=5)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            default = MCCARDRegressor().fit(d.X_train, d.y_train)
        reference = MCCARDRegressor(solver="pruning", relevance_update="mackay",
                                    max_iter=5000).fit(d.X_train, d.y_train)
        sequential = quietly(MCCARDRegressor(solver="sequential"), d.X_train, d.y_train)
        assert (default.solver_, default.relevance_update_) == ("pruning", "tail-exact")
        assert default.converged_ and reference.converged_
        assert default.n_iter_ <= reference.n_iter_
        np.testing.assert_array_equal(default.coef_ != 0, reference.coef_ != 0)
        assert np.count_nonzero(sequential.coef_) >= 3 * np.count_nonzero(default.coef_)


@pytest.mark.parametrize("shape, ran", [((60, 30), "pruning"), ((40, 500), "sequential")])
@pytest.mark.slow  # keeps the fast subset under its 30 s
def test_the_fitted_estimators_say_which_solver_ran_and_fit_as_it(shape, ran):
    d = make_paper_data(seed=1, psi=0.2, tau=5.0, n_train=shape[0], n_features=shape[1],
                        n_relevant=5)
    for make in (lambda **kw: MCCARDRegressor(1.0, **kw), lambda **kw: LSARDRegressor(**kw)):
        auto = quietly(make(), d.X_train, d.y_train)
        named = quietly(make(solver=ran), d.X_train, d.y_train)
        assert auto.solver_ == named.solver_ == ran
        np.testing.assert_array_equal(auto.coef_, named.coef_)


def test_exact_curvature_runs_the_pruning_solver_under_auto():
    d = make_paper_data(seed=1, psi=0.2, tau=5.0, n_train=40, n_features=500, n_relevant=5)
    model = quietly(MCCARDRegressor(1.0, curvature="exact"), d.X_train, d.y_train)
    assert model.solver_ == "pruning"


@pytest.mark.parametrize("solver", ["pruning", "sequential"])
def test_a_warm_start_from_its_own_answer_stops_at_once_where_it_is(solver):
    """A fit's answer is a fixed point of its own iterations: restarted there at the same
    width, the fit converges in a few outer iterations (the pruning solver's first a-step
    prunes again the features it let back in; the sequential one tightens its inner tolerance
    twice) and moves no coefficient by more than the tolerance."""
    d = make_paper_data(seed=2, psi=0.2, tau=5.0, n_train=120, n_features=200, n_relevant=10)
    model = quietly(MCCARDRegressor(1.0, solver=solver, warm_start=True, tol=1e-6,
                                    max_iter=1000), d.X_train, d.y_train)
    assert model.converged_
    coef, cold_iter = model.coef_.copy(), model.n_iter_
    quietly(model, d.X_train, d.y_train)
    assert model.converged_ and model.n_iter_ <= min(10, cold_iter // 2)
    np.testing.assert_allclose(model.coef_, coef, rtol=0, atol=1e-4 * np.max(np.abs(coef)))


def test_warm_start_false_and_an_auto_width_start_from_scratch():
    d = make_paper_data(seed=2, psi=0.2, tau=5.0, n_train=80, n_features=100, n_relevant=5)
    cold = quietly(MCCARDRegressor(0.5), d.X_train, d.y_train)
    for model in (MCCARDRegressor(3.0), MCCARDRegressor(3.0, warm_start=True)):
        quietly(model, d.X_train, d.y_train)
        quietly(model.set_params(kernel_width=0.5, warm_start=False), d.X_train, d.y_train)
        np.testing.assert_array_equal(model.coef_, cold.coef_)
    auto = quietly(MCCARDRegressor("auto"), d.X_train, d.y_train)
    model = quietly(MCCARDRegressor(3.0, warm_start=True), d.X_train, d.y_train)
    quietly(model.set_params(kernel_width="auto"), d.X_train, d.y_train)
    np.testing.assert_array_equal(model.coef_, auto.coef_)


@pytest.mark.parametrize("solver", ["pruning", "sequential"])
@pytest.mark.slow  # keeps the fast subset under its 30 s
def test_cv_scores_are_one_estimators_refits_from_the_widest_width_down(solver):
    """MCCARDRegressorCV(warm_start=True): each fold's validation MAE at each width equals that
    of one MCCARDRegressor(warm_start=True) refitted by hand along the widths, widest first;
    the refit walks the same path on all the data."""
    d = make_paper_data(seed=3, psi=0.3, tau=5.0, n_train=90, n_features=60, n_relevant=5)
    X, y = d.X_train, d.y_train
    widths = [0.3, 3.0, 1.0, 10.0]
    cv = KFold(3, shuffle=True, random_state=0)
    search = quietly(MCCARDRegressorCV(widths, cv=cv, solver=solver, warm_start=True), X, y)
    order = sorted(range(len(widths)), key=lambda i: -widths[i])
    for f, (train, val) in enumerate(cv.split(X)):
        model = MCCARDRegressor(solver=solver, warm_start=True)
        for i in order:
            quietly(model.set_params(kernel_width=widths[i]), X[train], y[train])
            mae = np.mean(np.abs(y[val] - model.predict(X[val])))
            assert search.cv_results_[f"split{f}_test_score"][i] == pytest.approx(-mae, rel=1e-12)
    model = MCCARDRegressor(solver=solver, warm_start=True)
    for i in order[: order.index(search.best_index_) + 1]:
        quietly(model.set_params(kernel_width=widths[i]), X, y)
    np.testing.assert_array_equal(search.coef_, model.coef_)
    assert search.best_estimator_.solver_ == solver


@pytest.mark.slow  # keeps the fast subset under its 30 s
def test_cv_resolves_auto_once_from_the_whole_training_set():
    """30 rows of 280 features take the pruning solver, the 3-fold training sets' 20 rows the
    sequential one: the folds fit with the whole set's solver, as the refit does."""
    d = make_paper_data(seed=4, psi=0.2, tau=5.0, n_train=30, n_features=280, n_relevant=3)
    assert resolve_solver("auto", 30, 280) == "pruning"
    assert resolve_solver("auto", 20, 280) == "sequential"
    auto = quietly(MCCARDRegressorCV([1.0, 3.0], cv=3), d.X_train, d.y_train)
    named = quietly(MCCARDRegressorCV([1.0, 3.0], cv=3, solver="pruning"), d.X_train, d.y_train)
    assert auto.best_estimator_.solver_ == "pruning"
    np.testing.assert_array_equal(auto.cv_results_["mean_test_score"],
                                  named.cv_results_["mean_test_score"])


def test_the_pipeline_resolves_the_solver_and_update_once_as_the_estimator_does():
    """A method's fits (every fold and the final one) take the solver and relevance update the
    whole training set calls for: with the width set in the fit, the pruning solver and the
    tail-exact update at 300 x 5,000; with the widths of a CV grid, the sequential solver."""
    from mccard_dist.methods import kind_of

    def chosen(kind, params, *shape):
        resolved = kind.resolve(params, *shape)
        assert {k: resolved[k] for k in params} == {**params, **{
            k: resolved[k] for k in ("solver", "relevance_update") if k in params}}
        return {k: resolved[k] for k in ("kernel_width", "solver", "relevance_update")
                if k in resolved}

    mcc = kind_of("mccard_dist.models:MCCARDRegressor")
    assert chosen(mcc, {"kernel_width": "auto"}, 300, 5000) == {
        "kernel_width": "auto", "solver": "pruning", "relevance_update": "tail-exact"}
    assert chosen(mcc, {}, 300, 5000) == {"solver": "sequential", "relevance_update": "mackay"}
    assert chosen(mcc, {"kernel_width": "auto"}, 300, 1000) == {
        "kernel_width": "auto", "solver": "pruning", "relevance_update": "tail-exact"}
    said = {"solver": "pruning", "relevance_update": "mackay"}
    assert chosen(mcc, said, 300, 5000) == said
    # MCC-ARD takes the exact tail step at every size (its likelihood unsaid: the default's)
    assert chosen(mcc, {"solver": "pruning"}, 300, 3000) == {
        "solver": "pruning", "relevance_update": "tail-exact"}
    ls = kind_of("mccard_dist.models:LSARDRegressor")
    assert chosen(ls, {}, 300, 5000) == {"solver": "sequential", "relevance_update": "mackay"}
    # the rule is the class's own: a class declaring the same parameters without the hook keeps
    # its parameters as they are (scikit-learn's Ridge has a solver "auto" of its own)
    from mccard_dist.methods import MethodKind
    from sklearn.linear_model import Ridge

    ridge = MethodKind("sklearn.linear_model:Ridge", solver_params=("solver",))
    assert ridge.resolve({}, 300, 5000) == {}
    X, y = np.random.default_rng(0).normal(size=(40, 3)), np.arange(40.0)
    assert ridge.build(ridge.resolve({}, 40, 3), {})[0].fit(X, y).solver == "auto"
    assert isinstance(ridge.cls(), Ridge)

"""Worker tasks and the store's masking, in process."""

import numpy as np
import pytest

from mccard_dist import grid, records, tasks
from mccard_dist.config import CVSpec
from mccard_dist.runner import run_serial
from mccard_dist.store import open_results, store_path


def _correntropy_from_the_normal_density(e, width):
    """1 - mean Gaussian kernel of the residuals, the kernel as scipy's N(0, w) density scaled
    to 1 at 0 (correntropy's kernel is a Gaussian density up to its constant)."""
    from scipy.stats import norm

    scale = np.sqrt(width)
    return 1.0 - np.mean(norm.pdf(e, scale=scale) / norm.pdf(0.0, scale=scale))


@pytest.mark.parametrize("score", ["mae", "medae", "rmse", "correntropy"])
def test_cv_losses(score):
    """Against scikit-learn's metrics (zero predictions, so the residuals are the targets) and,
    for correntropy, scipy's normal density."""
    from sklearn import metrics

    e = np.random.default_rng(0).standard_normal(50) * 3
    zero = np.zeros_like(e)
    expected = {
        "mae": lambda: metrics.mean_absolute_error(e, zero),
        "medae": lambda: metrics.median_absolute_error(e, zero),
        "rmse": lambda: metrics.root_mean_squared_error(e, zero),
        "correntropy": lambda: _correntropy_from_the_normal_density(e, 0.5),
    }[score]()
    assert tasks.cv_loss(e, CVSpec(5, score, 0.5)) == pytest.approx(expected, rel=1e-9)


def test_folds_are_shared_by_methods_and_partition_the_data():
    a = tasks.folds(40, 4, seed=7)
    b = tasks.folds(40, 4, seed=7)
    for (ta, va), (tb, vb) in zip(a, b):
        np.testing.assert_array_equal(va, vb)
    assert sorted(np.concatenate([v for _, v in a])) == list(range(40))
    assert not np.array_equal(a[0][1], tasks.folds(40, 4, seed=8)[0][1])


def test_cell_picks_the_lowest_mean_cv_loss(smoke_spec):
    spec = smoke_spec()
    cell = grid.cells(spec)[2]  # mcc_ard, psi = 0.2
    res = tasks.run_cell(spec, cell)
    assert res.status == records.STATUS_DONE
    cands = grid.cv_candidates(spec.method(cell.method))
    best = cands[int(np.argmin(res.cv_score.mean(axis=1)))]
    assert res.scalars["chosen_kernel_width"] == best["kernel_width"]
    assert res.coef.shape == (spec.data.n_features,)
    again = tasks.run_cell(spec, cell)
    np.testing.assert_array_equal(res.coef, again.coef)


def test_cell_cv_scores_are_scikit_learns_cross_val_scores(smoke_spec):
    """Each candidate's per-fold validation loss against scikit-learn's cross_val_score of the
    same estimator on the same shuffled K folds (validation MAE, the config's cv.score), for
    independent fits (warm_start=false)."""
    import warnings

    from sklearn.model_selection import KFold, cross_val_score

    from mccard_dist import MCCARDRegressor

    spec = smoke_spec()
    cell = grid.cells(spec)[2]  # mcc_ard, psi = 0.2
    assert cell.method == "mcc_ard" and spec.cv.score == "mae"
    res = tasks.run_cell(spec, cell)
    data = spec.data.make_data(cell.seed, cell.psi, cell.tau, None)
    method = spec.method(cell.method)
    kfold = KFold(n_splits=spec.cv.n_folds, shuffle=True, random_state=cell.seed)
    for i, candidate in enumerate(grid.cv_candidates(method)):
        h = candidate["kernel_width"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sklearn = -cross_val_score(MCCARDRegressor(h, **method.params), data.X_train,
                                       data.y_train, cv=kfold, scoring="neg_mean_absolute_error")
        np.testing.assert_allclose(res.cv_score[i], sklearn, rtol=1e-10)


def test_warm_cell_cv_scores_are_a_refitted_estimators_along_the_widths(smoke_spec):
    """With warm_start, each fold's losses are those of one MCCARDRegressor(warm_start=True)
    refitted by hand at the widths from the widest down."""
    import warnings

    from sklearn.model_selection import KFold

    from mccard_dist import MCCARDRegressor

    spec = smoke_spec("+methods.mcc_ard.params.warm_start=true")
    cell = grid.cells(spec)[2]
    method = spec.method(cell.method)
    assert method.params["warm_start"] is True and spec.cv.paths == "width"
    res = tasks.run_cell(spec, cell)
    data = spec.data.make_data(cell.seed, cell.psi, cell.tau, None)
    X, y = data.X_train, data.y_train
    widths = [c["kernel_width"] for c in grid.cv_candidates(method)]
    kfold = KFold(n_splits=spec.cv.n_folds, shuffle=True, random_state=cell.seed)
    for f, (train, val) in enumerate(kfold.split(X)):
        model = MCCARDRegressor(**method.params)
        for i in sorted(range(len(widths)), key=lambda i: -widths[i]):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.set_params(kernel_width=widths[i]).fit(X[train], y[train])
            mae = np.mean(np.abs(y[val] - model.predict(X[val])))
            np.testing.assert_allclose(res.cv_score[i, f], mae, rtol=1e-10)


@pytest.mark.slow  # runs the pipeline into a store
def test_failed_and_pending_cells_are_masked_and_counted(smoke_spec, monkeypatch):
    from mccard_dist.analysis.values import summarize

    from mccard_dist.models import LSARDRegressor

    spec = smoke_spec("experiment.methods=[ls_ard]")
    real_fit = LSARDRegressor.fit

    def failing_fit(estimator, X, y, **kw):
        if X.shape[0] == spec.data.n_train and np.array_equal(y, _y0):
            raise ValueError("injected failure")
        return real_fit(estimator, X, y, **kw)

    cells = grid.cells(spec)
    _y0 = spec.data.make_data(cells[1].seed, cells[1].psi, cells[1].tau).y_train
    monkeypatch.setattr(LSARDRegressor, "fit", failing_fit)
    run_serial(spec)
    ds = open_results(store_path(spec))
    assert int((ds["status"] == 2).sum()) == 1
    failed = ds.isel(model=0, tau=0, psi=0, seed=1)
    assert "injected failure" in str(failed["error"].values)
    assert np.isnan(failed["r"]) and str(failed["status_name"].values) == "failed"
    summary = summarize(ds)
    assert int(summary["n_failed"].sum()) == 1 and int(summary["n_done"].sum()) == 3
    # a pending cell: reset one status by hand
    import zarr

    g = zarr.open_group(str(store_path(spec)), mode="r+")
    g["status"][0, 0, 1, 0] = 0
    ds = open_results(store_path(spec))
    assert np.isnan(ds["r"].values[0, 0, 1, 0])
    summary = summarize(ds)
    assert int(summary["n_pending"].sum()) == 1 and int(summary["n_done"].sum()) == 2


def test_alo_cell_fits_each_candidate_once_and_keeps_the_best_fit(smoke_spec, monkeypatch):
    from mccard_dist.models import MCCARDRegressor

    spec = smoke_spec("cv=alo")
    assert spec.cv.scheme == "alo" and spec.cv.n_columns == 1
    cell = grid.cells(spec)[2]
    method = spec.method(cell.method)
    cands = grid.cv_candidates(method)
    n_fits = []
    real_fit = MCCARDRegressor.fit
    monkeypatch.setattr(MCCARDRegressor, "fit", lambda est, X, y, **kw: n_fits.append(X.shape[0])
                        or real_fit(est, X, y, **kw))
    res = tasks.run_cell(spec, cell)
    assert res.status == records.STATUS_DONE
    # one fit per candidate, all on the whole training set, no refit
    assert n_fits == [spec.data.n_train] * len(cands) == [spec.data.n_train] * grid.fits_per_cell(
        method, spec.cv)
    assert res.cv_score.shape == (len(cands), 1)
    best = int(np.argmin(res.cv_score[:, 0]))
    assert res.scalars["chosen_kernel_width"] == cands[best]["kernel_width"]
    # the score is the loss of the chosen fit's leave-one-out residuals, and its coefficients are
    # those of a plain fit with the chosen width
    data = spec.data.make_data(cell.seed, cell.psi, cell.tau)
    ref = MCCARDRegressor(cands[best]["kernel_width"], **dict(method.params)).fit(data.X_train, data.y_train)
    np.testing.assert_allclose(res.coef, ref.coef_)
    loo = ref.loo_residuals(data.X_train, data.y_train)
    assert res.cv_score[best, 0] == pytest.approx(np.mean(np.abs(loo)))


@pytest.mark.slow  # runs the pipeline into a store
def test_alo_run_writes_one_score_column(smoke_spec):
    spec = smoke_spec("cv=alo", "experiment.methods=[mcc_l1,ls_ard]")
    run_serial(spec)
    ds = open_results(store_path(spec))
    assert ds.sizes["fold"] == 1
    done = ds["status"].values == records.STATUS_DONE
    assert done.all()
    l1 = ds["cv_score"].sel({"model": "mcc_l1"})
    n_l1 = len(grid.cv_candidates(spec.method("mcc_l1")))
    assert np.isfinite(l1.isel(candidate=slice(0, n_l1))).any()


@pytest.mark.slow  # fits two cells of MCC-L1 under cv=alo twice
def test_path_stop_skips_exactly_the_rest_of_a_path_after_a_clearly_worse_score(smoke_spec):
    full = smoke_spec("cv=alo", "experiment.methods=[mcc_l1]",
                      "methods.mcc_l1.grid.alpha_ratio=[0.2,0.8,0.4,0.1,0.05]", name="full")
    cell = [c for c in grid.cells(full) if c.psi > 0][0]
    ref = tasks.run_cell(full, cell)
    cands = grid.cv_candidates(full.method("mcc_l1"))
    margin = 0.05
    stopping = smoke_spec("cv=alo", "experiment.methods=[mcc_l1]",
                          "methods.mcc_l1.grid.alpha_ratio=[0.2,0.8,0.4,0.1,0.05]",
                          f"cv.path_stop={margin}", name="stop")
    res = tasks.run_cell(stopping, cell)
    # the rule replayed on the full scores: per width, penalties from the largest down, stop
    # after the first score above (1 + margin) x the best so far on that width's path
    expected_skipped = set()
    for h in dict.fromkeys(c["kernel_width"] for c in cands):
        path = sorted((c for c in range(len(cands)) if cands[c]["kernel_width"] == h),
                      key=lambda c: -cands[c]["alpha_ratio"])
        best, stop = np.inf, False
        for c in path:
            if stop:
                expected_skipped.add(c)
                continue
            score = ref.cv_score[c, 0]
            stop = score > (1 + margin) * best
            best = min(best, score)
    skipped = {c for c in range(len(cands)) if np.isnan(res.cv_score[c, 0])}
    assert skipped == expected_skipped
    assert expected_skipped, "the test grid must make the rule skip something"
    kept = [c for c in range(len(cands)) if c not in skipped]
    np.testing.assert_allclose(res.cv_score[kept, 0], ref.cv_score[kept, 0])
    best = min(kept, key=lambda c: res.cv_score[c, 0])
    assert res.scalars["chosen_kernel_width"] == cands[best]["kernel_width"]
    assert res.scalars["chosen_alpha_ratio"] == cands[best]["alpha_ratio"]


def test_race_survivors():
    from mccard_dist.models.search import race_survivors

    s = np.array([[1.0, 1.2], [1.1, 1.4], [2.0, 0.1], [np.nan, 1.0], [1.0, 1.0]])
    alive = np.array([True, True, True, True, False])
    # means 1.1, 1.25, 1.05, nan, (1.0 not alive): lowest alive 1.05, margin 0.2 -> <= 1.26
    np.testing.assert_array_equal(race_survivors(s, alive, 0.2),
                                  [True, True, True, False, False])
    np.testing.assert_array_equal(race_survivors(s, alive, 0.01),
                                  [False, False, True, False, False])


@pytest.mark.slow  # runs the pipeline into a store
def test_race_keeps_plain_kfold_scores_for_the_finishers_and_drops_the_rest(smoke_spec,
                                                                              monkeypatch):
    plain = smoke_spec("experiment.methods=[mcc_ard]", "cv.n_folds=4",
                       "methods.mcc_ard.grid.kernel_width=[0.01,0.1,1.0,10.0,100.0]", name="plain")
    cell = [c for c in grid.cells(plain) if c.psi > 0][0]
    ref = tasks.run_cell(plain, cell)
    margin = 0.1
    racing = smoke_spec("experiment.methods=[mcc_ard]", "cv.n_folds=4",
                        "methods.mcc_ard.grid.kernel_width=[0.01,0.1,1.0,10.0,100.0]",
                        f"cv.race={margin}", name="race")
    from mccard_dist.models import MCCARDRegressor

    n_fits = []
    real_fit = MCCARDRegressor.fit
    monkeypatch.setattr(MCCARDRegressor, "fit",
                        lambda est, X, y, **kw: n_fits.append(1) or real_fit(est, X, y, **kw))
    res = tasks.run_cell(racing, cell)
    # replay: after folds 1..3 drop candidates whose mean so far exceeds (1 + margin) x the best
    alive = np.ones(len(ref.cv_score), dtype=bool)
    expected = np.full_like(ref.cv_score, np.nan)
    for f in range(4):
        expected[alive, f] = ref.cv_score[alive, f]
        if f < 3:
            mean = ref.cv_score[:, : f + 1].mean(axis=1)
            alive &= mean <= (1 + margin) * mean[alive].min()
    np.testing.assert_array_equal(np.isnan(res.cv_score), np.isnan(expected))
    np.testing.assert_allclose(res.cv_score[alive], ref.cv_score[alive])
    assert (~alive).any(), "the test grid must make the race drop a candidate"
    assert len(n_fits) == np.isfinite(expected).sum() + 1 < ref.cv_score.size + 1
    # the choice is the best finisher (here the race drops plain K-fold's choice: a small margin
    # can, which is why the docs measure the margin against plain K-fold)
    cands = grid.cv_candidates(plain.method("mcc_ard"))
    finisher = np.flatnonzero(alive)[np.argmin(ref.cv_score[alive].mean(axis=1))]
    assert res.scalars["chosen_kernel_width"] == cands[finisher]["kernel_width"]


@pytest.mark.slow  # K-fold over 15 MCC-L1 candidates, twice per route
@pytest.mark.parametrize("route", ["width", "penalty"])
def test_racing_paths_keep_the_plain_paths_scores_for_the_finishers(smoke_spec, route):
    # a raced-out candidate inside a path is still fitted (not scored), so every later fit of
    # the path starts where it does without racing
    grid_args = ("experiment.methods=[mcc_l1]", "cv.n_folds=4", f"cv.paths={route}",
                 "methods.mcc_l1.grid.kernel_width=[0.05,0.5,5.0,50.0,500.0]",
                 "methods.mcc_l1.grid.alpha_ratio=[0.8,0.4,0.1]")
    plain = smoke_spec(*grid_args, name="plain")
    cell = [c for c in grid.cells(plain) if c.psi > 0][-1]
    ref = tasks.run_cell(plain, cell)
    margin = 0.5
    res = tasks.run_cell(smoke_spec(*grid_args, f"cv.race={margin}", name="race"), cell)
    alive = np.ones(len(ref.cv_score), dtype=bool)
    for f in range(3):
        mean = ref.cv_score[:, : f + 1].mean(axis=1)
        alive &= mean <= (1 + margin) * mean[alive].min()
    assert (~alive).any() and alive.sum() > 1, "the grid must make the race drop some"
    np.testing.assert_array_equal(np.isfinite(res.cv_score[:, -1]), alive)
    np.testing.assert_array_equal(res.cv_score[alive], ref.cv_score[alive])


@pytest.mark.slow  # runs the pipeline into a store
def test_auto_width_methods_fit_once_per_cell_and_record_the_final_width(smoke_spec):
    from mccard_dist import MCCARDRegressor

    spec = smoke_spec("experiment.methods=[mcc_ard_auto,mcc_l1_auto]",
                      "methods.mcc_l1_auto.grid.alpha_ratio=[0.3,0.1]")
    run_serial(spec)
    ds = open_results(store_path(spec)).load()
    assert (ds["status"].values == records.STATUS_DONE).all()
    ard = ds.sel({"model": "mcc_ard_auto"})
    assert np.isnan(ard["cv_score"].values).all()  # no CV at all
    assert np.isnan(ard["chosen_alpha_ratio"].values).all()
    from threadpoolctl import threadpool_limits

    cell = grid.cells(spec)[1]
    data = spec.data.make_data(cell.seed, cell.psi, cell.tau)
    with threadpool_limits(limits=1):  # as a task fits: one BLAS thread, the same sums
        ref = MCCARDRegressor("auto", **dict(spec.method("mcc_ard_auto").params)).fit(
            data.X_train, data.y_train)
    stored = ard.sel(tau=cell.tau, psi=cell.psi, seed=cell.seed)
    assert float(stored["chosen_kernel_width"]) == ref.kernel_width_
    np.testing.assert_array_equal(stored["coef"].values, ref.coef_)
    # MCC-L1: CV over alpha_ratio only; its candidates have no width (the fits set it)
    l1 = ds.sel({"model": "mcc_l1_auto"})
    np.testing.assert_array_equal(l1["alpha_ratio"].values, [0.3, 0.1])
    assert "kernel_width" not in ds.coords  # no method here has a list of widths
    assert np.isfinite(l1["cv_score"].values).all()
    assert set(np.unique(l1["chosen_alpha_ratio"].values)) <= {0.1, 0.3}
    assert (l1["chosen_kernel_width"].values > 0).all()


@pytest.mark.slow  # runs the pipeline into a store
def test_open_results_loads_the_per_cell_variables_and_keeps_the_big_ones_lazy(smoke_spec):
    import dask.array

    spec = smoke_spec("experiment.methods=[mcc_ard]")
    run_serial(spec)
    ds = open_results(store_path(spec))
    assert isinstance(ds["r"].data, np.ndarray)  # numbers, not a dask graph
    assert isinstance(ds["r"].mean("seed").values, np.ndarray)
    assert isinstance(ds["cv_score"].data, dask.array.Array)
    assert isinstance(ds["coef"].data, dask.array.Array)


@pytest.mark.slow  # runs the pipeline into two stores
def test_a_degenerate_final_fit_is_flagged_in_the_store(smoke_spec):
    """At a width far below the residuals the samples lose their weight (unless the ridge start
    interpolates them): such a cell is done, keeps no feature and has ``degenerate`` 1; at the
    smoke grid's widths no cell is degenerate. LS-ARD says 0 or 1; MCC-L1, which has no such
    notion, nothing."""
    tiny = smoke_spec("experiment.methods=[mcc_ard,ls_ard,mcc_l1]",
                      "methods.mcc_ard.grid.kernel_width=[1e-12]", name="tiny")
    usual = smoke_spec("experiment.methods=[mcc_ard]", name="usual")
    for spec in (tiny, usual):
        run_serial(spec)
    ds = open_results(store_path(tiny))
    assert (ds["status"] == 1).all()
    flag = ds["degenerate"].sel(model="mcc_ard")
    assert flag.isin([0, 1]).all() and (flag == 1).any()
    assert (ds["n_selected"].sel(model="mcc_ard").where(flag == 1) == 0).sum() == (flag == 1).sum()
    assert ds["degenerate"].sel(model="ls_ard").isin([0, 1]).all()
    assert ds["degenerate"].sel(model="mcc_l1").isnull().all()
    assert (open_results(store_path(usual))["degenerate"] == 0).all()
    from mccard_dist.analysis.report import _degenerate_lines

    line = _degenerate_lines(ds)[0]
    assert f"`mcc_ard` {int((flag == 1).sum())} of 4" in line and "mcc_l1" not in line


@pytest.mark.slow  # K-fold CV of two methods, by the pipeline and by the CV estimators
def test_the_cv_estimators_and_the_pipeline_give_identical_scores_on_the_same_folds(smoke_spec):
    # one engine: the same candidates on the same folds score the same, bit for bit, whether
    # the pipeline or MCCARDRegressorCV / MCCL1RegressorCV fits them (MCC-L1 along the widths'
    # path at a fixed penalty: the pipeline's penalties are fractions of each fold's alpha_max)
    from mccard_dist import MCCARDRegressorCV, MCCL1RegressorCV

    spec = smoke_spec("experiment.methods=[mcc_ard,mcc_l1]", "cv.n_folds=3", "cv.paths=width",
                      "methods.mcc_l1.grid.alpha_ratio=[0.0]",
                      "methods.mcc_l1.grid.kernel_width=[0.3,3.0,30.0]")
    cell = [c for c in grid.cells(spec) if c.psi > 0][0]
    d = spec.data.make_data(cell.seed, cell.psi, cell.tau)
    splits = tasks.folds(len(d.y_train), spec.cv.n_folds, cell.seed)
    for name, cls, extra in (("mcc_ard", MCCARDRegressorCV, {}),
                             ("mcc_l1", MCCL1RegressorCV, {"alphas": [0.0], "path": "width"})):
        method = spec.method(name)
        losses, failed, _ = tasks.kfold_scores(spec, method, d.X_train, d.y_train, cell.seed)
        widths = [c["kernel_width"] for c in grid.cv_candidates(method)]
        est = cls(widths, cv=splits, **method.params, **extra).fit(d.X_train, d.y_train)
        scores = np.column_stack([est.cv_results_[f"split{k}_test_score"]
                                  for k in range(len(splits))])
        assert failed == 0 and np.isfinite(losses).all()
        np.testing.assert_array_equal(scores, -losses)
        same_cell = [c for c in grid.cells(spec)
                     if c.method == name and c.index[1:] == cell.index[1:]][0]
        result = tasks.run_cell(spec, same_cell, save_coef=True)
        np.testing.assert_array_equal(result.cv_score, losses)
        assert result.scalars["chosen_kernel_width"] == est.kernel_width_
        np.testing.assert_array_equal(result.coef, est.coef_)  # the same refit

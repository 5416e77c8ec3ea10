"""One's own code that fails or says nothing, run as a user runs it: a method whose every fit
raises, in process (serially, and through ``mccard-run`` on a LocalCluster) with the user's own
message carried to the store, the run's output and its exit status; a data generator and a
metric that raise on one cell each, which fail those cells alone."""

import sys

import numpy as np
import pytest

LAB = '''
import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import Lasso
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler


class AlwaysFails(RegressorMixin, BaseEstimator):
    """A regressor whose fit raises on any data: a bug of one's own."""

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y):
        raise ValueError("this estimator always fails")

    def predict(self, X):
        return np.zeros(len(X))


def picky(seed, psi, tau, n=30, d=8):
    """A generator that has no data for seed 1 at psi 0.2 (while FAILLAB_REFUSE is set)."""
    import os

    if seed == 1 and psi == 0.2 and os.environ.get("FAILLAB_REFUSE"):
        raise ValueError(f"no data at seed {seed}, psi {psi}")
    rng = np.random.default_rng([seed, 5])
    coef = np.r_[2.0, -1.0, np.zeros(d - 2)]
    X, X_test = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    out = rng.random(n) < psi
    return {"X_train": X, "y_train": X @ coef + rng.normal(size=n) + tau * out,
            "X_test": X_test, "y_test": X_test @ coef, "coef_true": coef, "outlier_mask": out}


def _picky_metric(ev):
    if ev.cell.seed == 1 and ev.cell.psi == 0.0:
        raise ArithmeticError("no value at seed 1, psi 0")
    return 1.0


from mccard_dist.metrics import Metric  # noqa: E402

picky_metric = Metric("picky", _picky_metric, needs="estimator", better=0, label="picky",
                      heading="picky")
#: NaN on every cell: a bug of one's own
always_nan = Metric("always_nan", lambda ev: float("nan"), needs="prediction", better=0,
                    label="always NaN", heading="always NaN")
#: NaN by design for a method without coef_
kept = Metric("kept", lambda ev: float(np.sum(ev.coef != 0)), needs="coef", better=0,
              label="kept", heading="kept")


class ScaledLasso(Pipeline):
    """A Lasso on standardised features: a Pipeline, whose coefficients are its last step's."""

    def __init__(self, alpha=0.1):
        self.alpha = alpha
        super().__init__([("scale", StandardScaler()), ("lasso", Lasso(alpha=alpha))])

    def fit(self, X, y):
        self.steps[-1][1].set_params(alpha=self.alpha)
        return super().fit(X, y)


def make_lasso(alpha=0.1):
    """A factory function: what it builds is an estimator, it is none."""
    return Lasso(alpha=alpha)


class NoCoef:
    """Predicts the training median: a regressor without coef_."""

    def fit(self, X, y):
        self.median_ = float(np.median(y))
        return self

    def predict(self, X):
        return np.full(len(X), self.median_)
'''


@pytest.fixture
def lab(tmp_path, monkeypatch):
    """A package ``faillab`` on the path and a config folder of one's own (``MCCARD_CONFIG_DIR``)
    with the method ``always_fails`` (two candidates); yields the config folder."""
    pkg = tmp_path / "pkg" / "faillab"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(LAB)
    conf = tmp_path / "conf"
    (conf / "method").mkdir(parents=True)
    (conf / "method" / "always_fails.yaml").write_text(
        "estimator: faillab:AlwaysFails\ngrid:\n  alpha: [0.1, 10.0]\n")
    (conf / "method" / "no_coef.yaml").write_text("estimator: faillab:NoCoef\n")
    (conf / "method" / "factory.yaml").write_text("estimator: faillab:make_lasso\n")
    (conf / "method" / "scaled_lasso.yaml").write_text(
        "estimator: faillab:ScaledLasso\ngrid:\n  alpha: [0.05, 0.5]\n")
    monkeypatch.syspath_prepend(str(tmp_path / "pkg"))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "pkg"))  # the cluster's workers
    monkeypatch.setenv("MCCARD_CONFIG_DIR", str(conf))
    monkeypatch.setenv("FAILLAB_REFUSE", "1")
    monkeypatch.delitem(sys.modules, "faillab", raising=False)
    from mccard_dist.config import data as data_config
    from mccard_dist.data import generated

    caches = (generated.generator_function, data_config._probe)
    for cached in caches:
        cached.cache_clear()
    yield conf
    for cached in caches:
        cached.cache_clear()
    sys.modules.pop("faillab", None)


#: a method beside MCC-ARD's shipped baseline, on two cells each
METHODS = ["experiment.methods=[ls_ard,always_fails]", "experiment.seeds.count=1",
           "run.progress=false"]
SAID = "ValueError: this estimator always fails"


def test_every_fit_failing_stores_the_first_error_and_the_report_names_the_method(lab, tmp_path):
    from mccard_dist import compose, open_results
    from mccard_dist.analysis.edges import cv_failure_warnings
    from mccard_dist.records import STATUS_DONE, STATUS_FAILED
    from mccard_dist.runner import run_serial

    spec = compose("smoke", [*METHODS, f"store.path={tmp_path / 's.zarr'}"])
    report = run_serial(spec)
    ds = open_results(report.store_path)
    mine = ds.sel(model="always_fails")
    assert (mine["status"] == STATUS_FAILED).all() and (
        ds["status"].sel(model="ls_ard") == STATUS_DONE).all()
    n_fits = 2 * ds.sizes["fold"]  # two candidates on every fold
    for error in mine["error"].values.ravel():
        assert error == (f"ValueError: every candidate failed on at least one fold "
                         f"({n_fits} failed fits; first: {SAID})")
    np.testing.assert_array_equal(mine["n_cv_failures"].values.ravel(), [n_fits, n_fits])
    # the run's warning line, with the first error, and what became of those cells
    (line,) = cv_failure_warnings(ds, report.cv_errors)
    assert line == (f"always_fails: {2 * n_fits} CV fit(s) failed in 2 of 2 finished cells "
                    f"(first: {SAID}); those cells failed (their error says why)")
    assert report.methods_without_cells == {"always_fails": (2, mine["error"].values.ravel()[0])}


def test_methodcv_whose_every_fit_fails_says_the_first_error(lab):
    from mccard_dist import MethodCV

    X = np.random.default_rng(0).normal(size=(30, 4))
    with pytest.raises(ValueError, match=f"failed fits; first: {SAID}\\)$"):
        MethodCV("always_fails", cv=3).fit(X, X[:, 0])


@pytest.mark.slow
@pytest.mark.cluster
def test_a_method_that_finished_no_cell_ends_the_run_non_zero_after_the_table(lab, tmp_path,
                                                                             monkeypatch, capfd):
    from mccard_dist import cli, open_results

    store = tmp_path / "cli.zarr"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["mccard-run", "experiment=smoke", *METHODS,
                                      "experiment.metrics=[faillab:always_nan]",
                                      "cluster.n_workers=1", f"store.path={store}"])
    with pytest.raises(SystemExit) as info:
        cli.run()
    out, err = capfd.readouterr()
    first = str(open_results(store)["error"].sel(model="always_fails").values.ravel()[0])
    assert SAID in first
    assert str(info.value.code) == (f"error: always_fails finished no cell (2 failed; first: "
                                    f"{first}); run.retry_failed=true runs their cells again "
                                    "(with run.allow_mixed_versions=true once their code "
                                    "changed)")
    # the table and the other method's results first, and the warning with the user's message
    assert "ls_ard" in out and "results: " in out
    said = [line for line in (out + err).splitlines() if "CV fit(s) failed" in line]
    assert len(said) == 1 and f"(first: {SAID})" in said[0], out + err
    assert (open_results(store)["status"].sel(model="ls_ard") == 1).all()
    # a metric NaN in every cell of the method that finished its cells, said once
    said = [line for line in (out + err).splitlines() if "always_nan" in line]
    assert len(said) == 1 and said[0].endswith(
        "metric always_nan is NaN in every done cell of ls_ard (shown as -): check what its "
        "function returns"), out + err


def test_a_metric_nan_in_every_cell_is_said_once_unless_nan_by_design(lab, tmp_path):
    from mccard_dist import compose, open_results
    from mccard_dist.analysis.values import nan_metric_warnings
    from mccard_dist.runner import run_serial

    spec = compose("smoke", ["experiment.methods=[ls_ard,no_coef]", "experiment.seeds.count=1",
                             "experiment.metrics=[faillab:always_nan,faillab:kept]",
                             "run.progress=false", f"store.path={tmp_path / 'nan.zarr'}"])
    ds = open_results(run_serial(spec).store_path)
    assert (ds["status"] == 1).all() and ds["always_nan"].isnull().all()
    assert ds["kept"].sel(model="no_coef").isnull().all()  # no coef_: NaN by design
    assert nan_metric_warnings(ds) == [
        "metric always_nan is NaN in every done cell of ls_ard, no_coef (shown as -): check what "
        "its function returns"]


#: the generator of one's own and its metric, each raising on one cell of the smoke grid
PICKY = ["experiment=smoke", "data=generator", "data.generator=faillab:picky",
         "experiment.metrics=[faillab:picky_metric]", "experiment.methods=[ls_ard]",
         "run.progress=false"]


def test_a_cell_whose_data_or_metric_raises_fails_alone_and_retry_failed_runs_it(lab, tmp_path,
                                                                                monkeypatch):
    from mccard_dist import compose, open_results
    from mccard_dist.records import STATUS_DONE, STATUS_FAILED
    from mccard_dist.runner import run_serial

    path = tmp_path / "picky.zarr"
    report = run_serial(compose(overrides=[*PICKY, f"store.path={path}"]))
    assert report.complete and not report.block_errors
    ds = open_results(path).sel(model="ls_ard", tau=5.0)
    assert ds["status"].sel(seed=1, psi=0.2) == STATUS_FAILED
    assert str(ds["error"].sel(seed=1, psi=0.2).values) == (
        "the cell's data: ValueError: no data at seed 1, psi 0.2")
    assert ds["status"].sel(seed=1, psi=0.0) == STATUS_FAILED
    assert "metric picky: ArithmeticError: no value at seed 1, psi 0" in str(
        ds["error"].sel(seed=1, psi=0.0).values)
    assert (ds["status"].sel(seed=0) == STATUS_DONE).all()
    assert report.n_failed_cells == 2 and report.n_cells_written == 4

    # the generator fixed: run.retry_failed runs that cell again, and only the failed cells
    monkeypatch.delenv("FAILLAB_REFUSE")
    again = run_serial(compose(overrides=[*PICKY, f"store.path={path}", "run.retry_failed=true"]))
    assert again.n_cells_written == 2
    ds = open_results(path).sel(model="ls_ard", tau=5.0)
    assert ds["status"].sel(seed=1, psi=0.2) == STATUS_DONE
    assert ds["status"].sel(seed=1, psi=0.0) == STATUS_FAILED  # its metric still raises


def test_under_run_unit_fit_a_cell_whose_data_raise_fails_with_the_error(lab, tmp_path):
    from mccard_dist import compose, tasks
    from mccard_dist.grid import Cell, cv_units
    from mccard_dist.records import STATUS_FAILED

    spec = compose(overrides=[*PICKY, "experiment.methods=[mcc_ard]",
                              f"store.path={tmp_path / 'fit.zarr'}"])
    spec.check_data()
    cell = Cell("mcc_ard", 5.0, 0.2, 1, (0, 0, 1, 1))
    units = cv_units(spec.method("mcc_ard"), spec.cv)
    scores, failed, _, error = tasks.cv_fit(spec, cell, 0, 0)
    assert np.isnan(scores).all() and len(scores) == len(units[0]) and failed == 0
    assert error == ""
    result = tasks.finish_cell(spec, cell, None, 0, 0.0)
    assert result.status == STATUS_FAILED
    assert result.error == "the cell's data: ValueError: no data at seed 1, psi 0.2"


def test_a_pipeline_as_a_method_is_scored_on_its_last_steps_coefficients(lab, tmp_path):
    """A Pipeline has no coef_: the selection metrics and the stored coefficients are its last
    step's (the features a scaler passes on are the same features), its predictions its own."""
    from mccard_dist import compose, open_results
    from mccard_dist.runner import run_serial

    spec = compose("smoke", ["experiment.methods=[scaled_lasso]", "experiment.seeds.count=1",
                             "run.progress=false", f"store.path={tmp_path / 'pipe.zarr'}"])
    ds = open_results(run_serial(spec).store_path).sel(model="scaled_lasso")
    assert (ds["status"] == 1).all()
    assert np.isfinite(ds["f1"]).all() and np.isfinite(ds["coef"]).all()
    # the stored coefficients are the refit's last step's, on the cell's own data
    import faillab

    cell = spec.data.make_data(0, 0.2, 5.0)
    alpha = float(ds["chosen_alpha"].sel(psi=0.2, seed=0, tau=5.0))
    refit = faillab.ScaledLasso(alpha=alpha).fit(cell.X_train, cell.y_train)
    np.testing.assert_allclose(ds["coef"].sel(psi=0.2, seed=0, tau=5.0), refit[-1].coef_)
    assert int(ds["n_selected"].sel(psi=0.2, seed=0, tau=5.0)) == np.count_nonzero(
        refit[-1].coef_)


def test_a_factory_function_named_as_estimator_is_told_to_name_a_class(lab):
    from mccard_dist import compose
    from mccard_dist.errors import UsageError

    with pytest.raises(UsageError) as info:
        compose("smoke", ["experiment.methods=[factory]"])
    said = str(info.value)
    assert said == ("methods.factory.estimator: faillab:make_lasso is a function, not a class: "
                    "name an estimator class, with fit(X, y) and predict(X) (to use what a "
                    "function builds, wrap it in a class whose fit builds it and fits it), got "
                    "'faillab:make_lasso'")
    assert "package is installed" not in said

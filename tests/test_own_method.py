"""A regressor of one's own, run as a user runs it: a package in a folder of its own (not
importable from the repository), a method file in a config folder of one's own, ``mccard-run`` in
a subprocess, killed and resumed, then the report. And the routes by which a command line or a
config other than a method file would name code to import, each refused before any import."""

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

pytestmark = pytest.mark.slow  # subprocesses and small pipeline runs

PACKAGE = '''
import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

__version__ = "0.3"


class TrimmedRidge(RegressorMixin, BaseEstimator):
    """Ridge regression refitted without the largest residuals: coef_, but no n_iter_ nor
    converged_."""

    mccard_method = {"label": "Trimmed ridge", "bounds": (("trim", 0.0, 0.5),)}

    def __init__(self, alpha=1.0, trim=0.1):
        self.alpha = alpha
        self.trim = trim

    def fit(self, X, y):
        X, y = np.asarray(X, float), np.asarray(y, float)
        keep = np.ones(len(y), bool)
        for _ in range(2):
            mx, my = X[keep].mean(0), y[keep].mean()
            Xc = X[keep] - mx
            self.coef_ = np.linalg.solve(Xc.T @ Xc + self.alpha * np.eye(X.shape[1]),
                                         Xc.T @ (y[keep] - my))
            self.intercept_ = my - mx @ self.coef_
            residual = np.abs(y - self.predict(X))
            keep = residual <= np.quantile(residual, 1 - self.trim)
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        return np.asarray(X, float) @ self.coef_ + self.intercept_


class MedianOnly:
    """Predicts a shrunk least-squares fit and nothing more: a plain class with fit and predict
    (no scikit-learn base class, no coef_, no n_features_in_)."""

    def __init__(self, shrink=0.5):
        self.shrink = shrink

    def fit(self, X, y):
        X, y = np.asarray(X, float), np.asarray(y, float)
        self._w = self.shrink * np.linalg.lstsq(X, y - np.median(y), rcond=None)[0]
        self._b = np.median(y)
        return self

    def predict(self, X):
        return np.asarray(X, float) @ self._w + self._b


class Misnamed(MedianOnly):
    """Fits, then predicts from an attribute its fit never set: code to change, not data."""

    def predict(self, X):
        return np.asarray(X, float) @ self.weights_


class SolvedRidge(RegressorMixin, BaseEstimator):
    """scikit-learn's Ridge whose solver a rule of its own picks from the training data's shape
    (its declared ``resolve_params``), not MCC-ARD's."""

    mccard_method = {"solver_params": ("solver",), "resolve_params": "mylab.robust:pick_solver"}

    def __init__(self, alpha=1.0, solver="auto"):
        self.alpha = alpha
        self.solver = solver

    def fit(self, X, y):
        from sklearn.linear_model import Ridge

        ridge = Ridge(alpha=self.alpha, solver=self.solver).fit(X, y)
        self.coef_, self.intercept_, self.solver_ = ridge.coef_, ridge.intercept_, self.solver
        return self

    def predict(self, X):
        return np.asarray(X, float) @ self.coef_ + self.intercept_


def pick_solver(params, n_samples, n_features):
    if params["solver"] != "auto":
        return params
    return {**params, "solver": "cholesky" if n_samples > n_features else "svd"}


class OtherMedian(MedianOnly):
    """MedianOnly under another name: the estimator a command line swaps in."""
'''

METHOD = """# A trimmed ridge regression of one's own, CV over two of its parameters.
estimator: mylab.robust:TrimmedRidge
params: {}
grid:
  alpha: [0.3, 3.0, 30.0]
  trim: [0.05, 0.2]
"""

NO_COEF = """estimator: mylab.robust:MedianOnly
params: {}
grid:
  shrink: [0.25, 0.5, 1.0]
"""

SIM = '''
import numpy as np


def hetero(seed, psi, tau, n=40, d=12, k=3, slope=1.0):
    """Noise growing with |x_0| (slope), a share psi of the rows shifted by tau."""
    rng = np.random.default_rng([seed, 3])
    coef = np.zeros(d)
    coef[:k] = rng.normal(size=k) + 1.0
    X, X_test = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    noise = rng.normal(size=n) * (0.1 + slope * np.abs(X[:, 0]))
    out = rng.random(n) < psi
    noise[out] += tau
    return {"X_train": X, "y_train": X @ coef + noise, "X_test": X_test,
            "y_test": X_test @ coef, "coef_true": coef, "outlier_mask": out}
'''

METRICS = '''
import numpy as np
from mccard_dist.metrics import Metric


def _inlier_mae(ev):
    clean = ~ev.data.outlier_mask
    return float(np.mean(np.abs(ev.data.y_train[clean]
                                - ev.estimator.predict(ev.data.X_train[clean]))))


inlier_mae = Metric("inlier_mae", _inlier_mae, needs="estimator", better=-1, label="inlier MAE",
                    heading="training MAE on the clean rows (units of y)", shown=True)
'''


@pytest.fixture
def user(tmp_path):
    """``(env, folder)``: a package ``mylab`` and a config folder with its method files."""
    pkg = tmp_path / "pkg" / "mylab"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('__version__ = "0.3"\n')
    (pkg / "robust.py").write_text(PACKAGE)
    (pkg / "sim.py").write_text(SIM)
    (pkg / "metrics.py").write_text(METRICS)
    conf = tmp_path / "conf"
    (conf / "method").mkdir(parents=True)
    (conf / "method" / "trimmed_ridge.yaml").write_text(METHOD)
    (conf / "method" / "median_only.yaml").write_text(NO_COEF)
    (conf / "method" / "misnamed.yaml").write_text("estimator: mylab.robust:Misnamed\n")
    (conf / "method" / "ridge.yaml").write_text(
        "estimator: sklearn.linear_model:Ridge\nparams: {}\ngrid:\n  alpha: [0.1, 1.0, 10.0]\n")
    (conf / "method" / "solved_ridge.yaml").write_text(
        "estimator: mylab.robust:SolvedRidge\nparams: {}\ngrid:\n  alpha: [0.1, 1.0, 10.0]\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "pkg"), "MCCARD_CONFIG_DIR": str(conf),
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    return env, tmp_path


def _run(env, cwd, *args, timeout=240):
    return subprocess.run(["mccard-run", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


#: (a) scikit-learn's Ridge with a grid over alpha, (b) a class with only fit and predict, (c) a
#: class declaring solver_params and a solver rule of its own, (d) a metric of the fitted
#: estimator, (e) a data generator with a parameter of its own; beside MCC-ARD
GRID = ["experiment=smoke",
        "experiment.methods=[mcc_ard,trimmed_ridge,ridge,median_only,solved_ridge]",
        "experiment.metrics=[mylab.metrics:inlier_mae]", "data=generator",
        "data.generator=mylab.sim:hetero", "+data.params.slope=0.5",
        "experiment.seeds.count=3", "methods.mcc_ard.grid.kernel_width=[0.3,3.0]",
        "run.block_seconds=0", "cluster.n_workers=1", "run.progress=false"]
#: what differs between two runs of the same cells: times
TIMES = ("fit_seconds", "cell_seconds")


def _done(path: Path) -> int:
    try:
        return int((xr.open_zarr(path)["status"].values == 1).sum())
    except Exception:  # noqa: BLE001 - not written yet, or being written
        return 0


def test_ones_own_regressor_runs_is_killed_resumes_and_reports_beside_mcc_ard(user):
    env, tmp = user
    reference = _run(env, tmp, *GRID, f"store.path={tmp}/reference.zarr")
    assert reference.returncode == 0, reference.stderr[-2000:]

    killed = tmp / "killed.zarr"
    proc = subprocess.Popen(["mccard-run", *GRID, f"store.path={killed}"], env=env, cwd=tmp,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 180
    while _done(killed) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    n_cells = xr.open_zarr(tmp / "reference.zarr")["status"].size
    assert 0 < _done(killed) < n_cells, "the kill came before the first or after the last cell"
    resumed = _run(env, tmp, *GRID, f"store.path={killed}")
    assert resumed.returncode == 0, resumed.stderr[-2000:]

    a, b = xr.open_zarr(tmp / "reference.zarr"), xr.open_zarr(killed)
    assert (b["status"] == 1).all()
    for name in a.data_vars:
        if name not in TIMES:
            assert a[name].equals(b[name]), name
    mine = a.sel(model="trimmed_ridge")
    assert np.isfinite(mine["f1"]).all() and np.isfinite(mine["coef"]).all()
    assert np.isnan(mine["n_iter"]).all() and np.isnan(mine["converged"]).all()
    described = json.loads(a.attrs["grid_description"])["methods"]["trimmed_ridge"]
    assert described["estimator"] == "mylab.robust:TrimmedRidge" and described["version"] == "0.3"
    assert set(described["grid"]) == {"alpha", "trim"}
    assert set(np.unique(a["chosen_trim"].sel(model="trimmed_ridge"))) <= {0.05, 0.2}

    # the report takes the class's declared label from the store: its package need not be
    # importable where the store is read
    assert json.loads(a.attrs["kinds"])["trimmed_ridge"]["label"] == "Trimmed ridge"
    off_path = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    versus = subprocess.run(["mccard-report", str(killed), "--versus", "mcc_ard"], env=off_path,
                            cwd=tmp, capture_output=True, text=True, timeout=240)
    assert versus.returncode == 0, versus.stderr[-2000:]
    assert "MCC-ARD − Trimmed ridge" in versus.stdout
    html = subprocess.run(["mccard-report", str(killed), "--html", "--out", str(tmp / "rep")],
                          env=off_path, cwd=tmp, capture_output=True, text=True, timeout=240)
    assert html.returncode == 0, html.stderr[-2000:]
    page = (tmp / "rep" / "report.html").read_text()
    assert "Trimmed ridge" in page and "training MAE on the clean rows" in page
    assert "| inlier MAE |" in versus.stdout.split("\n\n")[1]
    # every method in a colour and a marker of its own, each drawn in the page
    from mccard_dist.analysis.values import method_style

    methods = [str(m) for m in a["model"].values]
    styles = [method_style(m, methods, b) for m in methods]
    assert len({(st["color"], st["marker"]) for st in styles}) == len(methods)
    assert len({st["color"] for st in styles}) == len(methods)
    assert all(st["color"] in page for st in styles)
    # (b), (c), (d), (e) as declared
    assert np.isnan(a["coef"].sel(model="median_only")).all()
    assert np.isfinite(a["inlier_mae"]).all()
    assert json.loads(a.attrs["grid_description"])["data"]["params"] == {"slope": 0.5}
    solved = a["chosen_alpha"].sel(model="solved_ridge")
    assert np.isin(solved, [0.1, 1.0, 10.0]).all()
    assert "trimmed_ridge" in (tmp / "rep" / "report.html").read_text()


def test_a_regressor_without_coef_gives_r_and_rmse_and_nan_selection(user):
    env, tmp = user
    store = tmp / "nocoef.zarr"
    done = _run(env, tmp, "experiment=smoke", "experiment.methods=[median_only]",
                "experiment.seeds.count=1", "run.progress=false", f"store.path={store}")
    assert done.returncode == 0, done.stderr[-2000:]
    ds = xr.open_zarr(store)
    assert (ds["status"] == 1).all()
    assert np.isfinite(ds["r"]).all() and np.isfinite(ds["rmse"]).all()
    for name in ("f1", "precision", "recall", "n_selected", "coef"):
        assert np.isnan(ds[name]).all(), name


def test_methodcv_takes_an_estimator_class_or_object_with_a_grid(user, monkeypatch):
    """``MethodCV(Ridge(fit_intercept=False), grid=...)`` chooses and refits as scikit-learn's
    GridSearchCV does on the same folds and score; a plain class with only fit and predict runs
    from its class and from its method file; a class that cannot be imported by path is refused
    in one line."""
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import GridSearchCV, KFold

    env, tmp = user
    monkeypatch.setenv("MCCARD_CONFIG_DIR", env["MCCARD_CONFIG_DIR"])
    monkeypatch.syspath_prepend(str(tmp / "pkg"))
    for name in ("mylab", "mylab.robust"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    from mccard_dist import MethodCV

    rng = np.random.default_rng(3)
    X = rng.normal(size=(90, 8))
    y = X[:, :3] @ [2.0, -1.0, 0.5] + rng.standard_t(2, size=90)
    folds = KFold(4, shuffle=True, random_state=1)
    grid = {"alpha": [0.01, 0.3, 3.0, 30.0, 300.0]}
    ours = MethodCV(Ridge(fit_intercept=False), grid=grid, cv=folds).fit(X, y)
    theirs = GridSearchCV(Ridge(fit_intercept=False), grid, cv=folds,
                          scoring="neg_mean_absolute_error").fit(X, y)
    assert ours.best_params_ == theirs.best_params_
    assert ours.best_estimator_.fit_intercept is False
    np.testing.assert_allclose(ours.cv_results_["mean_test_score"],
                               theirs.cv_results_["mean_test_score"], rtol=1e-12)
    np.testing.assert_allclose(ours.coef_, theirs.best_estimator_.coef_, rtol=1e-12)

    from mylab.robust import MedianOnly

    for plain in (MethodCV(MedianOnly, grid={"shrink": [0.25, 0.5, 1.0]}, cv=3),
                  MethodCV("median_only", cv=3)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # a choice at the grid's edge
            plain.fit(X, y)
        assert plain.best_params_["shrink"] in (0.25, 0.5, 1.0)
        assert not hasattr(plain, "coef_")
        assert np.isfinite(plain.score(X, y))

    def nested():
        class Inner(MedianOnly):
            pass
        return Inner

    with pytest.raises(ValueError, match="cannot be imported as") as refused:
        MethodCV(nested(), grid={"shrink": [0.5]}).fit(X, y)
    assert len(str(refused.value).splitlines()) == 1


def test_a_class_whose_code_fails_is_refused_in_one_line_before_any_store(user):
    """A method whose predict reads an attribute its fit never set fails on every cell: the run
    says so in one line naming the method, from a trial fit, before a store or cluster exists."""
    env, tmp = user
    store = tmp / "never.zarr"
    run = _run(env, tmp, "experiment=smoke", "experiment.methods=[mcc_ard,misnamed]",
               "run.progress=false", f"store.path={store}")
    assert run.returncode != 0
    said = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(said) <= 2, run.stderr
    assert "methods.misnamed: a trial fit of Misnamed" in run.stderr
    assert "AttributeError" in run.stderr and "weights_" in run.stderr
    assert "Traceback" not in run.stderr and not store.exists()


def test_a_method_the_command_line_names_runs(user):
    """The command line is the user's: a method's estimator set there is the one that runs, and
    the store names it."""
    env, tmp = user
    store = tmp / "mine.zarr"
    done = _run(env, tmp, "experiment=smoke", "methods.median_only.estimator=mylab.robust:OtherMedian",
                "experiment.methods=[median_only]", "experiment.seeds.count=1",
                "run.progress=false", f"store.path={store}")
    assert done.returncode == 0, done.stderr[-2000:]
    ds = xr.open_zarr(store)
    assert (ds["status"] == 1).all() and np.isfinite(ds["rmse"]).all()
    described = json.loads(ds.attrs["grid_description"])["methods"]["median_only"]
    assert described["estimator"] == "mylab.robust:OtherMedian"


def test_methodcv_runs_a_method_of_ones_own_folder(user, monkeypatch):
    """``MethodCV("trimmed_ridge")``: the pipeline's CV of one's own method in one estimator (a
    class without scikit-learn's parameter constraints)."""
    env, tmp = user
    monkeypatch.setenv("MCCARD_CONFIG_DIR", env["MCCARD_CONFIG_DIR"])
    monkeypatch.syspath_prepend(str(tmp / "pkg"))
    monkeypatch.delitem(sys.modules, "mylab", raising=False)
    monkeypatch.delitem(sys.modules, "mylab.robust", raising=False)
    from mccard_dist import MethodCV

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 6))
    y = X[:, 0] - X[:, 1] + 0.1 * rng.normal(size=80)
    model = MethodCV("trimmed_ridge", cv=3).fit(X, y)
    assert set(model.best_params_) == {"alpha", "trim"}
    assert type(model.best_estimator_).__name__ == "TrimmedRidge"
    assert model.score(X, y) > 0.9
    sys.modules.pop("mylab", None)
    sys.modules.pop("mylab.robust", None)


def test_a_method_file_with_a_shipped_name_is_said_to_replace_it_and_reported_by_its_name(user):
    """``method/ls_ard.yaml`` of one's own folder replaces the shipped LS-ARD: the run says so in
    its first line, and the report calls it ``ls_ard``, not the paper's LS-ARD, nor checks the
    paper's claims about LS-ARD against it."""
    env, tmp = user
    conf = Path(env["MCCARD_CONFIG_DIR"])
    (conf / "method" / "ls_ard.yaml").write_text("estimator: mylab.robust:TrimmedRidge\n"
                                                  "grid:\n  alpha: [1.0]\n")
    store = tmp / "clash.zarr"
    done = _run(env, tmp, "experiment=smoke", "experiment.methods=[mcc_ard,ls_ard]",
                "experiment.seeds.count=1", "run.progress=false", f"store.path={store}")
    assert done.returncode == 0, done.stderr[-2000:]
    said = [line for line in (done.stdout + done.stderr).splitlines() if "replaces" in line]
    assert len(said) == 1 and f"{conf / 'method' / 'ls_ard.yaml'} replaces the shipped method " \
        "ls_ard" in said[0], said
    report = subprocess.run(["mccard-report", str(store), "--out", str(tmp / "rep")], env=env,
                            cwd=tmp, capture_output=True, text=True, timeout=240)
    assert report.returncode == 0, report.stderr[-2000:]
    text = (tmp / "rep" / "report.md").read_text()
    assert "LS-ARD (`ls_ard`)" not in text and "`ls_ard`" in text
    from mccard_dist import open_results
    from mccard_dist.analysis.claims import NOT_IN_GRID, check_claims

    parts = [part for claim in check_claims(open_results(store)) for part in claim.parts
             if "LS-ARD" in part.quantity]
    assert parts and all(part.verdict == NOT_IN_GRID for part in parts)


def test_an_edit_of_ones_estimator_body_is_refused_by_name_a_docstring_is_not(user, monkeypatch):
    """The store's fingerprint holds the hash of the file of one's estimator class: a resume after
    a docstring edit goes on; after an edit of its code, with ``__version__`` unchanged, it is
    refused in one line naming the method, and ``run.allow_mixed_versions=true`` goes on."""
    from mccard_dist import compose
    from mccard_dist.errors import UsageError
    from mccard_dist.store import ResultsStore

    env, tmp = user
    monkeypatch.syspath_prepend(env["PYTHONPATH"])
    monkeypatch.setenv("MCCARD_CONFIG_DIR", env["MCCARD_CONFIG_DIR"])
    for name in ("mylab", "mylab.robust"):  # this test's package, not another test's
        monkeypatch.delitem(sys.modules, name, raising=False)
    overrides = ["experiment.methods=[trimmed_ridge]", f"store.path={tmp / 'own.zarr'}"]
    ResultsStore.open_or_create(compose("smoke", overrides))
    source = Path(env["PYTHONPATH"]) / "mylab" / "robust.py"
    text = source.read_text()
    source.write_text(text.replace('"""Ridge regression', '"""Edited. Ridge regression', 1))
    assert source.read_text() != text
    ResultsStore.open_or_create(compose("smoke", overrides))
    fitted = "self.n_features_in_ = X.shape[1]\n"
    source.write_text(source.read_text().replace(fitted, fitted.replace("]", "] + 0"), 1))
    with pytest.raises(UsageError) as info:
        ResultsStore.open_or_create(compose("smoke", overrides))
    said = str(info.value)
    assert "\n" not in said and "trimmed_ridge's estimator code (mylab.robust:TrimmedRidge)" in said
    assert "code fingerprint" not in said  # the package is as it was
    ResultsStore.open_or_create(compose("smoke", [*overrides, "run.allow_mixed_versions=true"]))


@pytest.mark.parametrize("unit", ["cell", "fit"])
def test_failed_cv_fits_are_said_per_method_with_the_first_error(user, unit):
    """A grid value whose every fit raises (``trim=1.5``: a quantile outside [0, 1]): CV chooses
    among the others, and the run's warnings and the report say how many fits failed, the run
    with the first error."""
    env, tmp = user
    store = tmp / f"failing-{unit}.zarr"
    done = _run(env, tmp, "experiment=smoke", "experiment.methods=[trimmed_ridge]",
                "experiment.seeds.count=1", "methods.trimmed_ridge.grid.trim=[0.05,1.5]",
                f"run.unit={unit}", "run.progress=false", f"store.path={store}")
    assert done.returncode == 0, done.stderr[-2000:]
    ds = xr.open_zarr(store)
    n_fits = int(ds["n_cv_failures"].sum())
    assert n_fits == 2 * 3 * ds.sizes["fold"]  # 2 cells x 3 alphas x the folds, at trim=1.5
    said = [line for line in (done.stdout + done.stderr).splitlines() if "CV fit(s) failed" in line]
    assert len(said) == 1 and (f"trimmed_ridge: {n_fits} CV fit(s) failed in 2 of 2 finished "
                               "cells (first: ValueError: Quantiles must be in the range [0, 1])"
                               in said[0]), said
    assert set(np.unique(ds["chosen_trim"].values)) == {0.05}
    report = subprocess.run(["mccard-report", str(store), "--out", str(tmp / f"rep-{unit}")],
                            env=env, cwd=tmp, capture_output=True, text=True, timeout=240)
    assert report.returncode == 0, report.stderr[-2000:]
    assert (f"trimmed_ridge: {n_fits} CV fit(s) failed in 2 of 2 finished cells; CV chose among "
            "the others" in (tmp / f"rep-{unit}" / "report.md").read_text())


def test_a_finished_store_rerun_after_an_edit_of_ones_estimator_says_its_code_differs(
        user, monkeypatch, caplog):
    """Nothing is left to compute, so the edit is not refused; one line says which method's code
    differs from the code that computed the results, and how to compute them with this code."""
    import logging

    from mccard_dist import compose
    from mccard_dist.runner import run_experiment, run_serial

    env, tmp = user
    monkeypatch.syspath_prepend(env["PYTHONPATH"])
    monkeypatch.setenv("MCCARD_CONFIG_DIR", env["MCCARD_CONFIG_DIR"])
    for name in ("mylab", "mylab.robust"):  # this test's package, not another test's
        monkeypatch.delitem(sys.modules, name, raising=False)
    overrides = ["experiment.methods=[trimmed_ridge]", f"store.path={tmp / 'own.zarr'}",
                 "run.progress=false"]
    run_serial(compose("smoke", overrides))
    with caplog.at_level(logging.WARNING, logger="mccard_dist"):
        assert run_experiment(compose("smoke", overrides)).n_pending_before == 0
    assert not [r for r in caplog.records if "computed by other code" in r.getMessage()]
    source = Path(env["PYTHONPATH"]) / "mylab" / "robust.py"
    source.write_text(source.read_text().replace("self.alpha * np.eye", "2 * self.alpha * np.eye"))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="mccard_dist"):
        assert run_experiment(compose("smoke", overrides)).n_pending_before == 0
    (said,) = [r.getMessage() for r in caplog.records if "computed by other code" in r.getMessage()]
    assert "\n" not in said and said.startswith("note: the results in ")
    assert "trimmed_ridge's estimator code (mylab.robust:TrimmedRidge)" in said
    assert "give a new store.path" in said

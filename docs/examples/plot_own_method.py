"""
Your own method, metric and data beside MCC-ARD
===============================================

A regressor, a metric and a data generator of your own run through the same grid, CV, store and
report as the built-in ones: a method file names the class by import path, gives its fixed
``params`` and a CV ``grid`` over its constructor's parameters; ``experiment.metrics`` names the
metric and ``data=generator`` the generator, each by import path. Here all three are defined in
this script, so they are importable only in this process (``__main__:TrimmedRidge``): the grid
runs with :func:`mccard_dist.run` on a Dask client of threads in this process. In a package of
your own (``mylab.robust:TrimmedRidge``) they run with ``mccard-run`` on any cluster, as
:doc:`../user_guide/extending` shows.
"""

import tempfile
from pathlib import Path

import numpy as np
from distributed import Client
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import Ridge

import mccard_dist
from mccard_dist.analysis.compare import versus_report
from mccard_dist.metrics import Metric


class TrimmedRidge(RegressorMixin, BaseEstimator):
    """Ridge regression refitted without the share ``trim`` of training rows that have the
    largest absolute residuals: a simple robust regressor with two hyper-parameters."""

    def __init__(self, alpha=1.0, trim=0.1):
        self.alpha = alpha
        self.trim = trim

    def fit(self, X, y):
        ridge = Ridge(alpha=self.alpha).fit(X, y)
        residuals = np.abs(y - ridge.predict(X))
        keep = residuals <= np.quantile(residuals, 1.0 - self.trim)
        ridge = Ridge(alpha=self.alpha).fit(X[keep], y[keep])
        self.coef_, self.intercept_ = ridge.coef_, ridge.intercept_  # the selection metrics
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        return X @ self.coef_ + self.intercept_


# %%
# A data generator: a pure function of the cell's key ``(seed, psi, tau)`` and parameters of its
# own, returning the training and test arrays, the true coefficients and which training rows it
# contaminated. Here the inlier noise grows with the first feature (heteroscedastic) and a share
# psi of the rows get a one-sided shift of tau.
def hetero(seed, psi, tau, n=40, d=60, k=5, slope=0.5):
    rng = np.random.default_rng([seed, 11])
    coef = np.zeros(d)
    coef[:k] = rng.normal(size=k)
    X, X_test = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    noise = rng.normal(size=n) * (0.2 + slope * np.abs(X[:, 0]))
    outliers = rng.random(n) < psi
    noise[outliers] += tau * rng.exponential(size=outliers.sum())
    return {"X_train": X, "y_train": X @ coef + noise, "X_test": X_test, "y_test": X_test @ coef,
            "coef_true": coef, "outlier_mask": outliers}


# %%
# A metric: the fitted estimator's mean absolute error on the training rows the generator left
# clean (how closely a fit follows the inliers), from the cell's evaluation (its estimator and
# its data). It declares its direction, column label and heading with its unit.
def _inlier_mae(ev):
    clean = ~ev.data.outlier_mask
    return float(np.mean(np.abs(ev.data.y_train[clean]
                                - ev.estimator.predict(ev.data.X_train[clean]))))


inlier_mae = Metric("inlier_mae", _inlier_mae, needs="estimator", better=-1, label="inlier MAE",
                    heading="training MAE on the clean rows (units of y)", shown=True)


# %%
# A config folder of one's own holds the method file and an experiment: the generator's data,
# MCC-ARD and the new method, 2 psi x 2 seeds, and the metric. ``mccard-run`` finds such a folder
# through ``MCCARD_CONFIG_DIR``, searched before the shipped configs.
work = Path(tempfile.mkdtemp(prefix="mccard-example-"))
conf = work / "conf"
(conf / "method").mkdir(parents=True)
(conf / "experiment").mkdir()
(conf / "method" / "trimmed_ridge.yaml").write_text("""\
estimator: __main__:TrimmedRidge   # in a package of your own: mylab.robust:TrimmedRidge
params: {}
grid:                              # K-fold CV over alpha x trim: 6 candidates
  alpha: [0.1, 1.0, 10.0]
  trim: [0.1, 0.3]
""")
(conf / "experiment" / "own.yaml").write_text("""\
# @package _global_
defaults:
  - override /data: generator
data:
  generator: __main__:hetero       # in a package of your own: mylab.sim:hetero
  params: {slope: 0.5}
experiment:
  name: own
  methods: [mcc_ard, trimmed_ridge]
  metrics: [__main__:inlier_mae]
  tau: [5.0]
  psi: [0.0, 0.2]
  seeds: {start: 0, count: 2}
cv:
  n_folds: 2
methods:
  mcc_ard:
    grid:
      kernel_width: [0.3, 3.0]
run:
  progress: false
""")

# %%
# :func:`mccard_dist.compose` gives the experiment as ``mccard-run`` composes it (the config
# folder first, then the shipped one), validated; :func:`mccard_dist.run` runs it on the client
# given, here one worker thread of this process. In a shell, with the class in a package:
# ``MCCARD_CONFIG_DIR=conf mccard-run experiment=own``.
overrides = [f"store.path={work / 'own.zarr'}"]
print(mccard_dist.compose("own", overrides, config_dir=conf).method("trimmed_ridge"))
with Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None) as client:
    report = mccard_dist.run("own", overrides, client=client, config_dir=conf)
print(f"{report.n_cells} cells in {report.seconds:.1f} s")

# %%
# The store holds both methods along ``model``; the new one has its own CV grid as coordinates
# (``alpha`` and ``trim`` on ``(model, candidate)``) and its CV choices as ``chosen_alpha`` and
# ``chosen_trim``. It keeps every feature, so its F1 is low.
ds = mccard_dist.open_results(work / "own.zarr")
print(ds[["r", "rmse", "f1", "n_selected", "inlier_mae"]].mean("seed").to_dataframe().round(3))
print(ds[["chosen_alpha", "chosen_trim"]].sel(model="trimmed_ridge").to_dataframe()
      [["chosen_alpha", "chosen_trim"]])

# %%
# The comparison ``mccard-report STORE --versus mcc_ard`` prints: MCC-ARD minus each other
# method per tau and psi block, the mean over seeds with its 95% interval, and wins, ties and
# losses, the metric of one's own among them (the store records its declarations: the report
# reads them without importing this script).
print(versus_report(ds, "mcc_ard"))

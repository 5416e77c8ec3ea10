"""``bench estimators``: median fit time, test r and selected count per estimator."""

from __future__ import annotations

import statistics
import sys

import numpy as np

from .common import blas_report, one_thread, timed_fit


def _estimator_cases(alpha_ratio=0.05):
    from sklearn.linear_model import ARDRegression

    from ..models import LSARDRegressor, MCCARDRegressor, MCCL1Regressor, mcc_l1_alpha_max

    h = 1.0

    def l1(solver, **kw):
        def build(X, y):
            return MCCL1Regressor(h, alpha_ratio * mcc_l1_alpha_max(X, y, h), solver=solver, **kw)
        return build

    return [
        ("LS-ARD (ours)", lambda X, y: LSARDRegressor()),
        ("sklearn ARD, paper settings", lambda X, y: ARDRegression(
            alpha_1=0.0, alpha_2=0.0, lambda_1=0.0, lambda_2=0.0, threshold_lambda=1e6,
            fit_intercept=True, max_iter=300)),
        ("sklearn ARD, defaults", lambda X, y: ARDRegression()),
        (f"MCC-ARD deviant h={h}", lambda X, y: MCCARDRegressor(h)),
        (f"MCC-ARD deviant h={h}, w_steps=1", lambda X, y: MCCARDRegressor(h, w_steps=1)),
        (f"MCC-ARD proper h={h}", lambda X, y: MCCARDRegressor(h, likelihood="proper")),
        ("MCC-ARD deviant h=auto", lambda X, y: MCCARDRegressor("auto")),
        ("MCC-ARD proper h=auto", lambda X, y: MCCARDRegressor("auto", likelihood="proper")),
        (f"MCC-L1 cd h={h} alpha={alpha_ratio}*max", l1("cd")),
        (f"MCC-L1 cd, full sweeps h={h}", l1("cd", working_set=False)),
        (f"MCC-L1 lasso (scikit-learn Lasso) h={h}", l1("lasso")),
        (f"MCC-L1 em h={h} alpha={alpha_ratio}*max", l1("em")),
        ("MCC-L1 cd h=auto alpha=0.15*max(auto)", lambda X, y: MCCL1Regressor(
            "auto", 0.15 * mcc_l1_alpha_max(X, y, "auto"))),
    ]


def bench_estimators(repeats=3, n_features=1000, psis=(0.0, 0.3), tau=10.0, out=sys.stdout):
    """Returns ``name -> {"time": median seconds, "r": mean r, "n_selected": mean}``."""
    from ..data import make_paper_data
    from ..metrics import correlation

    results = {}
    with one_thread():
        print(f"N=300, D={n_features}, tau={tau}, psi in {list(psis)}, {repeats} seed(s) each; "
              f"BLAS threads: {blas_report()}", file=out)
        datasets = [make_paper_data(seed=s, psi=p, tau=tau, n_features=n_features)
                    for p in psis for s in range(repeats)]
        for name, build in _estimator_cases():
            times, rs, nsel = [], [], []
            for d in datasets:
                model = build(d.X_train, d.y_train)
                times.append(timed_fit(model, d.X_train, d.y_train))
                rs.append(correlation(d.y_test, model.predict(d.X_test)))
                nsel.append(int(np.count_nonzero(model.coef_)))
            results[name] = {"time": statistics.median(times), "r": float(np.nanmean(rs)),
                             "n_selected": float(np.mean(nsel))}
    base = results["sklearn ARD, paper settings"]["time"]
    print(f"{'estimator':42s} {'median fit s':>12s} {'vs sklearn':>10s} {'test r':>7s} "
          f"{'n_sel':>6s}", file=out)
    for name, res in results.items():
        print(f"{name:42s} {res['time']:12.3f} {base / res['time']:9.1f}x {res['r']:7.3f} "
              f"{res['n_selected']:6.0f}", file=out)
    print("('vs sklearn': sklearn ARDRegression with the paper's settings time / this time)",
          file=out)
    return results

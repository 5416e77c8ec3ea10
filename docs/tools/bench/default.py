"""``bench default``: ``MCCARDRegressor()`` as shipped (``solver`` and ``relevance_update``
``"auto"``, the width set inside the fit) against the pruning solver with MacKay's update, paired
on the same fits at shapes beyond the paper's, where ``solver="auto"`` does not simply run the
paper's algorithm.

Arms, on one BLAS thread, their order rotating from one fit to the next: ``default``,
``pruning`` (``solver="pruning", relevance_update="mackay"``) and ``sequential``
(``solver="sequential"``, for reference: what ``"auto"`` takes at these shapes with a fixed
width). CPU seconds are ``time.process_time`` around ``fit``.
"""

from __future__ import annotations

import csv
import sys
import time
import warnings

import numpy as np

from mccard_dist.bench.common import blas_report, one_thread
from converge import seed_list as _seeds

#: arm -> MCCARDRegressor parameters
ARMS = {"default": {}, "pruning": {"solver": "pruning", "relevance_update": "mackay"},
        "sequential": {"solver": "sequential"}}
FIELDS = ("n", "d", "psi", "tau", "seed", "arm", "solver", "update", "cpu", "n_iter",
          "converged", "warned", "width", "kept", "f1", "r", "rmse")


def _fit(params, data):
    from sklearn.exceptions import ConvergenceWarning

    from mccard_dist.metrics import correlation, rmse, selection_scores
    from mccard_dist.models import MCCARDRegressor

    model = MCCARDRegressor(**params)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        start = time.process_time()
        model.fit(data.X_train, data.y_train)
        cpu = time.process_time() - start
    pred = model.predict(data.X_test)
    return {"solver": model.solver_, "update": model.relevance_update_, "cpu": cpu,
            "n_iter": int(model.n_iter_), "converged": bool(model.converged_),
            "warned": sum(issubclass(w.category, ConvergenceWarning) for w in caught),
            "width": float(model.kernel_width_), "kept": int(np.count_nonzero(model.coef_)),
            "f1": selection_scores(model.coef_, data.coef_true)["f1"],
            "r": correlation(data.y_test, pred), "rmse": rmse(data.y_test, pred)}


def _t_interval(values):
    """Mean and 95% t-interval of the mean of ``values``."""
    from scipy import stats

    values = np.asarray(values, dtype=float)
    mean = float(values.mean())
    if values.size < 2:
        return mean, np.nan, np.nan
    half = stats.t.ppf(0.975, values.size - 1) * values.std(ddof=1) / np.sqrt(values.size)
    return mean, mean - half, mean + half


def bench_default(shapes="300x5000,300x10000,1000x10000,1000x3000,3000x1000",
                  cells="0.2:5,0.1:2", seeds="40-44", csv_path=None, out=sys.stdout):
    """Fit every arm on every (shape, cell, seed) and print the paired figures; returns the
    rows (one per fit and arm); ``csv_path``: each row also written there as it is made."""
    from mccard_dist.data import make_paper_data

    shapes = [tuple(int(v) for v in s.split("x")) for s in shapes.split(",")]
    cells = [tuple(float(v) for v in c.split(":")) for c in cells.split(",")]
    seeds = _seeds(seeds)
    rows, turn = [], 0
    sink = open(csv_path, "w", newline="") if csv_path else None
    writer = csv.DictWriter(sink, FIELDS) if sink else None
    if writer:
        writer.writeheader()
    with one_thread():
        print(f"MCC-ARD kernel_width='auto'; shapes {shapes}, (psi, tau) {cells}, seeds "
              f"{seeds}; 300 test samples; BLAS threads: {blas_report()}", file=out, flush=True)
        _fit({}, make_paper_data(seeds[0], *cells[0], n_features=50))  # imports before clocks
        for n, d in shapes:
            for psi, tau in cells:
                start = time.perf_counter()
                for seed in seeds:
                    data = make_paper_data(seed, psi, tau, n_train=n, n_test=300, n_features=d)
                    names = list(ARMS)[turn % 3:] + list(ARMS)[:turn % 3]
                    turn += 1
                    for arm in names:
                        rows.append({"n": n, "d": d, "psi": psi, "tau": tau, "seed": seed,
                                     "arm": arm, **_fit(ARMS[arm], data)})
                        if writer:
                            writer.writerow(rows[-1])
                            sink.flush()
                print(f"N={n} D={d} psi={psi:g} tau={tau:g} done "
                      f"({time.perf_counter() - start:.0f} s)", file=out, flush=True)
    if sink:
        sink.close()
    _report(rows, out)
    return rows


def _report(rows, out):
    print("\nPaired over seeds, default - pruning: mean [95% t-interval]; CPU: sum default / "
          "sum pruning (largest per-fit ratio); conv: fits converged without a "
          "ConvergenceWarning", file=out)
    print(f"{'N':>5} {'D':>6} {'psi':>4} {'tau':>3} {'ran':>16} {'dF1':>24} {'dr':>27} "
          f"{'dRMSE':>24} {'dkept':>19} {'CPU':>12} {'conv d/p':>9} {'seq dF1':>8}", file=out)
    for n, d, psi, tau in dict.fromkeys((r["n"], r["d"], r["psi"], r["tau"]) for r in rows):
        arm = {a: {r["seed"]: r for r in rows if (r["n"], r["d"], r["psi"], r["tau"], r["arm"])
                   == (n, d, psi, tau, a)} for a in ARMS}
        seeds = sorted(arm["default"])
        figures = []
        for name, fmt in (("f1", "+.3f"), ("r", "+.4f"), ("rmse", "+.3f"), ("kept", "+.1f")):
            m, lo, hi = _t_interval([arm["default"][s][name] - arm["pruning"][s][name]
                                     for s in seeds])
            figures.append(f"{m:{fmt}} [{lo:{fmt}}, {hi:{fmt}}]")
        cpu = [arm["default"][s]["cpu"] / arm["pruning"][s]["cpu"] for s in seeds]
        total = (sum(arm["default"][s]["cpu"] for s in seeds)
                 / sum(arm["pruning"][s]["cpu"] for s in seeds))

        def conv(a):
            return sum(arm[a][s]["converged"] and not arm[a][s]["warned"] for s in seeds)

        ran = {f"{arm['default'][s]['solver']}/{arm['default'][s]['update']}" for s in seeds}
        seq = np.mean([arm["sequential"][s]["f1"] - arm["pruning"][s]["f1"] for s in seeds])
        print(f"{n:5d} {d:6d} {psi:4g} {tau:3g} {','.join(sorted(ran)):>16} "
              f"{figures[0]:>24} {figures[1]:>27} {figures[2]:>24} {figures[3]:>19} "
              f"{total:5.2f} ({max(cpu):4.2f}) {conv('default'):>3d}/{conv('pruning'):<3d}"
              f"{'':2}{seq:+8.3f}", file=out)
    print("(seq dF1: the sequential solver - pruning, the mean over seeds)", file=out)

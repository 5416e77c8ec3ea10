"""``bench scaling``: fit time, memory and quality of both MCC-ARD solvers over N and D, on
paper-like data, one core, MCC-ARD with the width set inside the fit; which one ``solver="auto"``
takes at each size."""

from __future__ import annotations

import math
import sys
import tracemalloc

import numpy as np

from mccard_dist.bench.common import blas_report, one_thread, timed_fit

SOLVERS = ("pruning", "sequential")


def _fit(solver, X, y, memory=False):
    from sklearn.exceptions import ConvergenceWarning

    from mccard_dist.models import MCCARDRegressor

    model = MCCARDRegressor(kernel_width="auto", solver=solver)
    if memory:
        tracemalloc.start()
    seconds = timed_fit(model, X, y, ConvergenceWarning)
    peak = None
    if memory:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return model, seconds, peak


def exponents(rows, solver):
    """``(a, b)`` of ``log t = c + a log N + b log D`` over the rows of one solver (nan if the
    sizes do not vary in both)."""
    pts = [(r["n"], r["d"], r["seconds"]) for r in rows if r["solver"] == solver]
    if len({p[0] for p in pts}) < 2 or len({p[1] for p in pts}) < 2:
        return math.nan, math.nan
    A = np.array([[1.0, math.log(n), math.log(d)] for n, d, _ in pts])
    coef, *_ = np.linalg.lstsq(A, np.log([t for *_, t in pts]), rcond=None)
    return float(coef[1]), float(coef[2])


def bench_scaling(ns=(300, 1000, 3000), ds=(1000, 3000, 10000), seeds=(0,), psi=0.2, tau=5.0,
                  cap=120.0, memory_cap=30.0, plot=None, out=sys.stdout):
    """Time (median over ``seeds``), peak traced memory, test r, true features found (of 30: the
    mean and the fewest over ``seeds``), features kept and convergence of each solver at each
    (N, D); returns the rows. A solver is skipped where :func:`_projection` exceeds ``cap``."""
    from mccard_dist.data import make_paper_data
    from mccard_dist.metrics import correlation
    from mccard_dist.models import resolve_solver

    rows = []
    ran = {}  # solver -> [(N, D, seconds)] of the sizes it ran
    with one_thread():
        print(f"MCC-ARD kernel_width='auto', psi={psi}, tau={tau}, 30 relevant, seeds "
              f"{list(seeds)}; BLAS threads: {blas_report()}", file=out)
        print(f"{'N':>6} {'D':>6} {'solver':>10} {'seconds':>9} {'MiB':>7} {'r':>6} "
              f"{'found':>5} {'min':>4} {'kept':>5} {'conv':>5}", file=out)
        for n in ns:
            for d in ds:
                data = [make_paper_data(seed, psi, tau, n_train=n, n_test=1000, n_features=d)
                        for seed in seeds]
                for solver in SOLVERS:
                    projected = _projection(ran.get(solver, []), n, d)
                    if projected is not None and projected[0] > cap:
                        seconds, n0, d0 = projected[1:]
                        print(f"{n:6d} {d:6d} {solver:>10} skipped: projected over {cap:g} s "
                              f"({seconds:.1f} s at N={n0}, D={d0})", file=out)
                        continue
                    times, rs, found, kept, conv = [], [], [], [], []
                    for dset in data:
                        model, seconds, _ = _fit(solver, dset.X_train, dset.y_train)
                        times.append(seconds)
                        rs.append(correlation(dset.y_test, model.predict(dset.X_test)))
                        found.append(int((model.active_ & (dset.coef_true != 0)).sum()))
                        kept.append(int(model.active_.sum()))
                        conv.append(bool(model.converged_))
                    seconds = float(np.median(times))
                    peak = None
                    if seconds <= memory_cap:
                        peak = _fit(solver, data[0].X_train, data[0].y_train, memory=True)[2]
                    row = dict(n=n, d=d, solver=solver, seconds=seconds,
                               mib=None if peak is None else peak / 2**20, r=float(np.mean(rs)),
                               found=float(np.mean(found)), found_min=min(found),
                               kept=float(np.mean(kept)), converged=sum(conv), fits=len(conv))
                    rows.append(row)
                    mib = "-" if peak is None else f"{peak / 2**20:.0f}"
                    taken = resolve_solver("auto", n, d, auto_width=True)
                    auto = "  <- auto" if taken == solver else ""
                    print(f"{n:6d} {d:6d} {solver:>10} {seconds:9.2f} {mib:>7} {row['r']:6.3f} "
                          f"{row['found']:5.1f} {min(found):4d} {row['kept']:5.1f} "
                          f"{sum(conv):>2d}/{len(conv)}{auto}", file=out, flush=True)
                    ran.setdefault(solver, []).append((n, d, seconds))
                del data
    print("", file=out)
    for solver in SOLVERS:
        a, b = exponents(rows, solver)
        if math.isnan(a):
            print(f"{solver:>10}: growth of time not fitted (N and D must both vary)", file=out)
            continue
        print(f"{solver:>10}: time grows as N^{a:.2f} D^{b:.2f} (least squares over the sizes it "
              "ran)", file=out)
    pairs = [(p, s) for p in rows for s in rows if p["solver"] == "pruning"
             and s["solver"] == "sequential" and (p["n"], p["d"]) == (s["n"], s["d"])]
    for p, s in pairs:
        taken = resolve_solver("auto", p["n"], p["d"], auto_width=True)
        print(f"N={p['n']:>5} D={p['d']:>5}: sequential {p['seconds'] / s['seconds']:6.1f}x "
              f"faster; solver='auto' takes {taken}", file=out)
    print("(<- auto: the solver solver='auto', the default, takes at that size)", file=out)
    if plot is not None:
        _plot(rows, plot)
        print(f"plot: {plot}", file=out)
    return rows


def _projection(ran, n, d):
    """``(projected seconds, seconds, N, D)`` of the largest projection to ``(n, d)`` from the
    sizes run that are no larger in either (at least linear growth in the larger step), or None."""
    projections = [(seconds * max(n / n0, d / d0), seconds, n0, d0) for n0, d0, seconds in ran
                   if n0 <= n and d0 <= d]
    return max(projections, key=lambda p: p[0], default=None)


def _plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    styles = {"pruning": dict(marker="o", ls="-"), "sequential": dict(marker="s", ls="--")}
    for solver in SOLVERS:
        mine = [r for r in rows if r["solver"] == solver]
        for d in sorted({r["d"] for r in mine}):
            pts = sorted((r["n"], r["seconds"]) for r in mine if r["d"] == d)
            axes[0].plot(*zip(*pts), label=f"{solver}, D={d}", **styles[solver])
        for n in sorted({r["n"] for r in mine}):
            pts = sorted((r["d"], r["seconds"]) for r in mine if r["n"] == n)
            axes[1].plot(*zip(*pts), label=f"{solver}, N={n}", **styles[solver])
    for ax, x in zip(axes, ("N (training samples)", "D (features)")):
        ax.set(xscale="log", yscale="log", xlabel=x, ylabel="fit time (s, one core)")
        ax.legend(fontsize=7)
    fig.savefig(path, dpi=110)
    plt.close(fig)

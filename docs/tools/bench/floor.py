"""``bench floor``: MCC-ARD fit time against the linear-algebra floor of the same fits."""

from __future__ import annotations

import sys
import time

import numpy as np

from mccard_dist.bench.common import blas_report, compose_spec, one_thread, timed_fit
from flops import floor_flops, trace_solves


def _product_rate(n_samples, n_features, repeats=10):
    """Best rate (flop/s) of ``X X^T`` (``N^2 D`` flops) and ``(N x N) (N x D)`` (``2 N^2 D``)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n_samples, n_features))
    S = rng.standard_normal((n_samples, n_samples))
    best = 0.0
    for op, flops in ((lambda: X @ X.T, n_samples**2 * n_features),
                      (lambda: S @ X, 2.0 * n_samples**2 * n_features)):
        op()
        for _ in range(repeats):
            start = time.perf_counter()
            op()
            best = max(best, flops / (time.perf_counter() - start))
    return best


def bench_floor(repeats=2, psis=(0.0, 0.3, 0.6, 1.0), tau=10.0, out=sys.stdout):
    """MCC-ARD fit time against the linear-algebra floor of the same fits.

    Every width of the ``paper`` MCC-ARD grids is fitted on a training fold's rows of the paper's
    data per ``psi`` and seed; the traced ridge solves' textbook flops (:mod:`.flops`) over the
    best single-thread matrix-product rate are the time a fit cannot go below without fewer
    iterations or solves. Returns ``method -> dict`` of the printed figures.
    """
    spec = compose_spec(["experiment=paper"])
    methods = [m for m in spec.methods if m.estimator == "mccard_dist.models:MCCARDRegressor"]
    n_fit = spec.data.n_train - spec.data.n_train // spec.cv.n_folds
    results = {}
    with one_thread():
        rate = _product_rate(n_fit, spec.data.n_features)
        print(f"N={n_fit} (a training fold), D={spec.data.n_features}, tau={tau}, "
              f"psi in {list(psis)}, {repeats} seed(s) each, every width of the paper grid; "
              f"BLAS threads: {blas_report()}", file=out)
        print(f"best single-thread matrix-product rate: {rate / 1e9:.1f} GFlop/s", file=out)
        datasets = [spec.data.make_data(s, p, tau) for p in psis for s in range(repeats)]
        for m in methods:
            rows = []
            for d in datasets:
                X, y = d.X_train[:n_fit], d.y_train[:n_fit]
                for candidate in m.kind.candidates(m.grid):
                    model, _ = m.kind.build(m.params, candidate)
                    with trace_solves() as events:
                        seconds = timed_fit(model, X, y)
                    solves = [e for e in events if e[0] == "solve"]
                    rows.append((seconds, floor_flops(events), model.n_iter_, len(solves),
                                 sum(e[1] == "dual" for e in solves),
                                 model.n_iter_ >= model.max_iter))
            a = np.array(rows, dtype=float)
            results[m.name] = {
                "fits": len(rows), "seconds": float(a[:, 0].mean()),
                "gflop": float(a[:, 1].mean() / 1e9),
                "floor": float(a[:, 1].mean() / rate),
                "ratio": float(a[:, 0].sum() * rate / a[:, 1].sum()),
                "iterations": float(a[:, 2].mean()), "cap": int(a[:, 5].sum()),
                "solves": float(a[:, 3].mean()), "dual": float(a[:, 4].mean()),
            }
    print(f"{'method':16s} {'fits':>4s} {'s/fit':>6s} {'floor s':>7s} {'x floor':>7s} "
          f"{'GFlop':>6s} {'iters':>5s} {'at cap':>6s} {'solves':>6s} {'dual':>5s}", file=out)
    for name, r in results.items():
        print(f"{name:16s} {r['fits']:4d} {r['seconds']:6.3f} {r['floor']:7.3f} "
              f"{r['ratio']:6.1f}x {r['gflop']:6.2f} {r['iterations']:5.0f} {r['cap']:6d} "
              f"{r['solves']:6.0f} {r['dual']:5.0f}", file=out)
    print("(per fit, means: 'floor s' = floor flops / the rate above; 'x floor' = time / floor; "
          "'iters' outer iterations, 'at cap' fits that reached max_iter, 'solves' ridge "
          "solves, 'dual' of them in the N x N form)", file=out)
    return results

"""``bench solvers STORE``: the sequential solver against the pruning one, on a store's cells.

The store holds both versions of a method (e.g. ``mcc_ard`` and ``mcc_ard_seq``, the same
candidates and CV folds: the cells pair exactly). Printed per tau and per block of psi: the mean
difference (sequential minus pruning) of r, RMSE, F1 and the features kept, with its 95%
interval over seeds, and the fit time of the two.
"""

from __future__ import annotations

import sys

import numpy as np

#: psi blocks of the comparison (inclusive bounds)
PSI_BLOCKS = ((0.0, 0.25), (0.3, 0.5), (0.55, 0.75), (0.8, 1.0))


def compare_solvers(ds, out=sys.stdout):
    """Rows of :func:`~mccard_dist.analysis.compare_methods` for every solver pair of ``ds``, per
    tau and per (tau, psi block); printed as tables, returned as ``{(tau, block): rows}``."""
    from ..analysis import compare_methods, method_comparison_markdown, solver_pairs
    from ..analysis.values import cell_values

    pairs = solver_pairs(ds)
    if not pairs:
        print("no pair of methods that differ only in their solver", file=out)
        return {}
    psi = np.asarray(ds["psi"].values, dtype=float)
    results = {}
    for tau in [float(t) for t in ds["tau"].values]:
        blocks = [(None, None)] + list(PSI_BLOCKS)
        for low, high in blocks:
            where = {"tau": tau}
            label = f"tau = {tau:g}, every psi"
            if low is not None:
                chosen = [float(p) for p in psi if low - 1e-9 <= p <= high + 1e-9]
                if not chosen:
                    continue
                where["psi"] = chosen
                label = f"tau = {tau:g}, psi {low:g}-{high:g}"
            rows = compare_methods(ds, pairs, metrics=("r", "rmse", "f1", "n_selected"),
                                   **where)
            results[(tau, low)] = rows
            print(f"\n{label}", file=out)
            print(method_comparison_markdown(rows), file=out)
    print("\nsummary (sequential minus pruning, 95% intervals over seeds):", file=out)
    print(summary_markdown(results), file=out)
    seconds = cell_values(ds, "cell_seconds")
    for base, other in pairs:
        a = float(seconds.sel(model=base).sum())
        b = float(seconds.sel(model=other).sum())
        print(f"\ncell time (CV and final fit, summed over cells): {base} {a:.0f} s, "
              f"{other} {b:.0f} s, ratio {a / b:.1f}x", file=out)
    return results


def summary_markdown(results) -> str:
    """One row per (tau, psi block) of :func:`compare_solvers`'s results (first solver pair):
    the differences of r and F1 with their intervals over seeds, and the features kept."""

    def diff(row):
        return f"{row.diff:+.3f} [{row.seed_low:+.3f}, {row.seed_high:+.3f}]"

    lines = ["| tau | psi | r: seq - pruning [95% over seeds] | F1: seq - pruning [95% over "
             "seeds] | features kept: pruning, seq |", "|---|---|---|---|---|"]
    for (tau, low), rows in results.items():
        by = {r.metric: r for r in rows}
        if "r" not in by:
            continue
        block = "all" if low is None else next(f"{a:g}-{b:g}" for a, b in PSI_BLOCKS if a == low)
        f1 = diff(by["f1"]) if "f1" in by else "n/a"
        kept = by.get("n_selected")
        kept = f"{kept.base_mean:.1f}, {kept.other_mean:.1f}" if kept else "n/a"
        lines.append(f"| {tau:g} | {block} | {diff(by['r'])} | {f1} | {kept} |")
    return "\n".join(lines)



def fit_evidence(X, y, beta, model) -> float:
    """The log evidence of a fitted MCC-ARD model's features and relevances at precisions
    ``beta``, up to a constant that depends on ``beta`` only (intercept under a flat prior)."""
    from ..models import ard_evidence

    features = np.flatnonzero(model.active_)
    return ard_evidence(X, y, beta, features, model.relevance_[features],
                        fit_intercept=model.fit_intercept)


def evidence_gap(cells=((0.1, 2.0), (0.3, 5.0), (0.9, 10.0)), seeds=(300, 301),
                 widths=(0.1, 0.3, 1.0, 3.0), out=sys.stdout):
    """Which solver's fit has the higher ARD evidence, at the same noise precisions.

    For each (psi, tau) cell of paper data, seed and width, MCC-ARD is fitted by both solvers;
    the log evidence ``log N(t | 0, B^-1 + Z A^-1 Z^T)`` of each fit's (features, relevances) is
    evaluated at the precisions ``B`` of the pruning fit's final residuals and again at those of
    the sequential fit's (up to a constant that depends on ``B`` only, so the two solutions
    compare within one ``B``). Returns the rows printed."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    from ..data import make_paper_data
    from ..models import MCCARDRegressor

    print("MCC-ARD (deviant), one width per fit; log evidence of each solver's fit at the "
          "precisions of either fit's final residuals (higher is better)", file=out)
    print(f"{'psi':>5s} {'tau':>5s} {'seed':>5s} {'h':>6s} {'kept: pru':>10s} {'seq':>4s} "
          f"{'B of pruning: seq - pru':>24s} {'B of seq: seq - pru':>20s}", file=out)
    rows = []
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for psi, tau in cells:
            for seed in seeds:
                data = make_paper_data(seed=seed, psi=psi, tau=tau)
                X, y = data.X_train, data.y_train
                for h in widths:
                    fits = {s: MCCARDRegressor(kernel_width=h, solver=s).fit(X, y)
                            for s in ("pruning", "sequential")}
                    gaps = []
                    for source in ("pruning", "sequential"):
                        beta = fits[source].noise_precisions_
                        gaps.append(fit_evidence(X, y, beta, fits["sequential"])
                                    - fit_evidence(X, y, beta, fits["pruning"]))
                    kept = [int(fits[s].active_.sum()) for s in ("pruning", "sequential")]
                    rows.append({"psi": psi, "tau": tau, "seed": seed, "h": h, "kept": kept,
                                 "gap_pruning_b": gaps[0], "gap_seq_b": gaps[1]})
                    print(f"{psi:5g} {tau:5g} {seed:5d} {h:6g} {kept[0]:10d} {kept[1]:4d} "
                          f"{gaps[0]:+24.2f} {gaps[1]:+20.2f}", file=out, flush=True)
    both = np.array([[r["gap_pruning_b"], r["gap_seq_b"]] for r in rows])
    print(f"\nsequential fit higher at both precisions in {int((both > 0).all(axis=1).sum())} "
          f"of {len(rows)} fits; median gap {np.median(both[:, 0]):+.2f} (precisions of the "
          f"pruning fit), {np.median(both[:, 1]):+.2f} (of the sequential fit)", file=out)
    return rows

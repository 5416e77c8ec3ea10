"""``bench solvers STORE`` (sequential against pruning solver) and ``bench widths STORE`` (the
width set inside each fit against K-fold CV): two versions of a method paired on a store's cells,
per tau and psi block; and ``bench evidence``.
"""

from __future__ import annotations

import sys

import numpy as np

from mccard_dist.bench.common import one_thread

#: psi blocks of the comparison (inclusive bounds)
PSI_BLOCKS = ((0.0, 0.25), (0.3, 0.5), (0.55, 0.75), (0.8, 1.0))

#: psi blocks of ``bench widths``: the auto width's hard cells (psi >= 0.4) in three blocks
WIDTH_BLOCKS = ((0.0, 0.35), (0.4, 0.55), (0.6, 0.75), (0.8, 1.0))


def compare_solvers(ds, out=sys.stdout):
    """:func:`compare_by_block` for every solver pair of ``ds``."""
    from mccard_dist.analysis import solver_pairs

    return compare_by_block(ds, solver_pairs(ds), PSI_BLOCKS, ("pruning", "seq"), out,
                            none="no pair of methods that differ only in their solver")


def compare_widths(ds, out=sys.stdout):
    """:func:`compare_by_block` for the (K-fold, auto width) pairs of ``ds``, then the store's CV
    grid edges."""
    from mccard_dist.analysis import width_pairs
    from mccard_dist.analysis.edges import grid_edges, grid_edges_markdown

    results = compare_by_block(ds, width_pairs(ds), WIDTH_BLOCKS, ("kfold", "auto"), out,
                               none="no pair of methods that differ only in how h is chosen")
    print("\nCV grid edges:", file=out)
    print(grid_edges_markdown(grid_edges(ds)), file=out)
    return results


def compare_by_block(ds, pairs, psi_blocks, names, out=sys.stdout, none="no pair of methods"):
    """:func:`~mccard_dist.analysis.compare_methods` for ``pairs`` per tau and (tau, psi block),
    printed with a summary (``names``: the base's and the other's short names) and the cells'
    time; returns ``{(tau, block low end or None): rows}``."""
    from mccard_dist.analysis import compare_methods, method_comparison_markdown
    from mccard_dist.analysis.values import cell_values

    if not pairs:
        print(none, file=out)
        return {}
    psi = np.asarray(ds["psi"].values, dtype=float)
    results = {}
    for tau in [float(t) for t in ds["tau"].values]:
        for low, high in [(None, None), *psi_blocks]:
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
    base, other = names
    print(f"\nsummary ({other} minus {base}, 95% intervals over seeds):", file=out)
    print(summary_markdown(results, psi_blocks, names), file=out)
    seconds = cell_values(ds, "cell_seconds")
    for a_name, b_name in pairs:
        a = float(seconds.sel(model=a_name).sum())
        b = float(seconds.sel(model=b_name).sum())
        print(f"\ncell time (CV and final fit, summed over cells): {a_name} {a:.0f} s, "
              f"{b_name} {b:.0f} s, ratio {a / b:.1f}x", file=out)
    return results


def summary_markdown(results, psi_blocks=PSI_BLOCKS, names=("pruning", "seq")) -> str:
    """One row per pair and (tau, psi block) of :func:`compare_by_block`'s results: the
    differences of r, RMSE and F1 with their intervals over seeds, and the features kept."""

    def diff(row):
        return f"{row.diff:+.3f} [{row.seed_low:+.3f}, {row.seed_high:+.3f}]"

    base, other = names
    lines = [f"| {other} vs {base} | tau | psi | r: {other} - {base} | RMSE: {other} - {base} | "
             f"F1: {other} - {base} | features kept: {base}, {other} |",
             "|---|---|---|---|---|---|---|"]
    pairs = list(dict.fromkeys((r.base, r.other) for rows in results.values() for r in rows))
    for pair in pairs:
        for (tau, low), rows in results.items():
            by = {r.metric: r for r in rows if (r.base, r.other) == pair}
            if "r" not in by:
                continue
            block = ("all" if low is None
                     else next(f"{a:g}-{b:g}" for a, b in psi_blocks if a == low))
            f1 = diff(by["f1"]) if "f1" in by else "n/a"
            rmse = diff(by["rmse"]) if "rmse" in by else "n/a"
            kept = by.get("n_selected")
            kept = f"{kept.base_mean:.1f}, {kept.other_mean:.1f}" if kept else "n/a"
            lines.append(f"| `{pair[1]}` vs `{pair[0]}` | {tau:g} | {block} | {diff(by['r'])} | "
                         f"{rmse} | {f1} | {kept} |")
    return "\n".join(lines)


def fit_evidence(X, y, beta, model) -> float:
    """The log evidence of a fitted MCC-ARD model's features and relevances at precisions
    ``beta``, up to a constant that depends on ``beta`` only (intercept under a flat prior)."""
    from mccard_dist.models import ard_evidence

    features = np.flatnonzero(model.active_)
    return ard_evidence(X, y, beta, features, model.relevance_[features],
                        fit_intercept=model.fit_intercept)


def evidence_gap(cells=((0.1, 2.0), (0.3, 5.0), (0.9, 10.0)), seeds=(300, 301),
                 widths=(0.1, 0.3, 1.0, 3.0), out=sys.stdout):
    """Which solver's fit has the higher ARD evidence, at the same noise precisions.

    Per (psi, tau) cell of paper data, seed and width, both solvers' MCC-ARD fits are scored by
    :func:`fit_evidence` at the precisions ``B`` of either fit's final residuals (so the two
    compare within one ``B``). Returns the rows printed."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from mccard_dist.data import make_paper_data
    from mccard_dist.models import MCCARDRegressor

    print("MCC-ARD (deviant), one width per fit; log evidence of each solver's fit at the "
          "precisions of either fit's final residuals (higher is better)", file=out)
    print(f"{'psi':>5s} {'tau':>5s} {'seed':>5s} {'h':>6s} {'kept: pru':>10s} {'seq':>4s} "
          f"{'B of pruning: seq - pru':>24s} {'B of seq: seq - pru':>20s}", file=out)
    rows = []
    with one_thread(), warnings.catch_warnings():
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

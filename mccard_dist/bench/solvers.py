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


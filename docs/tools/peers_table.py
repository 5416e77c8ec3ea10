"""The README's first table: each estimator's mean test r, F1, features kept and seconds per cell
at one (tau, psi) of a store, over the seeds every method finished, as Markdown. Recorded with
``docs/tools/record.py peers-readme --markdown -- python docs/tools/peers_table.py STORE 5 0.3``
and copied into README.md by ``docs/tools/readme_table.py peers-readme``."""

from __future__ import annotations

import sys

import numpy as np

import mccard_dist
from mccard_dist.analysis.markup import Table, markdown
from mccard_dist.analysis.values import cell_values, method_style


def side_by_side(ds, tau: float, psi: float,
                 metrics=("r", "f1", "n_selected", "cell_seconds")) -> list[tuple]:
    """``(method, n_seeds, mean of each metric over seeds)`` at one (tau, psi), over the seeds
    every method finished."""
    values = {m: cell_values(ds, m).sel(tau=tau, psi=psi).transpose("model", "seed").values
              for m in metrics if m in ds}
    complete = np.all([np.all(np.isfinite(v), axis=0) for v in values.values()], axis=0)
    return [(str(method), int(complete.sum()),
             *(float(v[i][complete].mean()) for v in values.values()))
            for i, method in enumerate(ds["model"].values)]


def side_by_side_markdown(ds, tau: float, psi: float) -> str:
    """:func:`side_by_side` as a table: each method's mean test r, F1, features kept and
    seconds per cell (CV and final fit, one core) at one (tau, psi)."""
    methods = [str(m) for m in ds["model"].values]
    rows = side_by_side(ds, tau, psi)
    header = ("estimator", "r", "F1", "features", "s per cell")
    lines = [(method_style(m, methods, ds)["label"], f"{r:.3f}", f"{f1:.2f}", f"{n:.1f}",
              f"{sec:.1f}") for m, _, r, f1, n, sec in rows]
    seeds = {n for _, n, *_ in rows}
    return markdown([Table(header, lines, "lrrrr")]) + (
        f"\n\ntau = {tau:g}, psi = {psi:g}: mean over {min(seeds)} seeds (test r, F1 of the "
        f"selected features, features kept; CV and final fit per cell, one core).")


if __name__ == "__main__":
    store, tau, psi = sys.argv[1:]
    print(side_by_side_markdown(mccard_dist.open_results(store), float(tau), float(psi)))

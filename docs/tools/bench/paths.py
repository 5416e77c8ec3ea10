"""``bench paths``: K-fold CV by warm-started paths (``cv.paths``: ``width``, ``penalty``) against
one fit per candidate (``none``), on the same cells or two stores: MCC-L1's paths over widths or
penalties, MCC-ARD's over widths."""

from __future__ import annotations

import sys
import time

import numpy as np

from mccard_dist.bench.common import compose_spec, one_thread

ROUTES = ("none", "width", "penalty")


def bench_paths(seeds=(0,), psi=(0.1, 0.5, 0.9), tau=(2.0, 10.0), method="mcc_l1",
                overrides=(), out=sys.stdout):
    """CV seconds per cell of ``method`` by each route of ``cv.paths``, on the cells
    (``experiment=reproduce`` unless ``overrides`` say otherwise), and each route's agreement
    with ``none``. Returns ``{route: {"seconds": total, "same": cells agreeing}}``."""
    from mccard_dist.grid import cv_candidates, path_route
    from mccard_dist.tasks import kfold_scores

    overrides = [o for o in overrides if not o.startswith("cv.paths=")]
    if not any(o.startswith("experiment=") for o in overrides):
        overrides.insert(0, "experiment=reproduce")
    specs = {r: compose_spec([*overrides, f"cv.paths={r}", "run.progress=false"])
             for r in ROUTES}
    spec = specs["none"]
    methods = {r: specs[r].method(method) for r in ROUTES}
    routes = ("none", *(r for r in ROUTES[1:] if path_route(methods[r], specs[r].cv) == r))
    if len(routes) == 1:
        raise SystemExit(f"bench paths: method {method!r} does not fit paths")
    candidates = cv_candidates(methods["none"])
    print(f"{method}: {len(candidates)} candidates, {spec.cv.n_folds} folds, "
          f"{spec.data.n_train} x {spec.data.n_features}, one BLAS thread", file=out)
    print(f"{'tau':>5s} {'psi':>5s} {'seed':>5s} "
          + " ".join(f"{r + ' s':>9s}" for r in routes) + "  same as none", file=out)
    totals = dict.fromkeys(routes, 0.0)
    same = dict.fromkeys(routes, 0)
    n_cells = 0
    with one_thread():
        for t in tau:
            for p in psi:
                for seed in seeds:
                    data = spec.data.make_data(seed, p, t, None)
                    chosen, spent = {}, {}
                    for r in routes:
                        start = time.perf_counter()
                        scores, _, _ = kfold_scores(specs[r], methods[r], data.X_train,
                                                 data.y_train, seed)
                        spent[r] = time.perf_counter() - start
                        chosen[r] = int(np.nanargmin(np.mean(scores, axis=1)))
                        totals[r] += spent[r]
                        same[r] += int(chosen[r] == chosen["none"])
                    n_cells += 1
                    agree = ", ".join(f"{r} {chosen[r] == chosen['none']}" for r in routes[1:])
                    print(f"{t:5g} {p:5g} {seed:5d} "
                          + " ".join(f"{spent[r]:9.2f}" for r in routes) + f"  {agree}",
                          file=out)
    for r in routes[1:]:
        print(f"{r}: {totals[r]:.1f} s against none {totals['none']:.1f} s, "
              f"{totals['none'] / totals[r]:.1f}x less; same choice as none in {same[r]} of "
              f"{n_cells} cells", file=out)
    return {r: {"seconds": totals[r], "same": same[r], "cells": n_cells} for r in routes}


def compare_stores(fits_store, paths_store, method="mcc_l1", out=sys.stdout):
    """The cells two stores share for ``method`` (``fits_store`` made with ``cv.paths=none``):
    same choice, paired metric differences (paths minus fits) per tau and psi block, and the
    cell time of each."""
    import xarray as xr

    from mccard_dist.analysis.values import cell_values
    from solvers import WIDTH_BLOCKS, compare_by_block

    chosen = [n for n in ("chosen_kernel_width", "chosen_alpha_ratio")
              if n in fits_store and n in paths_store]
    names = ["status", "r", "rmse", "f1", "n_selected", "cell_seconds", *chosen]
    a, b = xr.align(fits_store[names].sel(model=[method]), paths_store[names].sel(model=[method]),
                    join="inner")
    fits, paths = f"{method} (fits)", f"{method} (paths)"
    ds = xr.concat([a.assign_coords(model=[fits]), b.assign_coords(model=[paths])], dim="model")
    done = (cell_values(a, "status").values == 1) & (cell_values(b, "status").values == 1)
    match = done.copy()  # done in both, the same choice
    for name in chosen:
        match &= cell_values(a, name).values == cell_values(b, name).values
    n_done, n_same = int(done.sum()), int(match.sum())
    what = ", ".join(n.removeprefix("chosen_") for n in chosen)
    print(f"{method}: {n_done} cells done in both; same ({what}) in {n_same} "
          f"({n_same / max(n_done, 1):.1%})", file=out)
    ra, rb = cell_values(a, "r").values, cell_values(b, "r").values
    if match.any():
        print(f"where the choice is the same, max |r difference| "
              f"{float(np.max(np.abs(ra[match] - rb[match]))):.2e}", file=out)
    return compare_by_block(ds, [(fits, paths)], WIDTH_BLOCKS, ("fits", "paths"), out)

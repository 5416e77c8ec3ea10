"""``bench paper``: projected core-hours of the paper experiment from a measured slice."""

from __future__ import annotations

import re
import sys
import tempfile

import numpy as np

from .common import AUTO, CURRENT, PLAIN_KFOLD, RACE, compose_spec, local_client
from .race import replay_race


def _paper_spec(root, name, overrides):
    experiment = [o for o in overrides if o.startswith("experiment=")] or ["experiment=paper"]
    rest = [o for o in overrides if not o.startswith("experiment=")]
    return compose_spec([*experiment, *rest], root, name)


def _per_method(spec, ds, paper_cells):
    """method -> dict(cells, fits per cell (actually made: racing and path_stop skip some),
    seconds (sum of cell seconds), mean, per fit, projected core-hours)."""
    from ..analysis.values import cell_values
    from ..grid import cv_candidates

    seconds = cell_values(ds, "cell_seconds")
    out = {}
    for m in spec.methods:
        v = seconds.sel({"model": m.name}).values
        done = np.isfinite(v)
        if not done.any():
            continue
        if cv_candidates(m):
            scored = np.isfinite(ds["cv_score"].sel({"model": m.name}).values)
            per_cell = scored.reshape(done.shape + (-1,)).sum(axis=-1)[done]
            fits = float(per_cell.mean()) + (1.0 if spec.cv.scheme == "kfold" else 0.0)
        else:
            fits = 1.0
        mean = float(v[done].mean())
        out[m.name] = {"cells": int(done.sum()), "fits_per_cell": fits,
                       "seconds": float(v[done].sum()), "mean": mean, "per_fit": mean / fits,
                       "core_hours": mean * paper_cells / 3600.0}
    return out


def bench_paper(seeds=1, workers=2, baseline_psi=(0.0, 0.5, 1.0), baseline=True, overrides=(),
                auto=False, out=sys.stdout):
    """Projected core-hours of the ``paper`` experiment from a measured slice.

    The slice (every method, tau and psi of ``paper``, ``seeds`` seeds, :data:`CURRENT`) runs on
    ``workers`` one-thread LocalCluster workers; per method, the mean cell time times the paper's
    number of cells is the projection. :data:`PLAIN_KFOLD` and :data:`CURRENT` also run on the
    cells of ``baseline_psi`` (every tau, the first seed) for a like-for-like ratio; with
    ``auto``, :data:`AUTO` against :data:`CURRENT`. ``overrides`` apply to every run.
    """
    from ..grid import block_fits, cells, make_blocks
    from ..runner import run_experiment
    from ..store import open_results, store_path

    overrides = tuple(overrides)
    runs = {}
    main_name, main, base_name, base = (("auto", AUTO, "K-fold (racing)", CURRENT) if auto else
                                        ("current", CURRENT, "plain K-fold", PLAIN_KFOLD))
    with tempfile.TemporaryDirectory(prefix="mccard-bench-paper-",
                                     ignore_cleanup_errors=True) as root:
        reference = _paper_spec(root, "ref", overrides)
        paper_cells = len(reference.tau) * len(reference.psi) * len(reference.seeds)
        with local_client(workers, "6GiB") as client:
            plan = [(main_name, main + overrides + (f"experiment.seeds.count={seeds}",))]
            if baseline:
                psi = "[" + ",".join(str(float(p)) for p in baseline_psi) + "]"
                sub = (f"experiment.psi={psi}", "experiment.seeds.count=1")
                plan += [(f"{base_name}, baseline cells", base + overrides + sub),
                         (f"{main_name}, baseline cells", main + overrides + sub)]
            for name, overrides in plan:
                spec = _paper_spec(root, re.sub(r"[^A-Za-z0-9]+", "_", name), overrides)
                n_fits = sum(block_fits(spec, b) for b in make_blocks(spec, cells(spec)))
                print(f"[{name}] {len(cells(spec))} cells, at most {n_fits} fits "
                      f"({' '.join(overrides)}) ...", file=out, flush=True)
                report = run_experiment(spec, client=client, progress=False)
                ds = open_results(store_path(spec))
                methods = _per_method(spec, ds, paper_cells)
                made = sum(m["fits_per_cell"] * m["cells"] for m in methods.values())
                runs[name] = {"methods": methods, "wall": report.seconds, "fits": made,
                              "planned": n_fits}
                if name.startswith("plain K-fold"):  # would racing choose as plain K-fold did?
                    runs[name]["race"] = replay_race(ds, RACE)

    print(f"\npaper experiment: {paper_cells} cells per method "
          f"({len(reference.tau)} tau x {len(reference.psi)} psi x {len(reference.seeds)} seeds); "
          f"{workers} LocalCluster worker(s), one BLAS thread each", file=out)
    for name, run in runs.items():
        total = sum(m["core_hours"] for m in run["methods"].values())
        print(f"\n{name}: {run['fits']:.0f} fits (of {run['planned']} planned) in "
              f"{run['wall']:.0f} s wall ({run['fits'] / run['wall']:.1f} fits/s)", file=out)
        print(f"  {'method':16s} {'cells':>5s} {'fits/cell':>9s} {'s/cell':>8s} {'s/fit':>7s} "
              f"{'paper core-h':>12s}", file=out)
        for method, m in run["methods"].items():
            print(f"  {method:16s} {m['cells']:5d} {m['fits_per_cell']:9.1f} {m['mean']:8.2f} "
                  f"{m['per_fit']:7.3f} {m['core_hours']:12.1f}", file=out)
        print(f"  {'projected paper core-hours':43s} {total:12.1f}", file=out)
    if baseline:
        prev, cur = runs[f"{base_name}, baseline cells"], runs[f"{main_name}, baseline cells"]
        print(f"\nsame cells, {base_name} / {main_name} time per cell:", file=out)
        for (pm, p), (cm, c) in zip(prev["methods"].items(), cur["methods"].items()):
            p, c = p["mean"], c["mean"]
            label = pm if pm == cm else f"{pm} / {cm}"
            print(f"  {label:36s} {p:8.2f} s / {c:8.2f} s = {p / c:6.1f}x", file=out)
        p = sum(m["core_hours"] for m in prev["methods"].values())
        c = sum(m["core_hours"] for m in cur["methods"].values())
        print(f"  projected from these cells: {p:.1f} / {c:.1f} core-hours = {p / c:.1f}x",
              file=out)
        if "race" in prev:
            print(f"racing (margin {RACE}) replayed on the plain K-fold run's scores:",
                  file=out)
            for method, r in prev["race"].items():
                print(f"  {method:16s} same choice in {r['same']}/{r['cells']} cells, "
                      f"{r['fits']}/{r['full']} CV fits", file=out)
    return runs

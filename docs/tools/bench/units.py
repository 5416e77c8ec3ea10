"""``bench units``: one large cell on a LocalCluster, one task per K-fold fit against blocks of
whole cells, and against one worker."""

from __future__ import annotations

import sys
import tempfile
import time

import numpy as np

from mccard_dist.bench.common import blas_report, compose_spec, local_client


def bench_units(n_train=2000, n_features=4000, widths=4, folds=5, out=sys.stdout):
    """Wall time of one cell (``widths x folds`` independent CV fits, ``cv.paths=none``, and a
    final fit) on 1 and 2 workers,
    with ``run.unit=cell`` and ``fit``; checks that the stores agree. Also prints the unit
    ``auto`` takes for the paper's grid."""
    from mccard_dist.grid import cells, resolve_unit
    from mccard_dist.runner import run_experiment
    from mccard_dist.store import open_results

    grid = ",".join(f"{h:g}" for h in np.geomspace(0.1, 10.0, widths))
    print(f"one cell: MCC-ARD, N={n_train}, D={n_features}, {widths} widths x {folds} folds = "
          f"{widths * folds} CV fits + 1 final fit; BLAS per worker: 1 thread "
          f"(driver: {blas_report()})", file=out)
    runs = [("1 worker, unit=cell", 1, "cell"), ("2 workers, unit=cell", 2, "cell"),
            ("2 workers, unit=fit", 2, "fit"), ("1 worker, unit=fit", 1, "fit")]
    seconds = {}
    with tempfile.TemporaryDirectory(prefix="mccard-bench-units-",
                                     ignore_cleanup_errors=True) as root:
        for label, n_workers, unit in runs:
            spec = compose_spec([
                "experiment=smoke", "experiment.methods=[mcc_ard]", "experiment.tau=[5.0]",
                "experiment.psi=[0.3]", "experiment.seeds.count=1", f"data.n_train={n_train}",
                "data.n_test=200", f"data.n_features={n_features}", "data.n_relevant=30",
                f"methods.mcc_ard.grid.kernel_width=[{grid}]", f"cv.n_folds={folds}",
                "cv.paths=none", f"run.unit={unit}"], root, f"w{n_workers}_{unit}")
            with local_client(n_workers, "8GiB") as client:
                start = time.perf_counter()
                report = run_experiment(spec, client=client, progress=False)
                seconds[label] = time.perf_counter() - start
            print(f"  {label:24s} {seconds[label]:8.1f} s (unit used: {report.unit})", file=out,
                  flush=True)
        base = seconds["1 worker, unit=cell"]
        print(f"{'run':26s} {'wall s':>8s} {'speed-up vs 1 worker, cell':>27s}", file=out)
        for label, value in seconds.items():
            print(f"{label:26s} {value:8.1f} {base / value:26.2f}x", file=out)
        stores = [open_results(f"{root}/w{n_workers}_{unit}.zarr") for _, n_workers, unit in runs]
        same = all(
            np.array_equal(stores[0][v].values, s[v].values, equal_nan=True)
            for s in stores[1:] for v in stores[0].data_vars
            if v not in ("cell_seconds", "fit_seconds", "status_name", "error"))
        print(f"same results in every store (timings aside): {'yes' if same else 'NO'}", file=out)
        paper = compose_spec(["experiment=paper", f"store.path={root}/paper.zarr"])
    n = len(cells(paper))
    units = {w: resolve_unit(paper, n, w) for w in (2, 100, 1000, 6300)}
    print(f"unit=auto on the paper's grid ({n} cells): "
          + ", ".join(f"{w} workers -> {u}" for w, u in units.items()), file=out)
    return seconds

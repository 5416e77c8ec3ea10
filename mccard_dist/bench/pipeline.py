"""``bench pipeline``: fits/s of the pipeline against an in-process loop, and the driver's memory
over a grid of many cells."""

from __future__ import annotations

import sys
import tempfile
from unittest import mock

from .common import compose_spec, local_client


def _pipeline_spec(root, name, seeds):
    return compose_spec(["experiment=smoke", "experiment.methods=[mcc_ard,ls_ard]",
                          "data.n_train=100", "data.n_test=100", "data.n_features=300",
                          "data.n_relevant=10", "experiment.psi=[0.0,0.1,0.2,0.3]",
                          f"experiment.seeds.count={seeds}",
                          "methods.mcc_ard.grid.kernel_width=[0.1,1.0,10.0]", "cv.n_folds=3"],
                         root, name)


def _rss_kib() -> int:
    """This process's resident memory (kB), from /proc."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def bench_driver_memory(cells=10_000, out=sys.stdout):
    """The driver's resident memory over ``cells`` tiny LS-ARD cells on 2 LocalCluster workers
    (the scheduler runs in the driver), sampled after each block is written; its growth per cell
    is the least-squares slope after the first tenth of the cells (the warm-up)."""
    import numpy as np

    from ..cluster import connect
    from ..runner import run_experiment
    from ..store import writer

    seeds = -(-cells // 2)  # 1 tau x 2 psi
    samples = []
    write_block = writer.ResultsStore.write_block

    def sampled(store, block, results):
        write_block(store, block, results)
        samples.append((len(results), _rss_kib()))

    with tempfile.TemporaryDirectory(prefix="mccard-bench-", ignore_cleanup_errors=True) as root:
        spec = compose_spec(["experiment=smoke", "experiment.methods=[ls_ard]",
                              "data.n_train=20", "data.n_test=10", "data.n_features=10",
                              "data.n_relevant=2", f"experiment.seeds.count={seeds}",
                              "run.fits_per_block=20", "cluster.n_workers=2"], root, "memory")
        with (mock.patch.object(writer.ResultsStore, "write_block", sampled),
              connect(spec.cluster) as client):
            report = run_experiment(spec, client=client, progress=False)
    written = np.cumsum([n for n, _ in samples])
    rss = np.array([kib for _, kib in samples], dtype=float)
    later = written > written[-1] / 10
    slope = np.polyfit(written[later], rss[later], 1)[0]
    print(f"driver memory over {int(written[-1])} cells ({len(samples)} blocks, "
          f"{report.seconds:.0f} s; LS-ARD on 20 x 10, 2 LocalCluster workers): RSS "
          f"{rss[0] / 1024:.1f} MiB after the first block, {rss.max() / 1024:.1f} MiB at most, "
          f"{rss[-1] / 1024:.1f} MiB at the end; growth {slope:.3f} kB per cell after the first "
          f"{int(written[later][0])} cells", file=out)
    return slope


def bench_pipeline(seeds=8, cells=10_000, out=sys.stdout):
    """Fits/s of the pipeline (LocalCluster, 1 and 2 workers) against an in-process serial loop
    over the same blocks, then :func:`bench_driver_memory` over ``cells`` cells (0: skipped)."""
    from ..grid import block_fits, cells as all_cells, make_blocks
    from ..runner import run_experiment, run_serial

    with tempfile.TemporaryDirectory(prefix="mccard-bench-", ignore_cleanup_errors=True) as root:
        spec = _pipeline_spec(root, "serial", seeds)
        blocks = make_blocks(spec, all_cells(spec))
        n_fits = sum(block_fits(spec, b) for b in blocks)
        print(f"grid: {len(all_cells(spec))} cells, {len(blocks)} blocks, {n_fits} fits "
              f"(N=100, D=300, MCC-ARD 3 widths x 3 folds + LS-ARD)", file=out)
        rates = {"serial (in process)": n_fits / run_serial(spec).seconds}
        for n_workers in (1, 2):
            with local_client(n_workers, "4GiB", dashboard_address=None) as client:
                run_spec = _pipeline_spec(root, f"dask{n_workers}", seeds)
                report = run_experiment(run_spec, client=client, progress=False)
                rates[f"LocalCluster, {n_workers} worker(s)"] = n_fits / report.seconds
    base = rates["serial (in process)"]
    print(f"{'run':32s} {'fits/s':>8s} {'vs serial':>9s}", file=out)
    for name, rate in rates.items():
        print(f"{name:32s} {rate:8.1f} {rate / base:8.2f}x", file=out)
    slope = bench_driver_memory(cells, out) if cells else None
    return rates, slope

"""``bench pipeline``: fits/s of the pipeline against an in-process loop, and driver memory."""

from __future__ import annotations

import sys

from .common import _compose_spec


def _pipeline_spec(root, name, seeds, fits_per_block=None):
    overrides = ["experiment=smoke", "experiment.methods=[mcc_ard,ls_ard]",
                 "data.n_train=100", "data.n_test=100", "data.n_features=300",
                 "data.n_relevant=10", "experiment.psi=[0.0,0.1,0.2,0.3]",
                 f"experiment.seeds.count={seeds}", "methods.mcc_ard.grid.kernel_width=[0.1,1.0,10.0]",
                 "cv.n_folds=3", f"store.path={root}/{name}.zarr", "run.progress=false"]
    if fits_per_block:
        overrides.append(f"run.fits_per_block={fits_per_block}")
    return _compose_spec(overrides)


def bench_pipeline(seeds=8, out=sys.stdout):
    """Fits/s of the pipeline (LocalCluster, 1 and 2 workers) against an in-process serial loop
    over the same blocks, and the driver's peak memory for a grid and one 10x larger."""
    import tempfile
    import tracemalloc

    from ..cluster import connect
    from ..config import ClusterSpec
    from ..grid import block_fits, cells, make_blocks
    from ..runner import run_experiment, run_serial

    root = tempfile.mkdtemp(prefix="mccard-bench-")
    spec = _pipeline_spec(root, "serial", seeds)
    blocks = make_blocks(spec, cells(spec))
    n_fits = sum(block_fits(spec, b) for b in blocks)
    print(f"grid: {len(cells(spec))} cells, {len(blocks)} blocks, {n_fits} fits "
          f"(N=100, D=300, MCC-ARD 3 widths x 3 folds + LS-ARD)", file=out)
    rates = {}
    report = run_serial(spec)
    rates["serial (in process)"] = n_fits / report.seconds
    for n_workers in (1, 2):
        cluster = ClusterSpec(kind="local", n_workers=n_workers, threads_per_worker=1,
                              memory_limit="4GiB", host="127.0.0.1",
                              dashboard_address="127.0.0.1:0")
        with connect(cluster) as client:
            client.run(lambda: None)  # workers up before the clock starts
            run_spec = _pipeline_spec(root, f"dask{n_workers}", seeds)
            report = run_experiment(run_spec, client=client, progress=False)
            rates[f"LocalCluster, {n_workers} worker(s)"] = n_fits / report.seconds
    base = rates["serial (in process)"]
    print(f"{'run':32s} {'fits/s':>8s} {'vs serial':>9s}", file=out)
    for name, rate in rates.items():
        print(f"{name:32s} {rate:8.1f} {rate / base:8.2f}x", file=out)

    # driver memory: same number of blocks run, grid 10x larger (only the first blocks run)
    peaks = {}
    cluster = ClusterSpec(kind="local", n_workers=2, threads_per_worker=1, memory_limit="4GiB",
                          host="127.0.0.1", dashboard_address="127.0.0.1:0")
    with connect(cluster) as client:
        for factor in (1, 10):
            mem_spec = _pipeline_spec(root, f"mem{factor}", seeds * factor)
            tracemalloc.start()
            run_experiment(mem_spec, client=client, stop_after_blocks=len(blocks), progress=False)
            peaks[factor] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    print(f"driver peak memory (Python allocations, {len(blocks)} blocks run): "
          f"grid x1 {peaks[1] / 2**20:.1f} MiB, grid x10 {peaks[10] / 2**20:.1f} MiB "
          f"(ratio {peaks[10] / peaks[1]:.2f})", file=out)
    import shutil

    shutil.rmtree(root, ignore_errors=True)
    return rates, peaks

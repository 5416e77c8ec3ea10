"""The pipeline end to end on a real LocalCluster: exactness, resume, lost workers, many blocks."""

import os
import signal
import threading
import time

import numpy as np
import pytest
import xarray as xr

from mccard_dist import grid
from mccard_dist.runner import run_experiment, run_serial
from mccard_dist.store import ResultsStore, StoreMismatchError, open_results, store_path

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

CHECKED = ["status", "r", "rmse", "f1", "n_selected", "chosen_kernel_width", "chosen_alpha_ratio",
           "cv_score", "coef"]


def assert_same_results(path_a, path_b):
    a, b = xr.open_zarr(path_a), xr.open_zarr(path_b)
    for name in CHECKED:
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)


def test_distributed_run_equals_serial_run(smoke_spec, local_client):
    spec = smoke_spec(name="dist")
    report = run_experiment(spec, client=local_client)
    assert report.complete and report.n_blocks_written == report.n_blocks
    ds = open_results(store_path(spec))
    assert (ds["status"] == 1).all()
    c = grid.coords(spec)
    for dim in ("model", "tau", "psi", "seed", "candidate", "fold", "feature"):
        np.testing.assert_array_equal(ds[dim].values, c[dim])
    for name, values in grid.candidate_values(spec).items():
        np.testing.assert_array_equal(ds[name].values, values)
    assert list(ds["psi"].values) == [0.0, 0.2] and list(ds["model"].values) == [
        "mcc_ard", "mcc_ard_proper", "ls_ard", "mcc_l1"]
    serial = smoke_spec(name="serial")
    run_serial(serial)
    assert_same_results(store_path(spec), store_path(serial))
    # labelled values: the CV picked a width from the grid for every MCC-ARD cell, and its
    # lowest mean loss is the one of that width
    chosen = ds["chosen_kernel_width"].sel(model="mcc_ard")
    assert set(np.unique(chosen.values)) <= {0.3, 3.0}
    assert np.isnan(ds["chosen_kernel_width"].sel({"model": "ls_ard"})).all()
    ard = ds["cv_score"].sel(model="mcc_ard").mean("fold")
    best = ard.fillna(np.inf).argmin("candidate").values
    np.testing.assert_array_equal(ds["kernel_width"].sel(model="mcc_ard").values[best],
                                  chosen.values)


def test_interrupted_run_resumes_only_missing_blocks(smoke_spec, local_client):
    spec = smoke_spec("run.block_seconds=0", name="resume")  # one cell a block
    first = run_experiment(spec, client=local_client, stop_after_blocks=2)
    assert first.stopped_early and (first.n_blocks_written, first.n_cells_written) == (2, 2)
    status = ResultsStore.open_or_create(spec).status()
    n_done = int((status == 1).sum())
    assert n_done == 2
    second = run_experiment(spec, client=local_client)
    assert second.n_pending_before == status.size - n_done
    assert second.n_blocks_written == second.n_cells_written == status.size - n_done
    reference = smoke_spec(name="reference")
    run_serial(reference)
    assert_same_results(store_path(spec), store_path(reference))
    third = run_experiment(spec, client=local_client)  # nothing left
    assert third.n_blocks == 0


def test_many_small_blocks_lose_no_value(smoke_spec, local_client):
    # one cell per block: 16 blocks written as they complete, in any order
    spec = smoke_spec("run.block_seconds=0", "experiment.seeds.count=4", name="small")
    report = run_experiment(spec, client=local_client)
    assert report.n_blocks == 32 and report.n_blocks_written == 32
    ds = xr.open_zarr(store_path(spec))
    assert int((ds["status"] == 1).sum()) == 32
    assert int(np.isfinite(ds["r"]).sum()) == 32
    assert int(np.isfinite(ds["coef"]).all("feature").sum()) == 32
    reference = smoke_spec("run.block_seconds=1000", "experiment.seeds.count=4", name="big")
    run_serial(reference)
    assert_same_results(store_path(spec), store_path(reference))


def test_store_of_another_grid_is_refused_and_left_intact(smoke_spec, local_client):
    spec = smoke_spec(name="shared")
    run_experiment(spec, client=local_client)
    before = xr.open_zarr(store_path(spec)).load()
    other = smoke_spec("data.n_features=50", name="shared")
    with pytest.raises(StoreMismatchError, match="data.n_features: 60 != 50"):
        run_experiment(other, client=local_client)
    after = xr.open_zarr(store_path(spec)).load()
    xr.testing.assert_identical(before, after)


def _hold_blocks_at(gate, computed):
    """On a worker: make ``tasks.run_block`` (which the runner submits by reference) touch
    ``computed`` after computing a block and wait until ``gate`` exists before returning it."""
    from pathlib import Path

    from mccard_dist import tasks

    compute = tasks.run_block

    def held(*args, **kwargs):
        out = compute(*args, **kwargs)
        Path(computed).touch()
        deadline = time.time() + 120
        while not Path(gate).exists() and time.time() < deadline:
            time.sleep(0.02)
        return out

    tasks.run_block = held


def test_run_survives_a_killed_worker(smoke_spec, tmp_path):
    from mccard_dist.cluster import connect
    from mccard_dist.config import cluster_spec

    spec = smoke_spec("experiment.seeds.count=6", "run.block_seconds=0", name="killed")
    cluster = cluster_spec("local", n_workers=2, threads_per_worker=1, memory_limit="2GiB",
                          host="127.0.0.1", dashboard_address="127.0.0.1:0")
    gate, computed = tmp_path / "gate", tmp_path / "computed"
    with connect(cluster) as client:
        pids = list(client.run(os.getpid).values())
        # every block, once computed, waits at a gate the test opens after the kill: the run
        # cannot finish before a worker dies, however fast or slow the machine
        client.run(_hold_blocks_at, str(gate), str(computed))
        reports = []
        runner = threading.Thread(target=lambda: reports.append(run_experiment(spec, client=client)))
        runner.start()
        deadline = time.time() + 120
        while time.time() < deadline and not computed.exists():
            time.sleep(0.05)
        assert computed.exists(), "no block was computed"
        os.kill(pids[0], signal.SIGKILL)
        gate.touch()
        runner.join(timeout=300)
    assert reports and reports[0].complete
    reference = smoke_spec("experiment.seeds.count=6", name="undisturbed")
    run_serial(reference)
    assert_same_results(store_path(spec), store_path(reference))


def test_methods_are_selected_by_name_and_per_cell_values_are_read_at_once(smoke_spec):
    spec = smoke_spec("experiment.methods=[mcc_ard,ls_ard]", "data.n_features=40", name="old")
    run_serial(spec)
    path = store_path(spec)
    ds = open_results(path)
    # the method keyword of Dataset.sel cannot swallow the selection: one method comes back
    one = ds.sel(model="ls_ard")
    assert "model" not in one.dims and np.isnan(one["chosen_kernel_width"]).all()
    np.testing.assert_array_equal(one["r"].values, ds["r"].values[1])
    # per-cell variables are numbers at once (a mean prints values, not a dask graph); the big
    # ones stay lazy
    assert ds["r"].chunks is None and ds["status"].chunks is None
    assert isinstance(ds["r"].mean("seed").data, np.ndarray)
    assert ds["coef"].chunks is not None and ds["cv_score"].chunks is not None


def test_stores_of_a_two_setting_sweep_open_as_one_dataset(smoke_spec):
    base = ("experiment.methods=[ls_ard]", "run.save_coef=false")
    paths = {}
    for n in (30, 40):
        for var in (0.05, 0.1):
            spec = smoke_spec(*base, f"data.n_features={n}", f"data.noise_var={var}",
                              name=f"s{n}-{var}")
            run_serial(spec)
            paths[n, var] = store_path(spec)
    ds = open_results(list(paths.values()))
    assert ds["r"].dims[:2] == ("n_features", "noise_var")
    for (n, var), path in paths.items():
        np.testing.assert_array_equal(ds["r"].sel(n_features=n, noise_var=var).values,
                                      open_results(path)["r"].values)
    # not every combination: one "sweep" dimension with a coordinate per setting
    part = open_results([paths[30, 0.05], paths[40, 0.1], paths[40, 0.05]])
    assert part["r"].dims[0] == "sweep"
    assert list(part["n_features"].values) == [30, 40, 40]
    assert list(part["noise_var"].values) == [0.05, 0.1, 0.05]
    with pytest.raises(StoreMismatchError, match="repeats the grid"):
        open_results([paths[30, 0.05], paths[30, 0.05]])

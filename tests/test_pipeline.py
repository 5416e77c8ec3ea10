"""The pipeline end to end on a real LocalCluster: exactness, resume, lost workers, many blocks."""

import json
import os
import shutil
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
    spec = smoke_spec(name="resume")
    total = len(grid.make_blocks(spec, grid.cells(spec)))
    first = run_experiment(spec, client=local_client, stop_after_blocks=2)
    assert first.stopped_early and first.n_blocks_written == 2
    status = ResultsStore.open_or_create(spec).status()
    n_done = int((status == 1).sum())
    assert 0 < n_done < status.size
    second = run_experiment(spec, client=local_client)
    assert second.n_pending_before == status.size - n_done
    assert second.n_blocks_written == len(grid.make_blocks(
        spec, [c for c in grid.cells(spec) if status[c.index] == 0]))
    assert second.n_blocks_written < total
    reference = smoke_spec(name="reference")
    run_serial(reference)
    assert_same_results(store_path(spec), store_path(reference))
    third = run_experiment(spec, client=local_client)  # nothing left
    assert third.n_blocks == 0


def test_many_small_blocks_lose_no_value(smoke_spec, local_client):
    # one cell per block: 16 blocks written as they complete, in any order
    spec = smoke_spec("run.fits_per_block=1", "experiment.seeds.count=4", name="small")
    report = run_experiment(spec, client=local_client)
    assert report.n_blocks == 32 and report.n_blocks_written == 32
    ds = xr.open_zarr(store_path(spec))
    assert int((ds["status"] == 1).sum()) == 32
    assert int(np.isfinite(ds["r"]).sum()) == 32
    assert int(np.isfinite(ds["coef"]).all("feature").sum()) == 32
    reference = smoke_spec("run.fits_per_block=1000", "experiment.seeds.count=4", name="big")
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
    from mccard_dist.config import ClusterSpec

    spec = smoke_spec("experiment.seeds.count=6", "run.fits_per_block=10", name="killed")
    cluster = ClusterSpec(kind="local", n_workers=2, threads_per_worker=1, memory_limit="2GiB",
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


def _rename_dimension_on_disk(path, old, new):
    """Rewrite a store as an earlier version wrote it: the variable or dimension ``old`` named
    ``new``."""
    import json as _json

    import zarr

    for attrs_file in path.glob("*/.zattrs"):
        attrs = _json.loads(attrs_file.read_text())
        dims = attrs.get("_ARRAY_DIMENSIONS", [])
        attrs["_ARRAY_DIMENSIONS"] = [new if d == old else d for d in dims]
        attrs_file.write_text(_json.dumps(attrs))
    (path / old).rename(path / new)
    zarr.consolidate_metadata(str(path), zarr_format=2)


def test_methods_are_selected_by_name_and_old_stores_still_open_and_resume(smoke_spec):
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
    before = ds.load()

    # a store made before the candidate axis: cv_score over h x alpha_ratio, chosen_h and
    # chosen_alpha_ratio; the same grid resumes it in its own layout
    import zarr

    from mccard_dist.store.layout import Layout
    from mccard_dist.store.writer import _template

    old_spec = smoke_spec("experiment.methods=[mcc_ard,ls_ard]", "data.n_features=40",
                          name="old-axes")
    old_path = store_path(old_spec)
    _template(old_spec, Layout(old_spec, axes=True)).to_zarr(
        str(old_path), compute=False, zarr_format=2, consolidated=True)
    report = run_serial(old_spec)
    assert report.n_pending_before == report.n_cells and report.complete
    group = zarr.open_group(str(old_path), mode="r")
    assert {"h", "alpha_ratio", "chosen_h", "chosen_alpha_ratio"} <= set(group)
    assert "candidate" not in group and "chosen_kernel_width" not in group
    assert group["cv_score"].shape[4:] == (2, 1, 2)  # h x alpha_ratio x fold
    timing = ["status_name", "fit_seconds", "cell_seconds"]  # all but the run's timings
    shown = open_results(old_path).load()
    xr.testing.assert_equal(shown.drop_vars(timing), before.drop_vars(timing))

    # and as an earlier version still named it
    for new, old in (("model", "method"), ("alpha_ratio", "lam"),
                     ("chosen_alpha_ratio", "chosen_lam")):
        _rename_dimension_on_disk(old_path, new, old)
    old = xr.open_zarr(old_path)  # as an earlier version wrote it
    assert "method" in old.dims and "lam" in old.dims and "chosen_lam" in old
    xr.testing.assert_equal(open_results(old_path).load().drop_vars(timing),
                            before.drop_vars(timing))
    # it still resumes, its lost h coordinate recreated: reset one block's cells to pending
    # and rerun
    zarr.open_group(str(old_path), mode="r+")["status"][0, 0, 0, :] = 0
    shutil.rmtree(old_path / "h")
    report = run_serial(old_spec)
    assert report.n_pending_before == len(spec.seeds) and report.n_blocks_written >= 1
    after = open_results(old_path)
    for name in (n for n in CHECKED if n in before):
        np.testing.assert_array_equal(after[name].values, before[name].values, err_msg=name)
    assert after.sizes == before.sizes
    # written as such stores always were: ARD cells with chosen_alpha_ratio (chosen_lam) 0
    raw = zarr.open_group(str(old_path), mode="r")
    np.testing.assert_array_equal(raw["chosen_lam"][...], 0.0)
    # reading the results needs the stored methods only, not a config that checks out today
    config = json.loads(raw.attrs["config"])
    config["data"]["n_train"] = -1
    zarr.open_group(str(old_path), mode="r+").attrs["config"] = json.dumps(config)
    zarr.consolidate_metadata(str(old_path), zarr_format=2)
    xr.testing.assert_equal(open_results(old_path)["cv_score"], before["cv_score"])


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

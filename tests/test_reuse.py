"""An override that changes one method reruns that method only: the new store takes the finished
cells of the unchanged methods from a store beside it made by the same code, and those cells equal
a run that computes them afresh."""

import json

import numpy as np
import pytest
import xarray as xr
import zarr

from mccard_dist.config import from_dictconfig
from mccard_dist.grid import cells
from mccard_dist.runner import run_serial
from mccard_dist.store import ResultsStore, store_path
from mccard_dist.store.version import code_fingerprint, fingerprint

pytestmark = pytest.mark.slow  # runs small grids into stores

BASE = ["experiment=smoke", "experiment.methods=[mcc_ard,ls_ard,mcc_l1]", "experiment.psi=[0.2]",
        "run.progress=false", "run.block_seconds=0"]
CHANGED_L1 = "methods.mcc_l1.grid.alpha_ratio=[0.6,0.2]"


def spec_at(compose, root, *overrides):
    return from_dictconfig(compose([*BASE, f"store.root={root}", *overrides]))


def cells_per_method(spec):
    return len(spec.tau) * len(spec.psi) * len(spec.seeds)


def test_an_override_of_one_method_runs_only_that_method(compose, tmp_path):
    first = spec_at(compose, tmp_path / "shared")
    run_serial(first)
    changed = spec_at(compose, tmp_path / "shared", CHANGED_L1)
    assert store_path(changed) != store_path(first)
    summary = run_serial(changed)
    assert summary.n_pending_before == cells_per_method(changed)  # mcc_l1's cells only
    # the copied cells are what a run without any store beside it computes
    fresh = spec_at(compose, tmp_path / "alone", CHANGED_L1)
    assert run_serial(fresh).n_pending_before == 3 * cells_per_method(fresh)
    got, want = xr.open_zarr(store_path(changed)), xr.open_zarr(store_path(fresh))
    _assert_same_results(got, want)
    assert ResultsStore(store_path(changed), changed).check_and_repair() == []


def test_a_run_on_a_cluster_submits_only_the_changed_methods_cells(compose, tmp_path):
    from distributed import Client

    from mccard_dist.runner import run_experiment

    first = spec_at(compose, tmp_path)
    run_serial(first)
    changed = spec_at(compose, tmp_path, CHANGED_L1)
    with Client(processes=False, n_workers=1, threads_per_worker=1,
                dashboard_address=None) as client:
        report = run_experiment(changed, client=client, progress=False)
    assert report.n_pending_before == cells_per_method(changed)
    assert report.n_blocks_written == report.n_blocks
    l1_cells = [c for c in cells(changed) if c.method == "mcc_l1"]
    assert report.n_blocks == len(l1_cells)  # run.block_seconds=0: a block (a final fit) a cell
    assert (xr.open_zarr(store_path(changed))["status"] == 1).all()


def test_more_seeds_run_only_the_new_seeds_cells(compose, tmp_path):
    """Raising experiment.seeds.count makes a new store (another grid): it takes the finished
    cells of the seeds the store beside it has, and runs the new seed's cells only; the cells
    taken equal a run that computes all three seeds afresh."""
    two = spec_at(compose, tmp_path / "shared", "experiment.seeds.count=2")
    run_serial(two)
    three = spec_at(compose, tmp_path / "shared", "experiment.seeds.count=3")
    assert store_path(three) != store_path(two)
    report = run_serial(three)
    new_seed = [c for c in cells(three) if c.seed == three.seeds[-1]]
    assert report.n_pending_before == len(new_seed) == 3 * len(three.tau) * len(three.psi)
    fresh = spec_at(compose, tmp_path / "alone", "experiment.seeds.count=3")
    run_serial(fresh)
    got, want = xr.open_zarr(store_path(three)), xr.open_zarr(store_path(fresh))
    _assert_same_results(got, want)


def _assert_same_results(got, want):
    """Every cell done in ``got``, with the results, choices, coefficients and CV scores of
    ``want``."""
    assert (got["status"] == 1).all()
    for name in ("r", "rmse", "f1", "n_selected", "chosen_kernel_width", "chosen_alpha_ratio",
                 "coef", "cv_score"):
        np.testing.assert_allclose(got[name].values, want[name].values, rtol=1e-12,
                                   equal_nan=True, err_msg=name)


def _set_attr(path, **attrs):
    group = zarr.open_group(str(path), mode="r+", zarr_format=2)
    group.attrs.update(attrs)
    zarr.consolidate_metadata(str(path))


def test_cv_paths_counts_only_for_the_methods_it_routes(compose, tmp_path):
    """A description keeps ``cv.paths`` only where a method fits paths (MCC-L1): a grid without
    MCC-L1 takes MCC-ARD's and LS-ARD's cells from the store that had it, and ``cv.paths=none``
    (another route for MCC-L1 only) reruns MCC-L1 alone."""
    first = spec_at(compose, tmp_path)
    run_serial(first)
    without_l1 = spec_at(compose, tmp_path, "experiment.methods=[mcc_ard,ls_ard]")
    assert store_path(without_l1) != store_path(first)
    assert run_serial(without_l1).n_pending_before == 0
    got = xr.open_zarr(store_path(without_l1))
    want = xr.open_zarr(store_path(first)).sel(model=["mcc_ard", "ls_ard"])
    for name in ("r", "rmse", "f1", "n_selected", "chosen_kernel_width", "coef"):
        np.testing.assert_array_equal(got[name].values, want[name].values, err_msg=name)
    no_paths = spec_at(compose, tmp_path, "cv.paths=none")
    assert run_serial(no_paths).n_pending_before == cells_per_method(no_paths)  # mcc_l1's


def test_a_store_given_its_own_path_is_computed_whole(compose, tmp_path):
    run_serial(spec_at(compose, tmp_path))
    changed = spec_at(compose, tmp_path, CHANGED_L1, f"store.path={tmp_path}/mine.zarr")
    assert run_serial(changed).n_pending_before == 3 * cells_per_method(changed)


@pytest.mark.parametrize("why", ["other code", "other data", "no coefficients",
                                 "other scikit-learn", "other numpy"])
def test_a_store_of_another_computation_is_never_a_source(compose, tmp_path, why):
    extra = {"other data": ["data.n_features=25"], "no coefficients": ["run.save_coef=false"]}
    first = spec_at(compose, tmp_path, *extra.get(why, []))
    run_serial(first)
    if why == "other code":
        _set_attr(store_path(first), code="0" * 64)
    if why.startswith("other ") and why[6:] in ("scikit-learn", "numpy"):
        versions = json.loads(xr.open_zarr(store_path(first)).attrs["versions"])
        versions[why[6:]] = "0.0.1"  # made under another library stack
        _set_attr(store_path(first), versions=json.dumps(versions))
    changed = spec_at(compose, tmp_path, CHANGED_L1)
    assert run_serial(changed).n_pending_before == 3 * cells_per_method(changed)


@pytest.mark.parametrize("damage", ["truncated chunk", "deleted chunk", "truncated .zmetadata"])
def test_a_damaged_store_beside_is_skipped_with_a_warning(compose, tmp_path, caplog, damage):
    """A store beside that cannot be read whole gives no cells (a lost chunk would give NaN
    as done): the new store computes them and says which store it skipped."""
    import logging

    first = spec_at(compose, tmp_path)
    run_serial(first)
    sibling = store_path(first)
    victim = sibling / ("r/0.0.0.0" if "chunk" in damage else ".zmetadata")
    if damage == "deleted chunk":
        victim.unlink()
    else:
        victim.write_bytes(victim.read_bytes()[:-9])
    changed = spec_at(compose, tmp_path, CHANGED_L1)
    with caplog.at_level(logging.WARNING):
        assert run_serial(changed).n_pending_before == 3 * cells_per_method(changed)
    assert f"{sibling} is not used as a source of results (" in caplog.text
    assert (f"(r: chunk 0.0.0.0 (mcc_ard) {'is missing' if 'deleted' in damage else 'is damaged'}"
            in caplog.text) == ("chunk" in damage)
    assert (xr.open_zarr(store_path(changed))["status"] == 1).all()


def test_a_store_records_the_code_that_made_it(compose, tmp_path):
    spec = spec_at(compose, tmp_path)
    run_serial(spec)
    attrs = xr.open_zarr(store_path(spec)).attrs
    code = json.loads(attrs["code"])
    assert code == fingerprint(spec.methods) == {"package": code_fingerprint(), "methods": {}}
    assert len(code["package"]) == 64 and json.loads(attrs["grid_description"])["methods"]

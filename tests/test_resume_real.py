"""Stores of data without true coefficients (a file, the diabetes data) resume like any other:
their selection counts are NaN by design, which is no sign of a lost value."""

import numpy as np
import pytest
import xarray as xr

from mccard_dist.config import from_dictconfig
from mccard_dist.records import STATUS_PENDING
from mccard_dist.runner import run_experiment, run_serial
from mccard_dist.store import ResultsStore

pytestmark = pytest.mark.slow  # runs small grids into stores


@pytest.fixture
def diabetes_spec(compose, tmp_path):
    return from_dictconfig(compose([
        "experiment=diabetes", "experiment.methods=[mcc_ard,lasso]", "experiment.psi=[0.0,0.2]",
        "experiment.seeds.count=2", "data.n_noise_features=20", "cv.n_folds=2",
        "methods.mcc_ard.grid.kernel_width=[0.3,3.0]", "run.block_seconds=0",
        f"store.path={tmp_path}/d.zarr", "run.progress=false"]))


def test_a_finished_diabetes_store_has_nothing_to_run(diabetes_spec):
    run_serial(diabetes_spec)
    store = ResultsStore(diabetes_spec.store.path, diabetes_spec)
    assert store.check_and_repair() == []
    assert run_serial(diabetes_spec).n_pending_before == 0


def test_an_interrupted_diabetes_run_resumes_only_its_pending_cells(diabetes_spec):
    from distributed import Client

    with Client(processes=False, n_workers=1, threads_per_worker=1,
                dashboard_address=None) as client:
        first = run_experiment(diabetes_spec, client=client, stop_after_blocks=1, progress=False)
        assert first.stopped_early
        status = xr.open_zarr(diabetes_spec.store.path)["status"].values
        n_left = int((status == STATUS_PENDING).sum())
        assert 0 < n_left < status.size
        second = run_experiment(diabetes_spec, client=client, progress=False)
    assert second.n_pending_before == n_left
    ds = xr.open_zarr(diabetes_spec.store.path)
    assert (ds["status"] == 1).all()
    assert np.isnan(ds["tp"].values).all() and np.isfinite(ds["rmse"].values).all()


def test_a_file_without_true_coefficients_resumes(compose, tmp_path):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 8))
    y = X[:, 0] - 2 * X[:, 1] + 0.1 * rng.normal(size=60)
    np.savez(tmp_path / "d.npz", X=X, y=y)
    spec = from_dictconfig(compose([
        "experiment=smoke", "data=file", f"data.path={tmp_path}/d.npz",
        "experiment.methods=[mcc_ard]", "experiment.seeds.count=1",
        f"store.path={tmp_path}/f.zarr", "run.progress=false"]))
    run_serial(spec)
    assert run_serial(spec).n_pending_before == 0

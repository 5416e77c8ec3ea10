"""One table of metrics (mccard_dist.metrics.METRICS): a metric added to it appears in a store
written before, for its finished cells, computed from their stored coefficients and their data,
without a migration and without sending a finished cell back to pending."""

import numpy as np
import pytest
import xarray as xr

from mccard_dist import metrics
from mccard_dist.grid import cells, make_blocks
from mccard_dist.store import ResultsStore, open_results
from mccard_dist.tasks import run_block

pytestmark = pytest.mark.slow  # fits a few small cells

SMALL = ("experiment.methods=[ls_ard,mcc_l1]", "data.n_features=40", "run.block_seconds=0")


def _coef_error(ev):
    return float(np.sqrt(np.sum((np.asarray(ev.coef) - ev.coef_true) ** 2)))


#: two metrics the package gains after the store was written
COEF_ERROR = metrics.Metric("coef_error", _coef_error, "selection", -1, "coef error",
                            "distance to the true coefficients", shown=True)
MEDIAN_ERROR = metrics.Metric("median_error", lambda ev: float(np.median(np.abs(ev.y_test - ev.y_pred))),
                              "prediction", -1, "median error", "median absolute test error")


@pytest.fixture
def old_store(smoke_spec):
    """A store of the table as it is, some cells finished and some pending."""
    spec = smoke_spec(*SMALL)
    store = ResultsStore.open_or_create(spec)
    blocks = make_blocks(spec, store.pending_cells(), size=1)
    for block in blocks[::2]:
        store.write_block(block, run_block(spec, block, None))
    return spec, store


def _by_hand(spec, path):
    """coef_error of every finished cell from the store's coefficients (read with plain xarray)
    and the cell's data, NaN elsewhere."""
    raw = xr.open_zarr(path)
    status, coef = raw["status"].values, raw["coef"].values
    want = np.full(status.shape, np.nan)
    for cell in cells(spec):
        if status[cell.index] == 1:
            truth = spec.data.make_data(cell.seed, cell.psi, cell.tau).coef_true
            want[cell.index] = np.linalg.norm(coef[cell.index] - truth)
    return want


def test_a_metric_added_later_is_computed_for_the_finished_cells_of_a_store(old_store,
                                                                            monkeypatch):
    spec, store = old_store
    pending = store.pending_cells()
    assert 0 < len(pending) < len(cells(spec))
    monkeypatch.setattr(metrics, "METRICS", (*metrics.METRICS, COEF_ERROR, MEDIAN_ERROR))
    want = _by_hand(spec, store.path)
    assert np.isfinite(want).sum() == len(cells(spec)) - len(pending)

    # read: computed in memory, the store unchanged
    ds = open_results(store.path)
    np.testing.assert_allclose(ds["coef_error"].values, want, rtol=1e-12, equal_nan=True)
    assert np.isnan(ds["median_error"].values).all()
    assert "test predictions" in ds["median_error"].attrs["note"]
    assert "coef_error" not in xr.open_zarr(store.path)

    # resumed: stored, and no finished cell is pending again
    resumed = ResultsStore.open_or_create(spec)
    assert resumed.pending_cells() == pending
    raw = xr.open_zarr(resumed.path)
    np.testing.assert_allclose(raw["coef_error"].values, want, rtol=1e-12, equal_nan=True)
    assert "test predictions" in raw["median_error"].attrs["note"]
    assert resumed.check_and_repair() == []  # every chunk of the new variables is there

    # the cells computed from now on have it from their fit
    block = make_blocks(spec, pending, size=1)[0]
    resumed.write_block(block, run_block(spec, block, None))
    done = open_results(resumed.path)
    for cell in block.cells:
        assert np.isfinite(done["median_error"].values[cell.index])
    np.testing.assert_allclose(done["coef_error"].values, _by_hand(spec, resumed.path),
                               rtol=1e-12, equal_nan=True)


def test_the_report_and_versus_show_a_metric_added_later(old_store, monkeypatch, tmp_path):
    from mccard_dist.analysis import write_report
    from mccard_dist.analysis.compare import versus_report

    spec, store = old_store
    monkeypatch.setattr(metrics, "METRICS", (*metrics.METRICS, COEF_ERROR))
    ds = open_results(store.path)
    assert "coef error" in versus_report(ds, "ls_ard")
    text = write_report(ds, tmp_path / "report").path.read_text()
    assert "distance to the true coefficients" in text


def test_a_metric_added_later_imports_no_estimator_of_the_store(old_store, monkeypatch):
    """A store of a method whose package is not importable here (one's own, on another machine)
    still opens with the new metric: only the cells' data are rebuilt."""
    import json

    import zarr

    spec, store = old_store
    want = _by_hand(spec, store.path)
    group = zarr.open_group(str(store.path), mode="r+")
    config = json.loads(group.attrs["config"])
    config["methods"]["mcc_l1"]["estimator"] = "nolab.robust:Mine"
    group.attrs["config"] = json.dumps(config)
    monkeypatch.setattr(metrics, "METRICS", (*metrics.METRICS, COEF_ERROR))
    ds = open_results(store.path)
    np.testing.assert_allclose(ds["coef_error"].values, want, rtol=1e-12, equal_nan=True)

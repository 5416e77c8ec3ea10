"""A metric of one's own: a ``Metric`` in a module of one's own folder, named by import path in
``experiment.metrics``. Computed in every cell from the fit (the fitted estimator and the cell's
data included), stored and reported like the built-in ones, read back without importing it,
given to the finished cells of a store made before it where the stored coefficients allow, and
fingerprinted by its file."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

pytestmark = pytest.mark.slow  # fits a few small cells

MODULE = '''
import numpy as np
from mccard_dist.metrics import Metric


def _train_mae(ev):
    """Mean absolute training residual: the fitted estimator on the cell's own training data."""
    return float(np.mean(np.abs(ev.data.y_train - ev.estimator.predict(ev.data.X_train))))


def _coef_error(ev):
    return float(np.linalg.norm(ev.coef - ev.coef_true))


def _broken(ev):
    return ev.estimator.no_such_attribute_


train_mae = Metric("train_mae", _train_mae, needs="estimator", better=-1, label="train MAE",
                   heading="training MAE (units of y)", shown=True)
coef_error = Metric("coef_error", _coef_error, needs="selection", better=-1, label="coef error",
                    heading="distance to the true coefficients", shown=True)
broken = Metric("broken", _broken, needs="estimator", better=1, label="broken", heading="broken")
rmse_again = Metric("rmse", _coef_error, needs="selection", better=-1, label="x", heading="x")
not_a_metric = 3
'''

BOTH = "experiment.metrics=[mymetrics.cell:train_mae,mymetrics.cell:coef_error]"
SMALL = ("experiment.methods=[ls_ard,mcc_l1]", "data.n_features=40", "run.block_seconds=0")


@pytest.fixture
def mine(tmp_path, monkeypatch):
    """The package ``mymetrics`` on the path (its module file returned)."""
    pkg = tmp_path / "pkg" / "mymetrics"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "cell.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path / "pkg"))
    for name in ("mymetrics", "mymetrics.cell"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    from mccard_dist.metrics import _imported

    _imported.cache_clear()
    yield pkg / "cell.py"
    _imported.cache_clear()


def _by_hand(spec, ds, name):
    """The metric of every finished cell, computed here from a refit-free route: the cell's data
    and the stored coefficients (coef_error), NaN elsewhere."""
    want = np.full(ds["status"].shape, np.nan)
    from mccard_dist.grid import cells

    for cell in cells(spec):
        if ds["status"].values[cell.index] == 1:
            truth = spec.data.make_data(cell.seed, cell.psi, cell.tau).coef_true
            want[cell.index] = np.linalg.norm(ds["coef"].values[cell.index] - truth)
    return want


def test_ones_metric_is_computed_stored_and_reported_without_importing_it(mine, smoke_spec,
                                                                           tmp_path):
    from mccard_dist.runner import run_serial
    from mccard_dist.analysis import write_report
    from mccard_dist.analysis.compare import versus_report
    from mccard_dist.store import open_results

    spec = smoke_spec(*SMALL, BOTH)
    run_serial(spec)
    raw = xr.open_zarr(spec.store.path)
    assert (raw["status"] == 1).all()
    np.testing.assert_allclose(raw["coef_error"].values, _by_hand(spec, raw, "coef_error"),
                               rtol=1e-10)
    # train_mae by hand for one cell: refit the cell as the pipeline does, on its chosen values
    from mccard_dist.grid import cells

    cell = cells(spec)[0]
    data = spec.data.make_data(cell.seed, cell.psi, cell.tau)
    method = spec.method(cell.method)
    chosen = {n: float(raw[f"chosen_{n}"].values[cell.index]) for n in method.grid_names
              if f"chosen_{n}" in raw and n in method.grid}
    est = method.kind.build(method.kind.resolve(method.params, *data.X_train.shape),
                            chosen)[0].fit(data.X_train, data.y_train)
    assert raw["train_mae"].values[cell.index] == pytest.approx(
        np.mean(np.abs(data.y_train - est.predict(data.X_train))), rel=1e-6)
    recorded = {d["name"]: d for d in json.loads(raw.attrs["metrics"])}
    assert set(recorded) == {"train_mae", "coef_error"} and recorded["train_mae"]["better"] == -1
    assert set(json.loads(raw.attrs["code"])["metrics"]) == {"train_mae", "coef_error"}

    # read back with the module gone: its declarations come from the store
    del sys.modules["mymetrics.cell"]
    sys.path.remove(str(mine.parent.parent))
    ds = open_results(spec.store.path)
    text = versus_report(ds, "ls_ard")
    assert "| train MAE | coef error |" in text.split("\n\n")[1]
    assert "wins, ties and losses count the metrics with a better side (r, RMSE, F1, train " \
           "MAE, coef error)" in text
    report = write_report(ds, tmp_path / "report").path.read_text()
    assert "training MAE (units of y)" in report and "distance to the true coefficients" in report
    assert "mymetrics.cell" not in sys.modules


def test_a_store_made_before_the_metric_gets_it_in_its_finished_cells(mine, smoke_spec):
    """Resumed with the metric added: a metric of the coefficients is computed from the stored
    ones for the finished cells (equal to a fresh run's), one of the fitted estimator is NaN there
    with a note; the cells computed from then on have both from their fit."""
    from mccard_dist.grid import make_blocks
    from mccard_dist.store import ResultsStore
    from mccard_dist.tasks import run_block

    before = smoke_spec(*SMALL)
    store = ResultsStore.open_or_create(before)
    blocks = make_blocks(before, store.pending_cells(), size=1)
    for block in blocks[::2]:
        store.write_block(block, run_block(before, block, None))
    finished = xr.open_zarr(before.store.path)["status"].values == 1

    after = smoke_spec(*SMALL, BOTH)
    assert after.store.path == before.store.path
    resumed = ResultsStore.open_or_create(after)
    raw = xr.open_zarr(after.store.path)
    np.testing.assert_allclose(raw["coef_error"].values, _by_hand(after, raw, "coef_error"),
                               rtol=1e-10, equal_nan=True)
    assert np.isnan(raw["train_mae"].values).all()
    assert "needs the fitted estimator" in raw["train_mae"].attrs["note"]
    assert {d["name"] for d in json.loads(raw.attrs["metrics"])} == {"train_mae", "coef_error"}
    pending = resumed.pending_cells()
    assert len(pending) == (~finished).sum()
    block = make_blocks(after, pending, size=1)[0]
    resumed.write_block(block, run_block(after, block, None))
    raw = xr.open_zarr(after.store.path)
    for cell in block.cells:
        assert np.isfinite(raw["train_mae"].values[cell.index])
        assert np.isfinite(raw["coef_error"].values[cell.index])


@pytest.mark.parametrize("path, said", [
    ("mymetrics.cell:not_a_metric", "is not a mccard_dist.metrics.Metric (it is of type int)"),
    ("mymetrics.cell:rmse_again", "is named 'rmse', as another metric is"),
    ("mymetrics.nowhere:train_mae", "cannot be imported (ModuleNotFoundError"),
    ("mymetrics.cell", "must be a metric's import path, module:name"),
])
def test_a_metric_that_cannot_be_one_is_refused_in_one_line(mine, path, said, smoke_spec):
    """Before a store exists (the run's check of its inputs; composing a config imports no
    metric, as reading a store's config must not)."""
    from mccard_dist.config import ConfigError

    if ":" not in path:  # not an import path: the schema's rule, when composed
        from conftest import refusal

        message = refusal(["experiment=smoke", f"experiment.metrics=[{path}]"])
    else:
        with pytest.raises(ConfigError) as info:
            smoke_spec(f"experiment.metrics=[{path}]").check_data()
        message = str(info.value)
    assert said in message and "\n" not in message, message
    assert message.startswith("experiment.metrics")


def test_a_metric_whose_code_fails_is_refused_by_the_trial_fit(mine, smoke_spec):
    from mccard_dist.config import ConfigError
    from mccard_dist.tasks import try_methods

    spec = smoke_spec(*SMALL, "experiment.metrics=[mymetrics.cell:broken]")
    with pytest.raises(ConfigError) as info:
        try_methods(spec)
    said = str(info.value)
    assert "\n" not in said
    assert said.startswith("experiment.metrics: on the trial fit of methods.ls_ard, metric "
                           "broken: AttributeError")


def test_an_edit_of_the_metrics_code_is_refused_by_name_a_docstring_is_not(mine, smoke_spec):
    from mccard_dist.errors import UsageError
    from mccard_dist.metrics import _imported
    from mccard_dist.store import ResultsStore

    spec = smoke_spec(*SMALL, BOTH)
    ResultsStore.open_or_create(spec)
    text = mine.read_text()
    mine.write_text(text.replace('"""Mean absolute training', '"""Edited. Mean absolute training'))
    _imported.cache_clear()
    ResultsStore.open_or_create(smoke_spec(*SMALL, BOTH))
    mine.write_text(mine.read_text().replace("np.linalg.norm(ev.coef - ev.coef_true)",
                                             "np.linalg.norm(ev.coef - ev.coef_true, 1)"))
    with pytest.raises(UsageError) as info:
        ResultsStore.open_or_create(smoke_spec(*SMALL, BOTH))
    said = str(info.value)
    assert "\n" not in said and "metric coef_error's code" in said
    assert "code fingerprint" not in said and "estimator code" not in said
    ResultsStore.open_or_create(smoke_spec(*SMALL, BOTH, "run.allow_mixed_versions=true"))
    assert Path(spec.store.path).exists()

"""``run.unit``: one Dask task per K-fold fit gives the same store as blocks of whole cells."""

import numpy as np
import pytest

from mccard_dist.config import ConfigError, from_dictconfig
from mccard_dist.grid import resolve_unit

TIMINGS = ("cell_seconds", "fit_seconds")


def same_results(a, b):
    for name in a.data_vars:
        if name in TIMINGS:
            continue
        x, y = a[name].values, b[name].values
        if x.dtype.kind == "f":
            np.testing.assert_array_equal(x, y, err_msg=name)
        else:
            assert (x == y).all(), name


@pytest.mark.parametrize("overrides, message", [
    (["run.unit=fit", "cv.race=0.25"], "run.unit: fit splits K-fold CV into one task per fit; "
                                        "cv.race decides"),
    (["run.unit=fit", "cv=alo"], "cv.scheme=alo decides"),
    (["run.unit=fits"], "run.unit: must be one of auto, cell, fit"),
])
def test_fit_units_are_refused_where_the_cv_is_sequential(compose, overrides, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        from_dictconfig(compose(["experiment=smoke", *overrides]))


def test_auto_takes_fit_units_for_few_cells_per_worker(compose):
    spec = from_dictconfig(compose(["experiment=smoke"]))
    assert spec.run.unit == "auto"
    assert resolve_unit(spec, n_cells=7, n_workers=2) == "fit"
    assert resolve_unit(spec, n_cells=8, n_workers=2) == "cell"
    raced = from_dictconfig(compose(["experiment=smoke", "cv.race=0.25"]))
    assert resolve_unit(raced, n_cells=1, n_workers=100) == "cell"
    fixed = from_dictconfig(compose(["experiment=smoke", "run.unit=cell"]))
    assert resolve_unit(fixed, n_cells=1, n_workers=100) == "cell"


@pytest.mark.slow
@pytest.mark.cluster
def test_fit_units_give_the_cell_units_store_and_resume_by_cell(compose, tmp_path):
    from distributed import Client, LocalCluster

    from mccard_dist import grid, tasks
    from mccard_dist.runner import run_experiment, run_serial
    from mccard_dist.store import open_results

    def spec(name, unit):
        return from_dictconfig(compose(["experiment=smoke", f"store.path={tmp_path}/{name}.zarr",
                                        "run.progress=false", f"run.unit={unit}"]))

    run_serial(spec("serial", "cell"))
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        cells = run_experiment(spec("cells", "cell"), client=client)
        client.run(tasks._cached_data.cache_clear)
        fits = run_experiment(spec("fits", "fit"), client=client)
        cached = client.run(lambda: tasks._cached_data.cache_info())
        # interrupted after 3 cells, then resumed: the finished cells are not run again
        first = run_experiment(spec("resumed", "fit"), client=client, stop_after_blocks=3)
        second = run_experiment(spec("resumed", "fit"), client=client)
    assert (cells.unit, fits.unit, first.unit) == ("cell", "fit", "fit")
    assert first.stopped_early and second.n_pending_before == fits.n_cells - 3
    serial = open_results(tmp_path / "serial.zarr")
    assert (serial["status"] == 1).all()
    for name in ("cells", "fits", "resumed"):
        same_results(serial, open_results(tmp_path / f"{name}.zarr"))
    # each worker built a cell's data once for all the fits of that cell it ran
    plain = spec("x", "fit")
    n_tasks = fits.n_cells + sum(len(grid.cv_units(plain.method(c.method), plain.cv))
                                 * plain.cv.n_folds for c in grid.cells(plain))
    hits = sum(info.hits for info in cached.values())
    misses = sum(info.misses for info in cached.values())
    assert hits + misses == n_tasks and misses <= 2 * fits.n_cells

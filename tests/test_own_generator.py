"""A data generator of one's own: ``data=generator data.generator=module:function`` with
parameters of its own. Every cell's data are the function's for the cell's key, on the workers as
in the driver; the store names it and its file enters the code fingerprint; reading the store
imports nothing."""

import os
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr

pytestmark = pytest.mark.slow  # small pipeline runs and subprocesses

MODULE = '''
import numpy as np


def hetero(seed, psi, tau, n=40, d=12, k=3, slope=1.0, truth=True):
    """Heteroscedastic noise growing with |x_0|; a share psi of the rows shifted by tau."""
    rng = np.random.default_rng([seed, 7])
    coef = np.zeros(d)
    coef[:k] = rng.normal(size=k) + 2.0
    X, X_test = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    noise = rng.normal(size=n) * (0.1 + slope * np.abs(X[:, 0]))
    out = rng.random(n) < psi
    noise[out] += tau
    return {"X_train": X, "y_train": X @ coef + noise, "X_test": X_test,
            "y_test": X_test @ coef, "coef_true": coef if truth else None, "outlier_mask": out}


def ragged(seed, psi, tau, **params):
    X = np.ones((10, 3))
    return {"X_train": X, "y_train": np.ones(9), "X_test": X, "y_test": np.ones(10)}
'''

GRID = ("experiment=smoke", "data=generator", "data.generator=simlab:hetero",
        "+data.params.slope=2.0", "experiment.methods=[ls_ard,mcc_l1]",
        "experiment.seeds.count=2", "run.block_seconds=0", "run.progress=false")


@pytest.fixture
def simlab(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg" / "simlab"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path / "pkg"))
    monkeypatch.delitem(sys.modules, "simlab", raising=False)
    from mccard_dist.config import data as data_config
    from mccard_dist.data import generated

    for cached in (generated.generator_function, data_config._probe):
        cached.cache_clear()
    yield pkg / "__init__.py"
    for cached in (generated.generator_function, data_config._probe):
        cached.cache_clear()


def _spec(*overrides, path):
    from mccard_dist import compose

    return compose(overrides=[*GRID, *overrides, f"store.path={path}"])


def test_a_generators_data_run_on_workers_as_in_the_driver_and_the_store_names_it(simlab,
                                                                                 tmp_path):
    import json

    from mccard_dist.runner import run_serial

    spec = _spec(path=tmp_path / "serial.zarr")
    spec.check_data()
    import simlab as lab

    direct = lab.hetero(spec.seeds[1], spec.psi[-1], spec.tau[0], slope=2.0)
    cell = spec.data.make_data(spec.seeds[1], spec.psi[-1], spec.tau[0])
    for name in ("X_train", "y_train", "X_test", "y_test", "coef_true", "outlier_mask"):
        np.testing.assert_array_equal(getattr(cell, name), direct[name])
    assert (spec.data.n_train, spec.data.n_features, spec.data.n_relevant) == (40, 12, 3)
    run_serial(spec)

    # mccard-run on a LocalCluster: the workers build every cell's data from its key
    env = {**os.environ, "PYTHONPATH": str(simlab.parent.parent), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(["mccard-run", *GRID, "cluster.n_workers=2",
                           f"store.path={tmp_path / 'cluster.zarr'}"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    a, b = xr.open_zarr(tmp_path / "serial.zarr"), xr.open_zarr(tmp_path / "cluster.zarr")
    assert (a["status"] == 1).all() and (b["status"] == 1).all()
    for name in a.data_vars:
        if name not in ("fit_seconds", "cell_seconds"):
            assert a[name].equals(b[name]), name
    assert np.isfinite(a["f1"]).all() and a.sizes["feature"] == 12
    described = json.loads(a.attrs["grid_description"])["data"]
    assert described == {"source": "generator", "generator": "simlab:hetero",
                         "params": {"slope": 2.0}}
    assert "data" in json.loads(a.attrs["code"])

    # read and reported without the generator importable
    code = (f"import sys, mccard_dist\nfrom mccard_dist.analysis import write_report\n"
            f"ds = mccard_dist.open_results({str(tmp_path / 'serial.zarr')!r})\n"
            f"write_report(ds, {str(tmp_path / 'report')!r}, html=False)\n"
            "print('simlab' in sys.modules)\n")
    read = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300,
                          env={k: v for k, v in env.items() if k != "PYTHONPATH"})
    assert read.returncode == 0, read.stderr[-2000:]
    assert read.stdout.strip() == "False"
    assert "data of the generator simlab:hetero (slope=2.0)" in (
        tmp_path / "report" / "report.md").read_text()


def test_a_generator_without_true_coefficients_scores_no_selection(simlab, tmp_path):
    from mccard_dist.runner import run_serial

    spec = _spec("+data.params.truth=false", "experiment.seeds.count=1",
                 path=tmp_path / "s.zarr")
    spec.check_data()
    assert not spec.data.knows_true_coef and spec.data.n_relevant is None
    run_serial(spec)
    ds = xr.open_zarr(tmp_path / "s.zarr")
    assert (ds["status"] == 1).all() and np.isfinite(ds["rmse"]).all()
    assert np.isnan(ds["f1"]).all() and np.isfinite(ds["n_selected"]).all()


@pytest.mark.parametrize("overrides, said", [
    (("+data.params.slop=2.0",), "data.params: slop not accepted by simlab:hetero; it takes n, d, "
                                 "k, slope, truth"),
    (("data.generator=simlab:nowhere",), "data.generator: cannot be imported (AttributeError"),
    (("data.generator=simlab:ragged",),
     "data.generator: its call at seed 0, psi 0, tau 1 failed: ValueError: the data generator "
     "simlab:ragged gave X_train (10, 3), y_train (9,)"),
])
def test_a_generator_that_cannot_run_is_refused_in_one_line_before_any_store(simlab, tmp_path,
                                                                            overrides, said):
    from mccard_dist.config import ConfigError

    spec = _spec(*overrides, path=tmp_path / "never.zarr")
    with pytest.raises(ConfigError) as info:
        spec.check_data()
    assert str(info.value).startswith(said) and "\n" not in str(info.value), str(info.value)
    assert not (tmp_path / "never.zarr").exists()


def test_an_edit_of_the_generators_code_is_refused_a_docstring_is_not(simlab, tmp_path):
    from mccard_dist.errors import UsageError
    from mccard_dist.store import ResultsStore

    path = tmp_path / "own.zarr"
    ResultsStore.open_or_create(_spec(path=path))
    text = simlab.read_text()
    simlab.write_text(text.replace('"""Heteroscedastic', '"""Edited. Heteroscedastic'))
    ResultsStore.open_or_create(_spec(path=path))
    simlab.write_text(simlab.read_text().replace("coef[:k] = rng.normal(size=k) + 2.0",
                                                 "coef[:k] = rng.normal(size=k) + 3.0"))
    with pytest.raises(UsageError) as info:
        ResultsStore.open_or_create(_spec(path=path))
    said = str(info.value)
    assert "\n" not in said and "the data generator's code (simlab:hetero)" in said
    assert "code fingerprint" not in said
    ResultsStore.open_or_create(_spec("run.allow_mixed_versions=true", path=path))

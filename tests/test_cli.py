"""`mccard-run` end to end in a subprocess: overrides, multirun, resume, refusals."""

import subprocess
import sys

import pytest
import xarray as xr

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def mccard_run(cwd, *args, check=True):
    proc = subprocess.run([sys.executable, "-m", "mccard_dist.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"mccard-run failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_run_with_overrides_then_rerun_resumes(tmp_path):
    args = ["experiment=smoke", "data.n_features=50", "experiment.methods=[mcc_ard,ls_ard]",
            "run.progress=false"]
    first = mccard_run(tmp_path, *args)
    stores = list((tmp_path / "results").glob("smoke-*.zarr"))
    assert len(stores) == 1
    ds = xr.open_zarr(stores[0])
    assert ds.sizes["feature"] == 50 and list(ds["model"].values) == ["mcc_ard", "ls_ard"]
    assert (ds["status"] == 1).all()
    assert "mcc_ard" in first.stdout and "results:" in first.stdout
    # Hydra's run folder keeps the log and the resolved config
    assert list((tmp_path / "outputs" / "smoke").glob("*/.hydra/config.yaml"))
    second = mccard_run(tmp_path, *args)
    assert "nothing to run" in second.stdout + second.stderr


def test_multirun_gives_one_store_per_job(tmp_path):
    import numpy as np

    from mccard_dist import open_results

    proc = mccard_run(tmp_path, "-m", "experiment=smoke", "data.n_features=40,50",
                      "experiment.methods=[mcc_ard]", "run.progress=false")
    stores = sorted((tmp_path / "results").glob("smoke-*.zarr"))
    assert len(stores) == 2
    sizes = sorted(xr.open_zarr(s).sizes["feature"] for s in stores)
    assert sizes == [40, 50]
    for s in stores:
        assert (xr.open_zarr(s)["status"] == 1).all()
    # the end of the multirun says which job wrote which store ...
    table = {line.split()[1]: line.split()[2] for line in proc.stdout.splitlines()
             if "data.n_features=" in line and line.split()[0].isdigit()}
    by_size = {f"data.n_features={xr.open_zarr(s).sizes['feature']}": str(s.resolve())
               for s in stores}
    assert table == by_size
    # ... and the multirun folder opens as one dataset along the swept setting
    (sweep,) = (tmp_path / "multirun").iterdir()
    ds = open_results(sweep)
    assert list(ds["n_features"].values) == [40, 50] and ds["r"].dims[0] == "n_features"
    for size, path in ((40, table["data.n_features=40"]), (50, table["data.n_features=50"])):
        np.testing.assert_array_equal(ds["r"].sel(n_features=size).values,
                                      open_results(path)["r"].values)


@pytest.mark.parametrize("override, message", [
    ("experiment.psi=[0.0,1.5]", "experiment.psi"),
    ("experiment.methods=[mcc_ard,nope]", "experiment.methods"),
    ("experiment.tau=[-1.0]", "experiment.tau"),
    ("cv.n_folds=1", "cv.n_folds"),
    ("methods.mcc_ard.grid.kernel_width=[0.0]", "methods.mcc_ard.grid.kernel_width"),
])
def test_bad_config_is_refused_before_any_work(tmp_path, override, message):
    proc = mccard_run(tmp_path, "experiment=smoke", override, check=False)
    assert proc.returncode != 0
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) <= 2
    assert not (tmp_path / "results").exists()  # no store, no cluster


def test_foreign_store_is_refused_with_the_difference(tmp_path):
    store = tmp_path / "shared.zarr"
    mccard_run(tmp_path, "experiment=smoke", f"store.path={store}",
               "experiment.methods=[ls_ard]", "run.progress=false")
    before = xr.open_zarr(store).load()
    proc = mccard_run(tmp_path, "experiment=smoke", f"store.path={store}",
                      "experiment.methods=[ls_ard]", "data.noise_var=0.1", check=False)
    assert proc.returncode != 0
    assert "data.noise_var: 0.05 != 0.1" in proc.stderr
    xr.testing.assert_identical(before, xr.open_zarr(store).load())


def test_alo_with_ard_methods_warns_before_running(compose, tmp_path, caplog):
    import logging

    from mccard_dist import app
    from mccard_dist.config import from_dictconfig

    spec = from_dictconfig(compose(["experiment=smoke", "cv=alo", "experiment.methods=[mcc_ard]",
                                    "experiment.psi=[0.0]", "experiment.seeds.count=1",
                                    f"store.path={tmp_path}/s.zarr", "run.progress=false",
                                    "cluster.n_workers=1"]))
    with caplog.at_level(logging.WARNING, logger="mccard_dist"):
        app.run_from_spec(spec)
    assert any("cv.scheme=alo with mcc_ard" in r.getMessage() for r in caplog.records)


def test_sigterm_while_the_cluster_starts_says_nothing_was_written(tmp_path):
    import os
    import signal
    import time

    store = tmp_path / "s.zarr"
    proc = subprocess.Popen([sys.executable, "-m", "mccard_dist.cli", "experiment=smoke",
                             f"store.path={store}", "run.progress=false", "cluster.n_workers=2"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    lines = []
    for line in proc.stdout:  # the run logs this line just before it starts the cluster ...
        lines.append(line)
        if "cells to run ->" in line:
            time.sleep(0.3)  # ... which takes seconds: the signal comes while it starts
            os.kill(proc.pid, signal.SIGTERM)
            break
    rest, _ = proc.communicate(timeout=120)
    output = "".join(lines) + rest
    assert proc.returncode != 0
    assert "Traceback" not in output and "Status.init" not in output
    # the line says what the store holds (the cluster almost always is still starting)
    said = ("interrupted (signal SIGTERM): finished blocks are in the store; rerun the same "
            "command to resume") if store.exists() else (
        "interrupted (signal SIGTERM) before the store was created: nothing was written; rerun "
        "the same command to start")
    assert said in output.splitlines(), output


def test_the_interrupted_line_says_what_the_store_holds(smoke_spec):
    from mccard_dist.cli import _interrupted
    from mccard_dist.runner import run_serial

    spec = smoke_spec("experiment.methods=[ls_ard]")
    assert "before the store was created" in _interrupted(spec, KeyboardInterrupt())
    run_serial(spec)
    assert _interrupted(spec, KeyboardInterrupt("signal SIGTERM")) == (
        "interrupted (signal SIGTERM): finished blocks are in the store; rerun the same command "
        "to resume")

"""Faults of a run's cluster: a cell that kills its worker (memory) or never returns, and a
scheduler that goes away (killed) or stops answering (frozen). The other cells of the run finish,
the cell is recorded as failed with why, and the run ends in a bounded time, in one line where it
cannot go on; a resume then gives what an undisturbed run gives."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

pytestmark = [pytest.mark.slow, pytest.mark.cluster]

#: a user's package: a least-squares fit that, on the training data of one seed, allocates past
#: any small worker memory limit (Hog) or never returns (Hang)
PACKAGE = '''
import time
import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

__version__ = "1.0"
#: the first training target of the seed that misbehaves (set by the test)
BAD_Y0 = {bad_y0!r}


class Hog(RegressorMixin, BaseEstimator):
    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def misbehave(self):
        np.ones(2 * 2**30 // 8).sum()  # 2 GB, touched

    def fit(self, X, y):
        if abs(float(y[0]) - BAD_Y0) < 1e-12:
            self.misbehave()
        self.coef_ = np.linalg.lstsq(X, y - y.mean(), rcond=None)[0]
        self.intercept_ = float(y.mean())
        return self

    def predict(self, X):
        return np.asarray(X) @ self.coef_ + self.intercept_


class Hang(Hog):
    def misbehave(self):
        time.sleep(10**6)
'''
GRID = ["experiment=smoke", "data.n_features=10", "data.n_relevant=3", "experiment.psi=[0.0]",
        "experiment.seeds.count=6", "run.progress=false"]


@pytest.fixture
def user(tmp_path, monkeypatch):
    """A config folder with the methods ``hog`` and ``hang`` of a package on the path."""
    from mccard_dist import compose

    spec = compose(overrides=[*GRID, "experiment.methods=[ls_ard]"])
    bad_y0 = float(spec.data.make_data(spec.seeds[2], 0.0, spec.tau[0]).y_train[0])
    (tmp_path / "pkg" / "hog").mkdir(parents=True)
    (tmp_path / "pkg" / "hog" / "__init__.py").write_text(PACKAGE.format(bad_y0=bad_y0))
    (tmp_path / "conf" / "method").mkdir(parents=True)
    for name, cls in (("hog", "Hog"), ("hang", "Hang")):
        (tmp_path / "conf" / "method" / f"{name}.yaml").write_text(f"estimator: hog:{cls}\n")
    monkeypatch.syspath_prepend(str(tmp_path / "pkg"))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "pkg"))  # the workers' too
    return tmp_path


def _spec(user, *overrides):
    from mccard_dist import compose

    return compose(overrides=[*GRID, f"store.path={user / 'store.zarr'}", *overrides],
                   config_dir=user / "conf")


def _errors(path):
    ds = xr.open_zarr(path)
    return ds["status"].values.ravel(), [str(e) for e in ds["error"].values.ravel()]


def test_a_cell_that_kills_its_worker_fails_alone_and_the_cluster_keeps_its_workers(user):
    from distributed import Client, LocalCluster

    from mccard_dist.runner import run_experiment

    spec = _spec(user, "experiment.methods=[hog]", "run.block_seconds=1000")
    start = time.monotonic()
    with LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="700MB",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        report = run_experiment(spec, client=client, progress=False)
        status, errors = _errors(spec.store.path)
        assert list(status) == [1, 1, 2, 1, 1, 1], status  # the third seed's cell alone failed
        assert errors[2].startswith("WorkerDied: its worker died while fitting it, 4 times: its "
                                    "memory") and "went past 95% of the worker's limit" in errors[2]
        assert report.complete and len(client.nthreads()) == 2  # the workers are back
        # retry_failed tries it again, and it fails again the same way
        again = run_experiment(_spec(user, "experiment.methods=[hog]", "run.retry_failed=true"),
                               client=client, progress=False)
        assert again.n_pending_before == 1 and again.n_failed_cells == 1
    assert time.monotonic() - start < 300


def test_a_cell_that_never_returns_fails_once_past_cell_timeout(user):
    from mccard_dist.cluster import connect
    from mccard_dist.runner import run_experiment

    spec = _spec(user, "experiment.methods=[hang]", "run.cell_timeout=10s",
                 "cluster.n_workers=2")
    start = time.monotonic()
    with connect(spec.cluster) as client:
        report = run_experiment(spec, client=client, progress=False)
        assert len(client.nthreads()) == 2
    status, errors = _errors(spec.store.path)
    assert list(status) == [1, 1, 2, 1, 1, 1] and report.complete
    assert errors[2].startswith("CellTimeout: the cell ran for ") and "run.cell_timeout (10s)" in \
        errors[2]
    assert time.monotonic() - start < 240


def _scheduler(port):
    """A scheduler and two one-thread workers of this user's, started here."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler",
                                  "--port", str(port), "--no-dashboard"], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2)
    workers = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker",
                                f"tcp://127.0.0.1:{port}", "--nthreads", "1", "--nworkers", "2",
                                "--no-dashboard"], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    return scheduler, workers


def _done(path) -> int:
    try:
        return int((xr.open_zarr(path)["status"].values == 1).sum())
    except Exception:  # noqa: BLE001 - not created yet, or being written
        return 0


@pytest.mark.parametrize("how", ["killed", "frozen"])
def test_a_scheduler_that_goes_away_ends_the_run_in_one_line_and_a_resume_is_identical(
        tmp_path, how):
    from mccard_dist.runner import run_serial

    port = 8790 + (how == "frozen")
    store = tmp_path / "s.zarr"
    grid = ["experiment=smoke", "experiment.methods=[ls_ard]", "data.n_features=20",
            "experiment.seeds.count=60", "run.block_seconds=0"]
    args = [sys.executable, "-m", "mccard_dist.cli", *grid, "cluster=address",
            f"cluster.address=tcp://127.0.0.1:{port}", "cluster.no_worker_timeout=15s",
            "run.progress=false", f"store.path={store}"]
    scheduler, workers = _scheduler(port)
    try:
        driver = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while _done(store) < 10 and time.monotonic() < deadline and driver.poll() is None:
            time.sleep(0.2)
        os.kill(scheduler.pid, signal.SIGKILL if how == "killed" else signal.SIGSTOP)
        stopped = time.monotonic()
        out, err = driver.communicate(timeout=120)
        took = time.monotonic() - stopped
    finally:
        os.kill(scheduler.pid, signal.SIGCONT) if scheduler.poll() is None else None
        scheduler.kill()
        os.killpg(workers.pid, signal.SIGKILL)
        workers.wait()
    assert driver.returncode == 1 and "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"error: lost the scheduler at tcp://127.0.0.1:{port} ("), err
    assert last.endswith("rerun the same command to resume")
    assert took < (45 if how == "frozen" else 30), took
    if how == "frozen":  # said while it waited, as a stalled worker is
        assert f"the scheduler at tcp://127.0.0.1:{port} has not answered for " in out + err
    assert 0 < _done(store) < 120
    scheduler, workers = _scheduler(port)
    try:
        resumed = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    finally:
        scheduler.kill()
        os.killpg(workers.pid, signal.SIGKILL)
        workers.wait()
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    from mccard_dist import compose

    reference = compose(overrides=[*grid, "run.progress=false",
                                   f"store.path={tmp_path / 'ref.zarr'}"])
    run_serial(reference)
    a, b = xr.open_zarr(store), xr.open_zarr(tmp_path / "ref.zarr")
    for name in a.data_vars:
        if name not in ("fit_seconds", "cell_seconds"):
            np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)

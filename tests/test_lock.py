"""One driver per store: the lock file, its holder in the refusal, stale locks, concurrent drivers."""

import json
import os
import socket
import subprocess
import sys
import time

import pytest
import xarray as xr

from mccard_dist.lock import StoreLock, StoreLockedError, lock_path


def dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_second_holder_is_refused_naming_the_first(tmp_path):
    store = tmp_path / "a.zarr"
    with StoreLock(store) as lock:
        holder = json.loads(lock_path(store).read_text())
        assert holder["pid"] == os.getpid() and holder["host"] == socket.gethostname()
        with pytest.raises(StoreLockedError) as info:
            StoreLock(store).acquire()
        message = str(info.value)
        assert f"PID {os.getpid()}" in message and socket.gethostname() in message
        assert len(message.splitlines()) == 1
    assert not lock_path(store).exists()  # released
    StoreLock(store).acquire().release()  # and free again


def test_released_by_an_exception_too(tmp_path):
    store = tmp_path / "b.zarr"
    with pytest.raises(RuntimeError), StoreLock(store):
        raise RuntimeError("boom")
    assert not lock_path(store).exists()


def test_a_stale_lock_on_this_host_is_taken_over(tmp_path, caplog):
    store = tmp_path / "c.zarr"
    lock_path(store).write_text(json.dumps({"host": socket.gethostname(), "pid": dead_pid(),
                                            "since": "earlier"}))
    with StoreLock(store):
        assert json.loads(lock_path(store).read_text())["pid"] == os.getpid()
    assert "stale lock" in caplog.text


def test_a_reused_pid_is_not_mistaken_for_the_holder(tmp_path):
    store = tmp_path / "d.zarr"
    lock_path(store).write_text(json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                                            "process_start": "-1", "since": "earlier"}))
    with StoreLock(store):  # our PID, but not our process start: the old holder is gone
        pass


def test_a_lock_from_another_host_is_refused_with_what_to_do(tmp_path):
    store = tmp_path / "e.zarr"
    lock_path(store).write_text(json.dumps({"host": "node-17", "pid": 4242, "since": "09:00"}))
    with pytest.raises(StoreLockedError, match=r"node-17 with PID 4242.*delete .*e\.zarr\.lock"):
        StoreLock(store).acquire()
    assert lock_path(store).exists()  # not ours to remove


def test_folders_made_for_the_lock_go_again_if_left_empty(tmp_path):
    store = tmp_path / "results" / "deeper" / "f.zarr"
    with StoreLock(store):
        assert store.parent.is_dir()
    assert not (tmp_path / "results").exists()


@pytest.mark.slow
@pytest.mark.cluster
def test_a_second_driver_on_a_running_store_is_refused(tmp_path, compose):
    import numpy as np

    from mccard_dist.config import from_dictconfig
    from mccard_dist.runner import run_serial

    store = tmp_path / "store.zarr"
    # 20 seeds on one worker: the first driver is still running when the second one starts
    overrides = ["experiment=smoke", "experiment.seeds.count=20", "run.progress=false",
                 "run.fits_per_block=1", "cluster.n_workers=1"]
    args = [sys.executable, "-m", "mccard_dist.cli", *overrides, f"store.path={store}"]
    first = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    deadline = time.monotonic() + 120
    while not (store.exists() and lock_path(store).exists()):
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.2)
    second = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert first.poll() is None, "the first driver ended before the second one started"
    assert second.returncode != 0
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: the store"), second.stderr
    assert f"PID {first.pid}" in second.stderr
    first.communicate(timeout=600)
    assert first.returncode == 0
    assert not lock_path(store).exists()
    runs = json.loads(xr.open_zarr(store).attrs["runs"])
    assert [r["ended"] for r in runs] == ["finished"]  # the refused driver left no record
    # ... and the results are those of an undisturbed run
    reference = tmp_path / "reference.zarr"
    run_serial(from_dictconfig(compose([*overrides, f"store.path={reference}"])))
    a, b = xr.open_zarr(store), xr.open_zarr(reference)
    for name in ("status", "r", "rmse", "f1", "n_selected", "chosen_h", "cv_score", "coef"):
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)


def _serial(path, overrides, queue):
    from conftest import compose_config

    from mccard_dist.config import from_dictconfig
    from mccard_dist.runner import run_serial

    spec = from_dictconfig(compose_config(["experiment=smoke", f"store.path={path}", *overrides]))
    try:
        run_serial(spec)
        queue.put("ran")
    except StoreLockedError:
        queue.put("refused")


@pytest.mark.slow
def test_two_drivers_creating_one_store_together(tmp_path):
    import multiprocessing

    store = tmp_path / "new.zarr"
    overrides = ["experiment.methods=[ls_ard]", "data.n_features=40"]
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_serial, args=(store, overrides, queue)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
        assert p.exitcode == 0
    outcomes = sorted(queue.get() for _ in procs)
    assert "ran" in outcomes and set(outcomes) <= {"ran", "refused"}
    assert (xr.open_zarr(store)["status"] == 1).all()
    assert not list(tmp_path.glob("*.creating")) and not lock_path(store).exists()

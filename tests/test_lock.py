"""One driver per store: the lock file, its holder in the refusal, stale locks, concurrent drivers."""

import json
import os
import signal
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
    with StoreLock(store):
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


def test_the_file_a_killed_holder_left_is_taken_over(tmp_path, caplog):
    store = tmp_path / "c.zarr"
    lock_path(store).write_text(json.dumps({"host": "node-17", "pid": dead_pid(),
                                            "since": "earlier"}))
    with StoreLock(store):  # nobody holds the file: its holder's lock went with its process
        assert json.loads(lock_path(store).read_text())["pid"] == os.getpid()
    assert "ended without releasing it" in caplog.text and "node-17" in caplog.text


def test_the_lock_file_of_a_copied_store_is_told_from_a_left_one(tmp_path, caplog):
    """A store copied (``cp -r``) while its driver runs carries that driver's lock file, naming a
    live process of this host: the copy is a separate store, so its lock is free to take, and
    the log says where the file came from rather than that its driver ended."""
    import logging
    import shutil

    caplog.set_level(logging.INFO, logger="mccard_dist.lock")
    original = tmp_path / "a.zarr"
    original.mkdir()
    with StoreLock(original):
        copy = tmp_path / "copy.zarr"
        shutil.copytree(original, copy)
        with StoreLock(copy):  # the original stays locked, the copy is taken
            with pytest.raises(StoreLockedError):
                StoreLock(original).acquire()
            inside = json.loads((copy / ".lock").read_text())
            assert inside["store"] == str(copy.resolve())
    assert "ended without releasing" not in caplog.text
    assert f"copy (or move) of the store {original.resolve()}" in caplog.text
    assert "still running there" in caplog.text and f"PID {os.getpid()}" in caplog.text


def test_a_lock_file_naming_a_live_holder_but_no_store_is_not_said_to_be_ended(tmp_path, caplog):
    store = tmp_path / "d.zarr"
    store.mkdir()
    (store / ".lock").write_text(json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                                             "since": "earlier"}))
    with StoreLock(store):
        pass
    assert "ended without releasing" not in caplog.text
    assert "which still runs but does not hold it" in caplog.text


HOLD = """
import sys, time
from mccard_dist.lock import StoreLock
with StoreLock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.mark.slow  # a second process holds the lock
def test_a_lock_held_by_another_process_is_refused_naming_it(tmp_path):
    store = tmp_path / "e.zarr"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(store)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreLockedError, match=rf"PID {holder.pid} \(since"):
            StoreLock(store).acquire()
        holder.kill()  # killed outright: the kernel drops its lock with the process
        holder.wait()
        with StoreLock(store):  # ... so the store is free again at once
            pass
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()


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
    # the first driver is stopped as soon as its lock is in the store, so it holds the lock while
    # the second starts; 5 seeds on one worker (40 blocks) keep it from finishing in the 0.2 s
    # between two looks
    overrides = ["experiment=smoke", "experiment.seeds.count=5", "run.progress=false",
                 "run.block_seconds=0", "cluster.n_workers=1"]
    args = [sys.executable, "-m", "mccard_dist.cli", *overrides, f"store.path={store}"]
    first = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    deadline = time.monotonic() + 120
    while not (store.exists() and lock_path(store).exists()):
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.2)
    # the first driver holds its lock but cannot finish while stopped: no race with the second
    first.send_signal(signal.SIGSTOP)
    try:
        second = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=120,
                                check=False)
    finally:
        first.send_signal(signal.SIGCONT)
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
    for name in ("status", "r", "rmse", "f1", "n_selected", "chosen_kernel_width", "cv_score",
                 "coef"):
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
def test_drivers_creating_a_store_another_holds_are_refused(tmp_path):
    import multiprocessing

    store = tmp_path / "new.zarr"
    overrides = ["experiment.methods=[ls_ard]", "data.n_features=40"]
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    with StoreLock(store):  # a driver about to create the store
        procs = [ctx.Process(target=_serial, args=(store, overrides, queue)) for _ in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(300)
            assert p.exitcode == 0
        assert sorted(queue.get() for _ in procs) == ["refused", "refused"]
        assert not store.exists() and not list(tmp_path.glob("*.creating"))
    _serial(store, overrides, queue)  # once it is free, one creates and fills it
    assert queue.get() == "ran"
    assert (xr.open_zarr(store)["status"] == 1).all()
    assert not list(tmp_path.glob("*.creating")) and not lock_path(store).exists()


def test_a_store_reached_through_a_symlink_is_the_same_store(tmp_path):
    (tmp_path / "real" / "s.zarr").mkdir(parents=True)
    (tmp_path / "alias.zarr").symlink_to(tmp_path / "real" / "s.zarr")
    with StoreLock(tmp_path / "real" / "s.zarr"):
        with pytest.raises(StoreLockedError, match=f"PID {os.getpid()}"):
            StoreLock(tmp_path / "alias.zarr").acquire()
    with StoreLock(tmp_path / "alias.zarr"):  # and the other way round, before the store exists
        with pytest.raises(StoreLockedError):
            StoreLock(tmp_path / "real" / "s.zarr").acquire()


def test_deleting_the_lock_file_beside_a_store_frees_nothing(tmp_path):
    store = tmp_path / "g.zarr"
    store.mkdir()
    with StoreLock(store):
        lock_path(store).unlink()
        with pytest.raises(StoreLockedError, match=f"PID {os.getpid()}"):
            StoreLock(store).acquire()
    assert not (store / ".lock").exists() and not lock_path(store).exists()


def test_a_store_created_under_the_lock_is_then_locked_inside(tmp_path):
    store = tmp_path / "h.zarr"
    with StoreLock(store) as lock:
        store.mkdir()  # what the runner does once the cluster is up
        lock.hold_store()
        lock_path(store).unlink()
        with pytest.raises(StoreLockedError):
            StoreLock(store).acquire()


def _unwritable_beside(monkeypatch, store):
    real_open = os.open

    def refuse(path, *args, **kwargs):
        if str(path) == str(lock_path(store)):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)


def test_an_existing_store_in_a_folder_one_cannot_write_is_locked_inside(tmp_path, monkeypatch):
    store = tmp_path / "i.zarr"
    store.mkdir()
    _unwritable_beside(monkeypatch, store)
    with StoreLock(store):
        assert (store / ".lock").exists()
        with pytest.raises(StoreLockedError):
            StoreLock(store).acquire()


def test_a_new_store_in_a_folder_one_cannot_write_is_refused_in_one_line(tmp_path, monkeypatch):
    from mccard_dist.errors import StoreAccessError

    store = tmp_path / "j.zarr"
    _unwritable_beside(monkeypatch, store)
    with pytest.raises(StoreAccessError) as info:
        StoreLock(store).acquire()
    assert "Permission denied" in str(info.value) and len(str(info.value).splitlines()) == 1


def test_a_driver_whose_lock_files_were_replaced_stops_and_leaves_the_new_ones(tmp_path):
    """Both lock files deleted by hand: a second driver gets in, the first finds at its next
    write that the file in the store is no longer its own, and its release leaves the second
    driver's files alone."""
    store = tmp_path / "s.zarr"
    store.mkdir()
    first = StoreLock(store).acquire()
    first.check_held()  # still its own
    lock_path(store).unlink()
    (store / ".lock").unlink()
    second = StoreLock(store).acquire()
    with pytest.raises(StoreLockedError, match="was deleted or replaced while this driver ran"):
        first.check_held()
    first.release()
    assert lock_path(store).exists() and (store / ".lock").exists()
    assert json.loads((store / ".lock").read_text())["pid"] == os.getpid()
    second.check_held()
    second.release()
    assert not lock_path(store).exists() and not (store / ".lock").exists()

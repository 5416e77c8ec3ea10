"""The run records of a store: how each run ended and how many cells it wrote, counted from the
store even for a driver that was killed."""

from pathlib import Path

import pytest

from mccard_dist.grid import make_blocks
from mccard_dist.runner import run_serial
from mccard_dist.store import ResultsStore, open_results
from mccard_dist.tasks import run_block

pytestmark = pytest.mark.slow  # fits a few small cells


def test_a_killed_drivers_record_counts_the_cells_it_wrote(smoke_spec, tmp_path):
    spec = smoke_spec("experiment.methods=[ls_ard]", "data.n_features=40", "run.block_seconds=0")
    store = ResultsStore.open_or_create(spec)
    store.start_run("t0")  # a driver that writes two blocks (one cell each), then is killed
    blocks = make_blocks(spec, store.pending_cells(), size=1)
    for block in blocks[:2]:
        store.write_block(block, run_block(spec, block, None))
    assert run_serial(spec).n_pending_before == len(blocks) - 2
    killed, serial = ResultsStore(spec.store.path, spec).runs()
    assert killed["ended"] == "unknown: the driver stopped without recording how"
    assert killed["cells"] == 2
    assert serial["ended"] == "finished (serial)"


def test_the_report_of_a_killed_or_running_driver_shows_the_cells_it_wrote(smoke_spec, tmp_path):
    """A last run record still "running": the report counts the cells written since it started
    and says, from the lock files (read, not taken), whether its driver runs or was killed;
    reading writes nothing."""
    import json
    import subprocess
    import sys

    from mccard_dist.analysis import write_report
    from mccard_dist.lock import INNER_LOCK, StoreLock

    spec = smoke_spec("experiment.methods=[ls_ard]", "data.n_features=40", "run.block_seconds=0")
    store = ResultsStore.open_or_create(spec)
    store.start_run("t0")
    blocks = make_blocks(spec, store.pending_cells(), size=1)
    lock = StoreLock(spec.store.path).acquire()  # the driver, as run_experiment holds it
    for block in blocks[:2]:
        store.write_block(block, run_block(spec, block, None))
    before = {p: p.read_bytes() for p in Path(spec.store.path).rglob("*") if p.is_file()}
    text = write_report(open_results(spec.store.path), tmp_path / "running").path.read_text()
    assert f"| t0 |  | 2 | running (the driver on host " in text
    lock.release()

    # killed outright: its lock file stays, naming a process that has ended
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    inner = Path(spec.store.path) / INNER_LOCK
    inner.write_text(json.dumps({"host": lock._inside.token["host"], "pid": int(dead),
                                 "since": "t0", "store": str(Path(spec.store.path).resolve())}))
    before[inner] = inner.read_bytes()
    text = write_report(open_results(spec.store.path), tmp_path / "killed").path.read_text()
    assert "| t0 |  | 2 | unknown: the driver stopped without recording how |" in text
    after = {p: p.read_bytes() for p in Path(spec.store.path).rglob("*") if p.is_file()}
    assert after == before
    assert ResultsStore(spec.store.path, spec).runs()[0]["ended"] == "running"  # as stored


def test_a_run_that_ends_records_its_cells_and_the_report_shows_them(smoke_spec, tmp_path):
    from mccard_dist.analysis import write_report

    spec = smoke_spec("experiment.methods=[ls_ard]", "data.n_features=40")
    store = ResultsStore.open_or_create(spec)
    index = store.start_run("t0")
    blocks = make_blocks(spec, store.pending_cells(), size=1)
    store.write_block(blocks[0], run_block(spec, blocks[0], None))
    store.end_run(index, 1, "interrupted", finished="t1")
    run = store.runs()[0]
    assert (run["blocks"], run["cells"], run["ended"]) == (1, len(blocks[0]), "interrupted")
    text = write_report(open_results(spec.store.path), tmp_path / "report").path.read_text()
    assert f"| t0 | t1 | {len(blocks[0])} | interrupted |" in text


def test_a_write_error_mid_run_is_one_line_and_keeps_what_was_written(smoke_spec, monkeypatch):
    import zarr

    from mccard_dist.errors import StoreAccessError

    spec = smoke_spec("experiment.methods=[ls_ard]", "data.n_features=40", "run.block_seconds=0")
    real = zarr.AsyncArray.setitem
    writes = {"r": 0}

    async def full_disk(self, selection, value, prototype=None):
        if self.path == "r":
            writes["r"] += 1
            if writes["r"] > 1:  # the second block's first value
                raise OSError(28, "No space left on device")
        return await real(self, selection, value, prototype)

    monkeypatch.setattr(zarr.AsyncArray, "setitem", full_disk)
    with pytest.raises(StoreAccessError) as info:
        run_serial(spec)
    message = str(info.value)
    assert "No space left on device" in message and "rerun" in message
    assert len(message.splitlines()) == 1
    monkeypatch.undo()
    ds = open_results(spec.store.path)
    assert int((ds["status"] == 1).sum()) == 1  # the first block is kept
    assert [r["ended"] for r in ResultsStore(spec.store.path, spec).runs()] == [
        "failed: StoreAccessError: " + message]
    report = run_serial(spec)
    assert report.n_pending_before == ds["status"].size - 1


def test_two_drivers_records_are_merged_not_overwritten(smoke_spec):
    """Each driver rewrites the records as they are on disk, not as it read them at start: a
    second driver (both lock files deleted by hand) loses neither record."""
    spec = smoke_spec("experiment.methods=[ls_ard]", "data.n_features=40")
    first = ResultsStore.open_or_create(spec)
    second = ResultsStore(spec.store.path, spec)  # opened before the first run's record
    a = first.start_run("t0")
    b = second.start_run("t1")  # takes the first for a driver that ended unrecorded
    first.end_run(a, 0, "finished", finished="t2")
    second.end_run(b, 0, "finished", finished="t3")
    runs = ResultsStore(spec.store.path, spec).runs()
    assert [(r["started"], r["finished"], r["ended"]) for r in runs] == [
        ("t0", "t2", "finished"), ("t1", "t3", "finished")]


def test_a_write_after_the_lock_was_taken_by_another_driver_is_refused(smoke_spec):
    from mccard_dist.lock import StoreLock, StoreLockedError, lock_path

    spec = smoke_spec("experiment.methods=[ls_ard]", "data.n_features=40")
    store = ResultsStore.open_or_create(spec)
    store.lock = StoreLock(spec.store.path).acquire()
    block = make_blocks(spec, store.pending_cells(), size=1)[0]
    results = run_block(spec, block, None)
    lock_path(spec.store.path).unlink()
    (Path(spec.store.path) / ".lock").unlink()
    other = StoreLock(spec.store.path).acquire()
    with pytest.raises(StoreLockedError, match="another driver may be writing"):
        store.write_block(block, results)
    assert int((ResultsStore(spec.store.path, spec).status() != 0).sum()) == 0
    store.lock.release()
    other.release()

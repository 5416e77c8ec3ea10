"""A process that read a store exits without zarr's atexit traceback, however long zarr's I/O
thread takes to stop."""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # a process of its own

#: reads a store, then keeps zarr's I/O thread busy for 1 s as the process exits (as a loaded
#: machine delays it); zarr's own exit handler waits 0.2 s for that thread
READ_THEN_EXIT = """
import sys, time
from mccard_dist.store import open_results
print(int(open_results(sys.argv[1])["status"].values.sum()))
from zarr.core import sync
sync.loop[0].call_soon_threadsafe(time.sleep, 1.0)
"""


def test_a_slow_zarr_io_thread_at_exit_prints_no_traceback(smoke_spec, tmp_path):
    from mccard_dist.runner import run_serial
    from mccard_dist.store import store_path

    spec = smoke_spec("experiment.methods=[ls_ard]")
    run_serial(spec)
    out = subprocess.run([sys.executable, "-c", READ_THEN_EXIT, str(store_path(spec))],
                         capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "4"  # 4 cells done (status 1)
    assert "Cannot close a running event loop" not in out.stderr, out.stderr
    assert out.stderr.strip() == ""

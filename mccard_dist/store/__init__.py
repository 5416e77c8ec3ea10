"""The results store: one labelled zarr (format 2, consolidated) per experiment grid.

:mod:`~mccard_dist.store.writer` creates a store from its template and fills it (the only room that
writes zarr); :mod:`~mccard_dist.store.reader` opens stores for analysis;
:mod:`~mccard_dist.store.version` decides which stores this code may resume, reuse and read.
"""

import atexit

from .errors import StoreDamagedError, StoreMismatchError
from .layout import check_writable, store_path
from .reader import SWEEP_LIST, open_results
from .version import StoreVersionError, package_versions
from .writer import ResultsStore

__all__ = ["SWEEP_LIST", "ResultsStore", "StoreDamagedError", "StoreMismatchError",
           "StoreVersionError", "check_writable", "open_results", "package_versions",
           "store_path"]


def _stop_zarr_io() -> None:
    """At exit, before zarr's own exit handler: stop zarr's I/O event loop and wait up to 10 s
    for its thread. Zarr's handler waits 0.2 s for it, and on a loaded machine a thread that
    takes longer made it print "Exception ignored in atexit callback ... Cannot close a running
    event loop"; once the thread has ended, zarr's handler closes the loop quietly."""
    from zarr.core import sync

    loop, thread = getattr(sync, "loop", [None])[0], getattr(sync, "iothread", [None])[0]
    if loop is None or thread is None or loop.is_closed() or not thread.is_alive():
        return
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


# zarr registers its exit handler when imported; handlers run last-registered first
import zarr.core.sync  # noqa: E402, F401

atexit.register(_stop_zarr_io)

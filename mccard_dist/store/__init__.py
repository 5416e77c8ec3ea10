"""The results store: one labelled zarr (format 2, consolidated) per experiment grid.

:mod:`~mccard_dist.store.writer` creates a store from its template and fills it (the only room that
writes zarr); :mod:`~mccard_dist.store.reader` opens stores for analysis.
"""

from .layout import check_writable, store_path
from .reader import SWEEP_LIST, open_results
from .writer import ResultsStore, StoreDamagedError, StoreMismatchError, package_versions

__all__ = ["SWEEP_LIST", "ResultsStore", "StoreDamagedError", "StoreMismatchError",
           "check_writable", "open_results", "package_versions", "store_path"]

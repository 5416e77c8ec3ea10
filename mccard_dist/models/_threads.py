"""BLAS threads of a fit: as many as pay for the problem's size, unless the user set a limit.

Every ``fit`` of the package's estimators (:class:`BlasThreads`' subclasses) runs under
:func:`fit_blas_threads`, which decides once per fit:

- the user has set a limit (:func:`user_limit`): one of :data:`LIMIT_VARIABLES` is set, or a BLAS
  library runs another number of threads than the CPUs this process may use (a
  ``threadpool_limits`` context, or a BLAS whose own default differs) -> every BLAS library runs
  the fewest threads any of them has (numpy's and scipy's wheels each bring an OpenBLAS, and a
  ``threadpool_limits`` made before scipy loaded its own reaches only numpy's), and where they
  all agree they are left as they are;
- else, below :data:`THREADS_MIN_COST` (``N D min(N, D)``) -> one thread for the fit, the
  process's count given back after it; at or above it the threads are left as they are.

A limit is process-wide, and each fit gives back the count it set, in its own thread: a fit that
starts in another thread while one thread's limit holds (joblib's threading backend, a Dask worker
with several threads) takes that limit for the user's and leaves it; after the first fit ends, the
others run with the process's count. (threadpoolctl lets one thread at a time change OpenBLAS's
count, so no two fits can give back each other's.)
"""

from __future__ import annotations

import functools
import os
import threading
from contextlib import contextmanager

import numpy as np

__all__ = ["LIMIT_VARIABLES", "THREADS_MIN_COST", "BlasThreads", "available_cpus",
           "fit_blas_threads", "fit_threads", "user_limit"]

#: ``N D min(N, D)`` (one pruning iteration's dense work) from which a fit keeps the process's
#: BLAS threads: below it a second thread costs more in waiting than it gains in the products
#: (``python docs/tools/bench/run.py threads`` measures both sides of it)
THREADS_MIN_COST = 2.5e10
#: the environment variables through which a user limits BLAS threads
LIMIT_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                   "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "GOTO_NUM_THREADS")


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity where the system has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


@functools.cache
def _blas():
    """The BLAS libraries loaded at the first fit (threadpoolctl's controller of them)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController().select(user_api="blas")


def user_limit() -> bool:
    """Whether the user has limited BLAS threads: one of :data:`LIMIT_VARIABLES` is set, or a BLAS
    library runs another number of threads than :func:`available_cpus` (a ``threadpool_limits``
    context; a limit equal to the CPU count cannot be told from none)."""
    if any(os.environ.get(name) for name in LIMIT_VARIABLES):
        return True
    cpus = available_cpus()
    return any(lib.num_threads != cpus for lib in _blas().lib_controllers)


def fit_threads(n_samples: int, n_features: int) -> int | None:
    """BLAS threads for a fit on ``n_samples x n_features``: under the user's limit the fewest
    any BLAS library runs (``None`` where all run as many); else ``1`` below
    :data:`THREADS_MIN_COST` and ``None`` (as the process has) at or above it."""
    if user_limit():
        counts = {lib.num_threads for lib in _blas().lib_controllers}
        return min(counts) if len(counts) > 1 else None
    if n_samples * n_features * min(n_samples, n_features) >= THREADS_MIN_COST:
        return None
    return 1


_lock = threading.Lock()  # one fit at a time reads and sets the process's threads
_local = threading.local()  # how deep this thread is in fits


def _threads_for(X) -> int | None:
    shape = getattr(X, "shape", None)  # arrays, data frames, sparse matrices
    if shape is None:
        try:
            shape = np.asarray(X).shape
        except (TypeError, ValueError):  # ragged: the fit's own validation says so
            return None
    return fit_threads(*shape) if len(shape) == 2 else None


@contextmanager
def fit_blas_threads(X):
    """Run a fit on ``X`` with :func:`fit_threads`' BLAS threads, given back after it (nothing
    changes for a fit inside a fit of the same thread, or for ``X`` that is not 2-D)."""
    depth = getattr(_local, "depth", 0)
    limit = None
    if depth == 0:
        with _lock:
            threads = _threads_for(X)
            if threads is not None:
                limit = _blas().limit(limits=threads).__enter__()
    _local.depth = depth + 1
    try:
        yield
    finally:
        _local.depth = depth
        if limit is not None:
            with _lock:
                limit.__exit__(None, None, None)


class BlasThreads:
    """Runs the ``fit`` that a subclass defines under :func:`fit_blas_threads` (a ``fit`` calling
    another, as a CV estimator's inner fits, decides once, at the outermost)."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fit = cls.__dict__.get("fit")
        if fit is None or getattr(fit, "blas_threads", False):
            return

        @functools.wraps(fit)
        def wrapped(self, X, *args, **kw):
            with fit_blas_threads(X):
                return fit(self, X, *args, **kw)

        wrapped.blas_threads = True
        cls.fit = wrapped

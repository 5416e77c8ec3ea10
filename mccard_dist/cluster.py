"""Dask clusters from the typed cluster spec: the only place that builds or connects to one.

- ``local``: a :class:`distributed.LocalCluster` of worker processes with one thread each and
  BLAS pinned to one thread, bound to 127.0.0.1, the dashboard on localhost only.
- ``address``: connect to a running scheduler (``tcp://host:8786``).
- ``scheduler_file``: connect through a scheduler file written by ``dask scheduler
  --scheduler-file`` (what the batch scripts in ``jobs/`` do).
"""

from __future__ import annotations

import contextlib
import logging

from .config import ClusterSpec

__all__ = ["connect", "BLAS_ENV"]

log = logging.getLogger(__name__)

#: environment of local worker processes: one BLAS/OpenMP thread each (the workers are the parallelism)
BLAS_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@contextlib.contextmanager
def connect(spec: ClusterSpec):
    """Yield a :class:`distributed.Client` for the spec; close what was created on exit."""
    from distributed import Client, LocalCluster

    if spec.kind == "local":
        options = dict(spec.options)
        cluster = LocalCluster(
            n_workers=spec.n_workers,
            threads_per_worker=spec.threads_per_worker,
            processes=True,
            memory_limit=spec.memory_limit,
            host=spec.host,
            dashboard_address=spec.dashboard_address,
            env=dict(BLAS_ENV),
            **options,
        )
        try:
            with Client(cluster) as client:
                yield client
        finally:
            cluster.close()
    elif spec.kind == "address":
        with Client(spec.address, **dict(spec.options)) as client:
            yield client
    elif spec.kind == "scheduler_file":
        with Client(scheduler_file=spec.scheduler_file, **dict(spec.options)) as client:
            yield client
    else:
        raise ValueError(f"cluster.kind {spec.kind!r} is not supported by this version "
                         "(use local, address or scheduler_file)")

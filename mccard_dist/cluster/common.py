"""What every backend of :mod:`mccard_dist.cluster` shares: the workers' environment and the
refusals in one line."""

from __future__ import annotations

from ..errors import ClusterError

#: environment of local worker processes: one BLAS/OpenMP thread each (workers are the parallelism)
BLAS_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

#: nannies leave ``MALLOC_TRIM_THRESHOLD_`` unset (Dask sets it, which fixes glibc's mmap
#: threshold at 128 KiB: a fit's temporary arrays are then mapped and unmapped, spending much of
#: its time in the kernel); as an environment variable, for batch-job workers
MALLOC_ENV = {"DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON": '{"MALLOC_TRIM_THRESHOLD_": None}'}


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type's name when it has none)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def no_workers(spec, waiting: str) -> ClusterError:
    """The refusal once the cluster has had no worker for ``spec.no_worker_timeout``."""
    return ClusterError(
        f"no workers for {spec.no_worker_timeout} (cluster.no_worker_timeout) while {waiting}: "
        "check that the workers start and reach the scheduler (their logs, the batch jobs), or "
        "raise cluster.no_worker_timeout")

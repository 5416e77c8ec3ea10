"""The batch-job backend (``slurm``, ``pbs``, any kind of
:class:`~mccard_dist.config.jobqueue.JobQueueClusterSpec`) through dask-jobqueue: the scheduler
runs in the driver's process and workers run as batch jobs; their preflight check, keyword
arguments and job script, from what the spec's class declares (its dask-jobqueue class, batch
commands, test submission, queue query and further job options)."""

from __future__ import annotations

import contextlib
import inspect
import logging
import shlex
import shutil
import subprocess
import time

from ..config import to_plain
from ..errors import ClusterError
from .common import BLAS_ENV, MALLOC_ENV, no_workers

__all__ = ["connect", "job_script", "jobqueue_kwargs", "preflight"]

log = logging.getLogger(__name__)

#: how long to wait for batch-job workers before logging again that they are still queued (seconds)
_WAIT_LOG_INTERVAL = 60


def preflight(spec) -> None:
    """Refuse, with one line, a batch-job cluster that cannot start here (before any store
    exists): the batch commands must be on PATH, dask-jobqueue installed, and where the kind has
    a test submission (``sbatch --test-only``: SLURM's check, submitting nothing) the worker job
    must pass it."""
    missing = [c for c in spec.batch_commands if shutil.which(c) is None]
    if missing:
        raise ClusterError(
            f"cluster={spec.kind}: {', '.join(missing)} not found on PATH; run mccard-run where "
            f"{spec.kind.upper()} jobs can be submitted (a login node), or use cluster=local")
    try:
        _jobqueue_class(spec)
    except RuntimeError as exc:
        raise ClusterError(str(exc)) from None
    if not spec.test_submit:
        return
    command = shlex.join(spec.test_submit)
    try:
        proc = subprocess.run(list(spec.test_submit), input=job_script(spec), text=True,
                              capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        log.warning("%s did not answer within 60 s; submitting anyway", command)
        return
    if proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise ClusterError(f"cluster={spec.kind}: {spec.kind.upper()} refuses the worker job "
                           f"({detail}); check cluster.queue, cluster.account, cluster.walltime "
                           "and cluster.memory")


def _jobqueue_class(spec):
    """The dask-jobqueue class the spec's kind names (``jobqueue_class``)."""
    try:
        import dask_jobqueue
    except ImportError as exc:  # the optional dependency
        raise RuntimeError(f"cluster.kind={spec.kind} needs dask-jobqueue: pip install "
                           "'mccard-dist[jobqueue]'") from exc
    return getattr(dask_jobqueue, spec.jobqueue_class)


def _seconds(value: float) -> str:
    return f"{int(round(value))}s"


def jobqueue_kwargs(spec) -> dict:
    """Keyword arguments of the spec's dask-jobqueue class (``SLURMCluster``, ``PBSCluster``):
    single-threaded workers (``--nthreads 1`` when a job has more cores than workers), the job
    script exporting :data:`BLAS_ENV` before the user's ``job_script_prologue``, the worker
    lifetime as ``--lifetime`` / ``--lifetime-stagger``, the kind's own ``job_options()``;
    ``cluster.options`` passed on (its ``worker_extra_args`` and ``scheduler_options`` merged
    with these)."""
    if not getattr(spec, "jobqueue_class", None):
        raise ValueError(f"cluster.kind={spec.kind} is not a dask-jobqueue kind")
    options = to_plain(spec.options)
    per_job = spec.workers_per_job
    worker_args = list(options.pop("worker_extra_args", None) or [])
    if per_job < spec.cores:
        worker_args += ["--nthreads", "1"]  # dask-worker takes the last --nthreads
    if spec.worker_lifetime is not None:
        worker_args += ["--lifetime", _seconds(spec.worker_lifetime_seconds)]
        if spec.lifetime_stagger is not None:
            worker_args += ["--lifetime-stagger", _seconds(spec.lifetime_stagger_seconds)]
    scheduler_options = dict(options.pop("scheduler_options", None) or {})
    if spec.dashboard_address is not None:
        scheduler_options["dashboard_address"] = spec.dashboard_address
    prologue = [f"export {name}={value}" for name, value in BLAS_ENV.items()]
    prologue += [f"export {name}={shlex.quote(value)}" for name, value in MALLOC_ENV.items()]
    prologue += list(spec.job_script_prologue)
    kwargs = dict(cores=spec.cores, processes=per_job, memory=spec.memory, walltime=spec.walltime,
                  queue=spec.queue, interface=spec.interface,
                  log_directory=spec.log_directory,
                  job_extra_directives=list(spec.job_extra_directives),
                  job_script_prologue=prologue, worker_extra_args=worker_args,
                  scheduler_options=scheduler_options,
                  job_name=options.pop("job_name", "mccard-worker"))
    if spec.python is not None:
        kwargs["python"] = spec.python
    kwargs.update(spec.job_options())
    kwargs.update(options)
    return kwargs


def job_script(spec, scheduler_address: str = "tcp://<scheduler>:8786") -> str:
    """The batch script one worker job of a batch-job spec would submit, rendered by
    dask-jobqueue's job class without starting a scheduler or submitting anything."""
    cls = _jobqueue_class(spec)
    kwargs = jobqueue_kwargs(spec)
    from dask_jobqueue.core import JobQueueCluster

    cluster_only = set(inspect.signature(JobQueueCluster.__init__).parameters) - {
        "self", "interface", "protocol", "config_name", "job_kwargs"}
    job_kwargs = {k: v for k, v in kwargs.items() if k not in cluster_only}
    return cls.job_cls(scheduler=scheduler_address, name="<worker-name>", **job_kwargs).job_script()


@contextlib.contextmanager
def connect(spec):
    """A client of a new dask-jobqueue cluster once its first jobs' workers have connected;
    the cluster (and its jobs) closed on exit."""
    from distributed import Client

    cls = _jobqueue_class(spec)
    cluster = cls(**jobqueue_kwargs(spec))
    try:
        per_job, jobs = spec.workers_per_job, spec.n_jobs
        if spec.adaptive is not None:
            jobs = spec.adaptive.minimum
            cluster.adapt(minimum_jobs=jobs, maximum_jobs=spec.adaptive.maximum)
            plan = f"{jobs} to {spec.adaptive.maximum} jobs (adaptive)"
        elif spec.worker_lifetime is not None:
            # adaptive with fixed bounds: a job whose workers retired is replaced by a new one
            cluster.adapt(minimum_jobs=jobs, maximum_jobs=jobs)
            plan = f"{jobs} job(s), replaced as their workers retire"
        else:
            cluster.scale(jobs=jobs)
            plan = f"{jobs} job(s)"
        log.info("%s cluster: %s; per job %d single-threaded worker(s), %d cores, %s, "
                 "walltime %s; dashboard %s", spec.kind, plan, per_job, spec.cores, spec.memory,
                 spec.walltime, cluster.dashboard_link)
        log.debug("worker job script:\n%s", cluster.job_script())
        with Client(cluster) as client:
            _wait_for_workers(client, cluster, jobs * per_job, spec)
            yield client
    finally:
        cluster.close()


def _wait_for_workers(client, cluster, expected: int, spec) -> None:
    """Block until ``expected`` workers are connected, logging every minute while jobs queue; a
    :class:`ClusterError` if none has connected after ``spec.no_worker_timeout``."""
    if expected <= 0:
        return
    query = spec.queue_query
    deadline = time.monotonic() + spec.no_worker_timeout_seconds
    while True:
        try:
            client.wait_for_workers(expected, timeout=max(
                1.0, min(_WAIT_LOG_INTERVAL, deadline - time.monotonic())))
            return
        except TimeoutError:
            connected = len(client.nthreads())
            jobs = sorted(str(job.job_id) for job in cluster.workers.values()
                          if getattr(job, "job_id", None))
            if not connected and time.monotonic() >= deadline:
                raise no_workers(spec, f"batch jobs {shlex.join(jobs) or 'none'} were queued "
                                        f"(`{query}`)") from None
            log.warning("waiting for %d worker(s), %d connected; batch jobs %s (check with `%s`)",
                        expected, connected, shlex.join(jobs) or "not yet submitted", query)

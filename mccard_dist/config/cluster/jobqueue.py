"""The batch-job kinds (``slurm``, ``pbs``): workers as batch jobs through dask-jobqueue. A
kind is a subclass of :class:`JobQueueClusterSpec` that names its dask-jobqueue class, its batch
commands and directives; :mod:`mccard_dist.cluster.jobqueue` builds any of them from those."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..checks import (MISSING, ConfigError, duration, duration_seconds, fail, integer, known, size,
                     text, walltime, walltime_seconds)
from .base import ClusterSpec, required


@dataclass(frozen=True)
class AdaptiveSpec:
    """Bounds, in batch jobs, between which a batch-job cluster follows the load."""

    minimum: int
    maximum: int


@dataclass(unsafe_hash=True)
class JobQueueClusterSpec(ClusterSpec):
    """Workers as batch jobs (dask-jobqueue): per job ``cores``, ``processes`` (single-threaded
    workers; None: one per core), ``memory``, ``walltime``, ``queue``, ``account``; the
    workers' network ``interface``; ``log_directory``; ``job_extra_directives`` (options of the
    batch system) and ``job_script_prologue`` (shell lines before the worker); ``n_jobs`` fixed
    jobs or ``adaptive`` bounds; ``worker_lifetime`` and ``lifetime_stagger`` so that workers
    retire before the walltime; ``python`` on the compute nodes (None: the driver's); the
    scheduler's ``dashboard_address``. Sizes, walltimes and durations stay as written."""

    cores: int | None = None
    processes: int | None = None
    memory: Any = None
    walltime: Any = None
    queue: str | None = None
    account: str | None = None
    interface: str | None = None
    log_directory: str | None = None
    job_extra_directives: list[Any] = field(default_factory=list)
    job_script_prologue: list[Any] = field(default_factory=list)
    n_jobs: int | None = None
    adaptive: Any = None  # {minimum, maximum}
    worker_lifetime: Any = None
    lifetime_stagger: Any = None
    python: str | None = None
    dashboard_address: str | None = None

    reserved = ("cores", "processes", "memory", "walltime", "queue", "account", "interface",
                "log_directory", "job_extra_directives", "job_script_prologue", "n_jobs",
                "adaptive", "worker_lifetime", "lifetime_stagger", "python", "dashboard_address",
                "no_worker_timeout", "resource_spec", "project", "job_extra", "env_extra",
                "extra", "n_workers", "host")

    backend = "mccard_dist.cluster.jobqueue"
    #: batch-job workers first wait in the queue
    default_no_worker_timeout = "1h"
    accepted_options = ("job_name", "local_directory", "worker_extra_args", "scheduler_options",
                        "death_timeout", "job_directives_skip", "silence_logs",
                        "submit_command_extra", "cancel_command_extra", "nanny", "protocol",
                        "shared_temp_directory")
    examples = {"cores": "8", "memory": "16GB", "walltime": "01:00:00",
                "n_jobs": "2, or cluster.adaptive={minimum:0,maximum:8}"}
    instead = {"n_workers": "use cluster.n_jobs: workers = n_jobs x processes"}
    #: the dask-jobqueue cluster class (a name in :mod:`dask_jobqueue`)
    jobqueue_class = ""
    #: the batch system's commands that dask-jobqueue calls (submit, query, cancel)
    batch_commands = ()
    #: a command that checks a job script given on stdin without submitting it (empty: none)
    test_submit = ()
    #: the shell command that lists the user's queued jobs (said while workers are awaited)
    queue_query = ""
    #: the prefix of the batch system's directives, and an example of one option
    directive = ("#", "")
    #: whether ``walltime`` may carry days ("D-HH:MM:SS")
    walltime_days = False

    def check(self):
        super().check()
        self.cores = integer("cluster.cores", required(self, "cores"), 1)
        processes = self.processes
        if processes is not None and integer("cluster.processes", processes, 1) > self.cores:
            fail("cluster.processes", f"must be <= cluster.cores ({self.cores}): every worker has "
                                      "one thread and needs a core", self.processes)
        size("cluster.memory", required(self, "memory"))
        wall = walltime("cluster.walltime", required(self, "walltime"),
                        allow_days=self.walltime_days)
        for name in ("queue", "account", "interface", "log_directory", "python",
                     "dashboard_address", "resource_spec"):
            if hasattr(self, name):
                text(f"cluster.{name}", getattr(self, name), allow_none=True)
        for name in ("job_extra_directives", "job_script_prologue"):
            value = getattr(self, name) or []
            if not isinstance(value, (list, tuple)):
                fail(f"cluster.{name}", "must be a list", value)
            setattr(self, name, tuple(text(f"cluster.{name}[{i}]", v)
                                      for i, v in enumerate(value)))
        directive, example = self.directive
        for i, line in enumerate(self.job_extra_directives):
            if line.lstrip().startswith("#"):
                fail(f"cluster.job_extra_directives[{i}]",
                     f"give the option only (e.g. {example}); '{directive}' is added", line)
        self.adaptive = self._adaptive()
        if self.adaptive is None:
            required(self, "n_jobs")
        if self.n_jobs is not None:
            self.n_jobs = integer("cluster.n_jobs", self.n_jobs, 1)
        if self.worker_lifetime is None:
            self.lifetime_stagger = None  # retirement off: the stagger has nothing to spread
            return
        lifetime = self.worker_lifetime = duration("cluster.worker_lifetime",
                                                   self.worker_lifetime)
        stagger = self.lifetime_stagger = duration("cluster.lifetime_stagger",
                                                   self.lifetime_stagger)
        life, spread = duration_seconds(lifetime), duration_seconds(stagger or 0)
        if life <= 0:
            fail("cluster.worker_lifetime", "must be > 0", lifetime)
        if spread >= life:
            fail("cluster.lifetime_stagger", f"must be shorter than cluster.worker_lifetime "
                                             f"({lifetime})", stagger)
        if life + spread >= walltime_seconds(wall):
            fail("cluster.worker_lifetime", f"plus cluster.lifetime_stagger ({stagger or '0s'}) "
                                            f"must be shorter than cluster.walltime ({wall}) so "
                                            "that workers retire before the job is killed",
                 lifetime)

    def _adaptive(self) -> AdaptiveSpec | None:
        key, value = "cluster.adaptive", self.adaptive
        if value is None or isinstance(value, AdaptiveSpec):
            return value
        if not isinstance(value, Mapping):
            fail(key, "must be null or {minimum: jobs, maximum: jobs}", value)
        known(value, key, ("minimum", "maximum"))
        if value.get("maximum", MISSING) == MISSING:
            raise ConfigError(f"{key}.maximum: missing mandatory value")
        minimum = integer(f"{key}.minimum", value.get("minimum", 0), 0)
        maximum = integer(f"{key}.maximum", value["maximum"], 1)
        if maximum < minimum:
            fail(f"{key}.maximum", f"must be >= cluster.adaptive.minimum ({minimum})", maximum)
        return AdaptiveSpec(minimum, maximum)

    @property
    def workers_per_job(self) -> int:
        """Single-threaded workers in one batch job (``processes``, else ``cores``)."""
        return self.processes if self.processes is not None else self.cores

    @property
    def target_workers(self) -> int:
        jobs = self.adaptive.maximum if self.adaptive is not None else self.n_jobs
        return jobs * self.workers_per_job

    @property
    def walltime_seconds(self) -> int:
        return walltime_seconds(self.walltime)

    @property
    def worker_lifetime_seconds(self) -> float | None:
        return None if self.worker_lifetime is None else duration_seconds(self.worker_lifetime)

    @property
    def lifetime_stagger_seconds(self) -> float | None:
        return None if self.lifetime_stagger is None else duration_seconds(self.lifetime_stagger)

    def job_options(self) -> dict:
        """Keyword arguments of the kind's dask-jobqueue class beyond those every batch-job kind
        shares (cores, memory, walltime, queue, ...)."""
        return {"account": self.account}


@dataclass(unsafe_hash=True)
class SlurmClusterSpec(JobQueueClusterSpec):
    kind: str = "slurm"

    jobqueue_class = "SLURMCluster"
    batch_commands = ("sbatch", "squeue", "scancel")
    test_submit = ("sbatch", "--test-only")
    queue_query = "squeue --me"
    directive = ("#SBATCH", "--qos=normal")
    walltime_days = True


@dataclass(unsafe_hash=True)
class PBSClusterSpec(JobQueueClusterSpec):
    """With ``resource_spec`` (the ``-l`` resource string; None: dask-jobqueue's
    ``select=1:ncpus=..:mem=..``)."""

    kind: str = "pbs"
    resource_spec: str | None = None

    jobqueue_class = "PBSCluster"
    batch_commands = ("qsub", "qstat", "qdel")
    queue_query = "qstat -u $USER"
    directive = ("#PBS", "-l place=scatter")

    def job_options(self) -> dict:
        """The account, and the resource string: dask-jobqueue's default (PBS Pro ``select``)
        set here so that it does not log it."""
        from dask.utils import parse_bytes
        from dask_jobqueue.pbs import pbs_format_bytes_ceil

        default = (f"select=1:ncpus={self.cores}:"
                   f"mem={pbs_format_bytes_ceil(parse_bytes(self.memory))}")
        return {**super().job_options(), "resource_spec": self.resource_spec or default}

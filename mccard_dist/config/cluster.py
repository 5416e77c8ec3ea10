"""The cluster section: one sealed dataclass per ``cluster.kind`` (:data:`CLUSTER_SCHEMAS`), each
checking its settings, and the rules of ``cluster.options`` (the backend's further keyword
arguments: a fixed list per kind, binding beyond this machine only through the typed keys, which
warn).

A kind is one subclass of :class:`ClusterSpec` that sets ``kind``: it registers itself, and its
class attributes say everything the rest of the package asks of it (the options it accepts, its
default ``no_worker_timeout``, examples of its required settings, and the module of
:mod:`mccard_dist.cluster` that builds or reaches its cluster, ``backend``). Nothing outside the
kind's own class compares ``cluster.kind`` to a kind's name. The families, in the order the kinds
are listed (:data:`CLUSTER_KINDS`): ``local``; a scheduler already running (``address``,
``scheduler_file``); batch jobs through dask-jobqueue (``slurm``, ``pbs``: a subclass of
:class:`JobQueueClusterSpec` names its dask-jobqueue class, its batch commands and directives).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from .checks import (MISSING, ConfigError, Sealed, duration, duration_seconds, fail, freeze,
                     integer, known, memory_limit, size, text, to_plain, walltime,
                     walltime_seconds)

__all__ = ["CLUSTER_KINDS", "CLUSTER_SCHEMAS", "AdaptiveSpec", "AddressClusterSpec", "ClusterSpec",
           "JobQueueClusterSpec", "LocalClusterSpec", "PBSClusterSpec", "RunningSchedulerSpec",
           "SchedulerFileClusterSpec", "SlurmClusterSpec", "cluster_spec",
           "listens_beyond_loopback"]

#: the class of each ``cluster.kind``, in the order the kinds are defined (each subclass of
#: :class:`ClusterSpec` that sets ``kind`` adds itself)
CLUSTER_SCHEMAS: dict[str, type] = {}

#: the scheduler's own keyword arguments allowed under an option, and those refused with the
#: typed key that sets them instead (where the scheduler listens)
SCHEDULER_OPTIONS = {
    "scheduler_kwargs": (("allowed_failures", "worker_ttl", "http_prefix"),
                         {"host": "cluster.host", "interface": "cluster.host",
                          "dashboard_address": "cluster.dashboard_address",
                          "port": "cluster.options.scheduler_port"}),
    "scheduler_options": (("port", "allowed_failures", "worker_ttl", "http_prefix"),
                          {"host": "cluster.interface", "interface": "cluster.interface",
                           "dashboard_address": "cluster.dashboard_address"}),
}


def listens_beyond_loopback(address: str) -> bool:
    """Whether ``[scheme://]host:port`` (or a bare host) listens beyond this machine; an empty
    host (``":8787"``) means every interface, as Dask reads it."""
    rest = str(address).split("://")[-1]
    host = rest.rpartition(":")[0] if ":" in rest else rest
    return not (host in ("localhost", "::1", "[::1]") or host.startswith("127."))


def required(spec, name: str):
    """A kind's required setting, or a message saying what to set."""
    value = getattr(spec, name)
    if value is None or value == "" or value == MISSING:
        raise ConfigError(spec.unset_message(name))
    return value


@dataclass(unsafe_hash=True)
class ClusterSpec(Sealed):
    """What every kind has: how long the run may have no worker while tasks wait before it fails
    (``no_worker_timeout``; None: the kind's ``default_no_worker_timeout``) and the backend's
    further keyword arguments (``options``). A subclass that sets ``kind`` is that kind's schema
    (:data:`CLUSTER_SCHEMAS`); the class attributes below are what it declares."""

    kind: str = MISSING
    no_worker_timeout: Any = None
    options: dict[str, Any] | None = field(default_factory=dict)

    SECTION = "cluster"
    #: the module (import path) whose ``connect(spec)`` yields a ``distributed.Client`` of the
    #: kind's cluster and whose ``preflight(spec)`` refuses one that cannot start here; it is
    #: imported by :mod:`mccard_dist.cluster`, never by this room
    backend = ""
    #: ``no_worker_timeout`` when not given: minutes for workers that connect within seconds
    default_no_worker_timeout = "5m"
    #: the ``cluster.options`` the kind accepts: paths, ports, names and timeouts
    accepted_options = ()
    #: keyword arguments the backend gets from typed keys (or sets itself), never from options
    reserved = ()
    #: an example of each setting the kind requires (for the message when it is unset)
    examples = {}
    #: what to use instead of a key of another kind, by key (appended to the refusal)
    instead = {}
    #: the batch system's own words for a typed key, by word (``partition`` -> ``queue``)
    aliases = {}
    #: whether Dask's dashboard is served (its link is logged)
    has_dashboard = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        kind = cls.__dict__.get("kind")
        if isinstance(kind, str) and kind != MISSING:
            CLUSTER_SCHEMAS[kind] = cls

    @classmethod
    def unset_message(cls, name: str) -> str:
        """The message for the setting ``name`` that the kind requires, left unset."""
        return (f"cluster.{name}: required when cluster.kind={cls.kind} (set it on the command "
                f"line, e.g. cluster.{name}={cls.examples[name]})")

    def check(self):
        self.no_worker_timeout = duration("cluster.no_worker_timeout", self.no_worker_timeout,
                                          minimum=1.0) or self.default_no_worker_timeout
        options = self.options or {}
        if not isinstance(options, Mapping):
            fail("cluster.options", "must be a mapping", options)
        for name, value in options.items():
            self._check_option(f"cluster.options.{name}", name, value)
        self.options = freeze(options)

    def _check_option(self, key: str, name: str, value) -> None:
        if name in self.reserved:
            typed = f"cluster.{name}" if name in {f.name for f in fields(self)} else None
            fail(key, f"set {typed} instead" if typed else
                 f"is set by mccard-dist for cluster.kind={self.kind}; remove it", value)
        if name not in self.accepted_options:
            fail(key, f"is not an accepted option of cluster.kind={self.kind} (accepted: "
                      f"{', '.join(self.accepted_options)})", value)
        if name == "worker_dashboard_address" and value is not None and listens_beyond_loopback(
                value):
            fail(key, "must listen on this machine only, e.g. 127.0.0.1:0 (reach it through an "
                      "SSH tunnel)", value)
        if name in SCHEDULER_OPTIONS and value is not None:
            if not isinstance(value, Mapping):
                fail(key, "must be a mapping", value)
            accepted, bindings = SCHEDULER_OPTIONS[name]
            for inner, setting in value.items():
                if inner in bindings:
                    fail(f"{key}.{inner}", "sets where the scheduler listens; set "
                                           f"{bindings[inner]} instead", setting)
                if inner not in accepted:
                    fail(f"{key}.{inner}", f"is not an accepted scheduler option (accepted: "
                                           f"{', '.join(accepted)})", setting)

    @property
    def no_worker_timeout_seconds(self) -> float:
        return duration_seconds(self.no_worker_timeout)

    @property
    def target_workers(self) -> int | None:
        """Workers the cluster is meant to reach (None where unknown)."""
        return None

    def to_dict(self) -> dict:
        return to_plain(asdict(self))


@dataclass(unsafe_hash=True)
class LocalClusterSpec(ClusterSpec):
    """A LocalCluster of ``n_workers`` processes with ``threads_per_worker`` threads, on ``host``;
    ``tls`` (None or True): its processes talk TLS with temporary certificates, so that only
    this run's can connect; ``dashboard_address``: Dask's dashboard (None: none)."""

    kind: str = "local"
    n_workers: int | None = None
    threads_per_worker: int | None = None
    memory_limit: Any = None  # "auto", a size, bytes, a fraction of the memory, or 0 (none)
    host: str | None = None
    dashboard_address: str | None = None
    tls: bool | None = None

    backend = "mccard_dist.cluster.local"
    accepted_options = ("local_directory", "worker_dashboard_address", "scheduler_port",
                        "silence_logs", "lifetime", "lifetime_stagger", "lifetime_restart",
                        "death_timeout", "resources", "scheduler_sync_interval",
                        "scheduler_kwargs")
    reserved = ("n_workers", "threads_per_worker", "processes", "memory_limit", "host",
                "dashboard_address", "env", "security", "protocol")
    examples = {"n_workers": "2", "threads_per_worker": "1"}

    def check(self):
        super().check()
        for name in ("n_workers", "threads_per_worker"):
            setattr(self, name, integer(f"cluster.{name}", required(self, name), 1))
        self.memory_limit = memory_limit("cluster.memory_limit", self.memory_limit)
        self.host = text("cluster.host", self.host, allow_none=True)
        self.dashboard_address = text("cluster.dashboard_address", self.dashboard_address,
                                      allow_none=True)
        self.tls = True if self.tls is None else self.tls
        if not self.tls and self.host is not None and listens_beyond_loopback(self.host):
            fail("cluster.host", "listens beyond this machine while cluster.tls=false: anyone who "
                                 "can reach it could run code as you; set cluster.tls=true or "
                                 "cluster.host=127.0.0.1", self.host)

    def _check_option(self, key: str, name: str, value) -> None:
        if name == "interface":
            fail(key, "cannot work with cluster.host (Dask takes one of them) and would listen "
                      "on that network; set cluster.host to the interface's address instead "
                      "(with cluster.tls=true)", value)
        super()._check_option(key, name, value)

    @property
    def has_dashboard(self) -> bool:
        """Only with ``dashboard_address``: a dashboard (no login) is readable by any user of
        this machine."""
        return bool(self.dashboard_address)

    @property
    def target_workers(self) -> int:
        return self.n_workers


#: a Dask scheduler address: tcp/tls/ws/wss/ucx, a host name or IP (IPv6 in brackets), a port
_ADDRESS_RE = re.compile(r"^((tcp|tls|ws|wss|ucx)://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):"
                         r"[0-9]{1,5}$")


@dataclass(unsafe_hash=True)
class RunningSchedulerSpec(ClusterSpec):
    """A scheduler that is already running: how long to try to reach it (``connect_timeout``,
    default 10 s), and for one that requires TLS the certificate authority and this client's
    certificate and key (PEM files)."""

    connect_timeout: Any = None
    tls_ca_file: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None

    backend = "mccard_dist.cluster.running"
    accepted_options = ("name", "direct_to_workers", "heartbeat_interval", "set_as_default")
    reserved = ("address", "timeout", "scheduler_file")

    def check(self):
        super().check()
        files = {n: getattr(self, n) for n in ("tls_ca_file", "tls_cert", "tls_key")}
        given = [n for n, v in files.items() if v not in (None, "")]
        if given and len(given) != 3:
            fail("cluster." + next(n for n in files if n not in given), "is required with the "
                 "other TLS files (tls_ca_file, tls_cert, tls_key)", show_value=False)
        for name in given:
            if not os.path.isfile(files[name]):
                fail(f"cluster.{name}", "is not a readable file", files[name])
        self.connect_timeout = duration("cluster.connect_timeout", self.connect_timeout)

    @property
    def connect_timeout_seconds(self) -> float:
        return 10.0 if self.connect_timeout is None else duration_seconds(self.connect_timeout)


@dataclass(unsafe_hash=True)
class AddressClusterSpec(RunningSchedulerSpec):
    """A running scheduler at ``address``."""

    kind: str = "address"
    address: str | None = None

    examples = {"address": "tcp://host:8786"}

    def check(self):
        super().check()
        if not _ADDRESS_RE.match(text("cluster.address", required(self, "address"))):
            fail("cluster.address", "must be a scheduler address [scheme://]host:port, e.g. "
                                    "tcp://head-node:8786", self.address)


@dataclass(unsafe_hash=True)
class SchedulerFileClusterSpec(RunningSchedulerSpec):
    """A running scheduler whose address is in the JSON file it wrote (``--scheduler-file``)."""

    kind: str = "scheduler_file"
    scheduler_file: str | None = None

    examples = {"scheduler_file": "/path/to/scheduler.json"}

    def check(self):
        super().check()
        text("cluster.scheduler_file", required(self, "scheduler_file"))


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
    aliases = {"partition": "queue", "time": "walltime", "mem": "memory",
               "cpus_per_task": "cores"}
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


CLUSTER_KINDS = tuple(CLUSTER_SCHEMAS)


def cluster_spec(kind: str, **settings):
    """The cluster spec of ``kind`` with ``settings`` (checked)."""
    return CLUSTER_SCHEMAS[kind](kind=kind, **settings)

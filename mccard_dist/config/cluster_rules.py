"""The cluster section: which keys each kind reads, and the cross-field rules of jobqueue
clusters (walltime against worker lifetime, adaptive bounds)."""

from __future__ import annotations

import numbers
import os
import re
from collections.abc import Mapping

from .checks import (
    _MISSING,
    ConfigError,
    _as_duration,
    _as_size,
    _as_walltime,
    _at_least,
    _check_known,
    _duration_seconds,
    _fail,
    _freeze,
    _nonempty,
    _str_list,
    _walltime_seconds,
)
from .specs import (
    _CLUSTER_FIELDS,
    _RESERVED_OPTIONS,
    _SCHEDULER_BINDING,
    ACCEPTED_OPTIONS,
    CODE_OPTIONS,
    SCHEDULER_OPTIONS,
    AdaptiveSpec,
    ClusterSpec,
)


def _parse_adaptive(value) -> AdaptiveSpec | None:
    key = "cluster.adaptive"
    if value is None:
        return None
    if not isinstance(value, Mapping):
        _fail(key, "must be null or {minimum: jobs, maximum: jobs}", value)
    _check_known(value, key, ("minimum", "maximum"))
    if value.get("maximum", _MISSING) == _MISSING:
        raise ConfigError(f"{key}.maximum: missing mandatory value")
    minimum = _at_least(f"{key}.minimum", value.get("minimum", 0), 0)
    maximum = _at_least(f"{key}.maximum", value["maximum"], 1)
    if maximum < minimum:
        _fail(f"{key}.maximum", f"must be >= cluster.adaptive.minimum ({minimum})", maximum)
    return AdaptiveSpec(minimum, maximum)


def _parse_jobqueue(kind: str, section: Mapping, required) -> dict:
    """The dask-jobqueue settings of a ``slurm`` / ``pbs`` cluster, validated."""
    directive = "#SBATCH" if kind == "slurm" else "#PBS"
    cores = _at_least("cluster.cores", required("cores"), 1)
    processes = section.get("processes")
    if processes is not None:
        processes = _at_least("cluster.processes", processes, 1)
        if processes > cores:
            _fail("cluster.processes", f"must be <= cluster.cores ({cores}): every worker has one "
                                       "thread and needs a core", processes)
    memory = _as_size("cluster.memory", required("memory"))
    walltime = _as_walltime("cluster.walltime", required("walltime"), allow_days=kind == "slurm")

    def optional_str(name):
        return _nonempty(f"cluster.{name}", section.get(name), allow_none=True)

    example = "--qos=normal" if kind == "slurm" else "-l place=scatter"
    directives = _str_list("cluster.job_extra_directives", section.get("job_extra_directives"))
    for i, line in enumerate(directives):
        if line.lstrip().startswith("#"):
            _fail(f"cluster.job_extra_directives[{i}]",
                  f"give the option only (e.g. {example}); '{directive}' is added", line)
    prologue = _str_list("cluster.job_script_prologue", section.get("job_script_prologue"))

    adaptive = _parse_adaptive(section.get("adaptive"))
    n_jobs = section.get("n_jobs")
    if adaptive is None:
        n_jobs = _at_least("cluster.n_jobs", required("n_jobs"), 1)
    elif n_jobs is not None:
        n_jobs = _at_least("cluster.n_jobs", n_jobs, 1)

    lifetime = section.get("worker_lifetime")
    stagger = section.get("lifetime_stagger")
    if lifetime is None:
        stagger = None  # retirement switched off: the stagger has nothing to spread
    else:
        lifetime = _as_duration("cluster.worker_lifetime", lifetime)
        if stagger is not None:
            stagger = _as_duration("cluster.lifetime_stagger", stagger)
        life_s = _duration_seconds(lifetime)
        stagger_s = _duration_seconds(stagger) if stagger is not None else 0.0
        wall_s = _walltime_seconds(walltime)
        if life_s <= 0:
            _fail("cluster.worker_lifetime", "must be > 0", lifetime)
        if stagger_s >= life_s:
            _fail("cluster.lifetime_stagger", f"must be shorter than cluster.worker_lifetime "
                                              f"({lifetime})", stagger)
        if life_s + stagger_s >= wall_s:
            _fail("cluster.worker_lifetime", f"plus cluster.lifetime_stagger ({stagger or '0s'}) "
                                             f"must be shorter than cluster.walltime ({walltime}) "
                                             "so that workers retire before the job is killed",
                  lifetime)
    return dict(
        cores=cores,
        processes=processes,
        memory=memory,
        walltime=walltime,
        queue=optional_str("queue"),
        account=optional_str("account"),
        interface=optional_str("interface"),
        log_directory=optional_str("log_directory"),
        job_extra_directives=directives,
        job_script_prologue=prologue,
        resource_spec=optional_str("resource_spec"),
        n_jobs=n_jobs,
        adaptive=adaptive,
        worker_lifetime=lifetime,
        lifetime_stagger=stagger,
        python=optional_str("python"),
    )


def _is_loopback(host: str) -> bool:
    return host in ("localhost", "::1", "[::1]") or host.startswith("127.")


def listens_beyond_loopback(address: str) -> bool:
    """Whether ``[scheme://]host:port`` (or a bare host) listens beyond this machine; an empty
    host (``":8787"``) means every interface, as Dask reads it."""
    text = str(address).split("://")[-1]
    host = text.rpartition(":")[0] if ":" in text else text
    return not _is_loopback(host)


def _check_options(kind: str, options: Mapping) -> None:
    """``cluster.options``: only the accepted names, none that the typed keys set, and nothing
    that makes the cluster listen beyond this machine except through the typed keys."""
    for name, value in options.items():
        key = f"cluster.options.{name}"
        if kind == "local" and name == "interface":
            _fail(key, "cannot work with cluster.host (Dask takes one of them) and would listen "
                       "on that network; set cluster.host to the interface's address instead "
                       "(with cluster.tls=true)", value)
        if name in _RESERVED_OPTIONS.get(kind, ()):
            typed = f"cluster.{name}" if name in _CLUSTER_FIELDS else None
            _fail(key, f"set {typed} instead" if typed else
                  f"is set by mccard-dist for cluster.kind={kind}; remove it", value)
        if name not in ACCEPTED_OPTIONS[kind]:
            _fail(key, f"is not an accepted option of cluster.kind={kind} "
                       f"(accepted: {', '.join(ACCEPTED_OPTIONS[kind])})", value)
        if name == "worker_dashboard_address" and value is not None and listens_beyond_loopback(
                value):
            _fail(key, "must listen on this machine only, e.g. 127.0.0.1:0 (reach it through "
                       "an SSH tunnel)", value)
        if name in SCHEDULER_OPTIONS:
            _check_scheduler_options(name, value)


def _check_scheduler_options(name: str, value) -> None:
    """The scheduler's keyword arguments: an allow-list; where it listens has typed keys."""
    key = f"cluster.options.{name}"
    if value is None:
        return
    if not isinstance(value, Mapping):
        _fail(key, "must be a mapping", value)
    accepted = SCHEDULER_OPTIONS[name]
    for inner, setting in value.items():
        typed = _SCHEDULER_BINDING[name].get(inner)
        if typed is not None:
            _fail(f"{key}.{inner}", f"sets where the scheduler listens; set {typed} instead",
                  setting)
        if inner not in accepted:
            _fail(f"{key}.{inner}", f"is not an accepted scheduler option (accepted: "
                                    f"{', '.join(accepted)})", setting)


def _refuse_code_options(value, key: str) -> None:
    """Refuse option names (at any depth) and worker arguments that make Dask run given code."""
    if isinstance(value, Mapping):
        for name, inner in value.items():
            if name in CODE_OPTIONS:
                _fail(f"{key}.{name}", "is not accepted: it makes Dask import or run the code it "
                                       "names; install what the workers need in their environment "
                                       "instead", inner)
            _refuse_code_options(inner, f"{key}.{name}")
    elif isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, str) and item.startswith(("--preload", "--plugin",
                                                          "--worker-class")):
                _fail(key, "must not pass --preload / --plugin / --worker-class to the workers: "
                           "they load the code they name", list(value))
            _refuse_code_options(item, key)


def _parse_cluster(section: Mapping) -> ClusterSpec:
    """``section``: the typed cluster section (``???`` left in, see ``required``)."""
    kind = section["kind"]  # a known kind: the schema was chosen by it
    for name, value in section.items():  # the required ones say what to set, with the kind
        if value == _MISSING and name not in _EXAMPLES:
            raise ConfigError(f"cluster.{name}: missing mandatory value")

    def required(name: str):
        value = section.get(name)
        if value is None or value == "" or value == _MISSING:
            raise ConfigError(f"cluster.{name}: required when cluster.kind={kind} (set it on the "
                              f"command line, e.g. {_EXAMPLES[name]})")
        return value

    n_workers = threads_per_worker = address = scheduler_file = None
    if kind == "local":
        n_workers = _at_least("cluster.n_workers", required("n_workers"), 1)
        threads_per_worker = _at_least("cluster.threads_per_worker",
                                       required("threads_per_worker"), 1)
    if kind == "address":
        address = _nonempty("cluster.address", required("address"))
        if not _ADDRESS_RE.match(address):
            _fail("cluster.address", "must be a scheduler address [scheme://]host:port, e.g. "
                                     "tcp://head-node:8786", address)
    if kind == "scheduler_file":
        scheduler_file = _nonempty("cluster.scheduler_file", required("scheduler_file"))
    memory_limit = section.get("memory_limit")
    if memory_limit is not None:
        if isinstance(memory_limit, bool) or not isinstance(memory_limit, (str, numbers.Real)):
            _fail("cluster.memory_limit", 'must be "auto", a size such as "4GB", or bytes',
                  memory_limit)
        if isinstance(memory_limit, numbers.Real) and memory_limit < 0:
            _fail("cluster.memory_limit", "must be >= 0", memory_limit)
    options = section.get("options") or {}
    _refuse_code_options(options, "cluster.options")
    _check_options(kind, options)
    jobqueue = _parse_jobqueue(kind, section, required) if kind in ("slurm", "pbs") else {}
    connect = {}
    if kind == "local":
        tls = section.get("tls")
        connect["tls"] = True if tls is None else tls
        host = section.get("host")
        if not connect["tls"] and host is not None and not _is_loopback(str(host)):
            _fail("cluster.host", "listens beyond this machine while cluster.tls=false: anyone "
                                  "who can reach it could run code as you; set cluster.tls=true "
                                  "or cluster.host=127.0.0.1", host)
    if kind in ("address", "scheduler_file"):
        files = {name: section.get(name) for name in ("tls_ca_file", "tls_cert", "tls_key")}
        given = [n for n, v in files.items() if v not in (None, "")]
        if given and len(given) != 3:
            _fail("cluster." + [n for n in files if n not in given][0],
                  "is required with the other TLS files (tls_ca_file, tls_cert, tls_key)", None,
                  show_value=False)
        for name in given:
            value = files[name]
            if not os.path.isfile(value):
                _fail(f"cluster.{name}", "is not a readable file", value)
            connect[name] = value
    if kind in ("address", "scheduler_file") and section.get("connect_timeout") is not None:
        connect["connect_timeout"] = _as_duration("cluster.connect_timeout",
                                                  section.get("connect_timeout"))
    if section.get("no_worker_timeout") is not None:  # None: the kind's default
        connect["no_worker_timeout"] = _as_duration("cluster.no_worker_timeout",
                                                    section.get("no_worker_timeout"))
        if _duration_seconds(connect["no_worker_timeout"]) < 1:
            _fail("cluster.no_worker_timeout", 'must be at least 1 s, e.g. "5m"',
                  section.get("no_worker_timeout"))
    return ClusterSpec(
        kind=kind,
        n_workers=n_workers,
        threads_per_worker=threads_per_worker,
        memory_limit=memory_limit,
        host=_nonempty("cluster.host", section.get("host"), allow_none=True),
        dashboard_address=_nonempty("cluster.dashboard_address", section.get("dashboard_address"),
                                    allow_none=True),
        address=address,
        scheduler_file=scheduler_file,
        options=_freeze(options),
        **jobqueue,
        **connect,
    )



#: a Dask scheduler address: tcp/tls/ws/wss/ucx, a host name or IP (IPv6 in brackets), a port
_ADDRESS_RE = re.compile(r"^((tcp|tls|ws|wss|ucx)://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):[0-9]{1,5}$")

_EXAMPLES = {
    "address": "cluster.address=tcp://host:8786",
    "scheduler_file": "cluster.scheduler_file=/path/to/scheduler.json",
    "n_workers": "cluster.n_workers=2",
    "threads_per_worker": "cluster.threads_per_worker=1",
    "cores": "cluster.cores=8",
    "memory": "cluster.memory=16GB",
    "walltime": "cluster.walltime=01:00:00",
    "n_jobs": "cluster.n_jobs=2, or cluster.adaptive={minimum:0,maximum:8}",
}

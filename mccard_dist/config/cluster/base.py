"""What every cluster kind has (:class:`ClusterSpec`, which registers each kind in
:data:`CLUSTER_SCHEMAS`) and the rules of ``cluster.options``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..checks import (MISSING, ConfigError, Sealed, duration, duration_seconds, fail, freeze,
                      to_plain)

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

"""The ``local`` kind: a LocalCluster on this machine."""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

from ..checks import fail, integer, text
from .base import ClusterSpec, listens_beyond_loopback, required


@dataclass(unsafe_hash=True)
class LocalClusterSpec(ClusterSpec):
    """A LocalCluster of ``n_workers`` processes with ``threads_per_worker`` threads, on ``host``;
    ``tls`` (None or True): its processes talk TLS with temporary certificates, so that only
    this run's can connect; ``dashboard_address``: Dask's dashboard (None: none)."""

    kind: str = "local"
    n_workers: int | None = None
    threads_per_worker: int | None = None
    memory_limit: Any = None  # "auto", a size, or bytes
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
        limit = self.memory_limit
        if limit is not None and (isinstance(limit, bool) or not isinstance(
                limit, (str, numbers.Real)) or (isinstance(limit, numbers.Real) and limit < 0)):
            fail("cluster.memory_limit", 'must be "auto", a size such as "4GB", or bytes >= 0',
                 limit)
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

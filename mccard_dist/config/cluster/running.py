"""The ``address`` and ``scheduler_file`` kinds: a Dask scheduler that is already running."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from ..checks import duration, duration_seconds, fail, text
from .base import ClusterSpec, required

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

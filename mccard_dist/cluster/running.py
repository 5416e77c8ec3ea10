"""The ``address`` and ``scheduler_file`` backend: a client of a scheduler that is already running,
found at ``cluster.address`` or in ``cluster.scheduler_file``."""

from __future__ import annotations

import contextlib
import stat
import time
from pathlib import Path

from ..config import to_plain
from ..data.files import file_kind
from ..errors import ClusterError
from .common import first_line


def preflight(spec) -> None:
    """Nothing to check before connecting: an unreachable scheduler is reported by
    :func:`connect` after ``cluster.connect_timeout``."""


@contextlib.contextmanager
def connect(spec):
    """A client of a running scheduler, or a :class:`ClusterError` after ``connect_timeout``
    (the whole connection: the scheduler file, the handshake, the client's first exchange)."""
    from distributed import Client
    from distributed.security import Security

    timeout = spec.connect_timeout_seconds
    deadline = time.monotonic() + timeout
    options = to_plain(spec.options)
    if getattr(spec, "scheduler_file", None) is not None:  # else the spec has an address
        path = Path(spec.scheduler_file)
        address = _scheduler_file_address(path, deadline, timeout)
        target, where = {"scheduler_file": str(path)}, f"the scheduler of {path} ({address})"
    else:
        address = spec.address
        target, where = {"address": spec.address}, f"the scheduler at {spec.address}"
    security = Security()  # Dask's configured security, as the Client uses by default
    if spec.tls_ca_file is not None:
        security = Security(tls_ca_file=spec.tls_ca_file, tls_client_cert=spec.tls_cert,
                            tls_client_key=spec.tls_key, require_encryption=True)
        options["security"] = security

    def unreachable(exc):
        return ClusterError(
            f"cluster.{spec.kind}: cannot reach {where} within {timeout:g} s "
            f"({first_line(exc)}); is a Dask scheduler running on that port (not its "
            "dashboard)? (cluster.connect_timeout sets the wait)")

    try:
        _check_handshake(address, deadline, security.get_connection_args("client"))
    except Exception as exc:  # noqa: BLE001 - whatever the peer sent, it is not a scheduler
        raise unreachable(exc) from None
    try:
        client = Client(**target, timeout=max(1.0, deadline - time.monotonic()), **options)
    except (OSError, TimeoutError, ValueError) as exc:
        raise unreachable(exc) from None
    with client:
        yield client


def _scheduler_file_address(path: Path, deadline: float, timeout: float) -> str:
    """The address in a scheduler file, waiting until ``deadline`` for it (Dask would wait
    forever)."""
    import json

    while True:
        try:
            mode = path.stat().st_mode
            if not stat.S_ISREG(mode):  # reading a FIFO would block past the deadline
                raise ClusterError(f"cluster.scheduler_file: {path} is {file_kind(mode)}, not a "
                                   "regular file; give the JSON file that the scheduler writes "
                                   "with --scheduler-file")
            return str(json.loads(path.read_text())["address"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            if time.monotonic() > deadline:
                problem = ("did not appear" if not path.is_file() else
                           f"holds no scheduler address ({first_line(exc)})")
                raise ClusterError(
                    f"cluster.scheduler_file: {path} {problem} within {timeout:g} s; start the "
                    "scheduler with --scheduler-file there, or raise cluster.connect_timeout"
                ) from None
            time.sleep(0.1)


def _check_handshake(address: str, deadline: float, connection_args: dict) -> None:
    """Connect to ``address`` and exchange Dask's handshake before ``deadline`` (Dask awaits it
    without one: a port that never answers as a scheduler would keep a Client waiting forever).
    In a thread of its own: the caller may be running an event loop already (a notebook)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from distributed.comm import connect as comm_connect

    seconds = max(0.1, deadline - time.monotonic())

    async def handshake():
        comm = await comm_connect(address, timeout=seconds, **connection_args)
        await comm.close()

    async def bounded():
        try:
            await asyncio.wait_for(handshake(), seconds)
        except TimeoutError:
            raise TimeoutError("no Dask handshake") from None

    with ThreadPoolExecutor(1, thread_name_prefix="mccard-handshake") as pool:
        pool.submit(asyncio.run, bounded()).result()

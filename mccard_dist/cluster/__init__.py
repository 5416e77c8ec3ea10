"""Dask clusters from the typed cluster spec: the only place that builds or connects to one.

``local``: a :class:`distributed.LocalCluster` of single-threaded worker processes (BLAS pinned to
one thread) on 127.0.0.1; ``address`` / ``scheduler_file``: a running scheduler; ``slurm`` /
``pbs``: dask-jobqueue, workers as batch jobs (:mod:`~mccard_dist.cluster.jobqueue`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import queue
import stat
import time
from pathlib import Path

from ..config import listens_beyond_loopback, to_plain
from ..data.files import file_kind
from ..errors import ClusterError

__all__ = ["BATCH_COMMANDS", "BLAS_ENV", "MALLOC_ENV", "Completed", "broadcast", "connect",
           "job_script", "jobqueue_kwargs", "preflight"]

log = logging.getLogger(__name__)

#: environment of local worker processes: one BLAS/OpenMP thread each (workers are the parallelism)
BLAS_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

#: nannies leave ``MALLOC_TRIM_THRESHOLD_`` unset (Dask sets it, which fixes glibc's mmap
#: threshold at 128 KiB: a fit's temporary arrays are then mapped and unmapped, spending much of
#: its time in the kernel); as an environment variable, for batch-job workers
MALLOC_ENV = {"DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON": '{"MALLOC_TRIM_THRESHOLD_": None}'}

#: how long to wait for batch-job workers before logging again that they are still queued (seconds)
_WAIT_LOG_INTERVAL = 60

#: recent messages Dask keeps per connection in the driver (each holds a task's spec and cells:
#: Dask's 1,000 made the driver grow with every task)
MESSAGE_LOG_LENGTH = 20


@contextlib.contextmanager
def connect(spec):
    """Yield a :class:`distributed.Client` for the spec; close what was created on exit. The
    driver's Dask objects keep :data:`MESSAGE_LOG_LENGTH` recent messages (flat memory)."""
    import dask
    import distributed  # noqa: F401 - its config defaults first, which the set below restores

    with dask.config.set({"distributed.admin.low-level-log-length": MESSAGE_LOG_LENGTH}):
        yield from _connect(spec)


def _connect(spec):
    import dask
    from distributed import Client, LocalCluster

    if spec.kind == "local":
        options = to_plain(spec.options)
        if spec.host is not None and listens_beyond_loopback(spec.host):
            log.warning("cluster.host=%s: the scheduler, nannies and workers listen beyond this "
                        "machine (TLS: only this run's processes can connect); the dashboard "
                        "follows cluster.dashboard_address", spec.host)
        if spec.dashboard_address is not None and listens_beyond_loopback(spec.dashboard_address):
            log.warning("cluster.dashboard_address=%s: the dashboard (no login) is open beyond "
                        "this machine; use 127.0.0.1:0 and an SSH tunnel to keep it to yourself",
                        spec.dashboard_address)
        # no dashboard: no page at all on the scheduler's HTTP port, which any user of this
        # machine could read (the routes Dask serves beside its dashboard too)
        quiet = {} if spec.dashboard_address else {"distributed.scheduler.http.routes": []}
        with _worker_allocator_defaults(), dask.config.set(quiet):
            with _started_whole():
                cluster = LocalCluster(
                    # True: temporary TLS certificates of this run only; None: Dask's configured
                    # security (plain TCP unless the user's Dask config asks for TLS)
                    security=None if spec.tls is False else True, n_workers=spec.n_workers,
                    threads_per_worker=spec.threads_per_worker, processes=True,
                    memory_limit=spec.memory_limit, host=spec.host, env=dict(BLAS_ENV),
                    # the HTTP port (routes or none) on this machine, at a free port
                    dashboard_address=spec.dashboard_address or "127.0.0.1:0",
                    **{**options, "scheduler_kwargs": {
                        "dashboard": bool(spec.dashboard_address),
                        **options.get("scheduler_kwargs", {})}})
            try:
                with Client(cluster) as client:
                    client.register_plugin(_ignore_interrupt_plugin_class()())
                    try:
                        yield client
                    finally:
                        _quiet_teardown(client)
            finally:
                with _no_kill_notice():
                    cluster.close()
    elif spec.kind in ("address", "scheduler_file"):
        with _connect_running(spec) as client:
            yield client
    elif spec.kind in ("slurm", "pbs"):
        from .jobqueue import jobqueue_client

        with jobqueue_client(spec) as client:
            yield client
    else:
        raise ValueError(f"cluster.kind {spec.kind!r} is not supported by this version "
                         "(use local, address, scheduler_file, slurm or pbs)")


@contextlib.contextmanager
def _no_kill_notice():
    """While a local cluster closes, its nannies (in this process) do not log "Worker process
    still alive after 4.0 seconds, killing": a worker process that needs longer to exit (on a
    loaded machine, its interpreter's teardown alone) is ended at once, after its results are in."""
    def keep(record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Worker process still alive after")

    nanny = logging.getLogger("distributed.nanny")
    nanny.addFilter(keep)
    try:
        yield
    finally:
        nanny.removeFilter(keep)


def _silence_worker_logs() -> None:
    logging.getLogger("distributed").setLevel(logging.CRITICAL)


def _quiet_teardown(client) -> None:
    """Local workers stop logging below CRITICAL before their cluster closes (their stderr is the
    driver's terminal, and a busy worker would log its failed heartbeat with a traceback)."""
    try:
        client.run(_silence_worker_logs)
    except Exception as exc:  # noqa: BLE001 - a closing cluster: nothing left to quiet
        log.debug("workers not quietened before closing: %s", exc)


@functools.cache
def _ignore_interrupt_plugin_class():
    from distributed.diagnostics.plugin import WorkerPlugin

    class IgnoreInterrupt(WorkerPlugin):
        """Local workers leave Ctrl-C (which reaches the whole process group) to the driver,
        which records the run and closes the cluster."""

        name = "mccard-ignore-interrupt"

        def setup(self, worker):
            import signal
            import threading

            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGINT, signal.SIG_IGN)

    IgnoreInterrupt.__module__ = __name__
    return IgnoreInterrupt


@contextlib.contextmanager
def _started_whole():
    """A local cluster that fails to start is closed here, quietly (Dask's exit handler would
    fail on it with a traceback), and the failure reported in one line."""
    import multiprocessing

    from distributed.deploy.spec import SpecCluster

    before = set(SpecCluster._instances)
    children = set(multiprocessing.active_children())
    try:
        yield
    except BaseException as exc:
        # the nannies' start tasks cut short would log tracebacks when collected
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        for cluster in set(SpecCluster._instances) - before:
            with contextlib.suppress(BaseException):
                cluster.close(timeout=10)
            SpecCluster._instances.discard(cluster)
        # a worker process still spawning would fail with a traceback once this one has exited
        for child in set(multiprocessing.active_children()) - children:
            child.terminate()
            child.join(5)
        if isinstance(exc, (KeyboardInterrupt, ClusterError)):
            raise
        raise ClusterError(
            f"cluster=local: the local cluster did not start ({type(exc).__name__}: "
            f"{_first_line(exc)}); check cluster.host and cluster.dashboard_address (a port in "
            "use), and the free memory against cluster.n_workers x cluster.memory_limit (a "
            "worker process that died while it started)") from None


@contextlib.contextmanager
def _worker_allocator_defaults():
    """Nannies created inside start their workers without ``MALLOC_TRIM_THRESHOLD_``
    (:data:`MALLOC_ENV`); one left in ``os.environ`` by an earlier Dask cluster of this process is
    taken out for the cluster's lifetime."""
    import os

    import dask

    name = "MALLOC_TRIM_THRESHOLD_"
    saved = os.environ.pop(name, None)
    try:
        with dask.config.set({f"distributed.nanny.pre-spawn-environ.{name}": None}):
            yield
    finally:
        if saved is not None:
            os.environ[name] = saved


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


@contextlib.contextmanager
def _connect_running(spec):
    """A client of a running scheduler, or a :class:`ClusterError` after ``connect_timeout``
    (the whole connection: the scheduler file, the handshake, the client's first exchange)."""
    from distributed import Client
    from distributed.security import Security

    timeout = spec.connect_timeout_seconds
    deadline = time.monotonic() + timeout
    options = to_plain(spec.options)
    if spec.kind == "scheduler_file":
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
            f"({_first_line(exc)}); is a Dask scheduler running on that port (not its "
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
                           f"holds no scheduler address ({_first_line(exc)})")
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


# -- waiting for tasks: never on a cluster without workers -----------------------------------------
def _no_workers(spec, waiting: str) -> ClusterError:
    return ClusterError(
        f"no workers for {spec.no_worker_timeout} (cluster.no_worker_timeout) while {waiting}: "
        "check that the workers start and reach the scheduler (their logs, the batch jobs), or "
        "raise cluster.no_worker_timeout")


class Completed:
    """Futures in the order they finish, as :class:`distributed.as_completed` (``add`` them,
    iterate), but a :class:`ClusterError` once the cluster has had no worker for
    ``spec.no_worker_timeout`` (asked after ``check_every`` seconds without a finished future);
    ``waiting()``, if given, is called after each such check."""

    def __init__(self, client, spec, check_every: float = 2.0, waiting=None):
        self._client = client
        self._spec = spec
        self._waiting = waiting
        self._limit = spec.no_worker_timeout_seconds
        self._check_every = max(0.25, min(check_every, self._limit / 2))
        self._finished = queue.SimpleQueue()  # filled by Dask's callback thread
        self._n_pending = 0  # added and not yet yielded
        self._idle_since = None  # when the cluster was first seen without workers

    def add(self, future) -> None:
        self._n_pending += 1
        future.add_done_callback(self._finished.put)  # finished, failed or cancelled

    def __iter__(self):
        while self._n_pending:
            try:
                future = self._finished.get(timeout=self._check_every)
            except queue.Empty:
                self._check_workers()
                if self._waiting is not None:
                    self._waiting()
                continue
            self._n_pending -= 1
            self._idle_since = None
            yield future

    def _check_workers(self) -> None:
        try:
            n_workers = len(self._client.nthreads())
        except OSError:  # the scheduler is gone: no workers either
            n_workers = 0
        now = time.monotonic()
        if n_workers:
            self._idle_since = None
        elif self._idle_since is None:
            self._idle_since = now
        elif now - self._idle_since >= self._limit:
            raise _no_workers(self._spec, f"{self._n_pending} task(s) wait")


def broadcast(client, data, spec):
    """``data`` scattered to every worker (workers that join later fetch it from a peer); the
    scheduler waits ``spec.no_worker_timeout`` for a first worker."""
    try:
        return client.scatter(data, broadcast=True, hash=False,
                              timeout=spec.no_worker_timeout_seconds)
    except TimeoutError:
        raise _no_workers(spec, "the data waits to be sent to them") from None


from .jobqueue import BATCH_COMMANDS, job_script, jobqueue_kwargs, preflight  # noqa: E402

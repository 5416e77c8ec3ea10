"""The ``local`` backend: a :class:`distributed.LocalCluster` of single-threaded worker processes
(BLAS pinned to one thread), on 127.0.0.1 unless ``cluster.host`` says otherwise."""

from __future__ import annotations

import contextlib
import functools
import logging

from ..config import listens_beyond_loopback, to_plain
from ..errors import ClusterError
from .common import BLAS_ENV, first_line

log = logging.getLogger(__name__)


def preflight(spec) -> None:
    """Nothing to check before a local cluster starts: its start reports its own failure."""


@contextlib.contextmanager
def connect(spec):
    """A client of a new local cluster, closed (and the cluster with it) on exit."""
    import dask
    from distributed import Client, LocalCluster

    _spawn_as_python_does()
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


def _spawn_as_python_does() -> None:
    """Worker processes spawned from a process whose default start method is another library's
    (joblib's loky workers, in which ``hydra/launcher=joblib`` runs each job) are told that
    method, which they cannot import: such a process starts them with Python's ``spawn``."""
    import multiprocessing

    if multiprocessing.get_start_method(allow_none=True) not in (None, *multiprocessing
                                                                  .get_all_start_methods()):
        multiprocessing.set_start_method("spawn", force=True)


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
            f"{first_line(exc)}); check cluster.host and cluster.dashboard_address (a port in "
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

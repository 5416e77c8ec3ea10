"""Dask clusters from the typed cluster spec: the only place that builds or connects to one.

A spec's class names the module of this room that builds its cluster (``backend``), and
:func:`connect` and :func:`preflight` ask that module: :mod:`~mccard_dist.cluster.local`, a
:class:`distributed.LocalCluster` of single-threaded worker processes (BLAS pinned to one thread);
:mod:`~mccard_dist.cluster.running`, a running scheduler; :mod:`~mccard_dist.cluster.jobqueue`,
workers as batch jobs through dask-jobqueue. Nothing here asks a spec for its kind's name.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import queue
import time

from ..errors import ClusterError
from .common import BLAS_ENV, MALLOC_ENV, no_workers
from .jobqueue import job_script, jobqueue_kwargs

__all__ = ["ASK_SECONDS", "BLAS_ENV", "MALLOC_ENV", "Completed", "Silence", "ask", "backend",
           "broadcast",
           "connect", "job_script", "jobqueue_kwargs", "lost_scheduler", "preflight",
           "scheduler_lost"]

log = logging.getLogger(__name__)

#: recent messages Dask keeps per connection in the driver (each holds a task's spec and cells:
#: Dask's default keeps enough of them that the driver grows with every task)
MESSAGE_LOG_LENGTH = 20


def backend(spec):
    """The module that builds or reaches the cluster of ``spec``: the one its class names
    (``backend``), with ``connect(spec)`` and ``preflight(spec)``."""
    return importlib.import_module(spec.backend)


def preflight(spec) -> None:
    """Refuse, with one line (a :class:`ClusterError`), a cluster that cannot start here, before
    any store exists: the check of the spec's backend."""
    backend(spec).preflight(spec)


@contextlib.contextmanager
def connect(spec):
    """Yield a :class:`distributed.Client` for the spec (its backend's); close what was created
    on exit. The driver's Dask objects keep :data:`MESSAGE_LOG_LENGTH` recent messages (flat
    memory)."""
    import dask
    import distributed  # noqa: F401 - its config defaults first, which the set below restores

    with dask.config.set({"distributed.admin.low-level-log-length": MESSAGE_LOG_LENGTH}), \
            backend(spec).connect(spec) as client:
        yield client


# -- waiting for tasks: never on a cluster without workers, or without its scheduler -------------
#: seconds a question to the scheduler waits for its answer
ASK_SECONDS = 10.0


def ask(client, question: str, **kwargs):
    """The scheduler's answer to ``question`` (one of its handlers: ``identity``,
    ``processing``, ``events``), waiting at most :data:`ASK_SECONDS` (a TimeoutError else)."""
    return client.sync(getattr(client.scheduler, question), callback_timeout=ASK_SECONDS,
                       **kwargs)


def lost_scheduler(client, why: str) -> ClusterError:
    """The refusal once the run's scheduler has gone away (``why``: how it was seen)."""
    address = getattr(getattr(client, "scheduler", None), "address", None) or "its address"
    return ClusterError(
        f"lost the scheduler at {address} ({why}): the blocks finished before are in the store; "
        "start the scheduler (or its cluster) again and rerun the same command to resume")


def scheduler_lost(client) -> bool:
    """Whether the client has lost its scheduler for good (it closed after failing to
    reconnect)."""
    return getattr(client, "status", "running") in ("closing", "closed")


class Silence:
    """How long the scheduler has not answered: :meth:`unanswered` after a question that timed
    out warns once it has been silent for 3 x :data:`ASK_SECONDS` (or half the limit) and raises
    once it has been for ``spec.no_worker_timeout``; :meth:`heard` after an answer."""

    def __init__(self, client, spec):
        self.client, self.spec = client, spec
        self.since, self.said = None, False

    def heard(self) -> None:
        self.since, self.said = None, False

    def unanswered(self, waited: float = ASK_SECONDS) -> None:
        if scheduler_lost(self.client):
            raise lost_scheduler(self.client, "the connection closed")
        now = time.monotonic()
        self.since = self.since or now - waited
        silent, limit = now - self.since, self.spec.no_worker_timeout_seconds
        if silent >= limit:
            raise lost_scheduler(self.client, f"it has not answered for {silent:.0f} s, "
                                 "cluster.no_worker_timeout")
        if silent >= min(3 * ASK_SECONDS, limit / 2) and not self.said:
            self.said = True
            log.warning("the scheduler at %s has not answered for %.0f s; the run stops once it "
                        "has been silent for %s (cluster.no_worker_timeout)",
                        self.client.scheduler.address, silent, self.spec.no_worker_timeout)


class Completed:
    """Futures in the order they finish, as :class:`distributed.as_completed` (``add`` them,
    iterate: a batch at a time, the first to finish and every other finished by then), but a
    :class:`ClusterError` once the cluster has had no worker for ``spec.no_worker_timeout``
    (asked after ``check_every`` seconds without a finished future), or once the scheduler has
    gone (the client closed) or not answered for as long (:class:`Silence`, which :meth:`result`
    shares); ``waiting()``, if given, is called after each check."""

    def __init__(self, client, spec, check_every: float = 2.0, waiting=None):
        self._client = client
        self._spec = spec
        self._waiting = waiting
        self._limit = spec.no_worker_timeout_seconds
        self._check_every = max(0.25, min(check_every, self._limit / 2))
        self._finished = queue.SimpleQueue()  # filled by Dask's callback thread
        self._n_pending = 0  # added and not yet yielded
        self._idle_since = None  # when the cluster was first seen without workers
        self.silence = Silence(client, spec)

    def add(self, future) -> None:
        self._n_pending += 1
        future.add_done_callback(self._finished.put)  # finished, failed or cancelled

    def __iter__(self):
        while self._n_pending:
            try:
                batch = [self._finished.get(timeout=self._check_every)]
            except queue.Empty:
                self._check_workers()
                if self._waiting is not None:
                    self._waiting()
                continue
            while True:
                try:
                    batch.append(self._finished.get_nowait())
                except queue.Empty:
                    break
            if scheduler_lost(self._client):  # its futures were cancelled with it
                raise lost_scheduler(self._client, "the connection closed")
            self._n_pending -= len(batch)
            self._idle_since = None
            yield batch

    def result(self, future):
        """A finished future's result (or the exception it raises), fetched as the scheduler
        answers: a silent one is said and, past the limit, refused (:class:`Silence`)."""
        while True:
            try:
                result = future.result(timeout=ASK_SECONDS)
            except TimeoutError:
                self.silence.unanswered()
                continue
            self.silence.heard()
            return result

    def _check_workers(self) -> None:
        if scheduler_lost(self._client):
            raise lost_scheduler(self._client, "the connection closed")
        try:
            n_workers = len(self._client.nthreads(callback_timeout=ASK_SECONDS))
        except (TimeoutError, OSError):  # a scheduler stopped (SIGSTOP), a host gone
            self.silence.unanswered()
            return
        self.silence.heard()
        now = time.monotonic()
        if n_workers:
            self._idle_since = None
        elif self._idle_since is None:
            self._idle_since = now
        elif now - self._idle_since >= self._limit:
            raise no_workers(self._spec, f"{self._n_pending} task(s) wait")


def broadcast(client, data, spec):
    """``data`` scattered to every worker (workers that join later fetch it from a peer); the
    scheduler waits ``spec.no_worker_timeout`` for a first worker."""
    try:
        return client.scatter(data, broadcast=True, hash=False,
                              timeout=spec.no_worker_timeout_seconds)
    except TimeoutError:
        raise no_workers(spec, "the data waits to be sent to them") from None


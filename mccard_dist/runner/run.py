"""A run: everything that can be refused checked before a store is created or a cluster started,
the store created once the cluster is up, the cells to compute sent as tasks (:mod:`.work`) kept
in bounded flight (``run.blocks_per_worker`` per worker, :mod:`.drain`) so that the driver's
memory stays flat, and each finished block written by the driver, the only writer, as it
arrives. A failed fit is a failed cell; a block that cannot finish (workers lost more than
``run.retries`` times) stays pending for a rerun to resume. Each run is recorded in the store's
``runs`` attribute when it starts and when it ends, saying how.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import grid
from ..cluster import broadcast, connect, preflight
from ..config import ExperimentSpec
from ..errors import StoreAccessError
from ..grid import grid_hash, resolve_unit
from ..lock import StoreLock
from ..store import ResultsStore, check_writable, store_path
from ..store import store_path as default_store_path
from ..store.migrate import refuse_unmigrated
from ..tasks import run_block, try_methods
from .drain import drain
from .plan import RunPlan, plan_run
from .rounds import Rounds, RoundTasks, say_costs
from .work import BlockTasks, FitTasks, Sizes, write

__all__ = ["Interrupted", "RunReport", "run_experiment", "run_serial"]

log = logging.getLogger("mccard_dist.runner")


@dataclass
class RunReport:
    """What a run did."""

    store_path: Path
    n_cells: int
    n_pending_before: int
    #: tasks of blocks submitted (with ``run.unit=fit``, the cells' final fits)
    n_blocks: int = 0
    #: writes of a block's cells (with ``run.unit=fit`` each cell is written as a block of one)
    n_blocks_written: int = 0
    n_cells_written: int = 0
    n_failed_cells: int = 0
    block_errors: list = field(default_factory=list)
    #: per method, the message of the first failed CV fit this run met
    cv_errors: dict = field(default_factory=dict)
    #: the methods that finished no cell in the store (every cell of theirs finished failed):
    #: method -> (failed cells, the first one's error); a run with any did not get their results
    methods_without_cells: dict = field(default_factory=dict)
    seconds: float = 0.0
    stopped_early: bool = False
    #: the unit of work the run used (``cell`` or ``fit``; ``cell`` for a serial run)
    unit: str = "cell"

    @property
    def complete(self) -> bool:
        return not self.stopped_early and not self.block_errors


def run_experiment(spec: ExperimentSpec, *, client=None, stop_after_blocks: int | None = None,
                   progress: bool | None = None) -> RunReport | RunPlan:
    """Run every unfinished cell of ``spec`` and write the results to its store.

    Parameters
    ----------
    spec : ExperimentSpec
        Validated experiment (the store path comes from it).
    client : distributed.Client, optional
        Use this client instead of building one from ``spec.cluster``.
    stop_after_blocks : int, optional
        Stop (cancelling the rest) once this many blocks are written: an interruption, for tests
        and for trying a grid.
    progress : bool, optional
        Show a progress bar (default: ``spec.run.progress``).

    With ``run.plan``, nothing runs: returns the :class:`~mccard_dist.runner.plan.RunPlan` of
    what would (no cluster started, no store created, no lock taken).
    """
    if spec.run.plan:
        return plan_run(spec)
    path = store_path(spec)
    # Everything that can be refused is checked before a store exists or a cluster starts.
    spec.check_data()
    refuse_unmigrated(spec)
    check_writable(path)
    try_methods(spec, spec.data.load_source())
    if client is None:
        preflight(spec.cluster)
    with StoreLock(path) as lock:  # one driver per store
        return _run_locked(spec, path, lock, client, stop_after_blocks, progress)


def _run_locked(spec, path, lock, client, stop_after_blocks, progress) -> RunReport:
    start = time.perf_counter()
    say_costs(spec)
    if path.exists():
        ResultsStore.check_compatible(path, spec)
        store = ResultsStore(path, spec)
        store.lock = lock
        store.check_and_repair()  # lost or damaged chunks: their cells are pending again
        rounds = Rounds(spec, store) if spec.stop else None
        todo = rounds.plan() if rounds else store.todo(spec.run.retry_failed)
    else:
        store = rounds = None
        todo = np.ones((len(spec.methods), len(spec.tau), len(spec.psi), len(spec.seeds)), bool)
        if spec.stop:  # the first round of every cell
            todo[..., min(spec.stop.min_seeds, len(spec.seeds)):] = False
    report = RunReport(path, todo.size, int(todo.sum()))
    if not report.n_pending_before:
        log.info("every cell of %s is already done; nothing to run", path)
        report.methods_without_cells = store.methods_without_cells()
        return report
    log.info("%d of %d cells to run -> %s", report.n_pending_before, report.n_cells, path)
    context = contextlib.nullcontext(client) if client is not None else connect(spec.cluster)
    with _signals_interrupt(), context as client:
        if store is None:  # created once the cluster is up: a failed start leaves nothing behind
            store = ResultsStore.open_or_create(spec)
            lock.hold_store()
            store.lock = lock
            # a new store may have taken cells of unchanged methods from a store beside it
            rounds = Rounds(spec, store) if spec.stop else None
            todo = rounds.plan() if rounds else store.todo(spec.run.retry_failed)
            if todo.sum() < report.n_pending_before:
                report.n_pending_before = int(todo.sum())
                log.info("%d of %d cells left to run", report.n_pending_before, report.n_cells)
        with _recorded(store, report, start) as outcome:
            if report.n_pending_before:
                _drive(spec, client, store, todo, rounds, report, stop_after_blocks,
                       spec.run.progress if progress is None else progress)
            if report.stopped_early:
                outcome["ended"] = "stopped early"
            elif report.block_errors:
                outcome["ended"] = (f"finished with {len(report.block_errors)} block(s) left "
                                    "pending")
            else:
                outcome["ended"] = "finished"
    _said_block_errors(report.block_errors)
    report.methods_without_cells = store.methods_without_cells()
    return report


def _said_block_errors(errors: list[tuple[str, str]]) -> None:
    """The blocks left pending, a line for each reason: the first blocks it stopped, and for a
    module the workers cannot import, where to install it."""
    by_reason: dict[str, list[str]] = {}
    for key, message in errors:
        by_reason.setdefault(message, []).append(key)
    for message, keys in by_reason.items():
        which = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
        if message.startswith("ModuleNotFoundError"):
            log.error("%d block(s) did not finish (%s): the workers cannot import what the "
                      "driver can; install it where they run (blocks %s)", len(keys), message,
                      which)
        else:
            log.error("%d block(s) did not finish (%s); their cells stay pending: rerun to "
                      "resume (blocks %s)", len(keys), message, which)


class Interrupted(KeyboardInterrupt):
    """The driver was told to stop by a signal (a batch scheduler's SIGTERM, SIGHUP); its
    ``signum`` says which."""


@contextlib.contextmanager
def _signals_interrupt():
    """SIGTERM and SIGHUP stop the driver as Ctrl-C does (in the main thread, where Python
    delivers signals)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        exc = Interrupted(f"signal {signal.Signals(signum).name}")
        exc.signum = signum  # the exit status says which signal: 128 + its number
        raise exc

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def _interrupts_deferred():
    """A Ctrl-C, SIGTERM or SIGHUP that arrives inside is delivered on leaving, so that what is
    inside (a run record's start) is written whole (in the main thread, where Python delivers
    signals)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, lambda signum, frame: held.append(signum))
                for sig in signals}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if held:
            signal.raise_signal(held[0])


def _drive(spec, client, store, todo, rounds, report, stop_after_blocks, show_progress):
    if spec.cluster.has_dashboard:
        log.info("Dask dashboard: %s", client.dashboard_link)
    else:
        log.info("Dask dashboard off (cluster.dashboard_address=127.0.0.1:0 starts one on this "
                 "machine, which any of its users can read)")
    # workers connected now, or the cluster's target (batch-job and adaptive workers join later)
    connected = len(client.scheduler_info().get("workers", {}))
    if not connected:
        log.warning("the scheduler has no worker yet; the run fails if none joins within %s "
                    "(cluster.no_worker_timeout)", spec.cluster.no_worker_timeout)
    n_workers = max(1, connected, spec.cluster.target_workers or 0)
    max_in_flight = max(1, spec.run.blocks_per_worker * n_workers)
    token = f"{grid_hash(spec)[:8]}-{uuid.uuid4().hex[:6]}"
    # a data file's arrays go to each worker once (workers may not see its path)
    source = spec.data.load_source()
    if source is not None:
        source = broadcast(client, source, spec.cluster)
    n_cells = int(todo.sum())
    report.unit = resolve_unit(spec, n_cells, n_workers)
    log.info("unit of work: %s (%d cells, %d workers)", report.unit, n_cells, n_workers)
    tasks = (FitTasks if report.unit == "fit" else BlockTasks)(spec, client, store, todo, report,
                                                                 source, token)
    if rounds is not None:
        tasks = RoundTasks(tasks, rounds)
    drain(spec, client, tasks, report, stop_after_blocks, max_in_flight, show_progress)


def run_serial(spec: ExperimentSpec, store_path=None) -> RunReport:
    """Run the same blocks in this process, one after another, into a store (no Dask): the
    reference the distributed run must reproduce exactly, and the pipeline benchmark's serial
    baseline."""
    spec.check_data()
    refuse_unmigrated(spec)
    path = store_path if store_path is not None else default_store_path(spec)
    check_writable(path)
    try_methods(spec, spec.data.load_source())
    with StoreLock(path) as lock:
        start = time.perf_counter()
        store = ResultsStore.open_or_create(spec, store_path)
        lock.hold_store()
        store.lock = lock
        rounds = Rounds(spec, store) if spec.stop else None
        todo = rounds.plan() if rounds else store.todo(spec.run.retry_failed)
        report = RunReport(store.path, todo.size, int(todo.sum()))
        sizes = Sizes.of(spec)
        with _recorded(store, report, start) as outcome:
            source = spec.data.load_source()
            while todo.any():  # with a stop rule, round after round
                opened = np.zeros_like(todo)
                for block in grid.blocks(spec, todo, sizes, store.tile):
                    report.n_blocks += 1
                    result = run_block(spec, block, source)
                    sizes.observe(block.method, len(block), result.seconds)
                    write(store, [(block, result)], report)
                    more = rounds.written([(block, result)]) if rounds else None
                    if more is not None:
                        opened |= more
                todo = opened
            outcome["ended"] = "finished (serial)"
    report.methods_without_cells = store.methods_without_cells()
    return report


@contextlib.contextmanager
def _recorded(store, report: RunReport, start: float):
    """The run's record in the store: started on entry, ended on exit with what the body put in
    ``outcome["ended"]``, or as its exception says (interrupted, failed: <first line>). A store
    that can no longer be written (often the error that stopped the run) leaves the record
    ``running``, and the next run counts it."""
    run_id = None
    outcome = {"ended": "interrupted"}
    try:
        with _interrupts_deferred():  # a record started is a record that will end
            run_id = store.start_run()
        yield outcome
    except KeyboardInterrupt as exc:
        outcome["ended"] = f"interrupted ({exc})" if str(exc) else "interrupted"
        raise
    except Exception as exc:
        lines = str(exc).strip().splitlines()
        outcome["ended"] = f"failed: {type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")
        raise
    finally:
        report.seconds = time.perf_counter() - start
        try:
            if run_id is not None:  # else no record was started (refused before it)
                store.end_run(run_id, report.n_blocks_written, outcome["ended"],
                              n_cells=report.n_cells_written)
        except StoreAccessError as exc:
            log.warning("the run's end could not be recorded: %s", exc)


"""Run an experiment grid on a Dask cluster into its results store (the only Dask-aware room
besides :mod:`mccard_dist.cluster`).

Tasks are submitted in bounded waves (``run.blocks_per_worker`` per worker in flight), so the
driver's memory stays flat; the driver, the only writer, writes each finished block as it arrives.
A failed fit is a failed cell; a block that cannot finish (workers lost more than ``run.retries``
times) stays pending for a rerun to resume. With ``run.unit=fit`` the tasks are single K-fold
fits, then one task per cell for its choice and final fit (the same results as blocks of cells).
Everything that can be refused is checked before a store is created or a cluster started, and the
store is created once the cluster is up. Each run is recorded in the store's ``runs`` attribute
when it starts and when it ends, saying how.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .cluster import Completed, broadcast, connect, preflight
from .config import ExperimentSpec
from .errors import StoreAccessError
from .grid import cell_block, cv_candidates, cv_units, grid_hash, make_blocks, resolve_unit
from .grid import cells as all_cells, submission_order
from .lock import StoreLock
from .records import STATUS_FAILED
from .store import ResultsStore, check_writable, store_path
from .store import store_path as default_store_path
from .store.migrate import refuse_unmigrated
from .tasks import cv_fit, finish_cell, run_block

__all__ = ["Interrupted", "RunReport", "run_experiment", "run_serial"]

log = logging.getLogger(__name__)


@dataclass
class RunReport:
    """What a run did."""

    store_path: Path
    n_cells: int
    n_pending_before: int
    n_blocks: int = 0
    #: writes of a block's cells (with ``run.unit=fit`` each cell is written as a block of one)
    n_blocks_written: int = 0
    n_cells_written: int = 0
    n_failed_cells: int = 0
    block_errors: list = field(default_factory=list)
    seconds: float = 0.0
    stopped_early: bool = False
    #: the unit of work the run used (``cell`` or ``fit``; ``cell`` for a serial run)
    unit: str = "cell"

    @property
    def complete(self) -> bool:
        return not self.stopped_early and not self.block_errors


def run_experiment(spec: ExperimentSpec, *, client=None, stop_after_blocks: int | None = None,
                   progress: bool | None = None) -> RunReport:
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
    """
    path = store_path(spec)
    # Everything that can be refused is checked before a store exists or a cluster starts.
    spec.check_data()
    refuse_unmigrated(spec)
    check_writable(path)
    if client is None:
        preflight(spec.cluster)
    with StoreLock(path) as lock:  # one driver per store
        return _run_locked(spec, path, lock, client, stop_after_blocks, progress)


def _run_locked(spec, path, lock, client, stop_after_blocks, progress) -> RunReport:
    start = time.perf_counter()
    if path.exists():
        ResultsStore.check_compatible(path, spec)
        store = ResultsStore(path, spec)
        store.lock = lock
        store.check_and_repair()  # lost or damaged chunks: their cells are pending again
        pending = store.pending_cells(spec.run.retry_failed)
    else:
        store, pending = None, all_cells(spec)
    report = RunReport(path, len(all_cells(spec)), len(pending))
    blocks = submission_order(make_blocks(spec, pending))
    report.n_blocks = len(blocks)
    if not blocks:
        log.info("every cell of %s is already done; nothing to run", path)
        return report
    log.info("%d of %d cells to run in %d blocks -> %s", len(pending), report.n_cells,
             len(blocks), path)
    context = contextlib.nullcontext(client) if client is not None else connect(spec.cluster)
    with _signals_interrupt(), context as client:
        if store is None:  # created once the cluster is up: a failed start leaves nothing behind
            store = ResultsStore.open_or_create(spec)
            lock.hold_store()
            store.lock = lock
            # a new store may have taken cells of unchanged methods from a store beside it
            pending = store.pending_cells(spec.run.retry_failed)
            if len(pending) < report.n_pending_before:
                blocks = submission_order(make_blocks(spec, pending))
                report.n_pending_before, report.n_blocks = len(pending), len(blocks)
                log.info("%d of %d cells left to run in %d blocks", len(pending),
                         report.n_cells, len(blocks))
        with _recorded(store, report, start) as outcome:
            _drive(spec, client, store, blocks, report, stop_after_blocks,
                   spec.run.progress if progress is None else progress)
            if report.stopped_early:
                outcome["ended"] = "stopped early"
            elif report.block_errors:
                outcome["ended"] = (f"finished with {len(report.block_errors)} block(s) left "
                                    "pending")
            else:
                outcome["ended"] = "finished"
    for key, message in report.block_errors:
        log.error("block %s did not finish (%s); its cells stay pending: rerun to resume", key,
                  message)
    return report


class Interrupted(KeyboardInterrupt):
    """The driver was told to stop by a signal (a batch scheduler's SIGTERM, SIGHUP)."""


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
        raise Interrupted(f"signal {signal.Signals(signum).name}")

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _drive(spec, client, store, blocks, report, stop_after_blocks, show_progress):
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
    n_cells = sum(len(b) for b in blocks)
    report.unit = resolve_unit(spec, n_cells, n_workers)
    log.info("unit of work: %s (%d cells, %d workers)", report.unit, n_cells, n_workers)
    tasks = _fit_tasks if report.unit == "fit" else _block_tasks
    _drain(spec, client, tasks(spec, client, store, blocks, report, source, token), report,
           stop_after_blocks, max_in_flight, show_progress)


def _drain(spec, client, tasks, report, stop_after_blocks, max_in_flight, show_progress):
    """Run ``tasks``, ``(n_steps, queue, submit, handle)``: keep at most ``max_in_flight`` items
    of ``queue`` running (``submit(item)``: its future) and hand each result to
    ``handle(item, result, error, then)`` as it finishes (``error``: what the task raised, else
    None; ``then(item)`` submits a follow-up task outside the queue's slots), which returns
    whether the progress bar steps. Stops, cancelling the rest, once ``stop_after_blocks`` blocks
    are written."""
    from tqdm.auto import tqdm

    n_steps, queue, submit, handle = tasks
    in_flight = {}
    stall = _StallWatch(client, in_flight)
    futures = Completed(client, spec.cluster, waiting=stall.check)

    def add(item, queued: bool):
        future = submit(item)
        in_flight[future] = (item, queued)
        futures.add(future)

    def submit_next() -> bool:
        item = next(queue, None)
        if item is None:
            return False
        add(item, True)
        return True

    with tqdm(total=n_steps, unit="block", desc="blocks", disable=not show_progress,
              smoothing=0.1) as bar:
        t0 = time.perf_counter()
        for _ in range(max_in_flight):
            if not submit_next():
                break
        for future in futures:
            stall.finished()
            item, queued = in_flight.pop(future)
            try:
                result, error = future.result(), None
            except Exception as exc:  # noqa: BLE001 - lost workers etc.: its cells stay pending
                result, error = None, exc
            if handle(item, result, error, lambda follow: add(follow, False)):
                bar.update(1)
                rate = report.n_cells_written / max(time.perf_counter() - t0, 1e-9)
                bar.set_postfix(cells_per_s=f"{rate:.2f}", failed=report.n_failed_cells)
            future.release()
            if stop_after_blocks is not None and report.n_blocks_written >= stop_after_blocks:
                report.stopped_early = True
                for other in list(in_flight):
                    other.cancel()
                break
            if queued:
                submit_next()


#: a run in which no task has finished for this long (seconds; or for four times the longest
#: wait between two finished tasks so far) logs which tasks wait on which worker
STALL_SECONDS = 120.0


class _StallWatch:
    """One warning per stall (no task finished for :data:`STALL_SECONDS`, or four times the
    longest wait so far): which of the run's tasks (``in_flight``: its futures) each worker
    holds, and when the scheduler last heard from it (a stopped worker sends nothing)."""

    def __init__(self, client, in_flight: dict):
        self.client, self.in_flight = client, in_flight
        self.since, self.longest, self.said = time.monotonic(), 0.0, False

    def finished(self) -> None:
        now = time.monotonic()
        self.longest = max(self.longest, now - self.since)
        self.since, self.said = now, False

    def check(self) -> None:
        waited = time.monotonic() - self.since
        if self.said or waited < max(STALL_SECONDS, 4 * self.longest):
            return
        self.said = True
        try:
            where = _holders(self.client.processing(), self.client.scheduler_info(
                n_workers=-1).get("workers", {}), self.in_flight, time.time())
        except Exception as exc:  # noqa: BLE001 - a scheduler that does not answer
            where = f"the scheduler did not say which worker holds them ({exc})"
        log.warning("no task has finished for %.0f s: %s", waited, where)


def _holders(processing: dict, workers: dict, in_flight: dict, now: float) -> str:
    """Which of ``in_flight``'s tasks each worker runs (``processing``: the scheduler's keys per
    worker address; ``workers``: its records of them), a task named by its key without the
    run's token (``block-<hash>-<id>-mcc_ard/t0/p0/s0-1`` -> ``block mcc_ard/t0/p0/s0-1``)."""
    ours = {future.key for future in in_flight}
    parts, held = [], set()
    for address, keys in sorted(processing.items()):
        mine = [key for key in keys if key in ours]
        held.update(mine)
        if mine:
            info = workers.get(address, {})
            heard = ("" if info.get("last_seen") is None else
                     f", last heard from {max(now - info['last_seen'], 0):.0f} s ago")
            names = ", ".join(" ".join(str(k).split("-", 3)[::3]) for k in mine[:4])
            more = f" and {len(mine) - 4} more" if len(mine) > 4 else ""
            parts.append(f"worker {info.get('name', '?')} ({address}{heard}) holds {names}{more}")
    if len(ours) > len(held):
        parts.append(f"{len(ours) - len(held)} task(s) wait for a worker")
    return "; ".join(parts) + ("; a stopped or overloaded worker holds the run until it resumes "
                               "or Dask's distributed.scheduler.worker-ttl drops it")


def _write(store, block, results, report) -> None:
    store.write_block(block, results)
    report.n_blocks_written += 1
    report.n_cells_written += len(results)
    report.n_failed_cells += sum(r.status == STATUS_FAILED for r in results)


def _block_tasks(spec, client, store, blocks, report, source, token):
    """``run.unit=cell``: a task per block of cells, written as it comes in."""
    def submit(block):
        return client.submit(run_block, spec, block, source, key=f"block-{token}-{block.key}",
                             retries=spec.run.retries)

    def handle(block, results, error, then):
        if error is not None:  # the block stays pending
            report.block_errors.append((block.key, f"{type(error).__name__}: {error}"))
        else:
            _write(store, block, results, report)
        return True

    return len(blocks), iter(blocks), submit, handle


def _fit_tasks(spec, client, store, blocks, report, source, token):
    """``run.unit=fit``: a task per K-fold fit of every pending cell; once a cell's fits are in,
    its choice and final fit run as one more task, ahead of the queued fits, and the cell is
    written on its own."""
    cells = [cell for block in blocks for cell in block.cells]
    units = {m.name: cv_units(m, spec.cv) for m in spec.methods}
    progress = {c.key: _CellProgress.of(spec, c, units[c.method]) for c in cells}

    def submit(item):
        kind, cell = item[0], item[1]
        if kind == "fit":
            _, _, k, f = item
            return client.submit(cv_fit, spec, cell, k, f, source,
                                 key=f"fit-{token}-{cell.key}-u{k}-f{f}",
                                 retries=spec.run.retries)
        # ahead of the queued fits, so finished cells are written early
        p = progress[cell.key]
        return client.submit(finish_cell, spec, cell, p.scores if p.scores.size else None,
                             p.failures, p.seconds, source, priority=1,
                             key=f"cell-{token}-{cell.key}", retries=spec.run.retries)

    def handle(item, result, error, then):
        kind, cell = item[0], item[1]
        p = progress[cell.key]
        if error is not None:  # the cell stays pending
            if p.broken:
                return False
            p.broken = True
            report.block_errors.append((cell.key, f"{type(error).__name__}: {error}"))
            return True
        if kind == "fit" and not p.broken:
            _, _, k, f = item
            unit_scores, failed, spent = result
            p.scores[list(units[cell.method][k]), f] = unit_scores
            p.failures += int(failed)
            p.seconds += spent
            p.fits_left -= 1
            if p.fits_left == 0:
                then(("finish", cell))
        elif kind == "finish":
            _write(store, cell_block(cell), [result], report)
            return True
        return False

    # fits in cell order; a cell without candidates goes straight to its final fit
    return len(cells), _fit_queue(spec, cells, units), submit, handle


@dataclass
class _CellProgress:
    """One cell's K-fold fits under ``run.unit=fit``; ``broken``: a task of it failed (it stays
    pending)."""

    scores: np.ndarray
    fits_left: int
    failures: int = 0
    seconds: float = 0.0
    broken: bool = False

    @classmethod
    def of(cls, spec, cell, units):
        n_candidates = len(cv_candidates(spec.method(cell.method)))
        return cls(np.full((n_candidates, spec.cv.n_folds), np.nan),
                   len(units) * spec.cv.n_folds)


def _fit_queue(spec, cells, units):
    for cell in cells:
        if not units[cell.method]:
            yield ("finish", cell)
            continue
        for k in range(len(units[cell.method])):
            for f in range(spec.cv.n_folds):
                yield ("fit", cell, k, f)


def run_serial(spec: ExperimentSpec, store_path=None) -> RunReport:
    """Run the same blocks in this process, one after another, into a store (no Dask): the
    reference the distributed run must reproduce exactly, and the pipeline benchmark's serial
    baseline."""
    spec.check_data()
    refuse_unmigrated(spec)
    with StoreLock(store_path if store_path is not None else default_store_path(spec)) as lock:
        start = time.perf_counter()
        store = ResultsStore.open_or_create(spec, store_path)
        lock.hold_store()
        store.lock = lock
        pending = store.pending_cells(spec.run.retry_failed)
        report = RunReport(store.path, len(all_cells(spec)), len(pending))
        blocks = make_blocks(spec, pending)
        report.n_blocks = len(blocks)
        with _recorded(store, report, start) as outcome:
            source = spec.data.load_source()
            for block in blocks:
                _write(store, block, run_block(spec, block, source), report)
            outcome["ended"] = "finished (serial)"
    return report


@contextlib.contextmanager
def _recorded(store, report: RunReport, start: float):
    """The run's record in the store: started on entry, ended on exit with what the body put in
    ``outcome["ended"]``, or as its exception says (interrupted, failed: <first line>). A store
    that can no longer be written (often the error that stopped the run) leaves the record
    ``running``, and the next run counts it."""
    run_id = store.start_run()
    outcome = {"ended": "interrupted"}
    try:
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
            store.end_run(run_id, report.n_blocks_written, outcome["ended"],
                          n_cells=report.n_cells_written)
        except StoreAccessError as exc:
            log.warning("the run's end could not be recorded: %s", exc)


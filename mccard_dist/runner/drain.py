"""Keeping a run's tasks in flight and collecting their results as they finish."""

from __future__ import annotations

import logging
import time

from ..cluster import ASK_SECONDS, Completed, ask
from ..errors import ClusterError

__all__ = ["CHECK_SECONDS", "STALL_SECONDS", "drain", "speed"]

log = logging.getLogger("mccard_dist.runner")


def drain(spec, client, tasks, report, stop_after_blocks, max_in_flight, show_progress) -> None:
    """Run ``tasks`` (:class:`~mccard_dist.runner.work.BlockTasks` or ``FitTasks``): keep at
    most ``max_in_flight`` items of ``tasks.queue`` running (``tasks.submit(item)``: its
    future), hand each result to ``tasks.handle(item, result, error, then)`` as it finishes
    (``error``: what the task raised, else None; ``then(item)`` submits a follow-up task outside
    the queue's slots), and after each batch of finished tasks (those finished by the time the
    first is collected) submit their successors, then let ``tasks.flush(limit)`` write what
    finished (at most ``limit`` blocks; it returns the cells the writes took off the run's
    ``tasks.total``: those written, and under a stop rule those a stop made not needed), and
    submit what the writes added to the queue (a stop rule's next rounds). With
    ``run.cell_timeout``, a task that has run longer than ``tasks.limit(item)`` is stopped
    (:class:`_Deadlines`). Stops, cancelling the rest, once ``stop_after_blocks`` blocks are
    written."""
    from tqdm.auto import tqdm

    in_flight = {}
    stall = _StallWatch(client, in_flight)
    deadlines = _Deadlines(client, tasks, in_flight, spec.run.cell_timeout_seconds)

    def waiting():
        stall.check()
        deadlines.check()

    futures = Completed(client, spec.cluster, waiting=waiting)

    def add(item, queued: bool):
        future = tasks.submit(item)
        in_flight[future] = (item, queued)
        futures.add(future)

    def submit_next() -> bool:
        item = next(tasks.queue, None)
        if item is None:
            return False
        add(item, True)
        return True

    with tqdm(total=tasks.total, unit="cell", desc="cells", disable=not show_progress,
              smoothing=0.1) as bar:
        t0 = time.perf_counter()
        for _ in range(max_in_flight):
            if not submit_next():
                break
        for batch in futures:
            stall.finished()
            for future in batch:
                item, _ = in_flight.pop(future)
                try:
                    result, error = futures.result(future), None
                except Exception as exc:  # noqa: BLE001 - lost workers etc.: its cells stay pending
                    if isinstance(exc, ClusterError):  # the scheduler went away: the run ends
                        raise
                    result, error = None, exc
                tasks.handle(item, result, error, lambda follow: add(follow, False))
                future.release()
            # the freed slots refilled, workers busy while the driver writes
            while sum(queued for _, queued in in_flight.values()) < max_in_flight:
                if not submit_next():
                    break
            deadlines.check()
            limit = (None if stop_after_blocks is None
                     else max(stop_after_blocks - report.n_blocks_written, 0))
            bar.update(tasks.flush(limit))
            bar.set_postfix(speed=speed(report.n_cells_written, time.perf_counter() - t0),
                            failed=report.n_failed_cells)
            if stop_after_blocks is not None and report.n_blocks_written >= stop_after_blocks:
                report.stopped_early = True
                for other in list(in_flight):
                    other.cancel()
                break
            while sum(queued for _, queued in in_flight.values()) < max_in_flight:
                if not submit_next():  # what the writes opened (a stop rule's next rounds)
                    break


def speed(n_cells: int, seconds: float) -> str:
    """The progress bar's speed: cells a second, or seconds a cell below one a second (three
    significant digits either way; ``-`` before the first cell)."""
    if n_cells <= 0 or seconds <= 0:
        return "-"
    rate = n_cells / seconds
    return f"{rate:.3g} cells/s" if rate >= 1 else f"{1 / rate:.3g} s/cell"


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
            where = _holders(ask(self.client, "processing"),
                             ask(self.client, "identity", n_workers=-1).get("workers", {}),
                             self.in_flight, time.time())
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
    return "; ".join(parts) + ("; a worker heard from lately runs a long task (run.cell_timeout "
                               "stops a cell that runs too long), a stopped or overloaded one "
                               "holds the run until it resumes or Dask's "
                               "distributed.scheduler.worker-ttl drops it")


#: seconds between two looks at what the workers execute (``run.cell_timeout``)
CHECK_SECONDS = 2.0


def _executing(dask_worker) -> list[str]:
    """On a worker: the keys of the tasks it executes now."""
    return [str(task.key) for task in dask_worker.state.executing]


class _Deadlines:
    """``run.cell_timeout`` (``seconds``; None: off): a task that has been executing on its
    worker for longer than ``tasks.limit(item)`` is told to the tasks
    (``tasks.timed_out(item, seconds)``), cancelled, and its worker restarted, which stops the
    fit that holds it; its cancellation then comes back as its result."""

    def __init__(self, client, tasks, in_flight: dict, seconds: float | None):
        self.client, self.tasks, self.in_flight, self.seconds = client, tasks, in_flight, seconds
        self.started: dict = {}  # key -> (when first seen executing, where)
        self.last = 0.0

    def check(self) -> None:
        now = time.monotonic()
        if self.seconds is None or now - self.last < CHECK_SECONDS:
            return
        self.last = now
        try:
            executing = self.client.run(_executing, on_error="ignore",
                                        callback_timeout=ASK_SECONDS)
        except Exception:  # noqa: BLE001 - a scheduler that does not answer: said elsewhere
            return
        for address, keys in executing.items():
            for key in keys if isinstance(keys, list) else ():
                self.started.setdefault(key, (now, address))
        for future, (item, _) in list(self.in_flight.items()):
            seen = self.started.get(future.key)
            if seen is not None and now - seen[0] > self.tasks.limit(item):
                self.started.pop(future.key)
                self.tasks.timed_out(item, now - seen[0])
                future.cancel()
                try:
                    self.client.restart_workers([seen[1]], timeout=60, raise_for_error=False)
                except Exception as exc:  # noqa: BLE001 - the worker is beyond a restart
                    log.warning("the worker %s that ran %s could not be restarted (%s)",
                                seen[1], future.key, exc)

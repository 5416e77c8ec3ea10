"""A run's units of work: blocks of cells sized by the time they take (``run.unit=cell``), or one
task per K-fold fit followed by one per cell for its choice and final fit (``run.unit=fit``)."""

from __future__ import annotations

import collections
import logging
import time
from dataclasses import dataclass

import numpy as np

from .. import grid
from ..cluster import ask
from ..grid import cell_block, cv_candidates, cv_units
from ..records import STATUS_FAILED, BlockResult, CellResult
from ..tasks import cv_fit, finish_cell, run_block

log = logging.getLogger("mccard_dist.runner")

__all__ = ["BLOCK_VALUES", "BlockTasks", "FitTasks", "Sizes", "died", "write"]

#: values (float64) a block's results hold at most, coefficients and CV scores included
BLOCK_VALUES = 2**21


class Sizes:
    """Cells per block, by method (``sizes(method)``): as many as take about ``seconds`` of a
    worker's time, from the seconds per cell of the method's last finished block; one until a
    block of it has finished (or with ``seconds`` 0), at most :data:`GROWTH` times its largest
    finished block and ``limit``."""

    #: how much larger than the method's largest finished block a new one may be
    GROWTH = 8

    def __init__(self, seconds: float, limit: int):
        self.seconds, self.limit = seconds, max(1, limit)
        self.per_cell: dict[str, float] = {}
        self.largest: dict[str, int] = {}

    @classmethod
    def of(cls, spec) -> Sizes:
        """The sizes of ``spec``'s run: ``run.block_seconds``, and at most :data:`BLOCK_VALUES`
        values of results a block."""
        n_candidates = max((len(cv_candidates(m)) for m in spec.methods), default=0)
        per_cell = (spec.data.n_features if spec.run.save_coef else 0) \
            + n_candidates * spec.cv.n_columns + 32
        return cls(spec.run.block_seconds, BLOCK_VALUES // per_cell)

    def __call__(self, method: str) -> int:
        if self.seconds <= 0 or method not in self.per_cell:
            return 1
        wanted = self.seconds / max(self.per_cell[method], 1e-9)
        return int(max(1, min(wanted, self.GROWTH * self.largest[method], self.limit)))

    def observe(self, method: str, n_cells: int, seconds: float) -> None:
        """A finished block of ``method``: ``n_cells`` cells in ``seconds``."""
        self.per_cell[method] = seconds / max(n_cells, 1)
        self.largest[method] = max(self.largest.get(method, 0), n_cells)


def died(error) -> bool:
    """Whether a task's error says that the workers running it died (Dask ran it on several,
    as many as ``distributed.scheduler.allowed-failures`` allows, and each died)."""
    from distributed.scheduler import KilledWorker

    return isinstance(error, KilledWorker)


def death(client, spec, error, timed_out: float | None, since: float) -> str:
    """Why a cell's worker stopped under it, as its error message: ``run.cell_timeout`` passed
    (``timed_out``: seconds it ran), or a worker's death, said as the nanny saw it (memory past
    its limit) where its events since ``since`` (the task's submission, wall clock) say so."""
    if timed_out is not None:
        return (f"CellTimeout: the cell ran for {timed_out:.0f} s, longer than run.cell_timeout "
                f"({spec.run.cell_timeout}): stopped, its worker restarted")
    tries = getattr(error, "allowed_failures", 3) + 1
    try:
        events = ask(client, "events", topic="worker-restart-memory")
    except Exception:  # noqa: BLE001 - a scheduler that does not answer: said without it
        events = ()
    memory = [msg for when, msg in events if when >= since and isinstance(msg, dict)]
    if memory:
        limit = getattr(spec.cluster, "memory_limit", None)
        limit = f" ({limit}, cluster.memory_limit)" if limit not in (None, "auto") else ""
        return (f"WorkerDied: its worker died while fitting it, {tries} times: its memory "
                f"({max(m.get('rss', 0) for m in memory) / 2**30:.2g} GiB) went past 95% of the "
                f"worker's limit{limit}")
    return (f"WorkerDied: its worker died while fitting it, {tries} times (killed, out of "
            "memory or crashed: the worker's log says which)")


def _failed(block: grid.Block, message: str, seconds: float) -> BlockResult:
    """A one-cell block recorded as failed with ``message``."""
    (cell,) = block.cells
    return BlockResult.of(block.shape, [CellResult(cell.index, STATUS_FAILED, error=message,
                                                   scalars={"cell_seconds": seconds})])


def write(store, finished: list[tuple[grid.Block, BlockResult]], report) -> int:
    """Write finished blocks into the store and count them in the run's report; returns the
    cells written."""
    if not finished:
        return 0
    store.write_blocks(finished)
    n_cells = sum(len(block) for block, _ in finished)
    report.n_blocks_written += len(finished)
    report.n_cells_written += n_cells
    report.n_failed_cells += sum(int((result.values["status"] == STATUS_FAILED).sum())
                                 for _, result in finished)
    for block, result in finished:
        if result.cv_error:
            report.cv_errors.setdefault(block.method, result.cv_error)
    return n_cells


class BlockTasks:
    """``run.unit=cell``: a task per block of cells (:func:`~mccard_dist.grid.blocks`, sized by
    :class:`Sizes`), written as they come in. The cells of a block whose workers died under it
    (or that ran past ``run.cell_timeout``) are tried again one at a time, each alone on the
    cluster (a worker's death also fails the tasks queued on it), before any other block; a cell
    that does so alone is recorded as failed, with why. (The tasks are their own queue.)"""

    def __init__(self, spec, client, store, todo, report, source, token):
        self.spec, self.client, self.store, self.report = spec, client, store, report
        self.source, self.token = source, token
        self.sizes = Sizes.of(spec)
        self._blocks = collections.deque([grid.blocks(spec, todo, self.sizes, store.tile)])
        self.queue = self
        self.total = int(todo.sum())
        self.finished: list = []
        self.alone: collections.deque = collections.deque()  # cells to try alone, in turn
        self.ran_alone: set[str] = set()
        self.submitted: dict[str, float] = {}  # in flight: key -> when submitted (wall clock)
        self.overdue: dict[str, float] = {}

    def __iter__(self):
        return self

    def __next__(self):
        if self.alone:
            if self.submitted:  # alone: once what runs now has finished
                raise StopIteration
            self.ran_alone.add(self.alone[0].key)
            return self.alone.popleft()
        if self.ran_alone & set(self.submitted):
            raise StopIteration
        while self._blocks:
            block = next(self._blocks[0], None)
            if block is not None:
                return block
            self._blocks.popleft()
        raise StopIteration

    def extend(self, todo) -> None:
        """Add the cells ``todo`` marks (a stop rule's next rounds) to the blocks to run."""
        self._blocks.append(grid.blocks(self.spec, todo, self.sizes, self.store.tile))
        self.total += int(todo.sum())

    def submit(self, block):
        self.report.n_blocks += 1
        self.submitted[block.key] = time.time()
        return self.client.submit(run_block, self.spec, block, self.source,
                                  key=f"block-{self.token}-{block.key}",
                                  retries=self.spec.run.retries)

    def limit(self, block) -> float:
        """Seconds the block may run (``run.cell_timeout``, plus twice what its cells were
        expected to take where it has several)."""
        expected = self.sizes.per_cell.get(block.method, 0.0) * len(block)
        return self.spec.run.cell_timeout_seconds + (2 * expected if len(block) > 1 else 0.0)

    def timed_out(self, block, seconds: float) -> None:
        self.overdue[block.key] = seconds

    def handle(self, block, result, error, then) -> None:
        started = self.submitted.pop(block.key, time.time())
        overdue = self.overdue.pop(block.key, None)
        alone = block.key in self.ran_alone
        self.ran_alone.discard(block.key)
        if error is None:
            self.sizes.observe(block.method, len(block), result.seconds)
            self.finished.append((block, result))
        elif overdue is None and not died(error):  # the block stays pending
            self.report.block_errors.append((block.key, f"{type(error).__name__}: {error}"))
        elif not alone:
            why = "ran past run.cell_timeout" if overdue is not None else "lost its workers"
            log.warning("block %s %s: its %d cell(s) are tried alone, one at a time",
                        block.key, why, len(block))
            mi, ti, p0, p1, s0, s1 = block.positions
            self.alone.extend(grid.Block.of(self.spec, mi, ti, range(p, p + 1), range(s, s + 1))
                              for p in range(p0, p1) for s in range(s0, s1))
        else:
            message = death(self.client, self.spec, error, overdue, started)
            log.warning("cell %s failed: %s", block.key, message)
            self.finished.append((block, _failed(block, message, time.time() - started)))

    def flush(self, limit: int | None = None) -> int:
        finished, self.finished = self.finished[:limit], []
        return write(self.store, finished, self.report)


@dataclass
class _CellProgress:
    """One cell's K-fold fits under ``run.unit=fit``; ``broken``: a task of it failed (it stays
    pending)."""

    scores: np.ndarray
    fits_left: int
    failures: int = 0
    seconds: float = 0.0
    broken: bool = False
    error: str = ""  # the first failed fit's message

    @classmethod
    def of(cls, spec, cell, units):
        n_candidates = len(cv_candidates(spec.method(cell.method)))
        return cls(np.full((n_candidates, spec.cv.n_folds), np.nan),
                   len(units) * spec.cv.n_folds)


class FitTasks:
    """``run.unit=fit``: a task per K-fold fit of every cell to run; once a cell's fits are in,
    its choice and final fit run as one more task, ahead of the queued fits, and the cell is
    written on its own."""

    def __init__(self, spec, client, store, todo, report, source, token):
        self.spec, self.client, self.store, self.report = spec, client, store, report
        self.source, self.token = source, token
        self.units = {m.name: cv_units(m, spec.cv) for m in spec.methods}
        self.progress: dict = {}
        self.total = 0
        self._fits = collections.deque()
        self.queue = self
        self.finished: list = []
        self.overdue: dict = {}
        self.extend(todo)

    def extend(self, todo) -> None:
        """Add the cells ``todo`` marks (all of a run's, or a stop rule's next rounds)."""
        cells = [cell for block in grid.blocks(self.spec, todo, lambda _: 1, self.store.tile)
                 for cell in block.cells]
        self.progress.update((c.key, _CellProgress.of(self.spec, c, self.units[c.method]))
                             for c in cells)
        self.total += len(cells)
        self._fits.append(self._fits_of(cells))

    def __iter__(self):
        return self

    def __next__(self):
        while self._fits:
            item = next(self._fits[0], None)
            if item is not None:
                return item
            self._fits.popleft()
        raise StopIteration

    def _fits_of(self, cells):
        """The fits in cell order; a cell without candidates goes straight to its final fit."""
        for cell in cells:
            units = self.units[cell.method]
            if not units:
                yield ("finish", cell)
                continue
            for k in range(len(units)):
                for f in range(self.spec.cv.n_folds):
                    yield ("fit", cell, k, f)

    def submit(self, item):
        kind, cell = item[0], item[1]
        if kind == "fit":
            _, _, k, f = item
            return self.client.submit(cv_fit, self.spec, cell, k, f, self.source,
                                      key=f"fit-{self.token}-{cell.key}-u{k}-f{f}",
                                      retries=self.spec.run.retries)
        # ahead of the queued fits, so finished cells are written early
        p = self.progress[cell.key]
        self.report.n_blocks += 1
        return self.client.submit(finish_cell, self.spec, cell,
                                  p.scores if p.scores.size else None, p.failures, p.seconds,
                                  self.source, p.error, priority=1,
                                  key=f"cell-{self.token}-{cell.key}",
                                  retries=self.spec.run.retries)

    def limit(self, item) -> float:
        """Seconds a fit, or a cell's final fit, may run (``run.cell_timeout``)."""
        return self.spec.run.cell_timeout_seconds

    def timed_out(self, item, seconds: float) -> None:
        self.overdue[item[1].key] = seconds

    def handle(self, item, result, error, then) -> None:
        kind, cell = item[0], item[1]
        p = self.progress[cell.key]
        if error is not None:
            overdue = self.overdue.pop(cell.key, None)
            if p.broken:
                return
            p.broken = True
            if overdue is None and not died(error):  # the cell stays pending
                self.report.block_errors.append((cell.key, f"{type(error).__name__}: {error}"))
                return
            block = cell_block(self.spec, cell)  # a fit of it stopped its worker: it failed
            message = death(self.client, self.spec, error, overdue, 0.0)
            log.warning("cell %s failed: %s", cell.key, message)
            self.finished.append((block, _failed(block, message, p.seconds)))
            return
        if kind == "fit" and not p.broken:
            _, _, k, f = item
            unit_scores, failed, spent, fit_error = result
            p.scores[list(self.units[cell.method][k]), f] = unit_scores
            p.failures += int(failed)
            p.error = p.error or fit_error
            p.seconds += spent
            p.fits_left -= 1
            if p.fits_left == 0:
                then(("finish", cell))
        elif kind == "finish":
            block = cell_block(self.spec, cell)
            self.finished.append((block, BlockResult.of(block.shape, [result])))

    def flush(self, limit: int | None = None) -> int:
        finished, self.finished = self.finished[:limit], []
        return write(self.store, finished, self.report)

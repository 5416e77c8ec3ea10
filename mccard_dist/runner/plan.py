"""A run's plan (``run.plan=true``): what the command would do, said before it spends a cluster.

The store it would write or resume (and how many cells are done there), the cells it would run
per method, the finished cells a new store would take from the stores beside it
(:func:`~mccard_dist.store.reuse.sibling_cells`) and an estimate of the time, from one fit of each
method on the first cell's data. The same checks as a run refuse the same inputs; nothing is
started, created or locked: no cluster, no store, no lock (the store and its siblings are only
read).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..grid import cv_candidates, cv_units
from ..records import STATUS_PENDING
from ..store import ResultsStore, check_writable, store_path
from ..store.integrity import open_group
from ..store.migrate import refuse_unmigrated
from ..store.reuse import sibling_cells
from ..store.writer import to_compute
from ..tasks import try_methods

__all__ = ["RunPlan", "plan_run"]


@dataclass
class RunPlan:
    """What a run of a spec would do (:func:`plan_run`); ``str(plan)`` says it in a few lines."""

    store_path: Path
    #: whether the store exists (the run resumes it) or would be created
    resume: bool
    n_cells: int
    #: cells the store holds finished (done, failed and not retried, or not needed)
    n_done: int
    #: per method, the cells the run would compute (under a stop rule: at most)
    to_run: dict = field(default_factory=dict)
    #: per method, ``(source store, cells)`` a new store would take from a store beside it
    taken: dict = field(default_factory=dict)
    #: whether a stop rule decides how many of the cells to run are needed
    stop_rule: bool = False
    #: under a stop rule, the cells of a new store's first round (None: not known before)
    first_round: int | None = None
    #: per method, the estimated seconds of one cell (NaN: its trial fit failed)
    cell_seconds: dict = field(default_factory=dict)
    #: the workers the cluster is meant to reach (None where the config does not say)
    n_workers: int | None = None

    @property
    def n_to_run(self) -> int:
        return sum(self.to_run.values())

    @property
    def seconds(self) -> float:
        """Estimated worker-seconds of the cells to run (those of a method whose trial fit
        failed left out)."""
        return sum(n * self.cell_seconds[m] for m, n in self.to_run.items()
                   if not math.isnan(self.cell_seconds.get(m, math.nan)))

    def lines(self) -> list[str]:
        at_most = "at most " if self.stop_rule else ""
        out = [f"plan: resume {self.store_path} ({self.n_done} of {self.n_cells} cells done)"
               if self.resume else f"plan: new store {self.store_path} ({self.n_cells} cells)"]
        if not self.n_to_run:
            out.append("cells to run: none; every cell is already done")
        else:
            per = ", ".join(f"{m} {n}" for m, n in self.to_run.items() if n)
            out.append(f"cells to run: {at_most}{self.n_to_run} ({per})")
        for method, (source, n) in self.taken.items():
            out.append(f"taken from a store beside it: {method} {n} cells from {source} (same "
                       "code, method, data and CV)")
        if self.first_round is not None and self.n_to_run:
            out.append(f"stop rule: its first round runs {self.first_round} cells; each "
                       "(tau, psi) cell gets more seeds until the rule holds or the seeds run out")
        if self.n_to_run:
            per = ", ".join(f"{m} {_duration(s)}" for m, s in self.cell_seconds.items()
                            if self.to_run.get(m))
            wall = (f", about {_duration(self.seconds / self.n_workers)} on "
                    f"{self.n_workers} worker(s)" if self.n_workers else "")
            out.append(f"time: about {_duration(self.seconds)} of work{wall} (a cell, from one "
                       f"fit on the first cell's data times the fits its CV makes: {per}; a "
                       "rough guide)")
        out.append("nothing was started or written; rerun without run.plan=true to run it")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


def _duration(seconds: float) -> str:
    if math.isnan(seconds):
        return "unknown (its trial fit failed)"
    if seconds < 10:
        return f"{seconds:.2g} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _fits_per_cell(spec, method) -> int:
    """The fits of one cell, counting a warm-started path of candidates as one: each unit of
    CV (:func:`~mccard_dist.grid.cv_units`) on each fold (``cv.n_columns``), then the final
    fit (racing makes fewer)."""
    units = cv_units(method, spec.cv) if cv_candidates(method) else []
    return len(units) * spec.cv.n_columns + 1


def plan_run(spec) -> RunPlan:
    """What :func:`~mccard_dist.runner.run_experiment` would do with ``spec``, after the same
    checks, without starting a cluster, creating, writing or locking a store; each method is
    fitted once on the whole training set of the first cell, on one BLAS thread as a worker
    fits, to time it."""
    from threadpoolctl import threadpool_limits

    path = store_path(spec)
    spec.check_data()
    refuse_unmigrated(spec, finish=False)
    check_writable(path)
    with threadpool_limits(1):
        fit_seconds = try_methods(spec, spec.data.load_source(), rows=None)
    shape = (len(spec.methods), len(spec.tau), len(spec.psi), len(spec.seeds))
    taken = {}
    if path.exists():
        ResultsStore.check_compatible(path, spec, repair=False)
        status = np.asarray(open_group(path)["status"][...])
    else:
        status = np.full(shape, STATUS_PENDING)
        if spec.store.path is None:  # a store named by its grid takes cells from its siblings
            taken = sibling_cells(path, spec)
    todo = to_compute(status, spec.run.retry_failed)
    to_run = {m.name: int(todo[i].sum()) - taken.get(m.name, ("", 0))[1]
              for i, m in enumerate(spec.methods)}
    first_round = None
    if spec.stop and not path.exists():
        first_round = int(todo[..., :min(spec.stop.min_seeds, len(spec.seeds))].sum())
    return RunPlan(path, path.exists(), todo.size, int((~todo).sum()), to_run, taken,
                   bool(spec.stop), first_round,
                   {m.name: fit_seconds.get(m.name, math.nan) * _fits_per_cell(spec, m)
                    for m in spec.methods},
                   spec.cluster.target_workers)

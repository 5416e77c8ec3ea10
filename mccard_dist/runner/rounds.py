"""Seeds in rounds, under a stop rule (``experiment.stop``, :mod:`mccard_dist.stopping`): each
(tau, psi) cell runs its first round, and as each round of a cell is written, the rule is looked
at on what the store holds of it; an open cell gets its next round at once (no barrier across
cells: the workers stay busy on the open ones), a cell whose rule holds or whose budget is spent
is recorded as stopped and its seeds left are marked not needed. Every decision is made from the
store alone, so a resumed run makes the same ones, and a rule that needs more of a stopped cell
(tighter, or a larger budget) continues it from where it stopped."""

from __future__ import annotations

import logging

import numpy as np

from ..records import STATUS_DONE, STATUS_FAILED
from ..intervals import BOUNDED
from ..stopping import BUDGET, RULE_HELD, bounded_costs, decide, outlier_notes
from ..store.stops import mark_unneeded, read_values, record_stops

__all__ = ["RoundTasks", "Rounds", "say_costs"]

log = logging.getLogger("mccard_dist.runner")


def say_costs(spec) -> None:
    """At a run's start, under the ``bounded`` guarantee: the seeds each claim or precision of
    the rule needs at least, against the budget, one line each."""
    if spec.stop is not None and spec.stop.guarantee == BOUNDED:
        metrics = {m.name: m for m in spec.metric_table}
        for line in bounded_costs(spec.stop, metrics):
            log.warning("%s; your budget is %d", line, len(spec.seeds))


class Rounds:
    """The rounds of a run with a stop rule on ``store``: :meth:`plan` gives the cells to run
    first, :meth:`written` the ones that finished rounds open. ``n_budget``: the cells the rule
    may run (every unfinished cell of the (tau, psi) cells left open by :meth:`plan`);
    ``n_unneeded``: those of them that a stop since has made not needed."""

    def __init__(self, spec, store):
        self.spec, self.store, self.rule = spec, store, spec.stop
        self.budget = len(spec.seeds)
        self.methods = list(spec.method_names)
        self.metrics = {m.name: m for m in spec.metric_table}
        shape = (len(spec.tau), len(spec.psi))
        self.n = np.zeros(shape, int)  # seeds of each open cell's round (0: stopped)
        self.waiting = np.zeros(shape, int)  # its cells not yet written
        self.n_stopped = 0
        self.audit_stops = {}  # an audited cell's first stop, while it runs on: (seeds, decision)
        self.n_budget = self.n_unneeded = 0

    def _finished(self, status: np.ndarray) -> np.ndarray:
        done = status == STATUS_DONE
        return done if self.spec.run.retry_failed else done | (status == STATUS_FAILED)

    def plan(self) -> np.ndarray:
        """The ``(method, tau, psi, seed)`` cells to run now: each cell's rounds are looked at in
        turn on what the store holds, up to its first round not finished (its unfinished cells
        are to run) or its stop (recorded, its seeds left marked not needed)."""
        status = self.store.status()
        finished = self._finished(status)
        values = read_values(self.store, self.rule.metrics)
        todo = np.zeros(status.shape, bool)
        stopped, reopened = {}, []
        for ti in range(status.shape[1]):
            for pi in range(status.shape[2]):
                cell = {name: v[:, ti, pi] for name, v in values.items()}
                key, record = self._walk(ti, pi, finished[:, ti, pi], cell,
                                         todo[:, ti, pi], first=True)
                if record is None:
                    reopened.append(key)
                    self.n_budget += int((~finished[:, ti, pi]).sum())
                else:
                    stopped[key] = record
        record_stops(self.store, self.rule, stopped, reopened)
        return todo

    def written(self, finished_blocks) -> np.ndarray | None:
        """After ``finished_blocks`` (``(block, result)`` pairs) were written: the cells of the
        rounds they open (None if none)."""
        ended = set()
        for block, _ in finished_blocks:
            for cell in block.cells:
                _, ti, pi, si = cell.index
                if si < self.n[ti, pi]:
                    self.waiting[ti, pi] -= 1
                    if self.waiting[ti, pi] <= 0:
                        ended.add((ti, pi))
        if not ended:
            return None
        group = self.store.status()
        todo = np.zeros(group.shape, bool)
        stopped = {}
        for ti, pi in sorted(ended):
            cell = read_values(self.store, self.rule.metrics, ti, pi)
            key, record = self._walk(ti, pi, self._finished(group[:, ti, pi]), cell,
                                     todo[:, ti, pi], first=False)
            if record is not None:
                stopped[key] = record
                self.n_unneeded += int((~self._finished(group[:, ti, pi])).sum())
        record_stops(self.store, self.rule, stopped)
        return todo

    def _walk(self, ti, pi, finished, values, todo, first: bool):
        """Look at the cell ``(ti, pi)``'s rounds from its first (``first``) or its current one,
        on its ``finished`` ``(method, seed)`` mask and ``values``; fills its ``todo`` for the
        round it stops at, or returns its stop record: ``(key, record or None)``."""
        key = f"{ti}/{pi}"
        start = 0 if first else self.n[ti, pi]
        for n in self.rule.rounds(self.budget):
            if n < start:
                continue
            missing = ~finished[:, :n]
            if missing.any():
                todo[:, :n] = missing
                self.n[ti, pi], self.waiting[ti, pi] = n, int(missing.sum())
                return key, None
            seen = {m: v[:, :n] for m, v in values.items()}
            decision = decide(self.rule, self.methods, seen, self.metrics)
            if decision.holds and n < self.budget and self.rule.audited(self.spec.tau[ti],
                                                                         self.spec.psi[pi]):
                self.audit_stops.setdefault(key, (n, decision))  # on to the budget
                continue
            if decision.holds or n >= self.budget:
                self.n[ti, pi] = self.waiting[ti, pi] = 0
                self.n_stopped += 1
                mark_unneeded(self.store, ti, pi, n)
                why = RULE_HELD if decision.holds else BUDGET
                log.debug("cell tau=%g psi=%g stopped at %d seeds: %s", self.spec.tau[ti],
                          self.spec.psi[pi], n, why)
                record = {"seeds": int(n), "why": why,
                          "parts": [p.to_list() for p in decision.parts]}
                notes = outlier_notes(self.rule, self.methods, seen, self.metrics)
                if notes:
                    record["notes"] = notes
                if key in self.audit_stops:
                    at, before = self.audit_stops.pop(key)
                    record["audit"] = {"seeds": int(at),
                                       "parts": [p.to_list() for p in before.parts]}
                return key, record
        raise AssertionError("the rounds end at the budget")  # pragma: no cover


class RoundTasks:
    """A run's tasks (:class:`~mccard_dist.runner.work.BlockTasks` or ``FitTasks``) under a stop
    rule: as their finished cells are written, the rounds these end open their next ones. Its
    ``total`` is the run's budget (:attr:`Rounds.n_budget`), and :meth:`flush` counts the cells a
    stop made not needed with those written, so that the progress bar describes the run, not
    its round."""

    def __init__(self, tasks, rounds: Rounds):
        self.tasks, self.rounds = tasks, rounds
        self.queue = tasks.queue

    @property
    def total(self) -> int:
        return self.rounds.n_budget

    def submit(self, item):
        return self.tasks.submit(item)

    def limit(self, item) -> float:
        return self.tasks.limit(item)

    def timed_out(self, item, seconds: float) -> None:
        self.tasks.timed_out(item, seconds)

    def handle(self, item, result, error, then) -> None:
        self.tasks.handle(item, result, error, then)

    def flush(self, limit: int | None = None) -> int:
        written = self.tasks.finished[:limit]
        n_cells = self.tasks.flush(limit)
        unneeded = self.rounds.n_unneeded
        todo = self.rounds.written(written)
        if todo is not None and todo.any():
            self.tasks.extend(todo)
        return n_cells + self.rounds.n_unneeded - unneeded

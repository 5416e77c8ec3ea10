"""A stop rule: when a (tau, psi) cell of a grid has seen enough seeds.

``experiment.seeds`` is then the budget; a cell runs ``min_seeds`` seeds, then ``round`` more at a
time (every method the same seeds, so comparisons stay paired), until its rule holds or the
budget is spent. The rule holds when every part of it does:

- ``precision``: for each metric named, every method's mean is known to the half-width given;
- ``claims``: for each metric named with its margin, every pair of methods (or every method
  against ``claims.against``) is decided: *equivalent* when the interval of the paired mean
  difference lies within ± the margin, else *better* (or *worse*) when it lies above (below) 0.

The intervals are confidence sequences (:class:`~mccard_dist.intervals.Intervals`), so the rule
may look after every round and the intervals at the stop keep their level. Seeds where a value
is missing (a failed cell, an undefined correlation) are left out of that interval.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from .intervals import SEQUENCE, Intervals

__all__ = ["BETTER", "EQUIVALENT", "KNOWN", "OPEN", "WORSE", "Decision", "Part", "StopRule",
           "decide"]

KNOWN, OPEN = "known", "open"
BETTER, WORSE, EQUIVALENT = "better", "worse", "equivalent"
#: why a cell stopped
RULE_HELD, BUDGET = "rule held", "budget spent"


@dataclass(frozen=True)
class StopRule:
    """A checked ``experiment.stop`` (:meth:`mccard_dist.config.specs.ExperimentSection`):
    ``precision`` and ``margin`` as ``((metric, value), ...)`` in the config's order."""

    min_seeds: int = 10
    round: int = 10
    precision: tuple[tuple[str, float], ...] = ()
    margin: tuple[tuple[str, float], ...] = ()
    against: str | None = None
    level: float = 0.95
    tuned_for: int = 100

    @property
    def intervals(self) -> Intervals:
        return Intervals(SEQUENCE, self.level, self.tuned_for)

    @property
    def metrics(self) -> tuple[str, ...]:
        """The metrics the rule reads, each once."""
        return tuple(dict.fromkeys([m for m, _ in self.precision] + [m for m, _ in self.margin]))

    def rounds(self, budget: int):
        """The numbers of seeds at which the rule is looked at: ``min_seeds``, then every
        ``round`` more, the budget last."""
        n = min(self.min_seeds, budget)
        while True:
            yield n
            if n >= budget:
                return
            n = min(n + self.round, budget)

    def pairs(self, methods) -> list[tuple[str, str]]:
        """The method pairs the claims compare: ``against`` with every other, else every pair in
        the experiment's order."""
        if self.against is not None:
            return [(self.against, m) for m in methods if m != self.against]
        return list(itertools.combinations(methods, 2))

    def to_dict(self) -> dict:
        out = {"min_seeds": self.min_seeds, "round": self.round, "level": self.level,
               "tuned_for": self.tuned_for}
        if self.precision:
            out["precision"] = dict(self.precision)
        if self.margin:
            out["claims"] = {"margin": dict(self.margin),
                             **({"against": self.against} if self.against else {})}
        return out


@dataclass(frozen=True)
class Part:
    """One interval a rule reads: a method's mean (``versus`` None) or the paired mean difference
    ``method - versus`` (signed so that positive is better where the metric has a better side),
    its interval and outcome (:data:`KNOWN` / :data:`OPEN` for a mean; :data:`BETTER`,
    :data:`WORSE`, :data:`EQUIVALENT` or :data:`OPEN` for a difference)."""

    metric: str
    method: str
    versus: str | None
    mean: float
    low: float
    high: float
    n: int
    outcome: str

    def to_list(self) -> list:
        return [self.metric, self.method, self.versus, _num(self.mean), _num(self.low),
                _num(self.high), self.n, self.outcome]

    @classmethod
    def from_list(cls, row) -> Part:
        metric, method, versus, mean, low, high, n, outcome = row
        return cls(metric, method, versus, *(math.nan if v is None else v
                                             for v in (mean, low, high)), n, outcome)


def _num(value: float):
    return None if not math.isfinite(value) else float(value)


@dataclass(frozen=True)
class Decision:
    """The rule looked at after ``n_seeds`` seeds of a cell: ``holds`` when every part is known
    or decided."""

    n_seeds: int
    parts: tuple[Part, ...]

    @property
    def holds(self) -> bool:
        return all(p.outcome != OPEN for p in self.parts)


def decide(rule: StopRule, methods, values: dict, metrics: dict) -> Decision:
    """The rule on one cell: ``values[metric]`` is a ``(method, seed)`` array of the seeds run
    (``methods`` in its row order, seeds in order), ``metrics[metric]`` its
    :class:`~mccard_dist.metrics.Metric` (its better side, +1 or -1, signs the differences; for
    a metric without one, such as the features kept, *better* says higher; its bounds, where it
    has them, give the intervals, :meth:`Intervals.of`)."""
    methods = list(methods)
    intervals = rule.intervals
    parts = []
    n_seeds = 0
    for metric, precision in rule.precision:
        for i, method in enumerate(methods):
            mean, low, high, n = intervals.of(values[metric][i], metrics[metric].bounds)
            n_seeds = max(n_seeds, values[metric].shape[1])
            known = math.isfinite(low) and (high - low) / 2 <= precision
            parts.append(Part(metric, method, None, mean, low, high, n, KNOWN if known else OPEN))
    for metric, margin in rule.margin:
        sign, bounds = metrics[metric].better or 1, metrics[metric].bounds
        spread = None if bounds is None else (bounds[0] - bounds[1], bounds[1] - bounds[0])
        for a, b in rule.pairs(methods):
            diff = sign * (values[metric][methods.index(a)] - values[metric][methods.index(b)])
            n_seeds = max(n_seeds, diff.size)
            mean, low, high, n = intervals.of(diff, spread)
            if not math.isfinite(low):
                outcome = OPEN
            elif -margin <= low and high <= margin:
                outcome = EQUIVALENT
            elif low > 0:
                outcome = BETTER
            elif high < 0:
                outcome = WORSE
            else:
                outcome = OPEN
            parts.append(Part(metric, a, b, mean, low, high, n, outcome))
    return Decision(n_seeds, tuple(parts))


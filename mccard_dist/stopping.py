"""A stop rule: when a (tau, psi) cell of a grid has seen enough seeds.

``experiment.seeds`` is then the budget; a cell runs ``min_seeds`` seeds, then ``round`` more at a
time (every method the same seeds, so comparisons stay paired), until its rule holds or the
budget is spent. The rule holds when every part of it does:

- ``precision``: for each metric named, every method's mean is known to the half-width given;
- ``claims``: for each metric named with its margin, every pair of methods (or every method
  against ``claims.against``) is settled. A claim records two facts of the interval of its paired
  mean difference: its *sign* (better, worse) where the interval excludes 0, and whether it lies
  *within* ± the margin. It is settled when its sign is known, or when it lies within the margin
  and the fixed count the rule replaces (``fixed_seeds``) would not settle the sign either: the
  t statistic of the difference at that count, ``|mean| / s * sqrt(fixed_seeds)``, is below the
  t-interval's critical value. Within the margin with a sign worth settling, the cell goes on.

The intervals are confidence sequences (:class:`~mccard_dist.intervals.Intervals`, the anytime-
valid t sequence unless ``guarantee`` is ``bounded``), so the rule may look after every round and
the intervals at the stop keep their level. Seeds where a value is missing (a failed cell, an
undefined correlation) are left out of that interval.
"""

from __future__ import annotations

import itertools
import math
import zlib
from dataclasses import dataclass

import numpy as np

from .intervals import BOUNDED, NORMAL, SEQUENCE, Intervals, bounded_sequence

__all__ = ["BETTER", "EQUIVALENT", "KNOWN", "OPEN", "WORSE", "Decision", "Part", "StopRule",
           "bounded_costs", "claim_outcome", "decide", "outlier_notes"]

#: a paired difference this many scaled MADs from the median of a claim's others is noted
OUTLIER_MADS = 6.0
#: a claim's paired differences with a sample skewness beyond this are noted
STRONG_SKEW = 2.0

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
    guarantee: str = NORMAL
    #: the fixed count of seeds the rule replaces (None: the budget), whose t-test a claim
    #: within its margin is asked to leave unsettled before it counts as settled
    fixed_seeds: int | None = None
    #: the share of cells that, once their rule holds, run on to the budget all the same, so
    #: that the report can say how often the decisions at the stops changed
    audit: float = 0.0

    def audited(self, tau: float, psi: float) -> bool:
        """Whether the cell ``(tau, psi)`` is among the audited share: a fixed draw from its
        coordinates, so a resumed run audits the same cells."""
        draw = zlib.crc32(f"{float(tau)!r}/{float(psi)!r}".encode()) / 2**32
        return draw < self.audit

    @property
    def intervals(self) -> Intervals:
        return Intervals(SEQUENCE, self.level, self.guarantee, self.min_seeds, self.round)

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
               "guarantee": self.guarantee}
        if self.fixed_seeds is not None:
            out["fixed_seeds"] = self.fixed_seeds
        if self.audit:
            out["audit"] = self.audit
        if self.precision:
            out["precision"] = dict(self.precision)
        if self.margin:
            out["claims"] = {"margin": dict(self.margin),
                             **({"against": self.against} if self.against else {})}
        return out

    @classmethod
    def from_dict(cls, rule: dict) -> StopRule:
        """The rule a store recorded (:meth:`to_dict`). A record without ``guarantee`` was made
        by the rule whose intervals were empirical-Bernstein for bounded metrics: it reads as
        ``bounded``."""
        claims = rule.get("claims") or {}
        return cls(min_seeds=rule.get("min_seeds", 10), round=rule.get("round", 10),
                   precision=tuple((rule.get("precision") or {}).items()),
                   margin=tuple((claims.get("margin") or {}).items()),
                   against=claims.get("against"), level=rule.get("level", 0.95),
                   guarantee=rule.get("guarantee", BOUNDED),
                   fixed_seeds=rule.get("fixed_seeds"), audit=rule.get("audit", 0.0))


def bounded_costs(rule: StopRule, metrics: dict) -> list[str]:
    """Under the ``bounded`` guarantee, what each of the rule's parts costs at least: the seeds
    after which an interval of a metric with bounds can first be within its margin (or
    precision) even when every seed gives the same value, one line each."""
    lines = []
    for part, pairs, difference in (("within", rule.margin, True),
                                    ("known to ±", rule.precision, False)):
        for metric, width in pairs:
            bounds = metrics[metric].bounds
            if bounds is None:
                continue
            half = (bounds[1] - bounds[0]) * (1.0 if difference else 0.5)
            lower, upper = bounded_sequence(np.zeros(100_000), -half, half, rule.level)
            reached = np.flatnonzero((upper - lower) / 2 <= width)
            need = f"{reached[0] + 1:,}" if reached.size else "more than 100,000"
            lines.append(f"{metric} {part} {width:g} needs at least {need} seeds with bounded "
                         "intervals")
    return lines


@dataclass(frozen=True)
class Part:
    """One interval a rule reads: a method's mean (``versus`` None) or the paired mean difference
    ``method - versus`` (signed so that positive is better where the metric has a better side),
    its interval and outcome: :data:`KNOWN` / :data:`OPEN` for a mean; for a difference
    :data:`BETTER` or :data:`WORSE` (its sign known), :data:`EQUIVALENT` (within the margin,
    with no sign the fixed count would settle) or :data:`OPEN`; and ``within``, whether the
    interval lies within ± the margin (None for a mean)."""

    metric: str
    method: str
    versus: str | None
    mean: float
    low: float
    high: float
    n: int
    outcome: str
    within: bool | None = None

    def to_list(self) -> list:
        return [self.metric, self.method, self.versus, _num(self.mean), _num(self.low),
                _num(self.high), self.n, self.outcome, self.within]

    @classmethod
    def from_list(cls, row) -> Part:
        """A part as :meth:`to_list` stored it; a record without ``within`` (a rule whose
        outcome was *equivalent* exactly when the interval lay within the margin) gets it from
        its outcome."""
        metric, method, versus, mean, low, high, n, outcome, *rest = row
        within = rest[0] if rest else (None if versus is None else outcome == EQUIVALENT)
        return cls(metric, method, versus, *(math.nan if v is None else v
                                             for v in (mean, low, high)), n, outcome, within)

    @property
    def label(self) -> str:
        """The outcome as the report says it: ``>`` or ``<`` for a known sign (``(by less than
        the margin)`` where the interval also lies within it), ``=`` within the margin with no
        sign worth settling, ``?`` open; ``known``/``open`` for a mean."""
        if self.versus is None:
            return self.outcome
        sign = {BETTER: ">", WORSE: "<", EQUIVALENT: "=", OPEN: "?"}[self.outcome]
        return sign + (" (by less than the margin)" if self.within and self.outcome in
                       (BETTER, WORSE) else "")


def _num(value: float):
    return None if not math.isfinite(value) else float(value)


@dataclass(frozen=True)
class Decision:
    """The rule looked at after ``n_seeds`` seeds of a cell: ``holds`` when every part is known
    or settled."""

    n_seeds: int
    parts: tuple[Part, ...]

    @property
    def holds(self) -> bool:
        return all(p.outcome != OPEN for p in self.parts)


def claim_outcome(diff, low: float, high: float, margin: float, fixed_seeds: int | None):
    """``(outcome, within)`` of a claim whose paired differences ``diff`` (finite values) have
    the interval ``[low, high]``: its sign where the interval excludes 0; else
    :data:`EQUIVALENT` where it lies within ± ``margin`` and a fixed count of ``fixed_seeds``
    seeds with the same mean and spread would not settle the sign either (its t statistic below
    the two-sided t-interval's critical value at the rule's level); else :data:`OPEN`."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return OPEN, False
    within = -margin <= low and high <= margin
    if low > 0:
        return BETTER, within
    if high < 0:
        return WORSE, within
    if not within:
        return OPEN, within
    from scipy import stats

    n_fixed = fixed_seeds or diff.size
    sd = float(np.std(diff, ddof=1))
    mean = float(np.mean(diff))
    settles = sd == 0.0 and mean != 0.0 or (
        sd > 0.0 and abs(mean) / sd * math.sqrt(n_fixed) >= stats.t.ppf(0.975, n_fixed - 1))
    return (OPEN if settles else EQUIVALENT), within


def decide(rule: StopRule, methods, values: dict, metrics: dict) -> Decision:
    """The rule on one cell: ``values[metric]`` is a ``(method, seed)`` array of the seeds run
    (``methods`` in its row order, seeds in order), ``metrics[metric]`` its
    :class:`~mccard_dist.metrics.Metric` (its better side, +1 or -1, signs the differences; for
    a metric without one, such as the features kept, *better* says higher; its bounds, where it
    has them, give a :data:`~mccard_dist.intervals.BOUNDED` rule's intervals)."""
    methods = list(methods)
    intervals = rule.intervals
    parts = []
    n_seeds = 0
    for metric, precision in rule.precision:
        for i, method in enumerate(methods):
            mean, low, high, n = intervals.of(values[metric][i], metrics[metric].bounds)
            n_seeds = max(n_seeds, values[metric].shape[1])
            known = math.isfinite(low) and math.isfinite(high) and (high - low) / 2 <= precision
            parts.append(Part(metric, method, None, mean, low, high, n, KNOWN if known else OPEN))
    for metric, margin in rule.margin:
        sign, bounds = metrics[metric].better or 1, metrics[metric].bounds
        spread = None if bounds is None else (bounds[0] - bounds[1], bounds[1] - bounds[0])
        for a, b in rule.pairs(methods):
            diff = sign * (values[metric][methods.index(a)] - values[metric][methods.index(b)])
            n_seeds = max(n_seeds, diff.size)
            mean, low, high, n = intervals.of(diff, spread)
            outcome, within = claim_outcome(diff[np.isfinite(diff)], low, high, margin,
                                            rule.fixed_seeds)
            parts.append(Part(metric, a, b, mean, low, high, n, outcome, within))
    return Decision(n_seeds, tuple(parts))


def outlier_notes(rule: StopRule, methods, values: dict, metrics: dict) -> list[str]:
    """What the t sequence may not see in a cell's claims: a paired difference more than
    :data:`OUTLIER_MADS` scaled median absolute deviations from the median of the others, or
    differences with a sample skewness beyond :data:`STRONG_SKEW` (a rare failure, or a long
    tail, that a few seeds show once or not at all); one line per claim."""
    notes = []
    methods = list(methods)
    for metric, _ in rule.margin:
        sign = metrics[metric].better or 1
        for a, b in rule.pairs(methods):
            diff = sign * (values[metric][methods.index(a)] - values[metric][methods.index(b)])
            diff = diff[np.isfinite(diff)]
            if diff.size < 3:
                continue
            median = np.median(diff)
            mad = 1.4826 * np.median(np.abs(diff - median))
            far = np.abs(diff - median) > OUTLIER_MADS * mad if mad > 0 else diff != median
            centred = diff - diff.mean()
            sd = np.sqrt(np.mean(centred ** 2))
            skew = float(np.mean(centred ** 3) / sd ** 3) if sd > 0 else 0.0
            said = []
            if 0 < far.sum() < diff.size / 2:
                said.append(f"{int(far.sum())} of {diff.size} differences beyond "
                            f"{OUTLIER_MADS:g} MADs of the rest")
            if abs(skew) > STRONG_SKEW:
                said.append(f"skewness {skew:.1f}")
            if said:
                notes.append(f"{metric} {a}-{b}: " + ", ".join(said))
    return notes

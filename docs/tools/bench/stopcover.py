"""``bench stopcover``: the coverage of a stop rule's intervals at the seeds where it stops, by
simulation on streams of paired differences (or of one method's values) with a known mean: the
rule's claims (settled when the interval excludes 0, or lies within the margin with no sign the
fixed count would settle) or precision (the half-width at most the margin), looked at after
``min_seeds`` and every ``round`` more up to the budget, as ``experiment.stop`` looks. Beside it,
the fixed 100-seed t-interval's coverage on the same streams and the t-interval looked at as the
rule looks. The tests (tests/test_intervals.py) assert on the same simulation."""

from __future__ import annotations

import math
import sys

import numpy as np

MIN_SEEDS, ROUND, FIXED = 10, 10, 100

#: streams of about unit spread, ``name: (draw(generator, shape), mean)``, whose coverage at the
#: stop is 95% within three binomial standard errors of 1,000 streams
STREAMS = {
    "normal": (lambda g, s: g.normal(size=s), 0.0),
    "uniform": (lambda g, s: g.uniform(-math.sqrt(3), math.sqrt(3), s), 0.0),
    "t, 5 df": (lambda g, s: g.standard_t(5, s) / math.sqrt(5 / 3), 0.0),
    "bimodal": (lambda g, s: np.where(g.random(s) < 0.5, -1.0, 1.0) + 0.3 * g.normal(size=s),
                0.0),
}
#: streams with a tail that a few seeds often miss, ``name: (draw, mean, least)``: ``least`` is
#: the coverage at the stop the stop-rule page documents for them (the t sequence is exact for
#: normal values only, and no interval from few seeds sees a tail they did not draw)
SKEWED = {
    "skewed beta(0.5, 3)": (lambda g, s: g.beta(0.5, 3, s), 0.5 / 3.5, 0.9),
    "log-normal, s = 0.75": (lambda g, s: g.lognormal(0, 0.75, s), math.exp(0.75 ** 2 / 2), 0.88),
    "log-normal, s = 1.5": (lambda g, s: g.lognormal(0, 1.5, s), math.exp(1.5 ** 2 / 2), 0.6),
    "F1 difference, nothing selected on 5% of seeds": (
        lambda g, s: np.where(g.random(s) < 0.05, -0.9, 0.02) + 0.07 * g.normal(size=s),
        0.95 * 0.02 - 0.05 * 0.9, 0.6),
    "rare failure: -1 on 3% of seeds": (
        lambda g, s: np.where(g.random(s) < 0.03, -1.0, 0.0) + 0.05 * g.normal(size=s),
        -0.03, 0.5),
}


def looks(budget: int) -> np.ndarray:
    return np.arange(MIN_SEEDS, budget + 1, ROUND)


def _moments(x, at):
    total = np.cumsum(x, axis=1)[:, at - 1]
    mean = total / at
    sd = np.sqrt(np.maximum(np.cumsum(x * x, axis=1)[:, at - 1] - total * mean, 0) / (at - 1))
    return mean, sd


def rule_at_stop(x, mu, budget, margin, claims, kind="sequence"):
    """Per stream (a row of ``x``), at the first look where the rule holds (the budget else):
    whether its interval covers ``mu``, and the seeds. ``kind`` ``"t"``: the fixed-n
    t-interval looked at as the rule looks."""
    from scipy import stats

    from mccard_dist.intervals import T, Intervals, t_sequence

    x = x[:, :budget]
    at = looks(budget)
    mean, sd = _moments(x, at)
    if kind == "sequence":
        lower, upper = t_sequence(x, first=MIN_SEEDS, every=ROUND)
        low, high = lower[:, at - 1], upper[:, at - 1]
    else:
        half = Intervals(T).half_width(sd, at)
        low, high = mean - half, mean + half
    if claims:
        with np.errstate(divide="ignore", invalid="ignore"):
            settles = np.abs(mean) / sd * math.sqrt(FIXED) >= stats.t.ppf(0.975, FIXED - 1)
        stop = (low > 0) | (high < 0) | ((low >= -margin) & (high <= margin) & ~settles)
    else:
        stop = (high - low) / 2 <= margin
    stop[:, -1] = True
    k = stop.argmax(axis=1)
    rows = np.arange(x.shape[0])
    return (low[rows, k] <= mu) & (high[rows, k] >= mu), at[k]


def fixed_coverage(x, mu) -> float:
    """The fixed 100-seed t-interval's coverage on the same streams."""
    from mccard_dist.intervals import T, Intervals

    _, low, high, _ = Intervals(T).along(x[:, :FIXED])
    return float(((low <= mu) & (high >= mu)).mean())


def standardised(name, streams, seed, shape):
    """``(x, mu)`` of the named stream scaled to unit spread."""
    draw, mu = streams[name][:2]
    x = draw(np.random.default_rng(seed), shape)
    return x / x.std(), mu / x.std()


def bench_stopcover(streams=1000, seed=0, out=sys.stdout):
    """Prints, per stream, rule (claims, precision), budget (100, 1,000) and, for claims, mean
    (no sign: 0; half a spread; a spread): the coverage at the stop, the mean seeds, and the
    fixed 100-seed t-interval's coverage; then the t-interval looked at after every round."""
    se3 = 3 * math.sqrt(0.95 * 0.05 / streams)
    print(f"{streams} streams each; margin (claims) and half-width (precision) 0.2 spreads; "
          f"looks at {MIN_SEEDS}, then every {ROUND}; 95% within 3 binomial SE: >= "
          f"{0.95 - se3:.3f}", file=out)
    print(f"{'stream':48s} {'rule':9s} {'budget':>6s} {'mean':>5s} {'covered':>8s} "
          f"{'seeds':>7s} {'fixed 100':>9s}", file=out)
    everything = {**STREAMS, **SKEWED}
    for index, name in enumerate(everything):
        x, mu = standardised(name, everything, seed + index, (streams, 1000))
        for claims in (True, False):
            for budget in (100, 1000):
                for shift in (0.0, 0.5, 1.0) if claims else (0.0,):  # precision: shift-free
                    centred = x - mu + shift
                    covered, seeds = rule_at_stop(centred, shift, budget, 0.2, claims)
                    print(f"{name:48s} {'claims' if claims else 'precision':9s} {budget:6d} "
                          f"{shift:5.1f} {covered.mean():8.3f} {seeds.mean():7.1f} "
                          f"{fixed_coverage(centred, shift):9.3f}", file=out, flush=True)
    x = np.random.default_rng(seed).normal(size=(streams, 1000))
    covered, seeds = rule_at_stop(x, 0.0, 1000, 0.2, True, kind="t")
    print(f"normal, the t-interval looked at after every round (claims, budget 1000, mean 0): "
          f"covered {covered.mean():.3f} at {seeds.mean():.1f} seeds", file=out)

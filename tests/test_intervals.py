"""The intervals a stop rule decides on, against their papers and by simulation: at the time a
rule that looks after every round stops, the confidence sequence still covers the true mean in
95% of streams, where the fixed-n t-interval under the same rule visibly does not."""

import math

import numpy as np
import pytest

from mccard_dist.intervals import SEQUENCE, T, Intervals, bounded_sequence, mixture_rho2
from mccard_dist.metrics import METRICS
from mccard_dist.stopping import StopRule, decide

N_STREAMS, BUDGET, MIN_SEEDS, ROUND = 1000, 1000, 10, 10
LOOKS = np.arange(MIN_SEEDS, BUDGET + 1, ROUND)
#: 95% coverage of 1,000 streams, less three binomial standard deviations
TOLERANCE = 0.95 - 3 * math.sqrt(0.95 * 0.05 / N_STREAMS)


def test_the_sequence_is_robbins_normal_mixture_boundary():
    # Howard et al. (Ann. Statist. 2021, eq. (14)) write the two-sided normal mixture for a sum
    # S_t of unit-variance terms as |S_t| <= sqrt((t + r) (log(1 + t / r) + 2 log(1 / alpha))),
    # r = 1 / rho^2; the mean's half-width is that over t
    rho2 = mixture_rho2(100, 0.95)
    r = 1 / rho2
    for t in (2, 10, 100, 1000):
        expected = math.sqrt((t + r) * (math.log(1 + t / r) + 2 * math.log(1 / 0.05))) / t
        assert Intervals(SEQUENCE).half_width(1.0, t) == pytest.approx(expected, rel=1e-12)
    # rho is the one that makes it tightest at tuned_for (up to the paper's approximation)
    grid = np.geomspace(rho2 / 10, rho2 * 10, 2001)
    best = grid[np.argmin([math.sqrt((100 + 1 / g) * (math.log(1 + 100 * g) + 2 * math.log(20)))
                           for g in grid])]
    assert best == pytest.approx(rho2, rel=0.1)


def test_the_t_interval_is_scipys():
    from scipy import stats

    x = np.random.default_rng(0).normal(size=25)
    low, high = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    mean, lo, hi, n = Intervals(T).of(x)
    assert (lo, hi, n) == (pytest.approx(low), pytest.approx(high), 25)


def _bounded_by_loop(x, low, high, level=0.95):
    """Waudby-Smith & Ramdas (2024) Theorem 2, one value at a time, as the paper states it."""
    alpha, ys = 1 - level, [(v - low) / (high - low) for v in x]
    s_lam = s_lam_y = s_pen = 0.0
    mu, sig2, total, total_sq = 0.5, 0.25, 0.0, 0.0
    lower, upper, lo, hi = [], [], 0.0, 1.0
    for t, y in enumerate(ys, start=1):
        lam = min(math.sqrt(2 * math.log(2 / alpha) / (sig2 * t * math.log(1 + t))), 0.5)
        s_pen += 4 * (y - mu) ** 2 * (-math.log(1 - lam) - lam) / 4
        s_lam += lam
        s_lam_y += lam * y
        total += y
        mu = (0.5 + total) / (t + 1)
        total_sq += (y - mu) ** 2
        sig2 = (0.25 + total_sq) / (t + 1)
        centre, half = s_lam_y / s_lam, (math.log(2 / alpha) + s_pen) / s_lam
        lo, hi = max(lo, centre - half), min(hi, centre + half)
        lower.append(low + (high - low) * lo)
        upper.append(low + (high - low) * hi)
    return np.array(lower), np.array(upper)


def test_the_bounded_sequence_is_the_papers_theorem_2():
    x = np.random.default_rng(3).beta(0.5, 2.0, size=300) * 2 - 1
    lower, upper = bounded_sequence(x, -1.0, 1.0)
    ref_lower, ref_upper = _bounded_by_loop(x, -1.0, 1.0)
    np.testing.assert_allclose(lower, ref_lower, rtol=0, atol=1e-12)
    np.testing.assert_allclose(upper, ref_upper, rtol=0, atol=1e-12)
    assert lower[-1] < x.mean() < upper[-1]


def _at_stop(low, high, margin, claims: bool):
    """``(covered, seeds)`` per stream at the first look where the rule holds (the budget
    else): a claim decided (the interval excludes 0, the true mean, or lies within +-margin),
    or the mean known to ``margin``."""
    if claims:
        stop = (low > 0) | (high < 0) | ((low >= -margin) & (high <= margin))
    else:
        stop = (high - low) / 2 <= margin
    stop[:, -1] = True
    k = stop.argmax(axis=1)
    rows = np.arange(low.shape[0])
    return (low[rows, k] <= 0) & (high[rows, k] >= 0), LOOKS[k]


def _intervals(x, kind, bounds):
    """Each stream's interval at every look."""
    if kind == SEQUENCE and bounds is not None:
        lower, upper = bounded_sequence(x, *bounds)
        return lower[:, LOOKS - 1], upper[:, LOOKS - 1]
    total, squares = np.cumsum(x, axis=1)[:, LOOKS - 1], np.cumsum(x * x, axis=1)[:, LOOKS - 1]
    mean = total / LOOKS
    sd = np.sqrt(np.maximum(squares - LOOKS * mean ** 2, 0) / (LOOKS - 1))
    half = Intervals(kind).half_width(sd, LOOKS)
    return mean - half, mean + half


#: streams of known mean 0 (centred): bounded ones as a bounded metric's values or paired
#: differences, unbounded ones as RMSE's, heavy-tailed or skewed
STREAMS = {
    "skewed in [0, 1]": (lambda g, s: g.beta(0.3, 3.0, s) - 0.3 / 3.3, (-0.3 / 3.3, 1 - 0.3 / 3.3)),
    "rare ones in [0, 1]": (lambda g, s: (g.random(s) < 0.05) - 0.05, (-0.05, 0.95)),
    "paired difference in [-1, 1]": (lambda g, s: g.beta(0.3, 3.0, s) - g.beta(0.3, 3.0, s),
                                     (-1.0, 1.0)),
    "heavy-tailed (t, 3 df)": (lambda g, s: g.standard_t(3, s), None),
    "skewed (gamma, shape 4)": (lambda g, s: g.gamma(4.0, 1.0, s) - 4.0, None),
}


@pytest.mark.parametrize("claims", [True, False], ids=["claims rule", "precision rule"])
@pytest.mark.parametrize("name", list(STREAMS))
def test_the_sequence_covers_at_the_stop_and_the_t_interval_does_not(name, claims):
    draw, bounds = STREAMS[name]
    x = draw(np.random.default_rng(sorted(STREAMS).index(name)), (N_STREAMS, BUDGET))
    margin = 0.2 * x.std()
    covered, seeds = _at_stop(*_intervals(x, SEQUENCE, bounds), margin, claims)
    assert covered.mean() >= TOLERANCE, (covered.mean(), seeds.mean())
    if claims:  # looking after every round: the t-interval excludes the mean visibly more often
        t_covered, t_seeds = _at_stop(*_intervals(x, T, None), margin, claims)
        assert t_covered.mean() < 0.85, t_covered.mean()
        assert t_seeds.mean() < seeds.mean()  # it stops sooner, wrongly


def test_the_rule_decides_as_its_intervals_say():
    """:func:`decide` on a few streams stops where the vectorised rule above does."""
    rng = np.random.default_rng(11)
    f1 = next(m for m in METRICS if m.name == "f1")
    rule = StopRule(min_seeds=MIN_SEEDS, round=ROUND, margin=(("f1", 0.05),))
    for _ in range(5):
        a = rng.beta(4.0, 2.0, BUDGET)
        b = np.clip(a - 0.03 + 0.1 * rng.normal(size=BUDGET), 0, 1)
        stop = next(n for n in rule.rounds(BUDGET)
                    if decide(rule, ["a", "b"], {"f1": np.stack([a[:n], b[:n]])},
                              {"f1": f1}).holds or n == BUDGET)
        low, high = _intervals((a - b)[None], SEQUENCE, (-1.0, 1.0))
        _, expected = _at_stop(low, high, 0.05, claims=True)
        assert stop == expected[0]

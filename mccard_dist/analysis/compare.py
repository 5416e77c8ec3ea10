"""Paired comparisons: of two stores on their shared cells, and of methods of one store."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from .markup import Code, Paragraph, Strong, Table, markdown
from .. import metrics as _metrics
from .stops import bounds_of, intervals_of, stop_record
from .values import (_auto_width_methods, _config, _grid, _num, cell_values, metric_label,
                     shown_metrics, store_metrics, stored_kind)


@dataclass(frozen=True)
class Comparison:
    """One (method, metric) row of :func:`compare_stores`."""

    method: str
    metric: str
    n_cells: int
    base_mean: float
    other_mean: float
    diff: float
    low: float
    high: float
    seed_sd: float
    n_seeds: int

    @property
    def within_seed_noise(self) -> bool:
        """``|diff| <= seed_sd / sqrt(n_seeds)``: the mean change is smaller than the standard
        error that seed-to-seed noise puts on a (tau, psi) mean of the baseline."""
        if not (np.isfinite(self.diff) and np.isfinite(self.seed_sd)) or self.n_seeds < 2:
            return False
        return abs(self.diff) <= self.seed_sd / math.sqrt(self.n_seeds)


def compare_stores(base, other, metrics=None, level: float = 0.95
                   ) -> list[Comparison]:
    """Paired comparison of two stores on the cells both finished (same method, tau, psi, seed):
    per method and metric, both means, the mean paired difference ``other - base`` with its
    interval (confidence sequences where a stop rule chose either store's seeds,
    :func:`~.stops.intervals_of`), and the baseline's pooled seed-to-seed standard deviation
    within each (tau, psi) (the noise a rerun with other seeds would show)."""
    import xarray as xr

    intervals = intervals_of(base if stop_record(base) else other, level)
    if metrics is None:  # the shown metrics that have a better side
        metrics = [n for n in shown_metrics(base) if better(n, base)]
    rows = []
    methods = [m for m in base["model"].values if m in set(other["model"].values)]
    for metric in metrics:
        if metric not in base or metric not in other:
            continue
        a, b = xr.align(cell_values(base, metric), cell_values(other, metric), join="inner")
        for method in methods:
            va, vb = a.sel({"model": method}), b.sel({"model": method})
            both = np.isfinite(va.values) & np.isfinite(vb.values)
            if not both.any():
                continue
            mean, low, high, n = intervals.of((vb.values - va.values)[both],
                                              bounds_of(metric, base, difference=True))
            shared = va.where(both)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                var = shared.var("seed", ddof=1, skipna=True).values
                seeds = np.isfinite(shared.values).sum(axis=-1)
            var = var[np.isfinite(var)]
            seed_sd = float(np.sqrt(var.mean())) if var.size else math.nan
            rows.append(Comparison(str(method), metric, n, float(va.values[both].mean()),
                                   float(vb.values[both].mean()), mean, low, high, seed_sd,
                                   int(np.median(seeds[seeds > 0])) if (seeds > 0).any() else 0))
    return rows


@dataclass(frozen=True)
class MethodComparison:
    """One metric of one method against another in the same store (:func:`compare_methods`):
    means over the cells both finished, the mean paired difference ``other - base`` and two
    t-intervals of it, over seeds (each seed's difference averaged over its cells) and over
    cells."""

    base: str
    other: str
    metric: str
    n_cells: int
    n_seeds: int
    base_mean: float
    other_mean: float
    diff: float
    seed_low: float
    seed_high: float
    cell_low: float
    cell_high: float


def compare_methods(ds, pairs, metrics=None, level: float = 0.95,
                    **where) -> list[MethodComparison]:
    """Paired comparison of methods of one store on the same cells (same data and folds).
    ``pairs``: ``(base, other)`` method names, e.g. :func:`width_pairs`; ``where`` restricts the
    cells, e.g. ``tau=10.0``. A seed counts over seeds when both finished one of its cells;
    ``metrics``: names (default: the metrics the report shows)."""
    metrics = shown_metrics(ds) if metrics is None else metrics
    intervals = intervals_of(ds, level)
    rows = []
    for base, other in pairs:
        for metric in metrics:
            if metric not in ds:
                continue
            v = cell_values(ds, metric).sel({"model": [base, other]})
            if where:
                v = v.sel(where)
            v = v.transpose("model", "seed", ...).values.reshape(2, v.sizes["seed"], -1)
            both = np.isfinite(v[0]) & np.isfinite(v[1])
            if not both.any():
                continue
            d = np.where(both, v[1] - v[0], np.nan)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                per_seed = np.nanmean(d, axis=1)
            spread = bounds_of(metric, ds, difference=True)
            mean, cell_low, cell_high, n_cells = intervals.of(d.ravel(), spread)
            _, seed_low, seed_high, n_seeds = intervals.of(per_seed, spread)
            rows.append(MethodComparison(base, other, metric, n_cells, n_seeds,
                                         float(v[0][both].mean()), float(v[1][both].mean()),
                                         mean, seed_low, seed_high, cell_low, cell_high))
    return rows


def method_comparison_markdown(rows: list[MethodComparison], level: float = 0.95) -> str:
    """:func:`compare_methods` rows as a markdown table."""
    header = ("other vs base", "metric", "cells", "seeds", "base", "other", "other − base",
              f"{level:.0%} interval (seeds)", f"{level:.0%} interval (cells)")
    lines = [((Code(r.other), " vs ", Code(r.base)), metric_label(r.metric),
              str(r.n_cells), str(r.n_seeds), f"{r.base_mean:.4g}", f"{r.other_mean:.4g}",
              f"{r.diff:+.3g}", f"[{_num(r.seed_low)}, {_num(r.seed_high)}]",
              f"[{_num(r.cell_low)}, {_num(r.cell_high)}]") for r in rows]
    return markdown([Table(header, lines, "llrrrrrll")])


def comparison_table(rows: list[Comparison], base_name="base", other_name="other") -> str:
    """Plain-text table of :func:`compare_stores` rows."""
    header = (f"{'method':16s} {'metric':6s} {'cells':>5s} {base_name:>9s} {other_name:>9s} "
              f"{'diff [95% CI]':>26s} {'seed sd':>8s}  verdict")
    lines = [header, "-" * len(header)]
    for r in sorted(rows, key=lambda r: (r.method, r.metric)):
        ci = f"{r.diff:+.4f} [{r.low:+.4f}, {r.high:+.4f}]"
        verdict = "within seed noise" if r.within_seed_noise else "differs"
        lines.append(f"{r.method:16s} {r.metric:6s} {r.n_cells:5d} {r.base_mean:9.4f} "
                     f"{r.other_mean:9.4f} {ci:>26s} {r.seed_sd:8.4f}  {verdict}")
    lines.append("(diff: other - base, paired over shared cells; within seed noise: |diff| <= seed "
                 "sd / sqrt(seeds per cell))")
    return "\n".join(lines)


def width_pairs(ds) -> list[tuple[str, str]]:
    """``(kfold_method, auto_method)`` pairs of the store: the same estimator and parameters
    (but the one that only says how a width grid is fitted, the kind's ``path_param``), the
    kernel width chosen by CV over a grid in the first and set inside the fit in the second."""
    def params(name):
        kind = stored_kind(ds, name)
        skip = kind.path_param if kind else None
        return {k: v for k, v in (config.get(name, {}).get("params") or {}).items() if k != skip}

    config = _config(ds).get("methods", {})
    names = [str(m) for m in ds["model"].values]
    auto = _auto_width_methods(ds)
    pairs = []
    for a in (n for n in names if n in auto):
        for b in names:
            cb, ca = config.get(b, {}), config.get(a, {})
            widths = _grid(cb).get("kernel_width")
            if (b not in auto and isinstance(widths, list) and widths
                    and cb.get("estimator") == ca.get("estimator")
                    and params(b) == params(a)):
                pairs.append((b, a))
                break
    return pairs


#: the roles of the paper's proposal: only these take an auto-width method's place in the claims
PROPOSED_ROLES = ("mcc_ard", "mcc_ard_proper")


def auto_roles(pairs) -> dict[str, str]:
    """``{role: auto_method}`` for the claims with auto widths, from :func:`width_pairs`: the
    auto-width variants of the proposed methods play them; the baselines (MCC-L1, LS-ARD) keep
    their K-fold CV, the tuning the paper compares against."""
    return {kfold: auto for kfold, auto in pairs if kfold in PROPOSED_ROLES}


def solver_pairs(ds) -> list[tuple[str, str]]:
    """``(pruning_method, sequential_method)`` pairs of the store: the same estimator, the same
    candidates and the same parameters but those that only select or tune a solver
    (:attr:`~mccard_dist.methods.MethodKind.solver_params`), the first with the pruning solver
    and the second with the sequential one."""
    config = _config(ds).get("methods", {})
    names = [str(m) for m in ds["model"].values]
    solver, rest = {}, {}
    for name in names:
        c = config.get(name, {})
        kind = stored_kind(ds, name)
        params = c.get("params") or {}
        solver[name] = kind.solver(params) if kind else None
        skip = kind.solver_params if kind else ()
        rest[name] = (c.get("estimator"), sorted(_grid(c).items()),
                      sorted((k, v) for k, v in params.items() if k not in skip))
    return [(a, b) for a in names for b in names
            if solver[a] == "pruning" and solver[b] == "sequential" and rest[a] == rest[b]]



#: the column of :func:`versus` after the metrics: the seconds a cell took (lower is better)
SECONDS = "cell_seconds"


def better(name: str, ds=None) -> int:
    """+1: higher is better; -1: lower is better; 0: neither (the number of features kept), as
    the metric (of the store ``ds``) declares it."""
    m = _metrics.metric(name, store_metrics(ds))
    return -1 if name == SECONDS else m.better if m is not None else 0


def versus_metrics(ds=None) -> dict[str, str]:
    """The values :func:`versus` compares, and their column titles: the metrics the report
    shows (the store's), then the seconds per cell."""
    return {**{n: metric_label(n, ds) for n in shown_metrics(ds)}, SECONDS: "s per cell"}


def psi_blocks(psis, n_blocks: int = 3) -> list[tuple[float, ...]]:
    """The psi values in ``n_blocks`` consecutive blocks of near-equal size (fewer with fewer
    values)."""
    values = sorted(float(p) for p in psis)
    return [tuple(b) for b in np.array_split(values, min(n_blocks, len(values))) if len(b)]


@dataclass(frozen=True)
class BlockComparison:
    """``base - other`` in one metric on one (tau, psi block): the mean over seeds of each
    seed's difference averaged over the block's cells, and its t-interval over seeds."""

    base: str
    other: str
    tau: float
    psis: tuple[float, ...]
    metric: str
    n_seeds: int
    base_mean: float
    other_mean: float
    diff: float
    low: float
    high: float
    #: :func:`better` of the metric (+1, -1 or 0), as the store declares it
    side: int = 0
    #: the metric's column title
    label: str = ""

    @property
    def verdict(self) -> str:
        """``wins``, ``loses`` (the interval excludes 0, on ``base``'s better or worse side) or
        ``ties``; for the features kept, ``fewer``, ``more`` or ``ties``."""
        if not (math.isfinite(self.low) and math.isfinite(self.high)) or self.low <= 0 <= self.high:
            return "ties"
        sign = 1 if self.low > 0 else -1
        if self.side == 0:
            return "more" if sign > 0 else "fewer"
        return "wins" if sign == self.side else "loses"


def versus(ds, base: str, others=None, metrics=None, n_blocks: int = 3,
           level: float = 0.95) -> list[BlockComparison]:
    """Paired differences ``base - other`` for each other method of the store (``others``: all
    but ``base``), tau and block of psi values (:func:`psi_blocks`), on the seeds where both
    finished every cell of the block; ``metrics``: names (default: :func:`versus_metrics`)."""
    metrics = tuple(versus_metrics(ds)) if metrics is None else metrics
    methods = [str(m) for m in ds["model"].values]
    others = [m for m in methods if m != base] if others is None else list(others)
    blocks = psi_blocks(ds["psi"].values, n_blocks)
    intervals = intervals_of(ds, level)
    rows = []
    for other in others:
        for tau in (float(t) for t in ds["tau"].values):
            for psis in blocks:
                for metric in metrics:
                    if metric not in ds:
                        continue
                    v = cell_values(ds, metric).sel(model=[base, other], tau=tau,
                                                    psi=list(psis))
                    v = v.transpose("model", "seed", "psi").values
                    complete = np.all(np.isfinite(v), axis=(0, 2))
                    if not complete.any():
                        continue
                    b, o = v[0][complete].mean(axis=1), v[1][complete].mean(axis=1)
                    diff, low, high, n = intervals.of(b - o, bounds_of(metric, ds, True))
                    rows.append(BlockComparison(base, other, tau, psis, metric, n,
                                                float(b.mean()), float(o.mean()), diff, low,
                                                high, better(metric, ds),
                                                metric_label(metric, ds)))
    return rows


def _psi_range(psis) -> str:
    return f"{psis[0]:g}" if len(psis) == 1 else f"{psis[0]:g}–{psis[-1]:g}"


def versus_markdown(rows: list[BlockComparison], labels=None, level: float = 0.95) -> str:
    """:func:`versus` rows as one table per other method (a row per tau and psi block: each
    metric's ``base - other`` and its interval over seeds, and what ``base`` wins and loses),
    after a count of wins, ties and losses in the metrics with a better side."""
    labels = labels or {}
    name = lambda m: labels.get(m, m)  # noqa: E731
    blocks = []
    if not rows:
        return ""
    base = rows[0].base
    title = {r.metric: r.label or metric_label(r.metric) for r in rows}
    quality = [r for r in rows if r.side != 0 and r.metric != SECONDS]
    judged = ", ".join(dict.fromkeys(title[r.metric] for r in quality))
    header = ("other method", f"comparisons (tau x psi block x {judged})",
              *(f"{name(base)} {v}" for v in ("wins", "ties", "loses")))
    lines = []
    for other in dict.fromkeys(r.other for r in rows):
        mine = [r.verdict for r in quality if r.other == other]
        lines.append((name(other), str(len(mine)), *(str(mine.count(v))
                                                      for v in ("wins", "ties", "loses"))))
    blocks.append(Table(header, lines, "lrrrr"))
    for other in dict.fromkeys(r.other for r in rows):
        mine = [r for r in rows if r.other == other]
        metrics = list(dict.fromkeys(r.metric for r in mine))
        header = ("tau", "psi", *(title[m] for m in metrics), name(base))
        keys = list(dict.fromkeys((r.tau, r.psis) for r in mine))
        lines = []
        for tau, psis in keys:
            cells = {r.metric: r for r in mine if (r.tau, r.psis) == (tau, psis)}
            text = [f"{c.diff:+.3g} [{_num(c.low)}, {_num(c.high)}]" if (c := cells.get(m))
                    else "–" for m in metrics]
            said = {}
            for m in metrics:
                if m in cells and cells[m].verdict != "ties":
                    said.setdefault(cells[m].verdict, []).append(title[m])
            summary = "; ".join(f"{v} {', '.join(ms)}" for v, ms in said.items()) or "ties"
            lines.append((f"{tau:g}", _psi_range(psis), *text, summary))
        blocks.append(Paragraph(Strong(f"{name(base)} − {name(other)}")))
        blocks.append(Table(header, lines, "rl" + "l" * len(metrics) + "l"))
    return markdown(blocks)


def versus_report(ds, base: str, level: float = 0.95) -> str:
    """Markdown: each method's means over the store's finished cells (r, RMSE, F1, features
    kept, seconds per cell, on one core), :func:`versus` of ``base`` against every other method,
    and how often each CV grid's edge was chosen
    (:func:`~mccard_dist.analysis.edges.grid_edges`)."""
    from .edges import grid_edges, grid_edges_markdown
    from .values import method_style

    methods = [str(m) for m in ds["model"].values]
    labels = {m: method_style(m, methods, ds)["label"] for m in methods}
    columns = versus_metrics(ds)
    header = ("method", "cells", *columns.values())
    lines = []
    for m in methods:
        # each metric over the cells where it is defined (F1 is not without true coefficients)
        values = [cell_values(ds, k).sel(model=m).values for k in columns if k in ds]
        done = np.isfinite(cell_values(ds, "r").sel(model=m).values)  # r: every finished cell
        lines.append((labels[m], str(int(done.sum())),
                      *(_num(float(np.mean(v[np.isfinite(v)]))) if np.isfinite(v).any() else "–"
                        for v in values)))
    return "\n\n".join([
        markdown([Paragraph(Strong("Means over the finished cells")),
                  Table(header, lines, "lr" + "r" * (len(header) - 2))]),
        markdown([Paragraph((Strong(f"{labels[base]} minus each other method"), f", per tau and "
                             f"psi block: mean over seeds and {level:.0%} interval over seeds; "
                             f"wins, ties and losses count the metrics with a better side ("
                             + ", ".join(t for n, t in columns.items()
                                         if n != SECONDS and better(n, ds) and n in ds)
                             + ")"))]),
        versus_markdown(versus(ds, base, level=level), labels, level),
        markdown([Paragraph(Strong("CV grid edges"))]),
        grid_edges_markdown(grid_edges(ds)),
    ])

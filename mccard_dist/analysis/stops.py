"""Stores run with a stop rule (``experiment.stop``): which intervals their comparisons show
(:func:`intervals_of`: confidence sequences, valid at the seeds the rule stopped at, where a
fixed-count store shows t-intervals), and the report's account of the rule: per (tau, psi) cell
the seeds used, why it stopped and each claim's decision, and the seeds used against the fixed
budget."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np

from ..intervals import T, Intervals
from ..records import STATUS_DONE
from ..stopping import Part, StopRule
from .markup import Paragraph, Table
from .values import metric_label, store_metrics

__all__ = ["SEEDS_FIGURE", "bounds_of", "fig_seeds_used", "intervals_of", "stop_blocks",
           "stop_record"]

#: the file of :func:`fig_seeds_used` in a report's folder
SEEDS_FIGURE = "seeds_used.png"


def stop_record(ds) -> dict:
    """The store's record of its stop rule and each (tau, psi) cell's stop (empty for a store
    run with a fixed number of seeds)."""
    try:
        return json.loads(ds.attrs.get("stopping") or "{}")
    except (TypeError, ValueError):
        return {}


def intervals_of(ds, level: float | None = None) -> Intervals:
    """The intervals the store's comparisons show: confidence sequences at the rule's level
    where a stop rule chose its seeds (an interval read at a stop the data chose is valid only
    so), t-intervals otherwise; ``level`` overrides the level."""
    rule = stop_record(ds).get("rule")
    if rule:
        intervals = StopRule.from_dict(rule).intervals
        return replace(intervals, level=level) if level else intervals
    return Intervals(T, level or 0.95)


def bounds_of(name: str, ds=None, difference: bool = False):
    """The bounds of the metric ``name`` (of the store ``ds``), of a difference of two of its
    values where ``difference``; None where it has none."""
    found = next((m for m in store_metrics(ds) if m.name == name), None)
    bounds = getattr(found, "bounds", None)
    if bounds is None or not difference:
        return bounds
    return (bounds[0] - bounds[1], bounds[1] - bounds[0])


def stop_blocks(ds) -> list:
    """The report's section on the stop rule (:mod:`.markup` blocks; none for a fixed-count
    store): the rule, the seeds used against the budget, and per (tau, psi) cell the seeds used,
    why it stopped and every claim's decision."""
    record = stop_record(ds)
    if not record.get("rule"):
        return []
    rule, cells = record["rule"], record.get("cells", {})
    fixed = rule.get("fixed_seeds", ds.sizes["seed"])
    taus, psis = ds["tau"].values, ds["psi"].values
    budget, n_cells = ds.sizes["seed"], len(taus) * len(psis)
    done = (ds["status"] == STATUS_DONE).any("model").sum("seed").values  # seeds run, per cell
    used = int(done.sum())
    parts = []
    if rule.get("precision"):
        parts.append("every method's mean known to ± " + ", ".join(
            f"{v:g} ({metric_label(k, ds)})" for k, v in rule["precision"].items()))
    if rule.get("claims"):
        against = rule["claims"].get("against")
        parts.append(("every method against " + against if against else "every pair of methods")
                     + " settled (its sign known, or within a margin of " + ", ".join(
                         f"{v:g} ({metric_label(k, ds)})"
                         for k, v in rule["claims"]["margin"].items())
                     + f" with no sign {fixed} fixed seeds would settle)")
    blocks = [Paragraph(
        f"Seeds were run in rounds (at least {rule['min_seeds']}, then {rule['round']} at a "
        f"time, every method the same seeds) until {' and '.join(parts)}, or the budget of "
        f"{budget} seeds was spent. The intervals of this report are "
        f"{intervals_of(ds).name}, read at the seeds the rule stopped at; wider than "
        f"t-intervals at the same number of seeds, and blind, as any interval from few seeds "
        f"is, to a failure rarer than about one in as many seeds as a cell ran. Seeds run: "
        f"{used} of {budget * n_cells} ({used / max(budget * n_cells, 1):.0%} of the budget); "
        f"{len(cells)} of {n_cells} cells stopped, "
        f"{sum(c['why'] == 'rule held' for c in cells.values())} because the rule held.")]
    rows, audits = [], []
    for ti, tau in enumerate(taus):
        for pi, psi in enumerate(psis):
            cell = cells.get(f"{ti}/{pi}")
            if cell is None:
                rows.append((f"{tau:g}", f"{psi:g}", str(int(done[ti, pi])), "open (running)",
                             ""))
                continue
            decisions = []
            for part in map(Part.from_list, cell["parts"]):
                if part.versus is None:
                    continue
                decisions.append(f"{metric_label(part.metric, ds)} {part.method} {part.label} "
                                 f"{part.versus} [{_fmt(part.low)}, {_fmt(part.high)}]")
            decisions += [f"note: {note} (more min_seeds, or guarantee: bounded)"
                          for note in cell.get("notes", ())]
            if "audit" in cell:
                changed = _audit_changes(cell)
                audits.append(changed)
                decisions.append(f"audited: stopped at {cell['audit']['seeds']}, run on to "
                                 f"{cell['seeds']}; {changed} decision(s) changed")
            known = [p for p in cell["parts"] if p[2] is None]
            if known:
                widest = max(known, key=lambda p: _width(p[4], p[5]))
                decisions.append(f"widest mean ± {_fmt(_width(widest[4], widest[5]) / 2)} "
                                 f"({metric_label(widest[0], ds)}, {widest[1]})")
            rows.append((f"{tau:g}", f"{psi:g}", str(cell["seeds"]), cell["why"],
                         "; ".join(decisions)))
    if audits:
        blocks.append(Paragraph(
            f"Audit: {len(audits)} stopped cell(s) ran on to the budget; between the stop and "
            f"the budget {sum(audits)} of their decisions changed ({sum(a > 0 for a in audits)} "
            "cell(s))."))
    blocks.append(Table(("τ", "ψ", "seeds", "stopped", "decisions (> better, < worse, = "
                         "within the margin with no sign worth settling, ? open; the interval of "
                         "the difference)"), rows, "rrrll"))
    return blocks


def _audit_changes(cell) -> int:
    """The claims of an audited cell whose outcome at the budget differs from the one at the
    stop it ran past."""
    before = {tuple(p[:3]): p[7] for p in cell["audit"]["parts"]}
    return sum(before.get(tuple(p[:3])) != p[7] for p in cell["parts"] if p[2] is not None)


def _width(low, high) -> float:
    return math.inf if low is None or high is None else high - low


def _fmt(value) -> str:
    return "—" if value is None or not np.isfinite(value) else f"{value:.3g}"


def fig_seeds_used(ds):
    """Heat map of the seeds each (tau, psi) cell ran under the stop rule, each cell written
    with its number (a cell still running: its seeds so far, hatched).
    :class:`~.plotting.FigureUnavailable` for a store run with a fixed number of seeds."""
    from .plotting import _PSI_LABEL, FigureUnavailable, _figure

    record = stop_record(ds)
    if not record.get("rule"):
        raise FigureUnavailable("the seeds-used figure needs a store run with a stop rule "
                                "(experiment.stop)")
    cells = record.get("cells", {})
    taus, psis = ds["tau"].values.astype(float), ds["psi"].values.astype(float)
    done = (ds["status"] == STATUS_DONE).any("model").sum("seed").values
    fig, axes = _figure(1, 1, max(5.0, 0.45 * len(psis) + 2.0), 1.4 + 0.5 * len(taus))
    ax = axes[0, 0]
    image = ax.imshow(done, aspect="auto", cmap="viridis", origin="lower",
                      vmin=0, vmax=ds.sizes["seed"])
    for ti in range(len(taus)):
        for pi in range(len(psis)):
            cell = cells.get(f"{ti}/{pi}")
            text = str(int(done[ti, pi])) + ("" if cell else "…")
            ax.text(pi, ti, text, ha="center", va="center", fontsize=7,
                    color="white" if done[ti, pi] < 0.6 * ds.sizes["seed"] else "black")
    step = max(1, len(psis) // 11 + (len(psis) % 11 > 0))
    ax.set_xticks(range(0, len(psis), step), [f"{p:g}" for p in psis[::step]])
    ax.set_yticks(range(len(taus)), [f"{t:g}" for t in taus])
    ax.set_xlabel(_PSI_LABEL)
    ax.set_ylabel("τ")
    ax.set_title(f"seeds used per cell (budget {ds.sizes['seed']}; … still open)")
    fig.colorbar(image, ax=ax, label="seeds")
    return fig

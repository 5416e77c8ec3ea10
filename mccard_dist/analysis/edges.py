"""How often cross-validation chose an edge of a method's grid (a grid too narrow there: the best
value may lie beyond it, and the method is compared under-tuned).

For every grid of at least three values, :func:`grid_edges` counts the finished cells whose
chosen value is the grid's smallest or largest (a cell at ``psi = 0`` once, at the first tau: the
other taus repeat its data and fits); a share above :data:`EDGE_SHARE` flags the grid. Each
cell's choice is placed by :func:`mccard_dist.methods.grid_edge`, as ``MethodCV`` places its
own. Counted apart: edge choices a wider grid cannot change (``n_settled``: a value at the
parameter's own bound (an estimator's ``bounds``), or the largest value of a grid along which
models only get sparser (``methods.SPARSER_UPWARDS``, an estimator's ``sparser_upwards``), with
no feature selected: for a penalty, and for MCC-ARD's width, as ``q^2 / s`` falls with
``1/h``), and edge choices where the CV curve is flat (``n_flat``: the mean loss within
``methods.FLAT_PER_DECADE`` per decade of its neighbour's on the grid; positive grids).

:func:`cv_failure_warnings` says, per method, how many CV fits failed (CV then chose among the
others, so a grid value whose fits fail is a grid value that never competes).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..methods import grid_edge
from .markup import Code, Strong, Table, markdown
from .values import _config, _grid, cell_values, stored_kind

__all__ = ["EDGE_SHARE", "GridEdges", "cv_failure_warnings", "edge_warnings", "grid_edges",
           "grid_edges_markdown"]

#: share of finished cells at an edge above which a grid is flagged
EDGE_SHARE = 0.10


@dataclass(frozen=True)
class GridEdges:
    """Edge choices of one method on one axis of its grid."""

    method: str
    axis: str  # the grid's name: kernel_width, alpha_ratio, epsilon ...
    low: float  # the grid's smallest value
    high: float  # and its largest
    n_cells: int  # finished cells with a chosen value
    n_low: int  # cells that chose ``low``
    n_high: int  # cells that chose ``high``
    n_settled: int = 0  # edge choices that a wider grid cannot change (not in n_low, n_high)
    n_flat: int = 0  # edge choices CV cannot tell from their neighbour (not in n_low, n_high)

    @property
    def share(self) -> float:
        return (self.n_low + self.n_high) / self.n_cells if self.n_cells else math.nan

    @property
    def flagged(self) -> bool:
        return self.n_cells > 0 and self.share > EDGE_SHARE


def grid_edges(ds) -> list[GridEdges]:
    """Edge choices per method and grid axis, for every grid of three or more values whose
    chosen values the store holds (methods with one candidate, or a width set inside the fit,
    have nothing to count)."""
    methods = _config(ds).get("methods", {})
    empty = cell_values(ds, "n_selected") == 0 if "n_selected" in ds else None
    # without outliers (psi = 0) tau changes nothing: the cells of other taus repeat the first's
    repeat = ((ds["psi"] == 0) & (ds["tau"] != ds["tau"][0])).transpose("tau", "psi")
    repeat = np.repeat(repeat.values.ravel(), ds.sizes["seed"])
    out = []
    for name in (str(m) for m in ds["model"].values):
        config = methods.get(name) or {}
        kind = stored_kind(ds, name)  # the store's declarations: nothing imported
        kept_none = (None if empty is None else
                     empty.sel(model=name).transpose("tau", "psi", "seed").values.ravel())
        for axis, grid in _grid(config).items():
            variable = f"chosen_{axis}"
            if variable not in ds or not isinstance(grid, list) or len(grid) < 3:
                continue
            values = cell_values(ds, variable).sel(model=name).transpose(
                "tau", "psi", "seed").values.ravel()
            finite = np.isfinite(values) & ~repeat
            losses = _losses(ds, name, config, axis) if "cv_score" in ds else None
            count = Counter(
                grid_edge(kind, axis, grid, float(values[cell]),
                          None if kept_none is None else bool(kept_none[cell]),
                          None if losses is None else functools.partial(losses, cell))
                for cell in np.flatnonzero(finite))
            out.append(GridEdges(name, axis, float(min(grid)), float(max(grid)),
                                 int(finite.sum()), count["low"], count["high"],
                                 count["settled"], count["flat"]))
    return out


def _losses(ds, name, config, axis):
    """``losses(cell, neighbour)``: the mean CV losses of the cell's chosen candidate and of the
    candidate at ``neighbour`` on ``axis`` (the other grid values as chosen), or None where the
    store does not tell them apart."""
    names = [n for n, values in _grid(config).items() if isinstance(values, list)
             and n in ds.coords]
    values = {n: ds[n].sel(model=name).values for n in names}  # per candidate
    chosen = {n: cell_values(ds, f"chosen_{n}").sel(model=name).transpose("tau", "psi", "seed")
              .values.ravel() for n in names}
    scores = ds["cv_score"].sel(model=name).transpose("tau", "psi", "seed", "candidate",
                                                      "fold").values
    with warnings.catch_warnings():  # a method with fewer candidates than the store's: NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        scores = np.nanmean(scores.reshape(-1, *scores.shape[3:]), axis=-1)  # (cell, candidate)

    def losses(cell, neighbour):
        at = {n: chosen[n][cell] for n in names}
        pick = np.logical_and.reduce([np.isclose(values[n], at[n], rtol=1e-9, atol=0.0)
                                      for n in names])
        at[axis] = neighbour
        near = np.logical_and.reduce([np.isclose(values[n], at[n], rtol=1e-9, atol=0.0)
                                      for n in names])
        if pick.sum() != 1 or near.sum() != 1:
            return None
        return scores[cell, pick][0], scores[cell, near][0]
    return losses


def edge_warnings(edges) -> list[str]:
    """One line per flagged grid: which method and axis, how often, and what to widen."""
    return [f"{e.method}: CV chose an edge of its {e.axis} grid in {e.n_low + e.n_high} of "
            f"{e.n_cells} cells ({e.share:.0%}: {e.n_low} at {e.low:g}, {e.n_high} at "
            f"{e.high:g}); the best value may lie outside it: widen "
            f"methods.{e.method}.grid.{e.axis}" for e in edges if e.flagged]


def cv_failure_warnings(ds, first_errors=None) -> list[str]:
    """One line per method with failed CV fits in its finished cells: how many, in how many
    cells, and the first failure's message where ``first_errors`` (method -> message: a run's
    :attr:`~mccard_dist.runner.RunReport.cv_errors`) has it; and whether CV chose among the
    other candidates or those cells failed."""
    from ..records import STATUS_DONE, STATUS_FAILED

    if "n_cv_failures" not in ds:
        return []
    finished = ds["status"].isin([STATUS_DONE, STATUS_FAILED])
    failures = ds["n_cv_failures"].where(finished).fillna(0)
    lines = []
    for name in ds["model"].values:
        per_cell = failures.sel(model=name)
        n_fits, n_cells = int(per_cell.sum()), int((per_cell > 0).sum())
        if n_fits:
            first = (first_errors or {}).get(str(name))
            lost = int(((per_cell > 0) & (ds["status"].sel(model=name) == STATUS_FAILED)).sum())
            if lost == n_cells:  # nothing was chosen in any of them
                then = "; those cells failed (their error says why)"
            else:
                then = ("; CV chose among the others"
                        + (f" ({lost} of those cells failed)" if lost else "")
                        + f": check methods.{name}.grid")
            lines.append(f"{name}: {n_fits} CV fit(s) failed in {n_cells} of "
                         f"{int(finished.sel(model=name).sum())} finished cells"
                         + (f" (first: {first})" if first else "") + then)
    return lines


def grid_edges_markdown(edges) -> str:
    """A table of :func:`grid_edges`, flagged rows marked."""
    header = ("method", "grid", "smallest: cells", "largest: cells",
              "at a bound or empty (not counted)", "flat: < 1% per decade (not counted)",
              "finished cells", "at an edge")
    rows = [(Code(e.method), e.axis, f"{e.low:g}: {e.n_low}", f"{e.high:g}: {e.n_high}",
             str(e.n_settled), str(e.n_flat), str(e.n_cells),
             (f"{e.share:.0%} ", Strong(f"> {EDGE_SHARE:.0%}")) if e.flagged else f"{e.share:.0%}")
            for e in edges]
    return markdown([Table(header, rows, "llrrrrrr")])

"""The record of one cell: what a worker returns and the store lays out.

Used by name everywhere (tasks, store, runner, analysis, cli): the status codes, the scalar
results and :class:`CellResult`. No imports from the rest of the package.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["DONE_CELL_VALUES", "SCALARS", "SELECTION_COUNTS", "SELECTION_VALUES", "STATUS_DONE",
           "STATUS_FAILED", "STATUS_NAMES", "STATUS_PENDING", "CellResult", "done_cell_values"]

#: a cell's status in the store
STATUS_PENDING, STATUS_DONE, STATUS_FAILED = 0, 1, 2
STATUS_NAMES = {STATUS_PENDING: "pending", STATUS_DONE: "done", STATUS_FAILED: "failed"}

#: scalar per-cell values of the fit and the run, in the order the store lays them out after
#: the metrics (:data:`mccard_dist.metrics.METRICS`; each as float64, NaN where a cell has no
#: value). The final fit's grid values come next to them, one ``chosen_<name>`` per name of the
#: methods' grids (:func:`mccard_dist.grid.chosen_names`).
SCALARS = ("chosen_alpha", "n_iter", "converged", "fit_seconds", "cell_seconds", "n_cv_failures",
           "degenerate")

#: per-cell values every done cell has, whatever its data
DONE_CELL_VALUES = ("rmse", "n_selected", "fit_seconds", "cell_seconds")
#: the selection's confusion counts: every done cell has them when the data carry true coefficients
#: (NaN by design otherwise, see :func:`done_cell_values`)
SELECTION_COUNTS = ("tp", "fp", "fn", "tn")
#: a done cell's selection values: a model without coefficients (no ``coef_``) has none of them
SELECTION_VALUES = ("n_selected", *SELECTION_COUNTS)


def done_cell_values(knows_true_coef: bool) -> tuple[str, ...]:
    """The per-cell values a done cell must have (finite): the confusion counts only when the
    data's true coefficients are known."""
    return DONE_CELL_VALUES + (SELECTION_COUNTS if knows_true_coef else ())


@dataclass
class CellResult:
    """Small record of one finished cell (what travels back to the driver)."""

    index: tuple[int, int, int, int]
    status: int
    error: str = ""
    scalars: dict = field(default_factory=dict)
    cv_score: np.ndarray | None = None  # (n_candidates, n_folds), loss, NaN where a fit failed
    coef: np.ndarray | None = None

"""The record of one cell: what a worker returns and the store lays out.

Used by name everywhere (tasks, store, runner, analysis, cli): the status codes, the scalar
results and :class:`CellResult`. No imports from the rest of the package.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["ADDED_SCALARS", "DONE_CELL_VALUES", "LEGACY_NAMES", "SCALARS", "SELECTION_COUNTS",
           "STATUS_DONE", "STATUS_FAILED", "STATUS_NAMES", "STATUS_PENDING", "CellResult",
           "done_cell_values", "stored_name"]

#: a cell's status in the store
STATUS_PENDING, STATUS_DONE, STATUS_FAILED = 0, 1, 2
STATUS_NAMES = {STATUS_PENDING: "pending", STATUS_DONE: "done", STATUS_FAILED: "failed"}

#: names in stores written by earlier versions -> their names now (``method`` collided with the
#: ``method`` keyword of ``Dataset.sel``; one name for the L1 penalty ratio, as in the config)
LEGACY_NAMES = {"method": "model", "lam": "alpha_ratio", "chosen_lam": "chosen_alpha_ratio"}
_OLD_NAMES = {new: old for old, new in LEGACY_NAMES.items()}


def stored_name(group, name: str) -> str:
    """The name of variable ``name`` in a store's zarr ``group``: its earlier name
    (:data:`LEGACY_NAMES`) in a store written by an earlier version."""
    return name if name in group or name not in _OLD_NAMES else _OLD_NAMES[name]

#: scalar per-cell results in the order the store lays them out (name -> natural dtype; the store
#: keeps every one as float64, NaN where a cell has no value). The final fit's grid values come
#: next to them, one ``chosen_<name>`` per name of the methods' grids
#: (:func:`mccard_dist.grid.chosen_names`).
SCALARS = {
    "r": "f8", "rmse": "f8", "n_selected": "i4", "tp": "i4", "fp": "i4", "fn": "i4", "tn": "i4",
    "precision": "f8", "recall": "f8", "f1": "f8", "chosen_alpha": "f8",
    "n_iter": "i4", "converged": "i1", "fit_seconds": "f8", "cell_seconds": "f8",
    "n_cv_failures": "i4", "degenerate": "i1",
}

#: per-cell results a store made before them lacks: opening such a store for a run adds them,
#: with no value for the cells already finished (they are diagnostics, not recomputed for)
ADDED_SCALARS = ("degenerate",)


#: per-cell values every done cell has, whatever its data
DONE_CELL_VALUES = ("rmse", "n_selected", "fit_seconds", "cell_seconds")
#: the selection's confusion counts: every done cell has them when the data carry true coefficients
#: (NaN by design otherwise, see :func:`done_cell_values`)
SELECTION_COUNTS = ("tp", "fp", "fn", "tn")


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

"""The record of one cell: what a worker returns and the store lays out.

Used by name everywhere (tasks, store, runner, analysis, cli): the status codes, the scalar
results, :class:`CellResult` and a block's :class:`BlockResult`. No imports from the rest of
the package.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["DONE_CELL_VALUES", "SCALARS", "SELECTION_COUNTS", "SELECTION_VALUES", "STATUS_DONE",
           "STATUS_FAILED", "STATUS_NAMES", "STATUS_PENDING", "STATUS_UNNEEDED", "BlockResult",
           "CellResult", "done_cell_values"]

#: a cell's status in the store
#: a cell's status in the store; ``not needed``: a seed past where its (tau, psi) cell's stop
#: rule held (:mod:`mccard_dist.stopping`), computed again if a later rule needs it
STATUS_PENDING, STATUS_DONE, STATUS_FAILED, STATUS_UNNEEDED = 0, 1, 2, 3
STATUS_NAMES = {STATUS_PENDING: "pending", STATUS_DONE: "done", STATUS_FAILED: "failed",
                STATUS_UNNEEDED: "not needed"}

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
    cv_error: str = ""  # the first failed CV fit's message (said by the run, not stored)


@dataclass
class BlockResult:
    """A block's results as the arrays of its ``psi x seed`` rectangle (what a worker returns for
    a block, and the writer writes as they are): ``values``, each per-cell value by name
    (``status`` int8, ``error`` text, the others float64, NaN where a cell has none);
    ``cv_score`` ``(psi, seed, candidate, fold)`` up to the method's candidates, ``coef``
    ``(psi, seed, feature)`` (None where no cell has them); ``seconds``: the worker's time for
    the block; ``cv_error``: the message of its cells' first failed CV fit (``""``: none)."""

    values: dict[str, np.ndarray]
    cv_score: np.ndarray | None = None
    coef: np.ndarray | None = None
    seconds: float = 0.0
    cv_error: str = ""

    @classmethod
    def of(cls, shape: tuple[int, int], results: list[CellResult], seconds: float = 0.0):
        """The arrays of the cells ``results`` of a ``shape`` rectangle, psi varying slowest."""
        n = len(results)
        if n != shape[0] * shape[1]:
            raise ValueError(f"{n} results for a rectangle of {shape[0]} x {shape[1]} cells")
        names = dict.fromkeys(name for res in results for name in res.scalars)
        values = {name: np.array([res.scalars.get(name, np.nan) for res in results],
                                 dtype=np.float64).reshape(shape) for name in names}
        values["status"] = np.array([res.status for res in results], np.int8).reshape(shape)
        values["error"] = np.array([res.error for res in results], dtype=object).reshape(shape)
        return cls(values, _stacked(shape, [res.cv_score for res in results]),
                   _stacked(shape, [res.coef for res in results]), seconds,
                   next((res.cv_error for res in results if res.cv_error), ""))


def _stacked(shape: tuple[int, int], arrays: list) -> np.ndarray | None:
    """The cells' arrays as one ``shape + their shape`` array, NaN for a cell without one (and
    past a smaller one's end); None when no cell has one."""
    given = [a for a in arrays if a is not None]
    if not given:
        return None
    tail = tuple(max(np.shape(a)[d] for a in given) for d in range(np.ndim(given[0])))
    out = np.full((len(arrays), *tail), np.nan)
    for i, a in enumerate(arrays):
        if a is not None:
            out[(i, *(slice(n) for n in np.shape(a)))] = a
    return out.reshape(shape + tail)

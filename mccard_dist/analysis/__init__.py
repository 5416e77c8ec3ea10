"""Reports on a results store: ``report.md`` with the paper's figures, ``report.html``, a check
of the paper's claims, and paired comparisons of methods and of stores.

xarray in; tables, matplotlib figures and claim verdicts out. Everything here works on a partial
store (a run still going, or interrupted): only finished cells (status "done") count, whatever the
store was opened with (:func:`mccard_dist.open_results` masks unfinished cells, ``xarray.open_zarr``
does not; both work), and the number missing is reported.

Two conventions shared by the summaries, the figures and the claim checks:

- ``r`` of a finished cell whose prediction is constant (a fit that kept no feature predicts its
  intercept everywhere) is undefined (``nan`` in the store); it counts as ``r = 0`` (a constant
  prediction carries no linear information about the target). Skipping those cells instead would
  credit a method for its collapses. :func:`.values.summarize` counts them (``n_r_undefined``).
- The seeds are paired by construction (every method sees the same data for the same
  ``(tau, psi, seed)``, and the data share random numbers across ``psi`` and ``tau``), so every
  comparison is made seed by seed, on the seeds where all the cells it needs are finished.

The methods lie along the dimension ``model`` (``ds.sel(model="mcc_ard")``).

The entry points are exported here; the pieces they are made of live in the modules:
:mod:`.values` (per-cell values, summaries, method labels), :mod:`.figures` and
:mod:`.width_figures`, :mod:`.claims`, :mod:`.compare`, :mod:`.edges` (CV grid edges),
:mod:`.cells` (naming one cell), :mod:`.html` and :mod:`.markup` (tables as Markdown or HTML).
"""

from __future__ import annotations

from .claims import check_claims, claims_markdown
from .compare import (
    compare_methods,
    compare_stores,
    comparison_table,
    method_comparison_markdown,
    solver_pairs,
    width_pairs,
)
from .report import Report, check_one_grid, write_report

__all__ = [
    "Report", "check_claims", "check_one_grid", "claims_markdown", "compare_methods",
    "compare_stores", "comparison_table", "method_comparison_markdown", "solver_pairs",
    "width_pairs", "write_report",
]

"""Analysis of a results store: tidy summaries, the paper's figures and a check of its claims.

xarray in; tables, matplotlib figures and claim verdicts out. Everything here works on a partial
store (a run still going, or interrupted): only finished cells (status "done") count, whatever the
store was opened with (:func:`mccard_dist.open_results` masks unfinished cells, ``xarray.open_zarr``
does not; both work), and the number missing is reported.

Two conventions shared by the summaries, the figures and the claim checks:

- ``r`` of a finished cell whose prediction is constant (a fit that kept no feature predicts its
  intercept everywhere) is undefined (``nan`` in the store); it counts as ``r = 0`` (a constant
  prediction carries no linear information about the target). Skipping those cells instead would
  credit a method for its collapses. :func:`summarize` counts them (``n_r_undefined``).
- The seeds are paired by construction (every method sees the same data for the same
  ``(tau, psi, seed)``, and the data share random numbers across ``psi`` and ``tau``), so every
  comparison is made seed by seed, on the seeds where all the cells it needs are finished.

The methods lie along the dimension ``model`` (``ds.sel(model="mcc_ard")``).
"""

from __future__ import annotations

from .cells import parse_cell, resolve_cell
from .claims import (
    BETTER,
    FAILS,
    HOLDS,
    NO_DATA,
    NOT_APPLICABLE,
    NOT_IN_GRID,
    NOT_TESTABLE,
    PAPER_TAUS,
    PARTIAL,
    SIMILAR_TOLERANCE,
    VERDICTS,
    ClaimPart,
    ClaimResult,
    check_claims,
    claims_markdown,
    claims_table,
    with_roles,
)
from .compare import (
    MethodComparison,
    auto_roles,
    compare_methods,
    compare_stores,
    comparison_table,
    method_comparison_markdown,
    paired_interval,
    solver_pairs,
    width_pairs,
)
from .figures import (
    FIGURES,
    FigureFile,
    FigureUnavailable,
    fig_chosen_kernel_width,
    fig_cv_curves,
    fig_densities,
    fig_deviant_vs_proper,
    fig_prediction,
    fig_selection,
    write_figures,
)
from .edges import EDGE_SHARE, GridEdges, edge_warnings, grid_edges, grid_edges_markdown
from .report import (
    Report,
    check_one_grid,
    report_markdown,
    write_report,
)
from .values import (
    METRICS,
    ROLES,
    UNDEFINED_R,
    cell_values,
    method_style,
    n_relevant,
    scenario,
    summarize,
    summary_markdown,
    summary_table,
)

__all__ = [
    "BETTER", "EDGE_SHARE", "GridEdges", "edge_warnings", "grid_edges", "grid_edges_markdown",
    "ClaimPart", "ClaimResult", "FAILS", "FIGURES", "FigureFile", "FigureUnavailable", "HOLDS",
    "METRICS", "MethodComparison", "NOT_APPLICABLE", "NOT_IN_GRID", "NOT_TESTABLE", "NO_DATA", "PAPER_TAUS", "PARTIAL", "ROLES", "Report",
    "SIMILAR_TOLERANCE", "UNDEFINED_R", "VERDICTS", "cell_values", "check_claims",
    "check_one_grid",
    "claims_markdown", "claims_table", "compare_methods", "compare_stores", "comparison_table",
    "fig_chosen_kernel_width", "fig_cv_curves", "fig_densities", "fig_deviant_vs_proper",
    "fig_prediction", "fig_selection", "method_comparison_markdown", "method_style",
    "n_relevant", "paired_interval", "parse_cell", "report_markdown", "resolve_cell",
    "scenario", "summarize", "summary_markdown", "summary_table", "solver_pairs", "width_pairs",
    "auto_roles",
    "with_roles",
    "write_figures", "write_report",
]

"""Reports on a results store: ``report.md`` with the paper's figures, ``report.html``, a check
of the paper's claims, and paired comparisons of methods and of stores.

Everything works on a partial store: only finished cells (status "done") count, however the
store was opened, and the number missing is reported. ``r`` of a finished cell with a constant
prediction (a fit that kept no feature) is undefined in the store and counts as ``r = 0``:
skipping those cells would credit a method for its collapses. The seeds are paired by
construction (the same data for every method at the same ``(tau, psi, seed)``), so comparisons
are made seed by seed, on the seeds where every cell they need is finished. The methods lie
along the dimension ``model``.
"""

from __future__ import annotations

from .claims import check_claims, claims_markdown
from .compare import (compare_methods, compare_stores, comparison_table, method_comparison_markdown,
                      solver_pairs, width_pairs)
from .report import Report, check_one_grid, write_report
from .stops import intervals_of, stop_record

__all__ = [
    "Report", "check_claims", "check_one_grid", "claims_markdown", "compare_methods",
    "compare_stores", "comparison_table", "intervals_of", "method_comparison_markdown",
    "solver_pairs", "stop_record", "width_pairs", "write_report",
]

"""Edge choices of CV grids: counted per method and axis, flagged above 10%, reported."""

import json

import numpy as np
import pytest
import xarray as xr

from mccard_dist.analysis.edges import edge_warnings, grid_edges, grid_edges_markdown
from mccard_dist.records import STATUS_DONE, STATUS_FAILED, STATUS_PENDING


def store(chosen_width, chosen_ratio, status, methods, n_selected=None, width="kernel_width",
          penalty="alpha_ratio"):
    dims = ("model", "tau", "psi", "seed")
    coords = {"model": list(methods), "tau": [5.0], "psi": [0.0, 0.5],
              "seed": list(range(len(chosen_width[0][0][0])))}
    ds = xr.Dataset({f"chosen_{width}": (dims, np.asarray(chosen_width, float)),
                     "status": (dims, np.asarray(status, np.int8))}, coords=coords)
    for name in (penalty,) if isinstance(penalty, str) else penalty:
        ds[f"chosen_{name}"] = (dims, np.asarray(chosen_ratio, float))
    if n_selected is not None:
        ds["n_selected"] = (dims, np.asarray(n_selected, float))
    ds.attrs["config"] = json.dumps({"methods": methods})
    return ds


def test_edges_are_counted_on_finished_cells_per_method_and_axis():
    methods = {"mcc_ard": {"estimator": "mccard_dist.models:MCCARDRegressor", "grid": {"kernel_width": [0.1, 1.0, 10.0]}},
               "mcc_l1": {"estimator": "mccard_dist.models:MCCL1Regressor",
                          "grid": {"kernel_width": [0.3, 3.0],
                                   "alpha_ratio": [0.6, 0.3, 0.1, 0.03]}}}
    h = [[[[10.0, 1.0, 0.1, 1.0, 1.0], [1.0, 1.0, 1.0, 10.0, 1.0]]],
         [[[0.3, 0.3, 3.0, 3.0, 0.3], [3.0, 3.0, 3.0, 3.0, 3.0]]]]
    ratio = [[[[np.nan] * 5, [np.nan] * 5]],
             [[[0.03, 0.3, 0.1, 0.6, 0.3], [0.03, 0.03, 0.3, 0.3, 0.03]]]]
    done, failed, pending = STATUS_DONE, STATUS_FAILED, STATUS_PENDING
    status = [[[[done] * 5, [done, done, done, failed, done]]],
              [[[done] * 5, [done, done, pending, done, done]]]]
    edges = {(e.method, e.axis): e for e in grid_edges(store(h, ratio, status, methods))}
    # mcc_l1's width grid has 2 values (every choice is an edge): not counted; mcc_ard has no
    # alpha_ratio grid
    assert set(edges) == {("mcc_ard", "kernel_width"), ("mcc_l1", "alpha_ratio")}
    ard = edges[("mcc_ard", "kernel_width")]
    # the failed cell that chose 10 does not count
    assert (ard.n_cells, ard.n_low, ard.n_high) == (9, 1, 1)
    assert ard.share == pytest.approx(2 / 9) and ard.flagged
    l1 = edges[("mcc_l1", "alpha_ratio")]
    assert (l1.low, l1.high, l1.n_cells, l1.n_low, l1.n_high) == (0.03, 0.6, 9, 4, 1)
    lines = edge_warnings(edges.values())
    assert len(lines) == 2
    assert lines[0].startswith("mcc_ard: CV chose an edge of its kernel_width grid in 2 of 9 "
                               "cells (22%: 1 at 0.1, 1 at 10)")
    assert "widen methods.mcc_ard.grid.kernel_width" in lines[0]
    assert "**> 10%**" in grid_edges_markdown(edges.values())


def test_a_grid_chosen_inside_is_not_flagged():
    methods = {"lasso": {"estimator": "mccard_dist.models:LassoBaseline", "grid": {"alpha_ratio": [0.3, 0.1, 0.03, 0.01]}}}
    ratio = [[[[0.1] * 10, [0.03] * 9 + [0.01]]]]
    h = [[[[np.nan] * 10, [np.nan] * 10]]]
    status = [[[[STATUS_DONE] * 10, [STATUS_DONE] * 10]]]
    (edge,) = grid_edges(store(h, ratio, status, methods))
    assert edge.share == pytest.approx(0.05) and not edge.flagged
    assert edge_warnings([edge]) == []


def test_edges_a_wider_grid_cannot_change_are_counted_apart():
    # Lasso at its largest penalty with an empty model (any larger penalty: the same model), and
    # Huber at epsilon = 1, the parameter's bound, say nothing about the grids' width
    methods = {"lasso": {"estimator": "mccard_dist.models:LassoBaseline", "grid": {"alpha_ratio": [0.99, 0.5, 0.1]}},
               "huber": {"estimator": "mccard_dist.models:HuberBaseline",
                         "grid": {"epsilon": [1.0, 1.35, 2.0], "alpha": [1.0, 10.0]}}}
    ratio = [[[[0.99, 0.99, 0.99, 0.5], [0.1, 0.5, 0.5, 0.5]]],
             [[[1.0, 10.0, 1.0, 1.0], [10.0, 10.0, 1.0, 1.0]]]]
    h = [[[[np.nan] * 4, [np.nan] * 4]],
         [[[1.0, 1.0, 1.35, 2.0], [1.35, 1.35, 1.35, 1.35]]]]
    n_selected = [[[[0, 0, 3, 4], [5, 4, 4, 4]]], [[[9] * 4, [9] * 4]]]
    status = [[[[STATUS_DONE] * 4] * 2]] * 2
    edges = {(e.method, e.axis): e
             for e in grid_edges(store(h, ratio, status, methods, n_selected, width="epsilon",
                                       penalty=("alpha_ratio", "alpha")))}
    lasso = edges[("lasso", "alpha_ratio")]
    # two empty fits at 0.99 settled; the non-empty fit at 0.99 and the one at 0.1 count
    assert (lasso.n_high, lasso.n_settled, lasso.n_low, lasso.n_cells) == (1, 2, 1, 8)
    huber = edges[("huber", "epsilon")]
    assert (huber.n_low, huber.n_settled, huber.n_high) == (0, 2, 1)
    assert huber.share == pytest.approx(1 / 8) and huber.flagged
    # without n_selected in the store every edge counts
    plain = {(e.method, e.axis): e
             for e in grid_edges(store(h, ratio, status, methods, width="epsilon",
                                       penalty=("alpha_ratio", "alpha")))}
    assert plain[("lasso", "alpha_ratio")].n_high == 3
    assert "at a bound or empty" in grid_edges_markdown(edges.values())


def test_an_empty_mcc_ard_fit_at_the_widest_width_is_settled_but_not_mcc_l1s():
    # the width is ARD's noise variance: wider only prunes more; MCC-L1's width has no such order
    methods = {"ard": {"estimator": "mccard_dist.models:MCCARDRegressor", "grid": {"kernel_width": [0.1, 10.0, 1000.0]}},
               "l1": {"estimator": "mccard_dist.models:MCCL1Regressor", "grid": {"kernel_width": [0.1, 10.0, 1000.0]}}}
    h = [[[[1000.0, 1000.0, 10.0, 10.0], [10.0] * 4]]] * 2
    ratio = [[[[np.nan] * 4, [np.nan] * 4]]] * 2
    n_selected = [[[[0, 3, 3, 3], [3] * 4]]] * 2
    status = [[[[STATUS_DONE] * 4] * 2]] * 2
    edges = {e.method: e for e in grid_edges(store(h, ratio, status, methods, n_selected))}
    assert (edges["ard"].n_high, edges["ard"].n_settled) == (1, 1)
    assert (edges["l1"].n_high, edges["l1"].n_settled) == (2, 0)


def test_a_flat_edge_and_a_cell_without_outliers_at_another_tau_are_not_counted():
    """An edge whose mean CV loss is within 1% per decade of its neighbour's is flat: a wider
    grid would move along the flat part; and psi = 0 at a second tau repeats the first tau's
    cell (no outliers to scale)."""
    import json

    import numpy as np
    import xarray as xr

    from mccard_dist.analysis.edges import grid_edges

    widths = [0.1, 1.0, 10.0]
    # cells (tau, psi, seed): 2 x 2 x 2; every cell chooses the smallest width
    chosen = np.full((1, 2, 2, 2), 0.1)
    cv = np.empty((1, 2, 2, 2, 3, 2))
    cv[..., 1, :] = 1.0  # the neighbour's loss
    cv[..., 2, :] = 2.0
    cv[..., 0, :] = 0.999  # flat: 0.1% better over one decade
    cv[0, :, 1, 0, 0, :] = 0.9  # the psi = 0.3, seed 0 cells: 10% better, a real edge
    ds = xr.Dataset(
        {"chosen_kernel_width": (("model", "tau", "psi", "seed"), chosen),
         "status": (("model", "tau", "psi", "seed"), np.ones((1, 2, 2, 2), np.int8)),
         "cv_score": (("model", "tau", "psi", "seed", "candidate", "fold"), cv)},
        coords={"model": ["mcc_ard"], "tau": [2.0, 10.0], "psi": [0.0, 0.3], "seed": [0, 1],
                "candidate": [0, 1, 2],
                "kernel_width": (("model", "candidate"), np.array([widths]))},
        attrs={"config": json.dumps({"methods": {"mcc_ard": {
            "estimator": "mccard_dist.models:MCCARDRegressor", "grid": {"kernel_width": widths}}}})})
    [edge] = grid_edges(ds)
    assert edge.n_cells == 6  # psi = 0 counted at the first tau only
    assert (edge.n_low, edge.n_flat) == (2, 4)

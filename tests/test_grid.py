"""Tests for mccard_dist.grid: cells, candidates, blocks, coordinates, grid hash."""

import copy
import json
import re

import numpy as np
import pytest
from omegaconf import OmegaConf

from mccard_dist import grid
from mccard_dist.config import spec_from_dict
from mccard_dist.grid import (
    Block,
    Cell,
    block_fits,
    candidate_values,
    cells,
    chosen_names,
    coords,
    cv_candidates,
    diff_descriptions,
    fits_per_cell,
    grid_description,
    grid_hash,
    make_blocks,
)


@pytest.fixture(scope="module")
def dicts(compose):
    return {
        name: OmegaConf.to_container(compose([f"experiment={name}"]), resolve=True)
        for name in ("smoke", "quick", "paper")
    }


@pytest.fixture(scope="module")
def smoke(dicts):
    return spec_from_dict(dicts["smoke"])


@pytest.fixture(scope="module")
def paper(dicts):
    return spec_from_dict(dicts["paper"])


def changed(d, dotted, value):
    d = copy.deepcopy(d)
    *path, last = dotted.split(".")
    node = d
    for p in path:
        node = node[p]
    node[last] = value
    return spec_from_dict(d)


# -- cells ----------------------------------------------------------------------------------------
def test_cells_count_and_order(smoke, paper):
    cs = cells(smoke)
    assert len(cs) == 4 * 1 * 2 * 2
    assert cs[0] == Cell("mcc_ard", 5.0, 0.0, 0, (0, 0, 0, 0))
    assert cs[1] == Cell("mcc_ard", 5.0, 0.0, 1, (0, 0, 0, 1))
    assert cs[2] == Cell("mcc_ard", 5.0, 0.2, 0, (0, 0, 1, 0))
    assert cs[-1] == Cell("mcc_l1", 5.0, 0.2, 1, (3, 0, 1, 1))
    assert [c.index for c in cs] == sorted(c.index for c in cs)
    assert cs[5].key == "mcc_ard_proper/t0/p0/s1"
    assert cells(smoke) == cs  # deterministic
    pc = cells(paper)
    assert len(pc) == 4 * 3 * 21 * 100
    assert len({c.index for c in pc}) == len(pc)
    for c in pc[::997]:  # values match positions
        m, t, p, s = c.index
        assert (paper.methods[m].name, paper.tau[t], paper.psi[p], paper.seeds[s]) == (
            c.method, c.tau, c.psi, c.seed)


# -- CV candidates ----------------------------------------------------------------------------------
def test_cv_candidates_and_fits(smoke, paper):
    assert cv_candidates(smoke.method("mcc_ard")) == [{"kernel_width": 0.3},
                                                      {"kernel_width": 3.0}]
    assert cv_candidates(smoke.method("ls_ard")) == []
    assert cv_candidates(smoke.method("mcc_l1")) == [
        {"kernel_width": w, "alpha_ratio": a} for w in (0.3, 3.0) for a in (0.5, 0.2)]
    assert fits_per_cell(smoke.method("mcc_ard"), smoke.cv) == 2 * 2 + 1
    assert fits_per_cell(smoke.method("ls_ard"), smoke.cv) == 1
    assert fits_per_cell(smoke.method("mcc_l1"), smoke.cv) == 4 * 2 + 1
    assert fits_per_cell(paper.method("mcc_ard"), paper.cv) == 10 * 5 + 1
    assert fits_per_cell(paper.method("mcc_l1"), paper.cv) == 36 * 5 + 1


# -- blocks ---------------------------------------------------------------------------------------
def check_blocks(spec, cs, blocks, size, tile):
    # every cell in exactly one block
    assert sorted(c.index for b in blocks for c in b.cells) == sorted(c.index for c in cs)
    assert len({c for b in blocks for c in b.cells}) == len(cs)
    for b in blocks:
        assert isinstance(b, Block) and 1 <= len(b) <= size
        assert {c.method for c in b.cells} == {b.method}
        # a rectangle psi x seed inside one tile, in order, described by region
        mi, ti, ps, ss = b.region
        expected = [(mi, ti, p, s) for p in range(ps.start, ps.stop)
                    for s in range(ss.start, ss.stop)]
        assert [c.index for c in b.cells] == expected
        assert ps.start // tile[0] == (ps.stop - 1) // tile[0]
        assert ss.start // tile[1] == (ss.stop - 1) // tile[1]
        assert b.shape == (ps.stop - ps.start, ss.stop - ss.start)
        assert block_fits(spec, b) == len(b) * fits_per_cell(spec.method(b.method), spec.cv)
    assert len({b.key for b in blocks}) == len(blocks)
    # seed tile by seed tile: an unfinished grid holds whole seeds
    tiles = [b.region[3].start // tile[1] for b in blocks]
    assert tiles == sorted(tiles)


@pytest.mark.parametrize("name", ["smoke", "quick",
                                  pytest.param("paper", marks=pytest.mark.slow)])  # 25,200 cells
@pytest.mark.parametrize("size", [1, 3, 10, 57, 10_000])
@pytest.mark.parametrize("tile", [None, (1, 2), (3, 1)])
def test_blocks_partition_cells_within_their_size_and_tile(dicts, name, size, tile):
    spec = spec_from_dict(copy.deepcopy(dicts[name]))
    cs = cells(spec)
    blocks = make_blocks(spec, cs, size=size, tile=tile)
    check_blocks(spec, cs, blocks, size, tile or grid.cell_tile(len(spec.psi), len(spec.seeds)))


def test_block_layout_and_keys(smoke, paper):
    assert [b.key for b in make_blocks(smoke, cells(smoke), size=4)] == [
        "mcc_ard/t0/p0-1/s0-1",      # 4 cells: 2 whole psi rows of the one tile
        "mcc_ard_proper/t0/p0-1/s0-1",
        "ls_ard/t0/p0-1/s0-1",
        "mcc_l1/t0/p0-1/s0-1",
    ]
    assert [b.key for b in make_blocks(smoke, cells(smoke), size=3)][:2] == [
        "mcc_ard/t0/p0/s0-1", "mcc_ard/t0/p1/s0-1"]  # a row at a time when two do not fit
    assert grid.cell_tile(21, 100) == (21, 100)  # the paper's: one tile per (method, tau)
    assert grid.cell_tile(2, 500_000) == (1, grid.CELLS_PER_CHUNK)
    pb = make_blocks(paper, cells(paper), size=1)
    assert pb[0].key == "mcc_ard/t0/p0/s0" and pb[99].key == "mcc_ard/t0/p0/s99"
    rows = make_blocks(paper, cells(paper), size=250)  # two whole rows of 100 seeds
    assert rows[0].key == "mcc_ard/t0/p0-1/s0-99" and len(rows[0]) == 200
    assert rows[10].key == "mcc_ard/t0/p20/s0-99"  # the tile's last row alone


def test_blocks_are_sized_as_they_are_made_and_keep_to_the_cells_to_do(paper):
    """The size is asked for each block as it is made (a run learns its cells' cost), and only
    the cells marked to do are in blocks: a subset gives rectangles of it."""
    todo = np.zeros((4, 3, 21, 100), bool)
    todo[0, 0, 0, :] = True        # a whole row
    todo[1, 2, 5, 10:20] = True    # part of a row
    todo[1, 2, 5, 40:43] = True
    sizes = iter([1, 2, 4, 8, 16, 32, 64, 128, 128])
    made = list(grid.blocks(paper, todo, lambda method: next(sizes), (21, 100)))
    assert [b.key for b in made] == [
        "mcc_ard/t0/p0/s0", "mcc_ard/t0/p0/s1-2", "mcc_ard/t0/p0/s3-6", "mcc_ard/t0/p0/s7-14",
        "mcc_ard/t0/p0/s15-30", "mcc_ard/t0/p0/s31-62", "mcc_ard/t0/p0/s63-99",
        "mcc_ard_proper/t2/p5/s10-19", "mcc_ard_proper/t2/p5/s40-42"]
    mask = grid.todo_mask(paper, [c for b in made for c in b.cells])
    np.testing.assert_array_equal(mask, todo)


def test_a_block_travels_in_a_few_hundred_bytes_whatever_its_seeds(paper, dicts):
    import pickle

    d = copy.deepcopy(dicts["smoke"])
    d["experiment"]["seeds"] = {"start": 0, "count": 1_000_000}
    spec = spec_from_dict(d)
    assert isinstance(spec.seeds, range)
    (block,) = make_blocks(spec, [], size=1) or [grid.Block.of(spec, 0, 0, range(0, 1),
                                                               range(0, 10_000))]
    assert len(pickle.dumps(block)) < 500 and len(pickle.dumps(spec)) < 20_000


# -- coordinates --------------------------------------------------------------------------------------
def test_coords(smoke, paper, dicts):
    c = coords(smoke)
    assert list(c) == ["model", "tau", "psi", "seed", "candidate", "fold", "feature"]
    assert list(c["model"]) == ["mcc_ard", "mcc_ard_proper", "ls_ard", "mcc_l1"]
    np.testing.assert_array_equal(c["tau"], [5.0])
    np.testing.assert_array_equal(c["psi"], [0.0, 0.2])
    np.testing.assert_array_equal(c["seed"], [0, 1])
    np.testing.assert_array_equal(c["candidate"], [0, 1, 2, 3])  # mcc_l1: 2 widths x 2 ratios
    np.testing.assert_array_equal(c["fold"], [0, 1])
    np.testing.assert_array_equal(c["feature"], np.arange(60))
    assert c["seed"].dtype == np.int64
    p = coords(paper)
    assert len(p["candidate"]) == len(cv_candidates(paper.method("mcc_l1")))
    # with only LS-ARD, no candidates
    d = copy.deepcopy(dicts["smoke"])
    d["experiment"]["methods"] = ["ls_ard"]
    c = coords(spec_from_dict(d))
    assert c["candidate"].size == 0 and c["fold"].size == 2


def test_candidate_values_are_each_methods_grid_under_its_names(smoke, dicts):
    values = candidate_values(smoke)
    assert set(values) == {"kernel_width", "alpha_ratio"}
    nan = np.nan
    # rows: mcc_ard, mcc_ard_proper, ls_ard, mcc_l1 (the width varies slowest)
    np.testing.assert_array_equal(values["kernel_width"], [[0.3, 3.0, nan, nan],
                                                           [0.3, 3.0, nan, nan],
                                                           [nan] * 4,
                                                           [0.3, 0.3, 3.0, 3.0]])
    np.testing.assert_array_equal(values["alpha_ratio"], [[nan] * 4, [nan] * 4, [nan] * 4,
                                                          [0.5, 0.2, 0.5, 0.2]])
    assert chosen_names(smoke) == ["chosen_kernel_width", "chosen_alpha_ratio"]
    d = copy.deepcopy(dicts["smoke"])
    d["experiment"]["methods"] = ["huber", "mcc_l1"]
    d["methods"]["huber"] = {"estimator": "mccard_dist.models:HuberBaseline", "params": {},
                             "grid": {"epsilon": [1.35, 2.0], "alpha": [1.0, 10.0, 100.0]}}
    d["methods"]["mcc_l1"]["grid"]["kernel_width"] = "auto"
    spec = spec_from_dict(d)
    values = candidate_values(spec)
    # the auto width has no values along the candidates: the fits set it
    assert list(values) == ["epsilon", "alpha", "alpha_ratio"]
    np.testing.assert_array_equal(values["epsilon"][0], [1.35] * 3 + [2.0] * 3)
    np.testing.assert_array_equal(values["alpha"][0], [1.0, 10.0, 100.0] * 2)
    np.testing.assert_array_equal(values["alpha_ratio"][1], [0.5, 0.2, nan, nan, nan, nan])
    assert chosen_names(spec) == ["chosen_epsilon", "chosen_kernel_width", "chosen_alpha_ratio"]


# -- grid hash -----------------------------------------------------------------------------------------
def test_grid_hash_stable(smoke, dicts):
    h = grid_hash(smoke)
    assert re.fullmatch(r"[0-9a-f]{64}", h)
    assert grid_hash(spec_from_dict(copy.deepcopy(dicts["smoke"]))) == h
    assert grid_hash(spec_from_dict(smoke.to_dict())) == h
    assert grid_hash(smoke) != grid_hash(spec_from_dict(dicts["paper"]))
    desc = grid_description(smoke)
    assert json.loads(json.dumps(desc)) == desc
    assert "run" not in desc and "store" not in desc and "cluster" not in desc


@pytest.mark.parametrize("dotted,value", [
    ("experiment.psi", [0.0, 0.3]),
    ("experiment.tau", [5.0, 2.0]),
    ("experiment.seeds", {"start": 1, "count": 2}),
    ("experiment.seeds", {"start": 0, "count": 3}),
    ("experiment.methods", ["mcc_ard", "ls_ard"]),
    ("experiment.methods", ["mcc_ard_proper", "mcc_ard", "ls_ard", "mcc_l1"]),
    ("data.n_features", 70),
    ("data.noise_var", 0.1),
    ("cv.n_folds", 3),
    ("cv.score", "medae"),
    ("methods.mcc_ard.params.tol", 1e-5),
    ("methods.mcc_ard.grid.kernel_width", [0.3, 4.0]),
    ("methods.mcc_l1.grid.alpha_ratio", [0.1, 0.02]),
])
def test_grid_hash_changes_with_results_settings(smoke, dicts, dotted, value):
    assert grid_hash(changed(dicts["smoke"], dotted, value)) != grid_hash(smoke)


@pytest.mark.parametrize("dotted,value", [
    ("experiment.name", "other"),
    ("run.block_seconds", 3),
    ("run.save_coef", False),
    ("run.progress", False),
    ("store.root", "elsewhere"),
    ("store.path", "/tmp/x.zarr"),
    ("cluster.n_workers", 8),
    ("cluster", {"kind": "address", "address": "tcp://10.0.0.1:8786"}),
])
def test_grid_hash_ignores_run_store_cluster(smoke, dicts, dotted, value):
    assert grid_hash(changed(dicts["smoke"], dotted, value)) == grid_hash(smoke)


def test_grid_hash_ignores_unselected_methods(dicts):
    d = copy.deepcopy(dicts["smoke"])
    d["experiment"]["methods"] = ["mcc_ard"]
    base = grid_hash(spec_from_dict(d))
    d["methods"]["mcc_ard_proper"]["params"]["tol"] = 1e-5
    assert grid_hash(spec_from_dict(d)) == base


def test_diff_descriptions_names_the_key(smoke, dicts):
    a = grid_description(smoke)
    assert diff_descriptions(a, a) == []
    b = grid_description(changed(dicts["smoke"], "data.n_features", 50))
    assert diff_descriptions(a, b) == ["data.n_features: 60 != 50"]
    c = grid_description(changed(dicts["smoke"], "methods.mcc_ard.params.tol", 1e-5))
    assert diff_descriptions(a, c) == ["methods.mcc_ard.params.tol: 0.0001 != 1e-05"]
    p = grid_description(spec_from_dict(dicts["paper"]))
    lines = diff_descriptions(a, p)
    assert any(line.startswith("experiment.psi: [0.0, 0.2] != [0.0, 0.05, 0.1, ..., 1.0] "
                               "(21 values)") for line in lines), lines
    assert any(line.startswith("experiment.seeds:") for line in lines)
    assert any(line.startswith("cv.n_folds: 2 != 5") for line in lines)
    # keys present on one side only
    d = copy.deepcopy(dicts["smoke"])
    d["experiment"]["methods"] = ["mcc_ard", "ls_ard"]
    lines = diff_descriptions(a, grid_description(spec_from_dict(d)))
    assert "methods.mcc_l1.estimator: \"mccard_dist.models:MCCL1Regressor\" != <absent>" in lines
    # a grid value under the name the config gives it (the hash describes it by axis)
    e = grid_description(changed(dicts["smoke"], "methods.mcc_l1.grid.alpha_ratio", [0.5]))
    assert diff_descriptions(a, e) == ["methods.mcc_l1.grid.alpha_ratio: [0.5, 0.2] != [0.5]"]
    d["experiment"]["methods"] = ["huber"]
    d["methods"]["huber"] = {"estimator": "mccard_dist.models:HuberBaseline", "params": {},
                             "grid": {"epsilon": [1.35], "alpha": [1.0]}}
    h1 = grid_description(spec_from_dict(d))
    d["methods"]["huber"]["grid"]["epsilon"] = [2.0]
    assert diff_descriptions(h1, grid_description(spec_from_dict(d))) == [
        "methods.huber.grid.epsilon: [1.35] != [2.0]"]


def test_cv_scheme_enters_the_hash_only_when_not_the_default(smoke_spec):
    kfold = smoke_spec()
    alo = smoke_spec("cv=alo")
    assert grid.grid_description(alo)["cv"]["scheme"] == "alo"
    assert grid.grid_hash(kfold) != grid.grid_hash(alo)
    assert len(grid.coords(alo)["fold"]) == 1
    assert len(grid.coords(kfold)["fold"]) == kfold.cv.n_folds
    m = kfold.method("mcc_ard")
    n = len(grid.cv_candidates(m))
    assert grid.fits_per_cell(m, kfold.cv) == n * kfold.cv.n_folds + 1
    assert grid.fits_per_cell(m, alo.cv) == n
    assert grid.fits_per_cell(kfold.method("ls_ard"), alo.cv) == 1

"""Runner pieces that need no cluster."""

from mccard_dist import grid
from mccard_dist.grid import submission_order


def test_submission_order_is_seed_major(smoke_spec):
    spec = smoke_spec("run.fits_per_block=1", "experiment.seeds.count=3")
    blocks = submission_order(grid.make_blocks(spec, grid.cells(spec)))
    seeds = [b.cells[0].index[3] for b in blocks]
    assert seeds == sorted(seeds)
    first_seed = [b for b in blocks if b.cells[0].index[3] == 0]
    assert {b.method for b in first_seed} == set(spec.method_names)
    assert sorted(b.key for b in blocks) == sorted(
        b.key for b in grid.make_blocks(spec, grid.cells(spec)))

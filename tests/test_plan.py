"""``run.plan=true``: what a run would do (its store, the cells to run, what it takes from the
stores beside it, an estimate of its time), said without a cluster, a store or a lock."""

from pathlib import Path

import numpy as np
import pytest

import mccard_dist
from mccard_dist.runner import RunPlan, run_serial


@pytest.fixture
def no_cluster(monkeypatch):
    """A plan that starts (or checks for) a cluster fails the test."""
    from mccard_dist.runner import run

    def refuse(*args, **kwargs):
        raise AssertionError("a plan started a cluster")

    monkeypatch.setattr(run, "connect", refuse)
    monkeypatch.setattr(run, "preflight", refuse)


def test_a_plan_of_a_new_grid_says_its_store_and_cells_and_creates_nothing(tmp_path, no_cluster):
    root = tmp_path / "results"
    plan = mccard_dist.run("smoke", overrides=[
        "run.plan=true", f"store.root={root}", "experiment.methods=[mcc_ard,ls_ard]"])
    assert isinstance(plan, RunPlan)
    assert not plan.resume and not plan.store_path.exists() and not root.exists()
    assert plan.store_path.parent == root and plan.store_path.name.startswith("smoke-")
    assert plan.to_run == {"mcc_ard": 4, "ls_ard": 4} and plan.taken == {}
    assert plan.seconds > 0 and plan.n_workers == 2
    text = str(plan)
    assert text.startswith(f"plan: new store {plan.store_path} (8 cells)")
    assert "cells to run: 8 (mcc_ard 4, ls_ard 4)" in text
    assert "on 2 worker(s)" in text and "without run.plan=true" in text


def test_a_plan_of_a_half_done_store_says_resume_and_the_cells_left(smoke_spec, no_cluster,
                                                                    capsys):
    import zarr

    from mccard_dist import cli

    spec = smoke_spec("experiment.methods=[ls_ard]")
    run_serial(spec)
    status = zarr.open_group(spec.store.path, mode="r+")["status"]
    half = np.asarray(status[...])
    half[..., 1] = 0  # the second seed's cells pending, as an interrupted run leaves them
    status[...] = half
    folder = Path(spec.store.path).parent
    before = sorted(p.name for p in folder.iterdir())

    plan = cli.run_from_spec(smoke_spec("experiment.methods=[ls_ard]", "run.plan=true"))
    assert plan.resume and plan.n_done == 2 and plan.to_run == {"ls_ard": 2}
    out = capsys.readouterr().out
    assert f"plan: resume {spec.store.path} (2 of 4 cells done)" in out
    assert "cells to run: 2 (ls_ard 2)" in out and "results:" not in out
    # nothing written: the store's cells as they were, and no lock file beside it
    assert (np.asarray(zarr.open_group(spec.store.path)["status"][...]) == half).all()
    assert sorted(p.name for p in folder.iterdir()) == before


def test_a_plan_says_what_a_new_store_takes_from_a_store_beside_it(tmp_path, no_cluster):
    from mccard_dist import compose

    root = [f"store.root={tmp_path / 'results'}"]
    done = compose("smoke", ["experiment.methods=[ls_ard]", *root])
    run_serial(done)
    plan = mccard_dist.run("smoke", overrides=["experiment.methods=[ls_ard,mcc_ard]", *root,
                                               "run.plan=true"])
    source = str(mccard_dist.store.store_path(done))
    assert not plan.resume and plan.taken == {"ls_ard": (source, 4)}
    assert plan.to_run == {"ls_ard": 0, "mcc_ard": 4}
    assert f"taken from a store beside it: ls_ard 4 cells from {source}" in str(plan)
    assert "cells to run: 4 (mcc_ard 4)" in str(plan)

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
                                                                    caplog):
    import logging

    import zarr

    from mccard_dist import app

    spec = smoke_spec("experiment.methods=[ls_ard]")
    run_serial(spec)
    status = zarr.open_group(spec.store.path, mode="r+")["status"]
    half = np.asarray(status[...])
    half[..., 1] = 0  # the second seed's cells pending, as an interrupted run leaves them
    status[...] = half
    folder = Path(spec.store.path).parent
    before = sorted(p.name for p in folder.iterdir())

    with caplog.at_level(logging.INFO, logger="mccard_dist"):
        plan = app.run_from_spec(smoke_spec("experiment.methods=[ls_ard]", "run.plan=true"))
    assert plan.resume and plan.n_done == 2 and plan.to_run == {"ls_ard": 2}
    out = "\n".join(r.getMessage() for r in caplog.records if r.name == app.RESULTS_LOGGER)
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


def test_run_from_python_logs_what_the_command_says(smoke_spec, caplog):
    """``mccard_dist.run`` says, through logging under ``mccard_dist``, what ``mccard-run`` says:
    the store's cells, the results table and the store's path (here of a finished store)."""
    import logging

    spec = smoke_spec("experiment.methods=[ls_ard]")
    run_serial(spec)
    with caplog.at_level(logging.INFO, logger="mccard_dist"):
        report = mccard_dist.run("smoke", overrides=["experiment.methods=[ls_ard]",
                                                     f"store.path={spec.store.path}"])
    assert report.store_path == Path(spec.store.path) and report.complete
    said = [r.getMessage() for r in caplog.records if r.name.startswith("mccard_dist")]
    assert f"store {spec.store.path}: 4 of 4 cells done, 0 failed; this run: 0 blocks in" in \
        "\n".join(said)
    (table,) = [m for m in said if m.startswith("method ")]
    assert "ls_ard" in table and "done failed" in table.splitlines()[0]
    assert f"results: {spec.store.path}  (xarray.open_zarr or mccard_dist.open_results)" in said


@pytest.mark.parametrize("signum, status", [(None, 130), ("SIGTERM", 143)])
def test_an_interrupted_command_exits_with_the_status_of_its_signal(monkeypatch, capsys, signum,
                                                                    status):
    """Ctrl-C ends ``mccard-run`` with 130 (a batch scheduler's SIGTERM with 143), as a shell
    reports a process its signal stopped, after its one line."""
    import signal

    from conftest import compose_config

    from mccard_dist import app, cli
    from mccard_dist.runner import Interrupted

    def interrupted(spec, **kwargs):
        if signum is None:
            raise KeyboardInterrupt
        exc = Interrupted(f"signal {signum}")
        exc.signum = signal.Signals[signum]
        raise exc

    monkeypatch.setattr(app, "run_from_spec", interrupted)
    with pytest.raises(SystemExit) as info:
        cli._main(compose_config(["experiment=smoke", "store.path=/nonexistent/s.zarr"]))
    assert info.value.code == status
    line = capsys.readouterr().err.strip()
    assert line.startswith("interrupted") and "nothing was written" in line and "\n" not in line

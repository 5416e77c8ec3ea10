"""mccard-bench's commands end to end, on tiny grids."""

import io

import numpy as np
import pytest

from mccard_dist import bench
from mccard_dist.store import store_path

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

TINY = ("data.n_train=30", "data.n_test=20", "data.n_features=12", "data.n_relevant=3",
        "experiment.tau=[5.0]", "methods.mcc_ard.grid.kernel_width=[0.3,3.0]",
        "methods.mcc_ard_proper.grid.kernel_width=[0.3,3.0]", "methods.mcc_l1.grid.kernel_width=[1.0]",
        "methods.mcc_l1.grid.alpha_ratio=[0.8,0.4]", "cv.n_folds=3")


def test_bench_paper_projects_core_hours_for_current_and_plain_kfold():
    out = io.StringIO()
    runs = bench.bench_paper(seeds=1, workers=1, baseline_psi=(0.0, 0.5), overrides=TINY, out=out)
    text = out.getvalue()
    assert set(runs) == {"current", "plain K-fold, baseline cells", "current, baseline cells"}
    current = runs["current"]["methods"]
    assert set(current) == {"mcc_ard", "mcc_ard_proper", "ls_ard", "mcc_l1"}
    # every psi of the paper, one tau (TINY), one seed
    assert all(m["cells"] == 21 for m in current.values())
    assert current["ls_ard"]["fits_per_cell"] == 1.0
    assert 1.0 < current["mcc_ard"]["fits_per_cell"] <= 2 * 3 + 1  # racing may drop folds
    assert runs["plain K-fold, baseline cells"]["methods"]["mcc_ard"]["cells"] == 2
    assert "projected paper core-hours" in text and "plain K-fold / current" in text
    assert "same choice in" in text


def test_bench_paper_auto_against_kfold_racing_on_the_same_cells():
    out = io.StringIO()
    runs = bench.bench_paper(seeds=1, workers=1, baseline_psi=(0.0, 0.5), auto=True,
                             overrides=TINY + ("methods.mcc_l1.grid.kernel_width=[1.0,10.0]",
                                               "methods.mcc_l1.grid.alpha_ratio=[0.4,0.1]"),
                             out=out)
    text = out.getvalue()
    assert set(runs) == {"auto", "K-fold (racing), baseline cells", "auto, baseline cells"}
    auto = runs["auto"]["methods"]
    # MCC-ARD's width in the fit; the baselines as in the paper (MCC-L1 K-fold over h and lambda)
    assert set(auto) == {"mcc_ard_auto", "mcc_ard_proper_auto", "ls_ard", "mcc_l1"}
    assert all(m["cells"] == 21 for m in auto.values())
    assert auto["mcc_ard_auto"]["fits_per_cell"] == 1.0  # no CV over h
    assert 1.0 < auto["mcc_l1"]["fits_per_cell"] <= 2 * 2 * 3 + 1  # racing may drop folds
    kfold = runs["K-fold (racing), baseline cells"]["methods"]
    assert set(kfold) == {"mcc_ard", "mcc_ard_proper", "ls_ard", "mcc_l1"}
    assert "K-fold (racing) / auto time per cell" in text
    assert "mcc_ard / mcc_ard_auto" in text


def test_replay_race_predicts_what_a_racing_run_chooses(smoke_spec):
    import numpy as np

    from mccard_dist.runner import run_serial
    from mccard_dist.store import open_results

    grid_args = ("experiment.methods=[mcc_ard,mcc_l1]", "cv.n_folds=4",
                 "methods.mcc_ard.grid.kernel_width=[0.01,0.1,1.0,10.0,100.0]")
    plain = smoke_spec(*grid_args, name="plain")
    run_serial(plain)
    margin = 0.1
    racing = smoke_spec(*grid_args, f"cv.race={margin}", name="race")
    run_serial(racing)
    a, b = open_results(store_path(plain)), open_results(store_path(racing))
    def equal(name):  # NaN where a method has no such parameter: equal
        return (a[name] == b[name]) | (a[name].isnull() & b[name].isnull())

    same = equal("chosen_kernel_width") & equal("chosen_alpha_ratio")
    from mccard_dist.bench.race import replay_race

    replay = replay_race(a, margin)
    for method in ("mcc_ard", "mcc_l1"):
        sel = {"model": method}
        assert replay[method]["cells"] == a["status"].sel(sel).size
        assert replay[method]["same"] == int(same.sel(sel).sum())
        made = int(np.isfinite(b["cv_score"].sel(sel).values).sum())
        assert replay[method]["fits"] == made < replay[method]["full"]

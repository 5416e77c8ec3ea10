"""The paper-projection benchmark end to end, on a tiny version of the paper grid."""

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
    replay = bench.replay_race(a, margin)
    for method in ("mcc_ard", "mcc_l1"):
        sel = {"model": method}
        assert replay[method]["cells"] == a["status"].sel(sel).size
        assert replay[method]["same"] == int(same.sel(sel).sum())
        made = int(np.isfinite(b["cv_score"].sel(sel).values).sum())
        assert replay[method]["fits"] == made < replay[method]["full"]


def test_bench_floor_reports_time_against_the_flop_floor():
    out = io.StringIO()
    res = bench.bench_floor(repeats=1, psis=(0.3,), out=out)
    assert set(res) == {"mcc_ard", "mcc_ard_proper"}
    for r in res.values():
        assert r["fits"] == 10  # every width of the paper grid, one dataset
        assert r["gflop"] > 0.0 and r["solves"] >= r["iterations"] >= 1
        # time over floor is a measurement, printed, not asserted (it depends on the machine)
        assert np.isfinite(r["ratio"]) and r["ratio"] > 0.0
    assert "GFlop/s" in out.getvalue() and "x floor" in out.getvalue()


def test_bench_units_runs_each_unit_and_finds_the_same_results():
    out = io.StringIO()
    seconds = bench.bench_units(n_train=60, n_features=40, widths=2, folds=3, out=out)
    text = out.getvalue()
    assert set(seconds) == {"1 worker, unit=cell", "2 workers, unit=cell",
                            "2 workers, unit=fit", "1 worker, unit=fit"}
    assert "(unit used: fit)" in text and "(unit used: cell)" in text
    assert "same results in every store (timings aside): yes" in text
    assert "unit=auto on the paper's grid (25200 cells): 2 workers -> cell" in text
    assert "6300 workers -> cell" in text


def test_bench_scaling_times_both_solvers_and_fits_their_growth(tmp_path):
    from mccard_dist.bench.scaling import exponents

    out = io.StringIO()
    rows = bench.bench_scaling(ns=(60, 120), ds=(80, 160), seeds=(0,), cap=1e9,
                               plot=tmp_path / "scaling.png", out=out)
    assert {(r["n"], r["d"], r["solver"]) for r in rows} == {
        (n, d, s) for n in (60, 120) for d in (80, 160) for s in ("pruning", "sequential")}
    assert all(r["mib"] > 0 and -1 <= r["r"] <= 1 and r["fits"] == 1 for r in rows)
    assert "time grows as N^" in out.getvalue() and (tmp_path / "scaling.png").stat().st_size
    # the exponents recover a known law from exact times
    law = [dict(n=n, d=d, solver="x", seconds=2e-6 * n**1.5 * d**0.5)
           for n in (100, 300, 1000) for d in (50, 500)]
    assert exponents(law, "x") == pytest.approx((1.5, 0.5))


def test_bench_scaling_skips_a_solver_past_its_cap():
    out = io.StringIO()
    rows = bench.bench_scaling(ns=(60, 120), ds=(80,), seeds=(0,), cap=0.0, out=out)
    assert {(r["n"], r["solver"]) for r in rows} == {(60, "pruning"), (60, "sequential")}
    assert out.getvalue().count("skipped: projected over 0 s (") == 2
    assert "s at N=60, D=80)" in out.getvalue()


def test_bench_scaling_projects_a_size_from_the_smaller_ones_it_ran():
    from mccard_dist.bench.scaling import _projection

    # 113 s at 10000 x 3000 projects 10000 x 10000 to over 376 s: past a cap of 120 although
    # no size it ran took 120 s
    ran = [(3000, 3000, 65.0), (10000, 1000, 13.0), (10000, 3000, 113.0)]
    projected, seconds, n0, d0 = _projection(ran, 10000, 10000)
    assert (seconds, n0, d0) == (113.0, 10000, 3000)
    assert projected == pytest.approx(113.0 * 10000 / 3000)
    assert _projection(ran, 1000, 1000) is None  # nothing smaller ran


def test_bench_solvers_and_widths_pair_two_versions_of_a_method_per_tau_and_psi_block(smoke_spec):
    from mccard_dist.analysis import solver_pairs
    from mccard_dist.runner import run_serial
    from mccard_dist.store import open_results

    spec = smoke_spec("experiment.methods=[mcc_ard,mcc_ard_seq,mcc_ard_auto]",
                      "methods.mcc_ard_seq.grid.kernel_width=[0.3,3.0]")
    run_serial(spec)
    ds = open_results(spec.store.path)
    assert solver_pairs(ds) == [("mcc_ard", "mcc_ard_seq")]
    out = io.StringIO()
    results = bench.compare_solvers(ds, out=out)
    assert set(results) == {(5.0, None), (5.0, 0.0)}  # smoke's psi 0 and 0.2: the first block
    rows = {r.metric: r for r in results[(5.0, None)]}
    assert rows["r"].n_cells == 4 and rows["r"].n_seeds == 2
    r = ds["r"].sel(tau=5.0)
    assert rows["r"].diff == pytest.approx(float((r.sel(model="mcc_ard_seq")
                                                  - r.sel(model="mcc_ard")).mean()))
    assert "`mcc_ard_seq` vs `mcc_ard`" in out.getvalue() and "ratio" in out.getvalue()
    # bench widths: the same tables for the (K-fold, auto width) pair, then the grid edges
    out = io.StringIO()
    results = bench.compare_widths(ds, out=out)
    assert set(results) == {(5.0, None), (5.0, 0.0)}
    rows = {r.metric: r for r in results[(5.0, 0.0)]}
    assert (rows["f1"].base, rows["f1"].other) == ("mcc_ard", "mcc_ard_auto")
    f1 = ds["f1"].sel(tau=5.0)
    assert rows["f1"].diff == pytest.approx(float((f1.sel(model="mcc_ard_auto")
                                                   - f1.sel(model="mcc_ard")).mean()))
    assert "`mcc_ard_auto` vs `mcc_ard` | 5 | 0-0.35 |" in out.getvalue()
    assert "CV grid edges" in out.getvalue()


@pytest.mark.slow  # two paper-size fits
def test_bench_evidence_fits_both_solvers_per_cell_seed_and_width():
    out = io.StringIO()
    rows = bench.evidence_gap(cells=((0.1, 2.0),), seeds=(7,), widths=(1.0,), out=out)
    assert [(r["psi"], r["tau"], r["seed"], r["h"]) for r in rows] == [(0.1, 2.0, 7, 1.0)]
    assert all(k >= 20 for k in rows[0]["kept"])  # 30 relevant features, light contamination
    assert np.isfinite([rows[0]["gap_pruning_b"], rows[0]["gap_seq_b"]]).all()
    assert "of 1 fits" in out.getvalue()


def test_bench_tailexact_pairs_the_arms_and_times_the_fit_before_the_tail():
    """One seed, one cell, one width: every arm on every fit, features kept as the estimator's
    non-zero coefficients, and the CPU before the tail's gate first held within the fit's."""
    from sklearn.exceptions import ConvergenceWarning

    from mccard_dist import MCCARDRegressor, make_paper_data

    out = io.StringIO()
    rows = bench.bench_tailexact(seeds="0", psi="0.3", tau="5", widths="7.9", out=out)
    assert sorted((r["likelihood"], r["arm"]) for r in rows) == sorted(
        (lik, arm) for lik in ("deviant", "proper", "ls") for arm in ("today", "A", "R"))
    for r in rows:
        assert r["kept"] == len(r["active"]) and 0.0 < r["cpu_pre"] <= r["cpu"]
    data = make_paper_data(seed=0, psi=0.3, tau=5)
    with pytest.warns(ConvergenceWarning):  # capped at 300 iterations, as the bench's row says
        today = MCCARDRegressor(7.9, solver="pruning", relevance_update="mackay").fit(
            data.X_train, data.y_train)
    (row,) = [r for r in rows if r["likelihood"] == "deviant" and r["arm"] == "today"]
    assert row["kept"] == np.count_nonzero(today.coef_)
    assert row["at_cap"] and row["cpu_pre"] < row["cpu"]  # the gate held before the cap
    text = out.getvalue()
    assert "before the gate" in text and "dkept" in text

"""The research benchmarks of docs/tools/bench/ (scripts beside the measurement pages they make):
their numerical helpers against textbook computations, and each command's own help."""

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "docs" / "tools" / "bench"


@pytest.fixture(scope="module", autouse=True)
def scripts_importable():
    """The scripts import each other by name, as ``python docs/tools/bench/run.py`` does."""
    sys.path.insert(0, str(BENCH))
    yield
    sys.path.remove(str(BENCH))


def test_run_lists_every_command_and_each_says_its_options():
    done = subprocess.run([sys.executable, str(BENCH / "run.py"), "--help"], capture_output=True,
                          text=True, check=True)
    import run

    for name in run.SUBCOMMANDS:
        assert f"run.py {name}" in done.stdout
    assert all(options.get("help") for _, _, arguments in run.SUBCOMMANDS.values()
               for options in arguments.values())


def test_scaling_recovers_a_known_growth_law_and_projects_from_smaller_sizes():
    from scaling import _projection, exponents

    law = [dict(n=n, d=d, solver="x", seconds=2e-6 * n**1.5 * d**0.5)
           for n in (100, 300, 1000) for d in (50, 500)]
    assert exponents(law, "x") == pytest.approx((1.5, 0.5))
    # 113 s at 10000 x 3000 projects 10000 x 10000 to over 376 s
    ran = [(3000, 3000, 65.0), (10000, 1000, 13.0), (10000, 3000, 113.0)]
    projected, seconds, n0, d0 = _projection(ran, 10000, 10000)
    assert (seconds, n0, d0) == (113.0, 10000, 3000)
    assert projected == pytest.approx(113.0 * 10000 / 3000)
    assert _projection(ran, 1000, 1000) is None  # nothing smaller ran


def test_trace_solves_records_every_solve_of_a_fit_and_nothing_outside():
    from flops import trace_solves

    from mccard_dist import MCCARDRegressor
    from mccard_dist.models import _linalg, _pruning_fits, weighted_ridge

    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 50))  # k > N: the first iterations use the dual form
    y = X[:, :3] @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.standard_normal(30)
    with trace_solves() as events:
        model = MCCARDRegressor(1.0, w_steps=1, relevance_update="mackay").fit(X, y)
    # the solvers are the package's own again after the block
    assert _pruning_fits.weighted_ridge is _linalg.weighted_ridge
    assert _linalg.RidgeSteps.solve.__module__ == "mccard_dist.models._linalg"
    solves = [e for e in events if e[0] == "solve"]
    kernels = [e for e in events if e[0] == "kernel"]
    # the ridge start plus one w-step per outer iteration (w_steps=1)
    assert len(solves) == 1 + model.n_iter_
    assert solves[0] == ("solve", "dual", 30, 50, False)
    assert all(e[4] for e in solves[1:])  # a single w-step also gives gamma
    # one kernel per dual solve of the start and per dual iteration (RidgeSteps)
    assert len(kernels) == sum(e[1] == "dual" for e in solves) >= 2
    assert [e[3] for e in solves[1:]] == sorted((e[3] for e in solves[1:]), reverse=True)
    weighted_ridge(X, y, np.ones(30), np.ones(50))
    assert len(events) == len(solves) + len(kernels)  # nothing recorded outside the block


@pytest.mark.slow  # a subprocess
def test_trace_solves_counts_the_same_fit_alike_in_a_fresh_process():
    # a solver module imported during the first traced fit must not keep the tracer afterwards
    code = """
import numpy as np
import sys
sys.path.insert(0, {bench!r})
from flops import trace_solves
from mccard_dist.models import LSARDRegressor
X = np.random.default_rng(0).standard_normal((30, 8))
y = X[:, 0] + 0.1 * np.random.default_rng(1).standard_normal(30)
counts = []
for _ in range(2):
    with trace_solves() as events:
        LSARDRegressor(max_iter=5).fit(X, y)
    counts.append(sum(e[0] == "solve" for e in events))
print(counts)
""".format(bench=str(BENCH))

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, second = eval(out.stdout.strip())
    assert first == second > 0


def test_floor_flops_has_the_orders_of_dense_linear_algebra():
    """Properties of the count rather than its terms: nothing costs nothing, the dense work is
    cubic (scaling N and k by s multiplies the count by about s^3), gamma and the dual kernel
    add work, and both forms cost the same order at k = N."""
    from flops import floor_flops

    assert floor_flops([]) == 0.0
    assert floor_flops([("solve", "primal", 50, 0, True), ("solve", "dual", 50, 0, True)]) == 0.0
    for form in ("primal", "dual"):
        small = floor_flops([("solve", form, 200, 200, True)])
        large = floor_flops([("solve", form, 400, 400, True)])
        assert 7.0 < large / small <= 8.0
        assert floor_flops([("solve", form, 200, 200, False)]) < small
    assert floor_flops([("kernel", 200, 400)]) == pytest.approx(200 * 200 * 400)
    primal = floor_flops([("solve", "primal", 300, 300, False)])
    dual = floor_flops([("kernel", 300, 300), ("solve", "dual", 300, 300, False)])
    assert 0.5 < dual / primal < 2.0


def test_the_evidence_of_two_fits_at_one_set_of_precisions_differs_as_the_textbook_one():
    # the evidence benchmark compares the solvers' fits by this difference (the constant cancels)
    from solvers import fit_evidence
    from test_sequential import log_evidence, problem

    from mccard_dist import MCCARDRegressor

    X, t, beta = problem(seed=6)
    fits = [MCCARDRegressor(kernel_width=h, solver=s).fit(X, t)
            for h, s in ((0.5, "pruning"), (2.0, "sequential"))]
    ours = [fit_evidence(X, t, beta, m) for m in fits]
    dense = [log_evidence(X, t, beta, np.flatnonzero(m.active_), m.relevance_[m.active_], True)
             for m in fits]
    assert fits[0].active_.sum() != fits[1].active_.sum() or not np.allclose(
        fits[0].relevance_[fits[0].active_], fits[1].relevance_[fits[1].active_])
    assert ours[1] - ours[0] == pytest.approx(dense[1] - dense[0], rel=1e-7, abs=1e-7)


@pytest.mark.slow  # runs a small grid
def test_solvers_and_widths_pair_two_versions_of_a_method_per_tau_and_psi_block(smoke_spec):
    from solvers import compare_solvers, compare_widths

    from mccard_dist.analysis import solver_pairs
    from mccard_dist.runner import run_serial
    from mccard_dist.store import open_results

    spec = smoke_spec("experiment.methods=[mcc_ard,mcc_ard_seq,mcc_ard_auto]",
                      "methods.mcc_ard_seq.grid.kernel_width=[0.3,3.0]")
    run_serial(spec)
    ds = open_results(spec.store.path)
    assert solver_pairs(ds) == [("mcc_ard", "mcc_ard_seq")]
    out = io.StringIO()
    results = compare_solvers(ds, out=out)
    assert set(results) == {(5.0, None), (5.0, 0.0)}  # smoke's psi 0 and 0.2: the first block
    rows = {r.metric: r for r in results[(5.0, None)]}
    assert rows["r"].n_cells == 4 and rows["r"].n_seeds == 2
    r = ds["r"].sel(tau=5.0)
    assert rows["r"].diff == pytest.approx(float((r.sel(model="mcc_ard_seq")
                                                  - r.sel(model="mcc_ard")).mean()))
    out = io.StringIO()
    results = compare_widths(ds, out=out)
    rows = {r.metric: r for r in results[(5.0, 0.0)]}
    assert (rows["f1"].base, rows["f1"].other) == ("mcc_ard", "mcc_ard_auto")
    f1 = ds["f1"].sel(tau=5.0)
    assert rows["f1"].diff == pytest.approx(float((f1.sel(model="mcc_ard_auto")
                                                   - f1.sel(model="mcc_ard")).mean()))
    assert "CV grid edges" in out.getvalue()

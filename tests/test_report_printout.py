"""What `mccard-report` prints: the output asked for (--compare, --pair, --versus) first, then the
paper's claims, whose table is printed where the grid tests every part of them."""

import pytest

from mccard_dist import cli
from mccard_dist.analysis.claims import _STATEMENTS, check_claims, claims_summary
from mccard_dist.runner import run_serial
from mccard_dist.store import open_results

# runs the pipeline into a store and writes figures
pytestmark = pytest.mark.slow

#: one candidate per grid: the claims need the cells, not a good choice of width
ONE_CANDIDATE = ("methods.mcc_ard.grid.kernel_width=[3.0]",
                 "methods.mcc_ard_proper.grid.kernel_width=[3.0]",
                 "methods.mcc_l1.grid.kernel_width=[3.0]", "methods.mcc_l1.grid.alpha_ratio=[0.2]")


@pytest.fixture(scope="module")
def paper_grid(compose, tmp_path_factory):
    """Every method, tau and psi the claims test (tau 2, 5, 10; psi 0 and 0.05) on smoke's tiny
    data, 2 seeds."""
    from mccard_dist.config import from_dictconfig

    path = tmp_path_factory.mktemp("claims") / "paper_grid.zarr"
    run_serial(from_dictconfig(compose(["experiment=smoke", f"store.path={path}",
                                        "run.progress=false", "experiment.tau=[2.0,5.0,10.0]",
                                        "experiment.psi=[0.0,0.05]", *ONE_CANDIDATE])))
    return path


def test_the_claims_table_is_printed_after_the_pairs_and_the_versus_asked_for(
        paper_grid, tmp_path, capsys):
    cli.report([str(paper_grid), "--out", str(tmp_path / "out"), "--versus", "mcc_ard",
                "--pair", "ls_ard,mcc_ard"])
    out = capsys.readouterr().out
    pairs = out.index("Methods paired as asked")
    versus = out.index("**Means over the finished cells**")
    claims = out.index("| claim | verdict | statement |")
    assert pairs < versus < claims < out.index("report: ")
    for claim, statement in _STATEMENTS.items():  # every claim, with its parts' table
        assert f"\n| {claim} | **" in out[claims:] and statement in out[claims:]
    assert "| claim | part | quantity (per seed, paired) |" in out[claims:]


def test_a_grid_without_part_of_what_the_claims_test_prints_one_line_of_counts(paper_grid):
    ds = open_results(paper_grid).sel(tau=[5.0])  # claims 1, 2 and 5 compare tau 2, 5 and 10
    results = check_claims(ds)
    text = claims_summary(results)
    assert "| claim |" not in text and len(text.splitlines()) <= 2
    text = " ".join(text.split())
    assert "the table is in report.md" in text
    counts = text.rsplit(": ", 1)[1].split(", ")
    assert sum(int(c.split()[0]) for c in counts) == len(_STATEMENTS) == len(results)
    for count in counts:
        verdict = count.split(" ", 1)[1]
        assert int(count.split()[0]) == sum(c.verdict == verdict for c in results)

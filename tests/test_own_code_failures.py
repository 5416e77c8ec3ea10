"""One's own code that fails or says nothing, run as a user runs it: a method whose every fit
raises, in process (serially, and through ``mccard-run`` on a LocalCluster) with the user's own
message carried to the store, the run's output and its exit status."""

import sys

import numpy as np
import pytest

LAB = '''
import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin


class AlwaysFails(RegressorMixin, BaseEstimator):
    """A regressor whose fit raises on any data: a bug of one's own."""

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y):
        raise ValueError("this estimator always fails")

    def predict(self, X):
        return np.zeros(len(X))
'''


@pytest.fixture
def lab(tmp_path, monkeypatch):
    """A package ``faillab`` on the path and a config folder of one's own (``MCCARD_CONFIG_DIR``)
    with the method ``always_fails`` (two candidates); yields the config folder."""
    pkg = tmp_path / "pkg" / "faillab"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(LAB)
    conf = tmp_path / "conf"
    (conf / "method").mkdir(parents=True)
    (conf / "method" / "always_fails.yaml").write_text(
        "estimator: faillab:AlwaysFails\ngrid:\n  alpha: [0.1, 10.0]\n")
    monkeypatch.syspath_prepend(str(tmp_path / "pkg"))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "pkg"))  # the cluster's workers
    monkeypatch.setenv("MCCARD_CONFIG_DIR", str(conf))
    monkeypatch.delitem(sys.modules, "faillab", raising=False)
    yield conf
    sys.modules.pop("faillab", None)


#: a method beside MCC-ARD's shipped baseline, on two cells each
METHODS = ["experiment.methods=[ls_ard,always_fails]", "experiment.seeds.count=1",
           "run.progress=false"]
SAID = "ValueError: this estimator always fails"


def test_every_fit_failing_stores_the_first_error_and_the_report_names_the_method(lab, tmp_path):
    from mccard_dist import compose, open_results
    from mccard_dist.analysis.edges import cv_failure_warnings
    from mccard_dist.records import STATUS_DONE, STATUS_FAILED
    from mccard_dist.runner import run_serial

    spec = compose("smoke", [*METHODS, f"store.path={tmp_path / 's.zarr'}"])
    report = run_serial(spec)
    ds = open_results(report.store_path)
    mine = ds.sel(model="always_fails")
    assert (mine["status"] == STATUS_FAILED).all() and (
        ds["status"].sel(model="ls_ard") == STATUS_DONE).all()
    n_fits = 2 * ds.sizes["fold"]  # two candidates on every fold
    for error in mine["error"].values.ravel():
        assert error == (f"ValueError: every candidate failed on at least one fold "
                         f"({n_fits} failed fits; first: {SAID})")
    np.testing.assert_array_equal(mine["n_cv_failures"].values.ravel(), [n_fits, n_fits])
    # the run's warning line, with the first error, and what became of those cells
    (line,) = cv_failure_warnings(ds, report.cv_errors)
    assert line == (f"always_fails: {2 * n_fits} CV fit(s) failed in 2 of 2 finished cells "
                    f"(first: {SAID}); those cells failed (their error says why)")
    assert report.methods_without_cells == {"always_fails": (2, mine["error"].values.ravel()[0])}


def test_methodcv_whose_every_fit_fails_says_the_first_error(lab):
    from mccard_dist import MethodCV

    X = np.random.default_rng(0).normal(size=(30, 4))
    with pytest.raises(ValueError, match=f"failed fits; first: {SAID}\\)$"):
        MethodCV("always_fails", cv=3).fit(X, X[:, 0])


@pytest.mark.slow
@pytest.mark.cluster
def test_a_method_that_finished_no_cell_ends_the_run_non_zero_after_the_table(lab, tmp_path,
                                                                             monkeypatch, capfd):
    from mccard_dist import cli, open_results

    store = tmp_path / "cli.zarr"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["mccard-run", "experiment=smoke", *METHODS,
                                      "cluster.n_workers=1", f"store.path={store}"])
    with pytest.raises(SystemExit) as info:
        cli.run()
    out, err = capfd.readouterr()
    first = str(open_results(store)["error"].sel(model="always_fails").values.ravel()[0])
    assert SAID in first
    assert str(info.value.code) == (f"error: always_fails finished no cell (2 failed; first: "
                                    f"{first}); run.retry_failed=true runs their cells again "
                                    "(with run.allow_mixed_versions=true once their code "
                                    "changed)")
    # the table and the other method's results first, and the warning with the user's message
    assert "ls_ard" in out and "results: " in out
    said = [line for line in (out + err).splitlines() if "CV fit(s) failed" in line]
    assert len(said) == 1 and f"(first: {SAID})" in said[0], out + err
    assert (open_results(store)["status"].sel(model="ls_ard") == 1).all()

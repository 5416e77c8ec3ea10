"""BLAS threads of a fit: one at the paper's size, a user's limit kept, the process's count given
back (mccard_dist/models/_threads.py)."""

import threading
from typing import ClassVar

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from mccard_dist import LSARDRegressor, MCCARDRegressor, make_paper_data
from mccard_dist.models import _threads as threads

CPUS = threads.available_cpus()
#: the fits stop after a few iterations: only their threads are watched
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def blas():
    return {i["filepath"]: i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}


class Watched(MCCARDRegressor):
    """MCC-ARD that records the BLAS threads it runs with."""

    seen: ClassVar[list] = []

    def fit(self, X, y, sample_weight=None):
        Watched.seen.append(blas())
        return super().fit(X, y, sample_weight)


@pytest.fixture
def unset(monkeypatch):
    """No limit: none of the variables set (the tests' conftest sets them), the process's BLAS
    on one thread per CPU as OpenBLAS starts; the watched fits' record emptied."""
    for name in threads.LIMIT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    Watched.seen = []
    with threadpool_limits(limits=CPUS, user_api="blas"):
        yield


@pytest.fixture(scope="module")
def paper():
    return make_paper_data(seed=0, psi=0.3, tau=10.0)  # N=300, D=1000


@pytest.fixture(scope="module")
def small():  # fits that keep several threads: small, so a busy machine's threads cost little
    return make_paper_data(seed=0, psi=0.3, tau=10.0, n_train=60, n_features=100)


@pytest.mark.skipif(CPUS < 2, reason="one CPU: one thread whatever the rule")
def test_a_fit_at_the_papers_size_without_a_limit_runs_on_one_thread_and_gives_them_back(
        unset, paper):
    before = blas()
    Watched(kernel_width=5.0, max_iter=2).fit(paper.X_train, paper.y_train)
    assert set(before.values()) == {CPUS}
    assert Watched.seen and all(set(s.values()) == {1} for s in Watched.seen)
    assert blas() == before


def test_a_threadpool_limit_is_kept(unset, small, monkeypatch):
    # as on a 4-core machine: a limit of 2 is not the CPU count, so it is the user's
    monkeypatch.setattr(threads, "available_cpus", lambda: 4)
    with threadpool_limits(limits=2, user_api="blas"):
        Watched(kernel_width=5.0, max_iter=2).fit(small.X_train, small.y_train)
    assert Watched.seen and all(set(s.values()) == {2} for s in Watched.seen)


@pytest.mark.skipif(CPUS < 2 or len(blas()) < 2, reason="needs two BLAS libraries and CPUs")
def test_a_limit_on_one_blas_library_holds_for_each_in_a_fit(unset, small):
    """``threadpool_limits(1)`` made after numpy loaded its OpenBLAS and before scipy loaded its
    own limits numpy's alone: the fit runs both on one thread, and gives scipy's back."""
    from threadpoolctl import ThreadpoolController

    first = ThreadpoolController().select(user_api="blas").lib_controllers[0]
    first.set_num_threads(1)
    try:
        before = blas()
        Watched(kernel_width=5.0, max_iter=2).fit(small.X_train, small.y_train)
        after = blas()
    finally:
        first.set_num_threads(CPUS)
    assert sorted(before.values()) == [1] + [CPUS] * (len(before) - 1)
    assert Watched.seen and all(set(s.values()) == {1} for s in Watched.seen)
    assert after == before


@pytest.mark.skipif(CPUS < 2, reason="one CPU: one thread whatever the rule")
def test_an_environment_variable_is_a_limit(unset, small, monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", str(CPUS))
    Watched(kernel_width=5.0, max_iter=2).fit(small.X_train, small.y_train)
    assert Watched.seen and all(set(s.values()) == {CPUS} for s in Watched.seen)


@pytest.mark.skipif(CPUS < 2, reason="one CPU: one thread whatever the rule")
def test_a_size_that_pays_for_threads_keeps_the_processes(unset, small, monkeypatch):
    monkeypatch.setattr(threads, "THREADS_MIN_COST", 60 * 100 * 60)
    Watched(kernel_width=5.0, max_iter=2).fit(small.X_train, small.y_train)
    assert Watched.seen and all(set(s.values()) == {CPUS} for s in Watched.seen)


@pytest.mark.skipif(CPUS < 2, reason="one CPU: one thread whatever the rule")
def test_a_fit_in_another_thread_during_a_fit_keeps_its_limit_and_both_give_it_back(unset, paper):
    """The limit is process-wide: a fit that starts while another thread's fit holds one thread
    runs with it, and whichever ends first, the process ends with its threads."""
    inside = threading.Barrier(2, timeout=60)
    seen = []

    class Meeting(LSARDRegressor):
        def fit(self, X, y, sample_weight=None):
            inside.wait()  # both fits are running now
            seen.append(blas())
            return super().fit(X, y, sample_weight)

    X, y = paper.X_train, paper.y_train
    before = blas()
    other = threading.Thread(target=lambda: Meeting(max_iter=1).fit(X, y))
    other.start()
    Meeting(max_iter=3).fit(X, y)  # in the main thread, which holds threadpoolctl's control
    other.join()
    assert len(seen) == 2 and all(set(s.values()) == {1} for s in seen)
    assert blas() == before


def test_a_fit_on_data_that_is_not_2d_is_refused_as_before(unset):
    with pytest.raises(ValueError, match="2D array"):
        MCCARDRegressor().fit(np.ones(5), np.ones(5))


def test_a_fits_warning_points_at_the_line_that_called_fit():
    """The BLAS-thread wrapper around ``fit`` is one more frame: the estimators' warnings still
    name the caller's line, not the wrapper's."""
    import warnings

    import numpy as np

    from mccard_dist import LSARDRegressor, MCCARDRegressor

    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 5))
    y = X[:, 0] + 0.1 * rng.standard_normal(30)
    for model in (MCCARDRegressor(1.0, max_iter=1), LSARDRegressor(max_iter=1)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.fit(X, y)
        assert caught and all(w.filename == __file__ for w in caught), [
            (w.filename, str(w.message)[:60]) for w in caught]


@pytest.mark.skipif(CPUS < 2, reason="one CPU: one thread whatever the rule")
@pytest.mark.parametrize("name", ["MCCARDRegressor", "LSARDRegressor", "MCCL1Regressor",
                                  "MCCARDRegressorCV", "MCCL1RegressorCV",
                                  "AuthorsMCCARDRegressor", "AuthorsLSARDRegressor"])
def test_every_estimators_fit_runs_under_the_rule(unset, small, name):
    """Each public estimator's ``fit`` (a subclass's too) runs on one thread at a small size and
    gives the process's count back."""
    import mccard_dist

    base = getattr(mccard_dist, name)
    seen = []

    class Mine(base):
        def fit(self, X, y, *args, **kwargs):
            seen.append(blas())
            return super().fit(X, y, *args, **kwargs)

    kwargs = {"MCCARDRegressorCV": {"kernel_widths": [1.0, 10.0], "cv": 2},
              "MCCL1RegressorCV": {"kernel_widths": [1.0], "alphas": [0.1], "cv": 2},
              "MCCARDRegressor": {"kernel_width": 5.0, "max_iter": 2},
              "MCCL1Regressor": {"kernel_width": 5.0, "alpha": 0.1}}.get(name, {})
    before = blas()
    Mine(**kwargs).fit(small.X_train, small.y_train)
    assert set(before.values()) == {CPUS}
    assert seen and all(set(s.values()) == {1} for s in seen)
    assert blas() == before

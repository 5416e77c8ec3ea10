"""The CV engine's bookkeeping: ranks as GridSearchCV gives them, racing with scores of any
sign, and MethodCV's warning when the choice lies at an edge of its grid."""

import warnings

import numpy as np
import pytest
from sklearn.linear_model import Lasso, Ridge
from sklearn.metrics import check_scoring
from sklearn.model_selection import GridSearchCV, KFold

from mccard_dist import MethodCV
from mccard_dist.models.search import Search, choose, fit_one, race_survivors, search_results


def _data(n=60, d=8, noise=0.1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = X[:, :3] @ np.array([2.0, -1.0, 0.5]) + noise * rng.standard_normal(n)
    return X, y


def test_ranks_are_grid_search_cvs_on_ties_and_failed_fits():
    """Two penalties above alpha_max give the same empty fit (a tie), a negative one fails
    (NaN): GridSearchCV's ranks from its own split scores, and ours from the same scores."""
    X, y = _data()
    alphas = [100.0, 0.01, 50.0, -1.0, 0.02, 200.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the failed fit's FitFailedWarning
        grid = GridSearchCV(Lasso(), {"alpha": alphas}, cv=KFold(3), error_score=np.nan,
                            scoring="neg_mean_absolute_error").fit(X, y)
    res = grid.cv_results_
    scores = np.column_stack([res[f"split{k}_test_score"] for k in range(3)])
    assert np.isnan(scores[3]).all() and scores[0, 0] == scores[2, 0] == scores[5, 0]
    ours = search_results(scores, {})
    np.testing.assert_array_equal(ours["rank_test_score"], res["rank_test_score"])
    np.testing.assert_array_equal(ours["rank_test_score"], [3, 1, 3, 6, 2, 3])
    # every candidate failed: GridSearchCV ranks them all first
    np.testing.assert_array_equal(search_results(np.full((3, 2), np.nan), {})["rank_test_score"],
                                  [1, 1, 1])


def test_racing_keeps_the_candidates_near_the_best_whatever_the_scores_sign():
    """With r2 (higher is better, near 1) racing drops only the clearly worse candidates; the
    survivors' scores are the unraced search's."""
    X, y = _data(noise=1.0)
    folds = list(KFold(3).split(X))
    alphas = [0.1, 1.0, 10.0, 1e4]
    search = Search([{"alpha": a} for a in alphas], [(c,) for c in range(len(alphas))],
                    lambda *a: fit_one(Ridge(), *a))
    scorer = check_scoring(Ridge(), "r2")
    plain, _, _ = search.fold_scores(X, y, folds, scorer)
    raced, failed, _ = search.fold_scores(X, y, folds, scorer, race=0.25)
    assert failed == 0
    assert plain[:, 0].max() > 0.5 and plain[3, 0] < 0.75 * plain[:, 0].max()
    np.testing.assert_array_equal(raced[:3], plain[:3])  # near the best: scored on every fold
    assert np.isnan(raced[3, 1:]).all()                   # far from it: dropped after fold 0
    assert choose(raced) == choose(plain)


def test_race_survivors_with_losses_below_zero():
    # minus r2: the best mean -0.9; a margin of 0.25 keeps losses up to -0.9 + 0.225 = -0.675
    losses = np.array([[-0.9], [-0.7], [-0.6], [np.nan]])
    np.testing.assert_array_equal(race_survivors(losses, np.ones(4, bool), 0.25),
                                  [True, True, False, False])


def test_method_cv_warns_once_per_grid_whose_edge_it_chose():
    """The Lasso on data with little noise wants a small penalty: a grid that stops above it is
    warned about; a grid around the choice on noisier data is not, nor a grid's edge where the
    CV curve is flat (a wider grid would move along the flat part), nor Huber's choice of its
    smallest epsilon, 1, the parameter's own bound (no wider grid can change it)."""
    X, y = _data(noise=0.01)
    with pytest.warns(UserWarning, match=r"MethodCV\('lasso'\): CV chose alpha_ratio=0\.3, the "
                                         r"smallest value of its grid; the best value may lie "
                                         r"outside it: widen grid=\{'alpha_ratio': \[\.\.\.\]\}"):
        MethodCV("lasso", grid={"alpha_ratio": [0.9, 0.6, 0.3]}, cv=3).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        noisy = _data(d=40, noise=2.0)
        inside = MethodCV("lasso", grid={"alpha_ratio": [0.6, 0.3, 0.15, 0.08, 0.04, 0.02]},
                          cv=3).fit(*noisy)
        assert inside.alpha_ratio_ not in (0.6, 0.02)
        flat = MethodCV("lasso", grid={"alpha_ratio": [0.01, 0.001, 1e-4, 1e-5, 1e-6]},
                        cv=3).fit(X, y)
        assert flat.alpha_ratio_ == 1e-6
        rng = np.random.default_rng(0)
        X = rng.standard_normal((80, 5))
        y = X[:, :3] @ np.array([2.0, -1.0, 0.5]) + 0.1 * rng.standard_normal(80)
        y[:20] += 20.0 * rng.standard_normal(20)  # a quarter of gross outliers
        huber = MethodCV("huber", grid={"epsilon": [1.0, 1.35, 2.0], "alpha": [1e-4]},
                         cv=3).fit(X, y)
        assert huber.epsilon_ == 1.0

"""scikit-learn's Lasso and Huber regression as methods of the pipeline."""

import numpy as np
import pytest
from sklearn.linear_model import HuberRegressor, Lasso

from mccard_dist.config import ConfigError, from_dictconfig
from mccard_dist.data import make_paper_data
from mccard_dist.models import lasso_alpha_max


def test_lasso_alpha_max_is_where_the_lasso_keeps_no_feature():
    d = make_paper_data(3, 0.2, 5.0, n_train=80, n_features=40, n_relevant=5)
    top = lasso_alpha_max(d.X_train, d.y_train)
    assert not np.any(Lasso(alpha=top * 1.0001).fit(d.X_train, d.y_train).coef_)
    assert np.any(Lasso(alpha=top * 0.95).fit(d.X_train, d.y_train).coef_)


@pytest.mark.parametrize("overrides, message", [
    (["methods.huber.grid.epsilon=auto"], "methods.huber.grid.epsilon: cannot be auto"),
    (["+methods.lasso.grid.kernel_width=[1.0]"], "methods.lasso.grid.kernel_width: is not in "
     "lasso's grid, which takes alpha_ratio"),
    (["+methods.huber.kernel_width=[1.0]"], "methods.huber.kernel_width: unknown key"),
    (["+methods.huber.params.epsilon=2.0"], "epsilon must not be set here"),
    (["methods.lasso.grid.alpha_ratio=[]"], "methods.lasso.grid.alpha_ratio: must not be empty"),
    (["cv=alo"], "cv.scheme: alo needs leave-one-out residuals, which lasso, huber do not give"),
])
def test_peer_grids_are_checked_like_the_others(compose, overrides, message):
    with pytest.raises(ConfigError, match=message):
        from_dictconfig(compose(["experiment=smoke", "experiment.methods=[lasso,huber]",
                                 *overrides]))


@pytest.mark.slow
def test_peer_cells_refit_what_cv_chose_as_scikit_learn_would(smoke_spec):
    from mccard_dist import grid
    from mccard_dist.runner import run_serial
    from mccard_dist.store import open_results, store_path

    spec = smoke_spec("experiment.methods=[lasso,huber]", "data.n_features=40", name="peers")
    run_serial(spec)
    ds = open_results(store_path(spec)).load()
    assert (ds["status"] == 1).all()
    for cell in grid.cells(spec):
        data = spec.data.make_data(cell.seed, cell.psi, cell.tau)
        stored = ds.sel(model=cell.method, tau=cell.tau, psi=cell.psi, seed=cell.seed)
        alpha = float(stored["chosen_alpha"])
        if cell.method == "lasso":
            ratio = float(stored["chosen_alpha_ratio"])
            assert ratio in spec.method("lasso").grid["alpha_ratio"]
            assert alpha == pytest.approx(ratio * lasso_alpha_max(data.X_train, data.y_train))
            assert "chosen_kernel_width" not in ds  # neither peer has a kernel width
            ref = Lasso(alpha=alpha, max_iter=5000, tol=1e-4)
        else:
            # Huber's values under Huber's names: epsilon, and alpha itself
            epsilon = float(stored["chosen_epsilon"])
            assert epsilon in spec.method("huber").grid["epsilon"]
            assert alpha in spec.method("huber").grid["alpha"]
            assert np.isnan(float(stored["chosen_alpha_ratio"]))
            ref = HuberRegressor(epsilon=epsilon, alpha=alpha, max_iter=1000)
        scores = stored["cv_score"]
        n_candidates = len(grid.cv_candidates(spec.method(cell.method)))
        assert np.isfinite(scores.isel(candidate=slice(0, n_candidates)).values).all()
        assert np.isnan(scores.isel(candidate=slice(n_candidates, None)).values).all()
        ref.fit(data.X_train, data.y_train)
        np.testing.assert_allclose(stored["coef"].values, ref.coef_, rtol=1e-7, atol=1e-10)
    # the candidates' values, each under its method's names
    huber = ds.sel(model="huber")
    grid_ = spec.method("huber").grid
    np.testing.assert_array_equal(huber["epsilon"].values,
                                  np.repeat(grid_["epsilon"], len(grid_["alpha"])))
    np.testing.assert_array_equal(huber["alpha"].values, grid_["alpha"] * len(grid_["epsilon"]))
    assert np.isnan(huber["alpha_ratio"].values).all()
    assert np.isnan(ds["epsilon"].sel(model="lasso").values).all()
    # Huber's epsilon is not a kernel width: no CV-curve or chosen-width panel for either peer
    from mccard_dist.analysis.plotting import FigureUnavailable
    from mccard_dist.analysis.width_figures import fig_chosen_kernel_width

    with pytest.raises(FigureUnavailable):
        fig_chosen_kernel_width(ds)

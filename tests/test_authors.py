"""The authors' published MCC-ARD and LS-ARD against outputs of their own code (GNU Octave), and on
data the tests make themselves. The three small cases are vendored in tests/data/authors."""

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone

from mccard_dist import AuthorsLSARDRegressor, AuthorsMCCARDRegressor, make_paper_data

#: the three small cases, vendored (PROVENANCE.md there); the paper-size one stays in the shared
#: reference set and runs only where that is present
VENDORED = Path(__file__).resolve().parent / "data" / "authors"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "reference" / "authors"


def cases():
    vendored = json.loads((VENDORED / "cases.json").read_text())
    if (SHARED / "cases.json").is_file():
        vendored += [c for c in json.loads((SHARED / "cases.json").read_text())
                     if c["case"] == "paper_size"]
    return vendored


def load(case):
    folder = VENDORED if (VENDORED / f"{case['case']}.npz").is_file() else SHARED
    return np.load(folder / f"{case['case']}.npz")


def test_the_vendored_cases_are_there_and_equal_the_shared_ones():
    names = [c["case"] for c in json.loads((VENDORED / "cases.json").read_text())]
    assert names == ["small_dual", "mid_dual", "primal"]
    for name in names:
        assert (VENDORED / f"{name}.npz").is_file(), f"tests/data/authors/{name}.npz is missing"
        if (SHARED / f"{name}.npz").is_file():
            assert (VENDORED / f"{name}.npz").read_bytes() == (SHARED / f"{name}.npz").read_bytes()


@pytest.mark.skipif(not (SHARED / "cases.json").is_file(),
                    reason=f"the shared reference set is not in this checkout ({SHARED})")
def test_the_reference_cases_are_all_there():
    assert [c["case"] for c in cases()] == ["small_dual", "mid_dual", "primal", "paper_size"]


def _case_params():
    """The reference cases; the paper-size one (about a second) runs with the slow tests."""
    return [pytest.param(c, marks=pytest.mark.slow) if c["case"] == "paper_size" else c
            for c in cases()]


@pytest.mark.parametrize("case", _case_params(), ids=lambda c: c["case"])
def test_mcc_ard_reproduces_the_authors_code(case):
    d = load(case)
    model = AuthorsMCCARDRegressor(float(d["kernel_width"])).fit(d["X_train"], d["y_train"])
    np.testing.assert_array_equal(model.coef_standardised_ != 0, d["sbcl_coef"] != 0)
    assert int(model.active_.sum()) == case["sbcl_active"]
    ref = d["sbcl_pred"]
    np.testing.assert_allclose(model.predict(d["X_test"]), ref, rtol=1e-8,
                               atol=1e-8 * np.max(np.abs(ref)))
    np.testing.assert_allclose(model.coef_standardised_, d["sbcl_coef"], rtol=1e-8,
                               atol=1e-8 * np.max(np.abs(d["sbcl_coef"])))


#: mid_dual: the iteration runs down to sigma^2 ~ 4e-7 and amplifies rounding by ~1e8; every order
#: of the same operations tried in numpy (6 of them) lands 5e-8 to 1e-7 from Octave's output, with
#: the same support. The other reproducible cases agree to 1e-13.
LS_TOLERANCE = {"small_dual": 1e-8, "mid_dual": 1e-6, "primal": 1e-8}


@pytest.mark.parametrize("case", [c for c in cases() if c["sbl_reproducible"]],
                         ids=lambda c: c["case"])
def test_ls_ard_reproduces_the_authors_code_where_it_is_reproducible(case):
    d = load(case)
    model = AuthorsLSARDRegressor().fit(d["X_train"], d["y_train"])
    np.testing.assert_array_equal(model.coef_standardised_ != 0, d["sbl_coef"] != 0)
    assert int(model.active_.sum()) == case["sbl_active"]
    ref = d["sbl_pred"]
    tol = LS_TOLERANCE[case["case"]]
    np.testing.assert_allclose(model.predict(d["X_test"]), ref, rtol=tol,
                               atol=tol * np.max(np.abs(ref)))


# -- without the reference files ------------------------------------------------------------------
@pytest.fixture(scope="module")
def data():
    return make_paper_data(seed=5, psi=0.1, tau=5.0, n_train=120, n_features=60, n_relevant=5)


@pytest.mark.parametrize("estimator", [AuthorsMCCARDRegressor(3.0), AuthorsLSARDRegressor()],
                         ids=lambda e: type(e).__name__)
def test_fit_on_standardised_data_and_predict_on_raw(estimator, data):
    X, y = data.X_train, data.y_train
    model = clone(estimator).fit(X, y)
    # their pipeline, computed here: standardise with the training statistics (ddof=1)
    mx, sx = X.mean(axis=0), X.std(axis=0, ddof=1)
    my, sy = y.mean(), y.std(ddof=1)
    expected = ((data.X_test - mx) / sx) @ model.coef_standardised_ * sy + my
    np.testing.assert_allclose(model.predict(data.X_test), expected, rtol=1e-10, atol=1e-10)
    assert model.converged_


def test_mcc_ard_is_robust_where_their_ls_ard_is_not(data):
    model = AuthorsMCCARDRegressor(3.0).fit(data.X_train, data.y_train)
    ls = AuthorsLSARDRegressor().fit(data.X_train, data.y_train)
    assert model.active_[data.relevant_mask].all()
    assert model.score(data.X_test, data.y_test) > ls.score(data.X_test, data.y_test) + 0.5


def test_the_w_step_is_the_printed_one(data):
    """At the fit's final relevances and active set, one more printed w-step
    ``w = (X^T K X + A)^-1 X^T K y`` (standardised units, no 1/h) barely moves w."""
    X, y = data.X_train, data.y_train
    h = 3.0
    model = AuthorsMCCARDRegressor(h, a_tol=1e-6, w_tol=1e-12, max_iter=2000).fit(X, y)
    Xz = (X - X.mean(axis=0)) / X.std(axis=0, ddof=1)
    yz = (y - y.mean()) / y.std(ddof=1)
    act = model.active_
    w = model.coef_standardised_[act]
    e = yz - Xz[:, act] @ w
    k = np.exp(-e * e / (2 * h))
    M = Xz[:, act].T @ (k[:, None] * Xz[:, act]) + np.diag(model.relevance_[act])
    step = np.linalg.solve(M, Xz[:, act].T @ (k * yz))
    np.testing.assert_allclose(step, w, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("params, message", [
    ({"kernel_width": -1.0}, r"'kernel_width' parameter of AuthorsMCCARDRegressor must be a float in the range \(0.0, inf\)"),
    ({"kernel_width": "auto"}, r"'kernel_width' parameter of AuthorsMCCARDRegressor must be a float in the range \(0.0, inf\)\. Got 'auto'"),
    ({"w_steps": 0}, r"'w_steps' parameter of AuthorsMCCARDRegressor must be an int in the range \[1, inf\)"),
    ({"a_tol": 0.0}, r"'a_tol' parameter of AuthorsMCCARDRegressor must be a float in the range \(0.0, inf\)"),
])
def test_bad_parameters_are_refused_naming_them(params, message, data):
    with pytest.raises(ValueError, match=message):
        AuthorsMCCARDRegressor(**params).fit(data.X_train, data.y_train)

"""MCC-L1 along a decreasing sequence of penalties, each fit warm-started from the previous one."""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_X_y

from ._base import check_sample_weight
from ._width import is_auto
from .mcc_l1 import MCCL1Regressor, mcc_l1_alpha_max

__all__ = ["MCCL1Path", "check_alphas", "fit_path", "iter_path", "mcc_l1_path",
           "penalty_sequence"]


def iter_path(model, X, y, widths, alphas, warm_start=True, sample_weight=None):
    """Fit ``model`` (an :class:`MCCL1Regressor`, ``"cd"`` or ``"lasso"``) at each
    ``(widths[k], alphas[k])`` on validated arrays, yielding it (the same object) after each fit.

    With ``warm_start`` each fit starts from the previous one's coefficients and intercept, and
    at an unchanged width the first inner solve screens columns by the strong rule. Over
    decreasing widths this is a continuation through wider, closer-to-convex objectives."""
    start, previous, last_width = None, None, None
    design_t = np.ascontiguousarray(X.T, dtype=np.float64) if model.solver == "cd" else None
    for h, alpha in zip(widths, alphas):
        model.set_params(kernel_width=float(h), alpha=float(alpha))
        model._validate_params()
        model._fit_arrays(X, y, start, previous if h == last_width else None,
                          sample_weight=sample_weight, design_t=design_t)
        yield model
        if warm_start:
            start, previous, last_width = (model.coef_, model.intercept_), model.alpha, h


def fit_path(models, X, y, sample_weight=None):
    """:func:`iter_path` through the widths and penalties of ``models`` (in the path's order,
    the same other parameters), refitting the first."""
    return iter_path(models[0], X, y, [m.kernel_width for m in models],
                     [m.alpha for m in models], sample_weight=sample_weight)


@dataclass(frozen=True)
class MCCL1Path:
    """The fits of :func:`mcc_l1_path`, one column per penalty, largest penalty first.

    Attributes
    ----------
    alphas : ndarray of shape (n_alphas,)
        The penalties, decreasing.
    coefs : ndarray of shape (n_features, n_alphas)
    intercepts, n_iter, converged : ndarray of shape (n_alphas,)
    order : ndarray of int, shape (n_alphas,)
        ``alphas == alphas_given[order]``: where each fit's penalty was in the sequence given.
    """

    alphas: np.ndarray
    coefs: np.ndarray
    intercepts: np.ndarray
    n_iter: np.ndarray
    converged: np.ndarray
    order: np.ndarray

    def predict(self, X) -> np.ndarray:
        """Predictions of every fit on ``X``: shape (n_samples, n_alphas)."""
        return np.asarray(X, dtype=float) @ self.coefs + self.intercepts


def check_alphas(alphas) -> np.ndarray:
    """``alphas`` as a float array; ValueError unless non-empty, 1-D, finite and ``>= 0``."""
    given = np.atleast_1d(np.asarray(alphas, dtype=float))
    if given.ndim != 1 or given.size == 0 or not np.all(np.isfinite(given)) or np.any(given < 0):
        raise ValueError(f"alphas must be a non-empty 1-D sequence of finite numbers >= 0, "
                         f"got {alphas!r}")
    return given


def penalty_sequence(alpha_max: float, n_alphas: int = 100, eps: float = 1e-3) -> np.ndarray:
    """``n_alphas`` penalties log-spaced from ``alpha_max`` down to ``eps * alpha_max`` (as
    ``lasso_path``); zeros where ``alpha_max`` is 0 (a constant ``y``)."""
    if isinstance(n_alphas, bool) or not isinstance(n_alphas, numbers.Integral) or n_alphas < 1:
        raise ValueError(f"n_alphas must be an integer >= 1, got {n_alphas!r}")
    if not (isinstance(eps, numbers.Real) and 0.0 < eps < 1.0):
        raise ValueError(f"eps must be a number in (0, 1), got {eps!r}")
    if alpha_max <= 0.0:
        return np.zeros(n_alphas)
    return np.geomspace(alpha_max, alpha_max * eps, num=n_alphas)


def mcc_l1_path(X, y, kernel_width, *, alphas=None, n_alphas=100, eps=1e-3, warm_start=True,
                check_input=True, sample_weight=None, **params) -> MCCL1Path:
    """Fit MCC-L1 at a fixed kernel width for a sequence of penalties.

    The penalties are fitted from the largest down. With ``warm_start`` (the default) each fit
    starts where the previous one ended (coefficients, intercept, kernel weights), and the first
    inner Lasso solve takes its working set from the sequential strong rule (Tibshirani et al.,
    2012), then checks every other column's optimality condition as a cold fit does. The
    objective is not convex: at widths large against the inliers' residuals warm and cold fits
    agree within the solver's tolerance, but at small widths the warm path follows the sparse
    fits of the large penalties, whose kernel weights treat most samples as outliers, and can
    end at another stationary point than a fit from ``w = 0``, at a lower or higher objective.
    ``warm_start=False`` makes every fit from ``w = 0``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    kernel_width : float
        The width ``h > 0`` (``"auto"`` moves ``h`` inside each fit, so a fit cannot start from
        another; fit each penalty with :class:`MCCL1Regressor`).
    alphas : array-like, optional
        The penalties (``>= 0``), in any order. Default: ``n_alphas`` of them log-spaced from
        :func:`mcc_l1_alpha_max` down to ``eps`` times it.
    n_alphas : int, default=100
    eps : float, default=1e-3
    warm_start : bool, default=True
    check_input : bool, default=True
        Validate ``X`` and ``y`` (skip for arrays already float64 and finite).
    sample_weight : array-like of shape (n_samples,), optional
        As in :meth:`MCCL1Regressor.fit`.
    **params
        Other :class:`MCCL1Regressor` parameters (``solver`` ``"cd"`` or ``"lasso"``,
        ``max_iter``, ``tol``, ``working_set``, ``fit_intercept``).

    Returns
    -------
    MCCL1Path

    Examples
    --------
    >>> from mccard_dist import make_paper_data, mcc_l1_path
    >>> d = make_paper_data(seed=0, psi=0.2, tau=5.0, n_train=100, n_features=50, n_relevant=5)
    >>> path = mcc_l1_path(d.X_train, d.y_train, 1.0, n_alphas=5)
    >>> path.coefs.shape, bool(path.alphas[0] > path.alphas[-1])
    ((50, 5), True)
    """
    if is_auto(kernel_width):
        raise ValueError("mcc_l1_path needs a numeric kernel_width; with 'auto' fit each "
                         "penalty with MCCL1Regressor(kernel_width='auto')")
    model = MCCL1Regressor(kernel_width=kernel_width, **params)
    model._validate_params()
    if model.solver == "em":
        raise ValueError("mcc_l1_path needs solver='cd' or 'lasso' (EM keeps a zero coefficient "
                         "at zero, so it cannot start from a sparser fit)")
    if check_input:
        X, y = check_X_y(X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=2)
        X = np.ascontiguousarray(X)
    sample_weight = check_sample_weight(sample_weight, X)
    if alphas is None:
        alpha_max = mcc_l1_alpha_max(X, y, kernel_width, model.fit_intercept, sample_weight)
        alphas = penalty_sequence(alpha_max, n_alphas, eps)
    given = check_alphas(alphas)
    order = np.argsort(-given, kind="stable")
    n_features = X.shape[1]
    coefs = np.zeros((n_features, given.size))
    intercepts = np.zeros(given.size)
    n_iter = np.zeros(given.size, dtype=int)
    converged = np.zeros(given.size, dtype=bool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for k, fitted in enumerate(iter_path(model, X, y, np.full(given.size, kernel_width),
                                             given[order], warm_start, sample_weight)):
            coefs[:, k] = fitted.coef_
            intercepts[k] = fitted.intercept_
            n_iter[k] = fitted.n_iter_
            converged[k] = fitted.converged_
    if not converged.all():
        warnings.warn(f"MCC-L1 did not converge at {int((~converged).sum())} of {given.size} "
                      f"penalties (max_iter={model.max_iter}, tol={model.tol!r})",
                      ConvergenceWarning, stacklevel=2)
    return MCCL1Path(given[order], coefs, intercepts, n_iter, converged, order)

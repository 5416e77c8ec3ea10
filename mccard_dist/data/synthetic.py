"""The paper's synthetic regression problem with outlier-contaminated training targets.

Every dataset is a pure function of its arguments, so a worker rebuilds the data from a small key
``(seed, psi, tau)`` instead of receiving arrays, and every method sees the same data for the same
key. Each random component draws from its own stream of ``seed`` (the ``_STREAM_*`` keys below).
With ``rho > 0`` the features of both design matrices are an AR(1) sequence built from the same
standard normals, ``x_d = rho x_{d-1} + sqrt(1 - rho^2) z_d`` (unit variances, correlation
``rho^|i-j|``). With ``leverage`` the outlying training rows get their relevant features shifted by
``tau`` after ``y_train`` is computed from the clean rows (bad leverage points).

``psi`` and ``tau`` only transform the draws, they never change them: for a fixed seed the design
matrices (``X_train`` except with ``leverage``), ``coef_true``, ``y_test`` and the inlier noise are
the same for every ``psi`` and ``tau``, the outliers at a smaller ``psi`` are a subset of those at
a larger one, and the outlier noise is proportional to ``tau``, so curves over ``psi`` or ``tau``
are paired comparisons. ``n_test`` does not affect the training data, nor ``n_train`` the test data.
"""

from __future__ import annotations

import logging
import math
import numbers
from dataclasses import dataclass, field

import numpy as np

__all__ = ["OUTLIERS", "PaperData", "make_paper_data"]

logger = logging.getLogger(__name__)

# Fixed per-component stream keys. Never renumber: stored results depend on them.
_STREAM_X_TRAIN = 0  # (n_train, n_features) standard normals
_STREAM_X_TEST = 1  # (n_test, n_features) standard normals
_STREAM_COEF = 2  # n_relevant standard normals, the non-zero entries of coef_true
_STREAM_GAUSS = 3  # n_train standard normals, inlier noise (times sqrt(noise_var))
_STREAM_UNIFORM = 4  # n_train uniforms on [0, 1), outlier indicators u < psi
_STREAM_LAPLACE = 5  # n_train unit Laplace draws, outlier noise (times tau; one_sided: |.|)
_STREAM_GAUSS_OUTLIER = 6  # n_train standard normals (outliers="gaussian" only)
_STREAM_STUDENT_T = 7  # n_train Student-t draws with df degrees of freedom ("student_t" only)
_STREAM_CAUCHY = 8  # n_train standard Cauchy draws ("cauchy" only)

#: outlier distributions of ``make_paper_data`` (each scaled by ``tau``)
OUTLIERS = ("laplace", "gaussian", "student_t", "cauchy", "one_sided")


@dataclass(frozen=True, eq=False)
class _CellData:
    """The arrays and key shared by :class:`PaperData` and :class:`~mccard_dist.data.SplitData`."""

    X_train: np.ndarray = field(repr=False)
    y_train: np.ndarray = field(repr=False)
    X_test: np.ndarray = field(repr=False)
    y_test: np.ndarray = field(repr=False)
    coef_true: np.ndarray | None = field(repr=False)
    outlier_mask: np.ndarray = field(repr=False)
    seed: int
    psi: float
    tau: float
    n_train: int
    n_test: int
    n_features: int

    @property
    def relevant_mask(self) -> np.ndarray | None:
        """ndarray of shape (n_features,), dtype bool: True where ``coef_true != 0`` (None when
        the true coefficients are unknown)."""
        return None if self.coef_true is None else self.coef_true != 0


@dataclass(frozen=True, eq=False)
class PaperData(_CellData):
    """One draw of the paper's synthetic problem (returned by :func:`make_paper_data`).

    The arrays are read-only; copy them before modifying.

    Attributes
    ----------
    X_train : ndarray of shape (n_train, n_features)
        Training design matrix, i.i.d. standard normal entries.
    y_train : ndarray of shape (n_train,)
        Training targets ``X_train @ coef_true + noise`` with the contaminated noise.
    X_test : ndarray of shape (n_test, n_features)
        Test design matrix, i.i.d. standard normal entries.
    y_test : ndarray of shape (n_test,)
        Noise-free test targets ``X_test @ coef_true``.
    coef_true : ndarray of shape (n_features,)
        Generating coefficients: the first ``n_relevant`` entries N(0, 1), the rest exactly 0.
    outlier_mask : ndarray of shape (n_train,), dtype bool
        True where the training noise came from the Laplace (outlier) component.
    seed, psi, tau, n_train, n_test, n_features, n_relevant, noise_var, outliers, df, leverage, rho
        The arguments the data were generated with.
    """

    n_relevant: int
    noise_var: float
    outliers: str = "laplace"
    df: float | None = None
    leverage: bool = False
    rho: float = 0.0


def _check_int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_real(name: str, value, expected: str = "", ok=lambda v: True) -> float:
    """``value`` as a finite float for which ``ok`` holds, else ValueError: "name must be
    ``expected``"."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if not ok(value):
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    return value


def _read_only(*arrays):
    """Mark the arrays (None skipped) read-only."""
    for array in arrays:
        if array is not None:
            array.setflags(write=False)


def _rng(seed: int, stream: int) -> np.random.Generator:
    """Generator for one component; equal to ``SeedSequence(seed).spawn(...)[stream]``."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(stream,)))


def make_paper_data(
    seed: int,
    psi: float,
    tau: float,
    n_train: int = 300,
    n_test: int = 300,
    n_features: int = 1000,
    n_relevant: int = 30,
    noise_var: float = 0.05,
    outliers: str = "laplace",
    df: float | None = None,
    leverage: bool = False,
    rho: float = 0.0,
) -> PaperData:
    r"""Generate the synthetic problem of the paper's experiments.

    Parameters
    ----------
    seed : int
        Non-negative seed; with the other arguments it determines the data completely.
    psi : float
        Outlier proportion in [0, 1]: each training sample's noise comes from the Laplace
        component with probability ``psi``.
    tau : float
        Scale of the Laplace outlier noise (density ``exp(-|e| / tau) / (2 tau)``), > 0.
    n_train : int, default=300
        Number of training samples, >= 2.
    n_test : int, default=300
        Number of test samples, >= 1.
    n_features : int, default=1000
        Number of features D, >= 1.
    n_relevant : int, default=30
        Number of non-zero generating coefficients, 0 <= n_relevant <= n_features.
    noise_var : float, default=0.05
        Variance of the Gaussian (inlier) training noise, >= 0.
    outliers : str, default="laplace"
        Distribution of the outlier noise, scaled by ``tau``: ``laplace`` (the paper's),
        ``gaussian`` (N(0, tau^2)), ``student_t`` (``df`` degrees of freedom, scale tau),
        ``cauchy`` (scale tau) or ``one_sided`` (``|Laplace(0, tau)|``: every outlier pushes y up).
    df : float, optional
        Degrees of freedom of ``student_t`` (> 0; required there, not used otherwise).
    leverage : bool, default=False
        Also corrupt the covariates of the outlying training rows: their relevant features are
        shifted by ``tau`` (after ``y_train`` is computed from the clean rows).
    rho : float, default=0.0
        Correlation of neighbouring features, in [0, 1): feature covariance ``rho^|i-j|``.

    Returns
    -------
    PaperData
        The arrays and the arguments they were generated with.

    Raises
    ------
    ValueError
        If an argument is out of range or of the wrong type; the message names it.

    Notes
    -----
    The generating model (no intercept) is

    .. math::

        x_{nd} \sim N(0, 1), \quad w^*_d \sim N(0, 1) \text{ for } d < n_{relevant},
        \quad w^*_d = 0 \text{ otherwise},

        y_n = x_n^\top w^* + e_n, \quad
        e_n = \tau\,\ell_n \text{ if } u_n < \psi, \text{ else } \sqrt{\text{noise\_var}}\; g_n,

    with :math:`g_n \sim N(0, 1)`, :math:`u_n \sim U[0, 1)` and :math:`\ell_n \sim
    \mathrm{Laplace}(0, 1)`, so the noise is the mixture ``(1 - psi) N(0, noise_var) + psi
    Laplace(0, tau)``. Test targets carry no noise. The random streams (common random numbers
    across ``psi`` and ``tau``) are listed in :mod:`mccard_dist.data.synthetic`.

    Examples
    --------
    >>> from mccard_dist.data import make_paper_data
    >>> data = make_paper_data(seed=0, psi=0.1, tau=5.0)
    >>> data.X_train.shape, data.X_test.shape, int(data.relevant_mask.sum())
    ((300, 1000), (300, 1000), 30)
    """
    seed = _check_int("seed", seed, 0)
    psi = _check_real("psi", psi, "in [0, 1]", lambda v: 0.0 <= v <= 1.0)
    tau = _check_real("tau", tau, "> 0", lambda v: v > 0.0)
    noise_var = _check_real("noise_var", noise_var, ">= 0", lambda v: v >= 0.0)
    n_train = _check_int("n_train", n_train, 2)
    n_test = _check_int("n_test", n_test, 1)
    n_features = _check_int("n_features", n_features, 1)
    n_relevant = _check_int("n_relevant", n_relevant, 0)
    if n_relevant > n_features:
        raise ValueError(f"n_relevant must be <= n_features ({n_features}), got {n_relevant!r}")
    if outliers not in OUTLIERS:
        raise ValueError(f"outliers must be one of {', '.join(OUTLIERS)}, got {outliers!r}")
    if outliers == "student_t":
        if df is None:
            raise ValueError("df (degrees of freedom) is required with outliers='student_t'")
        df = _check_real("df", df, "> 0", lambda v: v > 0)
    elif df is not None:
        raise ValueError(f"df is only used with outliers='student_t', got df={df!r}")
    rho = _check_real("rho", rho, "in [0, 1)", lambda v: 0.0 <= v < 1.0)
    leverage = bool(leverage)

    X_train = _design(_rng(seed, _STREAM_X_TRAIN).standard_normal((n_train, n_features)), rho)
    X_test = _design(_rng(seed, _STREAM_X_TEST).standard_normal((n_test, n_features)), rho)
    coef_true = np.zeros(n_features)
    coef_true[:n_relevant] = _rng(seed, _STREAM_COEF).standard_normal(n_relevant)
    gauss = _rng(seed, _STREAM_GAUSS).standard_normal(n_train)
    uniform = _rng(seed, _STREAM_UNIFORM).random(n_train)
    unit = _unit_outliers(seed, n_train, outliers, df)

    outlier_mask = uniform < psi
    noise = np.where(outlier_mask, tau * unit, math.sqrt(noise_var) * gauss)
    y_train = X_train @ coef_true + noise
    y_test = X_test @ coef_true
    if leverage:
        X_train[np.ix_(outlier_mask, np.arange(n_relevant))] += tau

    arrays = (X_train, y_train, X_test, y_test, coef_true, outlier_mask)
    _read_only(*arrays)
    logger.debug("make_paper_data(seed=%d, psi=%g, tau=%g): %d of %d training samples are "
                 "outliers", seed, psi, tau, int(outlier_mask.sum()), n_train)
    return PaperData(*arrays, seed=seed, psi=psi, tau=tau, n_train=n_train, n_test=n_test,
                     n_features=n_features, n_relevant=n_relevant, noise_var=noise_var,
                     outliers=outliers, df=df, leverage=leverage, rho=rho)


def _design(z: np.ndarray, rho: float) -> np.ndarray:
    """Rows of an AR(1) sequence over the features from standard normals ``z`` (``rho = 0``:
    ``z`` itself): unit variances, correlation ``rho^|i-j|``."""
    if rho == 0.0:
        return z
    x = np.empty_like(z)
    x[:, 0] = z[:, 0]
    scale = math.sqrt(1.0 - rho * rho)
    for d in range(1, z.shape[1]):
        x[:, d] = rho * x[:, d - 1] + scale * z[:, d]
    return x


def _unit_outliers(seed: int, n: int, outliers: str, df: float | None) -> np.ndarray:
    """Outlier noise of scale 1 (multiplied by ``tau``), each distribution from its own stream."""
    if outliers == "laplace":
        return _rng(seed, _STREAM_LAPLACE).laplace(0.0, 1.0, n)
    if outliers == "one_sided":
        return np.abs(_rng(seed, _STREAM_LAPLACE).laplace(0.0, 1.0, n))
    if outliers == "gaussian":
        return _rng(seed, _STREAM_GAUSS_OUTLIER).standard_normal(n)
    if outliers == "student_t":
        return _rng(seed, _STREAM_STUDENT_T).standard_t(df, n)
    return _rng(seed, _STREAM_CAUCHY).standard_cauchy(n)

"""Estimators: MCC-ARD, LS-ARD and MCC-L1, their CV estimators and MCC-L1's paths; the peer
baselines: scikit-learn's Lasso and Huber regression, Huber regression with an L1 or MCP penalty
(skglm) and LAD-Lasso. ``__all__`` is what a user imports; the other names
are pieces other rooms of the package use.
"""

from ._base import resolve_relevance_update, resolve_solver
from ._likelihoods import log_density  # noqa: F401
from ._linalg import RidgeSteps, weighted_ridge  # noqa: F401
from ._sequential import ard_evidence  # noqa: F401
from ._width import AUTO as AUTO_WIDTH  # noqa: F401
from .authors import AuthorsLSARDRegressor, AuthorsMCCARDRegressor
from .cv import MCCARDRegressorCV
from .ls_ard import LSARDRegressor
from .mcc_ard import MCCARDRegressor
from .mcc_l1 import MCCL1Regressor, mcc_l1_alpha_max, mcc_l1_objective
from .mcc_l1_cv import MCCL1RegressorCV
from .mcc_l1_path import MCCL1Path, mcc_l1_path
from .peers import (HuberBaseline, HuberL1Regressor, HuberMCPRegressor,  # noqa: F401
                    LADLassoRegressor, LassoBaseline, huber_alpha_max, huber_scale,
                    lad_alpha_max, lasso_alpha_max, mcp_gamma_bound)

__all__ = [
    "AuthorsLSARDRegressor",
    "AuthorsMCCARDRegressor",
    "HuberBaseline",
    "HuberL1Regressor",
    "HuberMCPRegressor",
    "LADLassoRegressor",
    "LassoBaseline",
    "LSARDRegressor",
    "MCCARDRegressor",
    "MCCARDRegressorCV",
    "MCCL1Path",
    "MCCL1Regressor",
    "MCCL1RegressorCV",
    "huber_alpha_max",
    "huber_scale",
    "lad_alpha_max",
    "mcc_l1_alpha_max",
    "mcc_l1_objective",
    "mcc_l1_path",
    "mcp_gamma_bound",
    "resolve_relevance_update",
    "resolve_solver",
]


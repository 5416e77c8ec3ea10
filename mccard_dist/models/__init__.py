"""Estimators: MCC-ARD (deviant and proper likelihood), LS-ARD and MCC-L1; scikit-learn's Lasso
and Huber regression as peer baselines."""

from ._base import FIT_ERRORS
from ._likelihoods import log_density
from ._linalg import RidgeSteps, weighted_ridge
from ._sequential import ard_evidence
from ._width import AUTO as AUTO_WIDTH
from .authors import AuthorsLSARDRegressor, AuthorsMCCARDRegressor
from .cv import MCCARDRegressorCV
from .ls_ard import LSARDRegressor
from .mcc_ard import MCCARDRegressor
from .mcc_l1 import MCCL1Regressor, mcc_l1_alpha_max, mcc_l1_objective
from .mcc_l1_cv import MCCL1RegressorCV
from .mcc_l1_path import MCCL1Path, mcc_l1_path
from .peers import HuberBaseline, LassoBaseline, lasso_alpha_max

__all__ = [
    "AUTO_WIDTH",
    "FIT_ERRORS",
    "AuthorsLSARDRegressor",
    "AuthorsMCCARDRegressor",
    "HuberBaseline",
    "LassoBaseline",
    "LSARDRegressor",
    "MCCARDRegressor",
    "MCCARDRegressorCV",
    "MCCL1Path",
    "MCCL1Regressor",
    "MCCL1RegressorCV",
    "RidgeSteps",
    "ard_evidence",
    "lasso_alpha_max",
    "log_density",
    "mcc_l1_alpha_max",
    "mcc_l1_objective",
    "mcc_l1_path",
    "weighted_ridge",
]

"""Robust sparse regression with MCC-ARD, and a distributed benchmark of it.

MCC-ARD combines the maximum correntropy criterion with automatic relevance
determination (IJCNN 2023, arXiv 2302.00082).
"""

__version__ = "0.1.0"

from .data import PaperData, make_paper_data
from .metrics import correlation, evaluate, rmse, selection_scores
from .models import (
    AuthorsLSARDRegressor,
    AuthorsMCCARDRegressor,
    LSARDRegressor,
    MCCARDRegressor,
    MCCARDRegressorCV,
    MCCL1Path,
    MCCL1Regressor,
    MCCL1RegressorCV,
    mcc_l1_alpha_max,
    mcc_l1_objective,
    mcc_l1_path,
)

__all__ = [
    "AuthorsLSARDRegressor",
    "AuthorsMCCARDRegressor",
    "LSARDRegressor",
    "open_results",
    "MCCARDRegressor",
    "MCCARDRegressorCV",
    "MCCL1Path",
    "MCCL1Regressor",
    "MCCL1RegressorCV",
    "PaperData",
    "correlation",
    "evaluate",
    "make_paper_data",
    "mcc_l1_alpha_max",
    "mcc_l1_objective",
    "mcc_l1_path",
    "rmse",
    "selection_scores",
]


def __getattr__(name):
    # the store (xarray, zarr) is imported on first use only
    if name == "open_results":
        from .store import open_results

        return open_results
    raise AttributeError(f"module 'mccard_dist' has no attribute {name!r}")

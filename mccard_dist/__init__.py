"""Robust sparse regression with MCC-ARD, and a distributed benchmark of it.

MCC-ARD combines the maximum correntropy criterion with automatic relevance
determination (IJCNN 2023, arXiv 2302.00082).

The names below are imported on first use, so that the command line (which imports this
package) does not import scikit-learn, xarray or zarr before it needs them.
"""

import importlib

__version__ = "0.1.0"

#: each public name and the module that defines it
_HOMES = {
    "PaperData": "data", "make_paper_data": "data",
    "correlation": "metrics", "evaluate": "metrics", "rmse": "metrics",
    "selection_scores": "metrics",
    "AuthorsLSARDRegressor": "models", "AuthorsMCCARDRegressor": "models",
    "LSARDRegressor": "models", "MCCARDRegressor": "models", "MCCARDRegressorCV": "models",
    "MCCL1Path": "models", "MCCL1Regressor": "models", "MCCL1RegressorCV": "models",
    "MethodCV": "method_cv", "HuberL1Regressor": "models", "HuberMCPRegressor": "models",
    "LADLassoRegressor": "models", "huber_alpha_max": "models", "huber_scale": "models",
    "lad_alpha_max": "models", "mcp_gamma_bound": "models",
    "mcc_l1_alpha_max": "models", "mcc_l1_objective": "models", "mcc_l1_path": "models",
    "resolve_relevance_update": "models",
    "resolve_solver": "models",
    "open_results": "store",
    "compose": "app", "run": "app",
}

__all__ = sorted(_HOMES)


def __getattr__(name):
    if name in _HOMES:
        value = getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'mccard_dist' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_HOMES))

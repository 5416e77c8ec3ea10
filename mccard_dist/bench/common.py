"""What the benchmarks share: the configurations they compare and the Hydra compose helper."""

from __future__ import annotations

#: The benchmark's baseline ("plain K-fold" in its output), as overrides of the current config:
#: plain K-fold CV (the paper's 5 folds, no racing, every MCC-L1 candidate fitted from w = 0) and
#: MCC-L1's inner Lasso solves through scikit-learn's Lasso estimator (``solver="lasso"``, with
#: its own stopping rule): the protocol as the paper states it, with off-the-shelf solvers.
PLAIN_KFOLD = ("cv=kfold", "cv.race=null", "cv.paths=none", "methods.mcc_l1.params.solver=lasso")
#: The racing margin of the current configuration.
RACE = 0.25
#: The current configuration: the same K-fold CV with racing (docs/results/speed.md), current
#: solvers.
CURRENT = ("cv=kfold", f"cv.race={RACE}")
#: The kernel width set inside each fit: the paper's grid as ``experiment=paper_auto``.
AUTO = ("experiment=paper_auto",)


def _blas_report() -> str:
    from threadpoolctl import threadpool_info

    infos = threadpool_info()
    return ", ".join(f"{i.get('internal_api')}={i.get('num_threads')}" for i in infos) or "none"



def _compose_spec(overrides):
    """The validated spec of ``conf/`` composed with these Hydra overrides."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    from ..config import config_dir, spec_from_dict
    from ..hydra_guard import register_schemas

    register_schemas()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        cfg = compose("config", list(overrides))
    return spec_from_dict(OmegaConf.to_container(cfg, resolve=True))

"""Where Huber + MCP's concavity ``gamma`` is admissible on an experiment's data.

A coordinate step of skglm's MCP on the Huber datafit is a minimisation only where ``gamma``
exceeds ``n / ||x_d||^2`` for every column ``d`` of the data it fits (``HuberMCPRegressor``
refuses a smaller ``gamma``). In the pipeline that data is every training fold of every cell and
the cell's whole training split, so the smallest usable ``gamma`` depends on the data, the seed
and the number of folds. For each experiment named, this prints (as Markdown) that bound over the
experiment's seeds, and how many seeds refuse the lowest ``gamma`` of the experiment's
``huber_mcp`` grid. Usage::

    python docs/tools/mcp_gamma_bound.py EXPERIMENT[:SEEDS] ...

``SEEDS`` (a count, from 0) replaces the experiment's seeds: ``reproduce:100``.
"""

from __future__ import annotations

import argparse

import numpy as np


def compose(experiment: str, n_seeds: int | None):
    """The composed config of ``experiment=EXPERIMENT`` (with ``n_seeds`` seeds from 0), as a
    dict (every method file's, selected or not) and as the validated spec."""
    from omegaconf import OmegaConf

    from mccard_dist.app import compose_config
    from mccard_dist.config import spec_from_dict

    overrides = []
    if n_seeds is not None:
        overrides.append(f"experiment.seeds={{start: 0, count: {n_seeds}}}")
    cfg = compose_config(experiment, overrides, return_hydra_config=True)
    cfg = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"])
    config = OmegaConf.to_container(cfg, resolve=True)
    return config, spec_from_dict(config)


def seed_bounds(spec) -> np.ndarray:
    """Per seed, the largest bound over the cell's K training folds and its training split (the
    design matrix is the seed's: psi and tau change the targets only)."""
    from mccard_dist.models.peers import mcp_gamma_bound
    from mccard_dist.tasks import folds

    out = []
    for seed in spec.seeds:
        X = spec.data.make_data(seed, spec.experiment.psi[0], spec.experiment.tau[0]).X_train
        parts = [train for train, _ in folds(len(X), spec.cv.n_folds, seed)]
        out.append(max(mcp_gamma_bound(X[rows]) for rows in [*parts, np.arange(len(X))]))
    return np.asarray(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiments", nargs="+", metavar="EXPERIMENT[:SEEDS]")
    args = parser.parse_args(argv)
    print("| experiment | data | folds | seeds | bound: median | bound: largest "
          "| lowest gamma of the grid | seeds that refuse it |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for item in args.experiments:
        name, _, count = item.partition(":")
        config, spec = compose(name, int(count) if count else None)
        lowest = min(config["methods"]["huber_mcp"]["grid"]["gamma"])
        values = seed_bounds(spec)
        print(f"| `{item}` | {spec.data.source}, N = {spec.data.n_train}, "
              f"D = {spec.data.n_features} | {spec.cv.n_folds} | {len(values)} "
              f"| {np.median(values):.3f} | {values.max():.3f} | {lowest:g} "
              f"| {int((values >= lowest).sum())} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

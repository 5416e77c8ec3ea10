"""``bench race``: replay ``cv.race`` on a store made with plain K-fold CV."""

from __future__ import annotations

import numpy as np


def replay_race(ds, margin: float) -> dict:
    """Replay ``cv.race`` on the full K-fold scores of a store made without racing.

    The candidates that finish a race keep their plain K-fold scores, so the choice a racing run
    would make follows from the stored scores: per method, the number of finished cells where
    it equals plain K-fold's choice, and the CV fits the race would make against plain K-fold's.
    """
    from ..records import STATUS_DONE
    from ..models.search import race_survivors

    out = {}
    for method in ds["model"].values:
        cv = ds["cv_score"].sel({"model": method}).values
        status = ds["status"].sel({"model": method}).values
        n = same = fits = full = 0
        for index in zip(*np.nonzero(status == STATUS_DONE)):
            scores = cv[index].reshape(-1, cv.shape[-1])
            scores = scores[~np.isnan(scores).any(axis=1)]  # the method's candidates
            if not scores.size:
                continue
            n_cand, n_folds = scores.shape
            alive = np.ones(n_cand, dtype=bool)
            for f in range(n_folds):
                fits += int(alive.sum())
                if f < n_folds - 1:
                    alive = race_survivors(scores[:, : f + 1], alive, margin)
            mean = scores.mean(axis=1)
            pick = np.flatnonzero(alive)[np.argmin(mean[alive])]
            n += 1
            same += int(pick == np.argmin(mean))
            full += scores.size
        if n:
            out[str(method)] = {"cells": n, "same": same, "fits": fits, "full": full}
    return out

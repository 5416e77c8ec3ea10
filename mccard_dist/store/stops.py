"""What a run with a stop rule (:mod:`mccard_dist.stopping`) reads and writes in its store: the
values the rule reads, the seeds a cell no longer needs (status ``not needed``), and the record
of each (tau, psi) cell's stop, the ``stopping`` attribute::

    {"rule": {...the rule that decided...},
     "cells": {"<tau index>/<psi index>": {"seeds": n, "why": "rule held" | "budget spent",
                                           "parts": [[metric, method, versus, mean, low, high,
                                                      n, outcome], ...]}}}

A cell the rule has not stopped has no entry (its seeds are still running, or the run stopped
before them)."""

from __future__ import annotations

import json

import numpy as np

from ..records import STATUS_PENDING, STATUS_UNNEEDED
from .writer import consolidate

__all__ = ["STOPPING", "mark_unneeded", "read_values", "record_stops", "stops_of"]

#: the store attribute holding the stop record
STOPPING = "stopping"


def read_values(store, names, ti=slice(None), pi=slice(None), n=None) -> dict[str, np.ndarray]:
    """The stored values ``names`` of the cells ``[:, ti, pi, :n]`` (as float64)."""
    seeds = slice(None) if n is None else slice(0, n)
    return {name: np.asarray(store._group[name][:, ti, pi, seeds], dtype=float)
            for name in names}


def mark_unneeded(store, ti: int, pi: int, n: int) -> int:
    """Mark the pending seeds from position ``n`` of the (tau, psi) cell ``(ti, pi)`` not needed;
    returns how many were."""
    status = store._group["status"]
    block = np.asarray(status[:, ti, pi, n:])
    pending = block == STATUS_PENDING
    if pending.any():
        with store._writing():
            status[:, ti, pi, n:] = np.where(pending, STATUS_UNNEEDED, block).astype(np.int8)
    return int(pending.sum())


def stops_of(attrs) -> dict:
    """The stop record of a store's attributes (empty where it has none)."""
    raw = attrs.get(STOPPING)
    return json.loads(raw) if raw else {}


def record_stops(store, rule, stopped: dict[str, dict], reopened=()) -> None:
    """Add the stops ``stopped`` (``"<ti>/<pi>"`` -> its record) to the store's record under
    ``rule``, and drop the cells ``reopened`` (a rule that needs more of them)."""
    if not stopped and not reopened:
        return
    with store._writing():
        record = stops_of(store._attrs())
        cells = record.get("cells", {})
        for key in reopened:
            cells.pop(key, None)
        cells.update(stopped)
        store._group.attrs[STOPPING] = json.dumps({"rule": rule.to_dict(), "cells": cells},
                                                  sort_keys=True)
        consolidate(store.path)

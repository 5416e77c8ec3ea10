"""Naming one cell of a store: ``"method,tau,psi,seed"`` text to the store's coordinate values."""

from __future__ import annotations

import numpy as np

__all__ = ["parse_cell", "resolve_cell"]


def parse_cell(text: str) -> tuple:
    """``"method,tau,psi,seed"`` as ``(method or None, tau, psi, seed)`` (method ``all``: every
    method); ValueError unless four comma-separated fields of the right types."""
    fields = [f.strip() for f in str(text).split(",")]
    if len(fields) != 4:
        raise ValueError(f"a cell is 'method,tau,psi,seed' (e.g. mcc_l1,10,0.3,0); got {text!r}")
    method, tau, psi, seed = fields
    try:
        return (None if method in ("all", "*", "") else method, float(tau), float(psi), int(seed))
    except ValueError:
        raise ValueError(f"a cell is 'method,tau,psi,seed' with numbers for tau and psi and an "
                         f"integer seed (e.g. mcc_l1,10,0.3,0); got {text!r}") from None


def _coord_value(ds, dim: str, value):
    """The coordinate value of ``dim`` matching ``value`` (floats within 1e-9), or ValueError."""
    coords = ds[dim].values
    if dim == "model":
        if value in [str(c) for c in coords]:
            return str(value)
    else:
        hit = np.flatnonzero(np.isclose(coords.astype(float), float(value), rtol=0, atol=1e-9))
        if hit.size:
            return coords[hit[0]]
    shown = ", ".join(str(c) if dim == "model" else f"{c:g}" for c in coords)
    what = "method" if dim == "model" else dim
    raise ValueError(f"{what} = {value} is not in the store ({what}: {shown})")


def resolve_cell(ds, cell) -> tuple:
    """``(method, tau, psi, seed)`` (or ``"method,tau,psi,seed"``) as the store's coordinate values
    (``method`` None stays None: every method with CV); ValueError if the text is malformed or a
    value is not in the store (the message lists the store's values)."""
    if isinstance(cell, str):
        cell = parse_cell(cell)
    method, tau, psi, seed = cell
    return (None if method is None else _coord_value(ds, "model", method),
            _coord_value(ds, "tau", tau), _coord_value(ds, "psi", psi),
            _coord_value(ds, "seed", seed))

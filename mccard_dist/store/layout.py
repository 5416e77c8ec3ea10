"""The store's schema: its template, and where each cell's results lie in it.

Stores are made in the ``candidate`` layout:

- ``cv_score`` (model, tau, psi, seed, candidate, fold): each method's CV candidates lie along
  ``candidate`` in the order of :func:`mccard_dist.grid.cv_candidates`; their values are
  coordinates on ``(model, candidate)`` named as the methods' grids name them
  (``kernel_width``, ``alpha_ratio``, Huber's ``epsilon`` and ``alpha`` ...), NaN where a method
  has no such name or fewer candidates;
- per cell, ``chosen_<name>`` for each of those names: the final fit's value (for a width set
  inside the fit, where it settled).

Stores made before hold the ``axes`` layout: ``cv_score`` (model, tau, psi, seed, h,
alpha_ratio, fold) over the union of the methods' width axes and that of their penalty axes,
whatever the estimators call them (Huber's epsilon under ``h``, its alpha under
``alpha_ratio``), and per cell ``chosen_h`` and ``chosen_alpha_ratio``. They are resumed in their
own layout, and :func:`candidate_view` shows them in the candidate layout for analysis.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np

from .. import grid
from ..config import ExperimentSpec, MethodSpec
from ..records import SCALARS

__all__ = ["CELL_DIMS", "COEF_DIMS", "Layout", "candidate_view", "stored_methods"]

CELL_DIMS = ("model", "tau", "psi", "seed")
COEF_DIMS = CELL_DIMS + ("feature",)
#: the per-cell variables of the axes layout, by the axis of the method's grid they hold
_AXES_CHOSEN = {"width": "chosen_h", "penalty": "chosen_alpha_ratio"}


class Layout:
    """Where a grid's results lie in a store of one layout (``axes``: a store made before the
    candidate axis)."""

    def __init__(self, spec: ExperimentSpec, axes: bool = False):
        self.spec = spec
        self.axes = axes

    @classmethod
    def of(cls, spec: ExperimentSpec, group) -> Layout:
        """The layout of the store whose zarr group is ``group``, from the names it holds (any
        one of the axes layout's own names will do, should another have been lost)."""
        return cls(spec, axes=any(name in group
                                  for name in ("h", "lam", "chosen_h", "chosen_lam")))

    @property
    def candidate_dims(self) -> tuple[str, ...]:
        return ("h", "alpha_ratio") if self.axes else ("candidate",)

    @property
    def cv_dims(self) -> tuple[str, ...]:
        return CELL_DIMS + self.candidate_dims + ("fold",)

    def cell_variables(self) -> list[str]:
        """The per-cell float variables, in the order they are laid out."""
        chosen = list(_AXES_CHOSEN.values()) if self.axes else grid.chosen_names(self.spec)
        return list(SCALARS) + chosen

    def result_names(self, method: MethodSpec) -> dict[str, str | float]:
        """``{store variable: name in a CellResult's scalars}`` for the cells of ``method``
        (a variable it leaves out gets no value). In the axes layout, a method without a penalty
        has ``chosen_alpha_ratio`` 0.0 in its finished cells, as such stores always had."""
        names: dict[str, str | float] = {name: name for name in self.cell_variables()}
        if self.axes:
            names[_AXES_CHOSEN["penalty"]] = 0.0
            for name, axis in method.kind.grid_names.items():
                names[_AXES_CHOSEN[axis]] = f"chosen_{name}"
        return names

    def positions(self, method: MethodSpec) -> list[tuple[int, ...]]:
        """The index along :attr:`candidate_dims` of each of the method's candidates (for the
        axes layout, in the coordinates of this grid, which the store shares: same grid hash)."""
        candidates = grid.cv_candidates(method)
        if not self.axes:
            return [(c,) for c in range(len(candidates))]
        h, ratio = (_index(v) for v in grid.axes_coords(self.spec).values())
        return [(h[float(a)], ratio[float(b)]) for a, b in candidates]

    def template(self):
        """The store's lazy xarray template: coordinates with their values, data variables
        allocated lazily (written by :meth:`ResultsStore.open_or_create`)."""
        import dask.array as da
        import xarray as xr

        spec = self.spec
        c = grid.coords(spec)
        if self.axes:
            del c["candidate"]
            c.update(grid.axes_coords(spec))
        n = {k: len(v) for k, v in c.items()}
        cell_shape = tuple(n[d] for d in CELL_DIMS)
        # chunks: one (model, tau) slab of psi x seed per per-cell variable; per seed-run for the
        # big ones
        seed_chunk = min(n["seed"], 100)
        cell_chunks = (1, 1, n["psi"], n["seed"])
        data_vars = {
            "status": (CELL_DIMS, np.zeros(cell_shape, np.int8),
                       {"description": "0 pending, 1 done, 2 failed"}),
            "error": (CELL_DIMS, np.full(cell_shape, "", dtype=object),
                      {"description": "error message of a failed cell"}),
        }
        for name in self.cell_variables():
            data_vars[name] = (CELL_DIMS, da.full(cell_shape, np.nan, chunks=cell_chunks))
        tail = tuple(n[d] for d in self.candidate_dims) + (n["fold"],)
        data_vars["cv_score"] = (
            self.cv_dims,
            da.full(cell_shape + tail, np.nan, chunks=(1, 1, 1, seed_chunk) + tail),
            {"description": f"validation loss ({spec.cv.score}), lower is better"},
        )
        if spec.run.save_coef:
            data_vars["coef"] = (
                COEF_DIMS,
                da.full(cell_shape + (n["feature"],), np.nan,
                        chunks=(1, 1, 1, seed_chunk, n["feature"])),
                {"description": "final fitted coefficients (0 = pruned / not selected)"},
            )
        ds = xr.Dataset(data_vars, coords=c)
        if self.axes:
            ds["alpha_ratio"].attrs["description"] = (
                "L1 penalty as a fraction of alpha_max on each training set; 0 = no L1 penalty "
                "(ARD methods)")
            ds["h"].attrs["description"] = "kernel width (CV candidate)"
            return ds
        ds["candidate"].attrs["description"] = (
            "a method's CV candidates in turn; their values are the coordinates named as its grid")
        for name, values in grid.candidate_values(spec).items():
            ds.coords[name] = (("model", "candidate"), values,
                               {"description": f"{name} of each method's candidates (NaN: none)"})
        for name in grid.chosen_names(spec):
            ds[name].attrs["description"] = f"{name[len('chosen_'):]} of the final fit"
        return ds


def _index(values) -> dict[float, int]:
    return {float(v): i for i, v in enumerate(np.asarray(values))}


def stored_methods(attrs) -> list[MethodSpec]:
    """The methods of a store (``attrs``: its attributes), in the order of its ``model`` axis,
    from its stored config, unvalidated: only their kinds and grids are needed, and the rest of
    a config (a data file that has moved) need not check out for reading the results."""
    from ..methods import KINDS, with_grid

    stored = json.loads(attrs["config"])
    config = stored["methods"]
    methods = []
    for name in stored["experiment"]["methods"]:
        section = with_grid(config[name])
        kind = KINDS[section["estimator"]]
        by_axis = {axis: section["grid"].get(gname) for gname, axis in kind.grid_names.items()}
        width = by_axis.get("width")
        auto = isinstance(width, str)
        methods.append(MethodSpec(name, section["estimator"],
                                  widths=() if auto else tuple(map(float, width or ())),
                                  penalties=tuple(map(float, by_axis.get("penalty") or ())),
                                  auto_width=auto))
    return methods


def candidate_view(ds):
    """A store of the axes layout (opened by xarray, names of :data:`LEGACY_NAMES` already
    renamed) in the candidate layout: ``cv_score`` along ``candidate`` with the per-method
    coordinates, ``chosen_h`` and ``chosen_alpha_ratio`` under each method's own names. A store
    of the candidate layout is returned as it is."""
    import xarray as xr

    if "h" not in ds.dims:
        return ds
    spec = SimpleNamespace(methods=stored_methods(ds.attrs))
    n = max((len(grid.cv_candidates(m)) for m in spec.methods), default=0)
    cv_dims = CELL_DIMS + ("candidate", "fold")
    h, ratio = _index(ds["h"].values), _index(ds["alpha_ratio"].values)
    cells = tuple(ds.sizes[d] for d in CELL_DIMS)
    if n == 0:  # no method has candidates
        cv = xr.DataArray(np.empty(cells + (0, ds.sizes["fold"])), dims=cv_dims)
    else:  # each method's candidates in turn, padded (NaN) to the longest
        parts = []
        for mi, m in enumerate(spec.methods):
            pos = [(h[float(a)], ratio[float(b)]) for a, b in grid.cv_candidates(m)]
            pos += [(0, 0)] * (n - len(pos))
            valid = xr.DataArray(np.arange(n) < len(grid.cv_candidates(m)), dims="candidate")
            hi, li = (xr.DataArray(np.array(p, dtype=int), dims="candidate") for p in zip(*pos))
            part = ds["cv_score"].isel(model=mi).isel(h=hi, alpha_ratio=li).where(valid)
            parts.append(part.drop_vars(["h", "alpha_ratio"]))
        cv = xr.concat(parts, dim="model").transpose(*cv_dims)
    out = ds.drop_vars(["cv_score", "h", "alpha_ratio", *_AXES_CHOSEN.values()],
                       errors="ignore")
    out["cv_score"] = cv.assign_coords(model=ds["model"], candidate=np.arange(n))
    out["cv_score"].attrs = ds["cv_score"].attrs
    for name, values in grid.candidate_values(spec).items():
        out.coords[name] = (("model", "candidate"), values)
    for name in grid.chosen_names(spec):
        values = xr.full_like(ds["status"], np.nan, dtype=float)
        for mi, m in enumerate(spec.methods):
            axis = m.kind.grid_names.get(name[len("chosen_"):])
            if axis is not None and _AXES_CHOSEN[axis] in ds:
                values[mi] = ds[_AXES_CHOSEN[axis]][mi]
        out[name] = values
    return out

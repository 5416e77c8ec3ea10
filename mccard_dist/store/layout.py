"""The store's schema: where the store lies (:func:`store_path`) and where each cell's results lie.

- per cell, dims ``(model, tau, psi, seed)``: ``status`` (int8: 0 pending, 1 done, 2 failed),
  ``error`` (text) and the float64 :data:`~mccard_dist.records.SCALARS` (NaN where not
  available), with ``chosen_<name>`` for each name of the methods' grids (the final fit's value);
- ``cv_score`` (+ ``candidate, fold``): each method's CV candidates in the order of
  :func:`mccard_dist.grid.cv_candidates`, their values in coordinates on ``(model, candidate)``
  named as the grids name them (NaN where a method has no such name or fewer candidates);
- ``coef`` (+ ``feature``): the final coefficients, unless ``run.save_coef`` is off.

Every array carries a CRC-32C checksum of each chunk (a filter before Blosc).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import grid
from ..config import ExperimentSpec
from ..errors import StoreAccessError
from ..records import SCALARS

__all__ = ["CELL_DIMS", "COEF_DIMS", "Layout", "check_writable", "store_path"]

CELL_DIMS = ("model", "tau", "psi", "seed")
COEF_DIMS = CELL_DIMS + ("feature",)


class Layout:
    """Where a grid's results lie in its store."""

    def __init__(self, spec: ExperimentSpec):
        self.spec = spec

    cv_dims = CELL_DIMS + ("candidate", "fold")

    def cell_variables(self) -> list[str]:
        """The per-cell float variables, in the order they are laid out."""
        return list(SCALARS) + grid.chosen_names(self.spec)

    def template(self, n_features: int | None = None):
        """The store's lazy xarray template: coordinates with their values, data variables
        allocated lazily (written by :meth:`ResultsStore.open_or_create`); ``n_features``:
        instead of the data's."""
        import dask.array as da
        import xarray as xr

        spec = self.spec
        c = grid.coords(spec, n_features)
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
        tail = (n["candidate"], n["fold"])
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
        ds["candidate"].attrs["description"] = (
            "a method's CV candidates in turn; their values are the coordinates named as its grid")
        for name, values in grid.candidate_values(spec).items():
            ds.coords[name] = (("model", "candidate"), values,
                               {"description": f"{name} of each method's candidates (NaN: none)"})
        for name in grid.chosen_names(spec):
            ds[name].attrs["description"] = f"{name[len('chosen_'):]} of the final fit"
        return ds

    @staticmethod
    def encoding(ds) -> dict:
        """Every variable's zarr encoding: a CRC-32C checksum of each chunk before Blosc."""
        import numcodecs

        out = {}
        for name, var in ds.variables.items():
            filters = [numcodecs.VLenUTF8()] if var.dtype == object else []
            out[name] = {"filters": filters + [numcodecs.CRC32C()]}
        return out


def store_path(spec: ExperimentSpec) -> Path:
    """``store.path`` if set, else ``<store.root>/<name>-<grid_hash[:10]>.zarr`` (so the same
    command finds the same store); relative to the current directory (Hydra does not chdir)."""
    if spec.store.path is not None:
        return Path(spec.store.path)
    return Path(spec.store.root) / f"{spec.name}-{grid.grid_hash(spec)[:10]}.zarr"


def check_writable(path: Path, key: str = "store",
                   fix: str = "set store.root (or store.path) to a writable folder") -> None:
    """Refuse a store location this process cannot write, before anything is created.

    A probe file is created and removed in the store (if it exists) or in its nearest existing
    parent folder: permission bits, read-only file systems and paths through a file all fail
    here, whoever runs the process.
    """
    import os
    import tempfile

    path = Path(path)
    target = path if path.exists() else next(p for p in path.parents if p.exists())
    what = "store" if target == path and key == "store" else "folder"
    if not target.is_dir():
        raise StoreAccessError(f"{key}: cannot use {path}: {target} is a file, not a folder; {fix}")
    try:
        fd, probe = tempfile.mkstemp(dir=target, prefix=".mccard-write-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        import errno

        # a folder that exists but refuses new files with ENOENT is a kernel's (/proc): say so,
        # rather than "No such file or directory" for a folder that is there
        why = ("it accepts no new files" if exc.errno == errno.ENOENT and target.is_dir()
               else exc.strerror or exc)
        raise StoreAccessError(f"{key}: cannot write to the {what} {target} ({why}); {fix}") \
            from None

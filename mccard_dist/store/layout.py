"""The store's schema: where the store lies (:func:`store_path`) and where each cell's results lie.

- per cell, dims ``(model, tau, psi, seed)``: ``status`` (int8: 0 pending, 1 done, 2 failed),
  ``error`` (text), the float64 metrics (the spec's ``metric_table``: the built-in ones and
  one's own) and :data:`~mccard_dist.records.SCALARS` (NaN where not available), with
  ``chosen_<name>`` for each name of the methods' grids (the final fit's value);
- ``cv_score`` (+ ``candidate, fold``): each method's CV candidates in the order of
  :func:`mccard_dist.grid.cv_candidates`, their values in coordinates on ``(model, candidate)``
  named as the grids name them (NaN where a method has no such name or fewer candidates);
- ``coef`` (+ ``feature``): the final coefficients, unless ``run.save_coef`` is off.

Every array carries a CRC-32C checksum of each chunk (a filter before Blosc). On disk each chunk is
a regular file (:func:`chunk_state`), and every metadata file (``.zgroup``, ``.zattrs``, each
array's ``.zarray`` and ``.zattrs``) has a copy in the consolidated ``.zmetadata``
(:func:`metadata_damage`).
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import numpy as np

from .. import grid
from ..config import ExperimentSpec
from ..errors import StoreAccessError
from ..records import SCALARS, STATUS_DONE, STATUS_FAILED

__all__ = ["CELL_DIMS", "COEF_DIMS", "CONSOLIDATED", "ENDED_UNRECORDED", "MISSING", "Layout",
           "cells_since_start", "check_writable", "chunk_state", "finished_cells",
           "metadata_damage", "remove_chunk", "store_path"]

#: how a run record still ``running`` ended when its driver no longer runs (killed outright)
ENDED_UNRECORDED = "unknown: the driver stopped without recording how"


def finished_cells(status) -> int:
    """The cells of the ``status`` array that are finished (done or failed)."""
    return int(np.isin(status, (STATUS_DONE, STATUS_FAILED)).sum())


def cells_since_start(run: dict, n_finished: int) -> int:
    """The cells the run record ``run`` wrote, counted from the store's ``n_finished`` cells
    (:func:`finished_cells`) and those finished when it started: a driver killed outright
    recorded none."""
    return max(n_finished - run.get("finished_cells_at_start", n_finished), 0)

CELL_DIMS = ("model", "tau", "psi", "seed")
#: values in one chunk of ``cv_score`` or ``coef`` (a whole cell's in one chunk at least)
VALUES_PER_CHUNK = 100_000
COEF_DIMS = CELL_DIMS + ("feature",)


class Layout:
    """Where a grid's results lie in its store."""

    def __init__(self, spec: ExperimentSpec):
        self.spec = spec

    cv_dims = CELL_DIMS + ("candidate", "fold")

    def cell_variables(self) -> list[str]:
        """The per-cell float variables, in the order they are laid out."""
        return ([m.name for m in self.spec.metric_table] + list(SCALARS)
                + grid.chosen_names(self.spec))

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
        # chunks: up to grid.CELLS_PER_CHUNK cells of one (model, tau) per per-cell variable
        # (blocks stay inside one); about VALUES_PER_CHUNK values per chunk of the big ones
        cell_chunks = (1, 1, *grid.cell_tile(n["psi"], n["seed"]))
        tail = (n["candidate"], n["fold"])

        def seeds_for(values_per_cell: int) -> int:
            return min(n["seed"], max(1, VALUES_PER_CHUNK // max(values_per_cell, 1)))

        data_vars = {  # written with the template: every cell pending, no error
            "status": (CELL_DIMS, np.zeros(cell_shape, np.int8),
                       {"description": "0 pending, 1 done, 2 failed"
                                      + (", 3 not needed (past where the cell's stop rule "
                                         "held)" if self.spec.stop else "")}),
            "error": (CELL_DIMS, np.full(cell_shape, "", dtype=object),
                      {"description": "error message of a failed cell"}),
        }
        for name in self.cell_variables():
            data_vars[name] = (CELL_DIMS, da.full(cell_shape, np.nan, chunks=cell_chunks))
        data_vars["cv_score"] = (
            self.cv_dims,
            da.full(cell_shape + tail, np.nan,
                    chunks=(1, 1, 1, seeds_for(tail[0] * tail[1])) + tail),
            {"description": f"validation loss ({spec.cv.score}), lower is better"},
        )
        if spec.run.save_coef:
            data_vars["coef"] = (
                COEF_DIMS,
                da.full(cell_shape + (n["feature"],), np.nan,
                        chunks=(1, 1, 1, seeds_for(n["feature"]), n["feature"])),
                {"description": "final fitted coefficients (0 = pruned / not selected)"},
            )
        ds = xr.Dataset(data_vars, coords=c)
        for name in ("status", "error"):
            ds[name].encoding["chunks"] = cell_chunks
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
        """Every variable's zarr encoding: a CRC-32C checksum of each chunk before Blosc, and
        the chunks the template gives a variable held in memory (``status``, ``error``)."""
        import numcodecs

        out = {}
        for name, var in ds.variables.items():
            filters = [numcodecs.VLenUTF8()] if var.dtype == object else []
            out[name] = {"filters": filters + [numcodecs.CRC32C()]}
            if "chunks" in var.encoding:
                out[name]["chunks"] = var.encoding["chunks"]
        return out


def store_path(spec: ExperimentSpec) -> Path:
    """``store.path`` if set, else ``<store.root>/<name>-<grid_hash[:10]>.zarr`` (so the same
    command finds the same store); relative to the current directory (Hydra does not chdir)."""
    if spec.store.path is not None:
        return Path(spec.store.path)
    return Path(spec.store.root) / f"{spec.name}-{grid.grid_hash(spec)[:10]}.zarr"


def check_writable(path: Path, key: str = "store",
                   fix: str = "set store.root (or store.path) to a writable folder") -> None:
    """Refuse a store location this process cannot write, or one inside another results store
    (whose repairs would take it for damage), before anything is created.

    A probe file is created and removed in the store (if it exists) or in its nearest existing
    parent folder: permission bits, read-only file systems and paths through a file all fail
    here, whoever runs the process.
    """
    import tempfile

    path = Path(path)
    inside = next((p for p in path.resolve().parents if (p / ".zgroup").is_file()
                   and "grid_hash" in (_json_object(p / ".zattrs") or ())), None)
    if inside is not None:
        raise StoreAccessError(f"{key}: {path} lies inside the results store {inside}; choose a "
                               "path outside it")
    target = path if path.exists() else next(p for p in path.parents if p.exists())
    what = "store" if target == path and key == "store" else "folder"
    if not target.is_dir():
        raise StoreAccessError(f"{key}: cannot use {path}: {target} is a file, not a folder; {fix}")
    try:
        fd, probe = tempfile.mkstemp(dir=target, prefix=".mccard-write-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        # a folder that exists but refuses new files with ENOENT is a kernel's (/proc): say so,
        # rather than "No such file or directory" for a folder that is there
        why = ("it accepts no new files" if exc.errno == errno.ENOENT and target.is_dir()
               else exc.strerror or exc)
        raise StoreAccessError(f"{key}: cannot write to the {what} {target} ({why}); {fix}") \
            from None


#: what :func:`chunk_state` and :func:`metadata_damage` say of a path where nothing is
MISSING = "is missing"


def chunk_state(file: Path) -> str | None:
    """``None`` for a chunk path that is a regular file, :data:`MISSING` where nothing is, and
    why it is damaged otherwise: zarr reads a folder or a dangling link as a missing chunk (the
    fill value), fails on a link that loops and blocks on a FIFO, so anything but a regular file
    (a symbolic link included) is damage."""
    try:
        mode = os.lstat(file).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return MISSING
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        try:
            os.stat(file)
            kind = "a symbolic link"
        except OSError as exc:
            kind = {errno.ELOOP: "a symbolic link that loops",
                    errno.ENOENT: "a symbolic link to nothing"}.get(
                exc.errno, "a symbolic link that cannot be followed")
    else:
        kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                else "not a regular file")
    return f"is damaged ({kind} where its chunk file belongs)"


def remove_chunk(file: Path) -> None:
    """Delete what lies at a chunk path: a file, a link, a FIFO, or a folder with its content."""
    import shutil

    if file.is_dir() and not file.is_symlink():
        shutil.rmtree(file)
    else:
        file.unlink(missing_ok=True)


#: the store's consolidated metadata: a copy of every other metadata file, which readers read
CONSOLIDATED = ".zmetadata"


def _json_object(file: Path) -> dict | str:
    """A metadata file's JSON object, or why there is none."""
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        return MISSING
    except IsADirectoryError:
        return "is damaged (a folder where the file belongs)"
    try:
        value = json.loads(raw)
    except ValueError:
        return "is damaged (not valid JSON)"
    return value if isinstance(value, dict) else "is damaged (not a JSON object)"


def metadata_damage(path: Path) -> tuple[dict | None, dict[str, str]]:
    """The copies in the store's ``.zmetadata`` (``None`` if it cannot be read) and its metadata
    files that are missing or cannot be read, ``{name: why}`` (an array's ``.zarray`` counts
    only when unreadable: a missing one means the array's folder is lost). A folder that holds
    no zarr group has none."""
    path = Path(path)
    if not any((path / n).exists() for n in (".zgroup", ".zattrs", CONSOLIDATED)):
        return None, {}
    bad = {}
    consolidated = _json_object(path / CONSOLIDATED)
    copies = consolidated.get("metadata") if isinstance(consolidated, dict) else None
    if not isinstance(copies, dict):
        bad[CONSOLIDATED] = (consolidated if isinstance(consolidated, str)
                             else "is damaged (it holds no metadata)")
        copies = None
    arrays = sorted(p.name for p in path.iterdir() if (p / ".zarray").exists())
    names = [".zgroup", ".zattrs"] + [f"{a}/{m}" for a in arrays for m in (".zarray", ".zattrs")]
    for name in names:
        why = _json_object(path / name)
        if isinstance(why, str) and not (why == MISSING and name.endswith(".zarray")):
            bad[name] = why
    return copies, bad


def metadata_message(path: Path, copies: dict | None, bad: dict[str, str]) -> str:
    """What a reader and a rerun say of damaged metadata files (:func:`metadata_damage`): how a
    rerun repairs them (each file from its copy in ``.zmetadata``, or ``.zmetadata`` from the
    files), or that no intact copy is left."""
    name = next(iter(bad))
    what = (f"its consolidated metadata ({name})" if name == CONSOLIDATED else name)
    more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
    if metadata_repairable(copies, bad):
        how = ("rebuilt from the arrays' metadata" if copies is None
               else f"rewritten from its copy in {CONSOLIDATED}")
        return (f"store {path}: {what} {bad[name]}{more}; rerun the experiment's command to "
                f"repair it (it is {how})")
    return (f"store {path}: {', '.join(bad)} are missing or damaged, with no intact copy of "
            f"{'them' if copies is None else ', '.join(n for n in bad if n not in copies)}; "
            "the store cannot be repaired: move it away and rerun the experiment's command to "
            "compute it anew")


def metadata_repairable(copies: dict | None, bad: dict[str, str]) -> bool:
    """Whether every damaged metadata file has an intact copy: in ``.zmetadata``, or, for
    ``.zmetadata`` alone, in the files themselves."""
    return set(bad) <= set(copies) if copies is not None else set(bad) == {CONSOLIDATED}

"""Opening results stores for analysis: one store, a list of stores, or a Hydra multirun folder.

Reading only; :mod:`mccard_dist.store.writer` writes the stores this opens.
"""

from __future__ import annotations

import copy
import json
import math
import os
from pathlib import Path

import numpy as np

from ..grid import flatten_keys
from ..records import STATUS_DONE, STATUS_FAILED, STATUS_NAMES

from .backfill import metric_values, new_metrics, store_cells
from .errors import StoreDamagedError, StoreMismatchError
from .integrity import REPAIR_HINT, check_stored, open_dataset
from .layout import (CELL_DIMS, ENDED_UNRECORDED, cells_since_start, finished_cells,
                     metadata_damage, metadata_message)
from .migrate import declared_kinds, finish_interrupted_migration
from .version import refuse_earlier, refuse_forged

__all__ = ["SWEEP_LIST", "listed_stores", "open_results", "sweep_entry"]


#: the per-cell variables of a store are loaded by :func:`open_results` up to this size
LOADED_BYTES = 2**26


def open_results(path, mask: bool = True):
    """Open a results store for analysis.

    With ``mask`` (default), every per-cell variable (and ``cv_score``, ``coef``) is NaN where the
    cell is not done (pending or failed); ``status``, ``error`` and a failed cell's
    ``n_cv_failures`` (the CV fits that failed in it) are kept as written, and
    ``status_name`` gives "pending" / "done" / "failed". The per-cell variables (dims ``model,
    tau, psi, seed`` only) are loaded where they take up to :data:`LOADED_BYTES` (the paper's
    grid: 4 MB), so ``ds["r"].mean("seed")`` gives numbers; beyond, and ``cv_score`` and
    ``coef`` always, they stay lazy (dask: a store of a million cells is read a chunk of up to
    10,000 cells at a time; ``.compute()`` or ``.values`` gives the numbers).

    The methods of ``experiment.methods`` lie along the dimension ``model``: select one with
    ``ds.sel(model="mcc_ard")``. (A dimension named ``method`` would collide with the ``method``
    keyword of ``Dataset.sel``.) Each method's CV candidates lie along ``candidate``, their
    values in coordinates on ``(model, candidate)`` named as the grids name them
    (``ds["cv_score"].sel(model="mcc_l1")`` with ``ds["kernel_width"].sel(model="mcc_l1")``).
    A store of an earlier version is refused with the command that migrates it
    (:mod:`mccard_dist.store.migrate`); a metric the store does not hold (the package gained it
    since) is computed for its finished cells (:mod:`~mccard_dist.store.backfill`). The attribute
    ``runs`` is the store's run records as they stand: a last run whose driver was killed or
    still runs shows the cells it wrote so far and which of the two it is.

    ``path`` may also be a list of stores:

    - of the same methods, e.g. the stores of a Hydra multirun (``-m data.n_features=500,1000``):
      they are concatenated along the grid settings that differ between them, one dimension per
      setting named after its last key (``n_features``; the full key with ``_`` for ``.`` if that
      name is taken); several settings swept together become one dimension each when every
      combination is there, else a ``sweep`` dimension with one coordinate per setting. The
      attribute ``sweep`` lists the settings' keys, and each entry of ``stores`` its values;
    - of the same cells (tau, psi, seeds and data) with different methods, e.g. the K-fold and
      the auto-width methods run as two experiments: they are opened side by side along
      ``model``, as if one store held them all.

    Either way ``candidate``, ``fold`` and ``feature`` are the union of the stores' (NaN where a
    store has no such entry) and the attribute ``stores`` lists each store's path, grid hash,
    methods and CV settings; ``config`` is the first store's, with every store's methods.
    ``path`` may also be a multirun folder: the stores its jobs wrote (listed in its
    ``stores.txt``).
    """
    if isinstance(path, (list, tuple)):
        stores = [open_results(p, mask) for p in path]
        methods = [[str(m) for m in ds["model"].values] for ds in stores]
        if len(stores) > 1 and all(m == methods[0] for m in methods):
            return _sweep(stores, path)
        return _side_by_side(stores, path)
    if Path(path, SWEEP_LIST).is_file():  # a Hydra multirun folder
        return open_results(listed_stores(path), mask)

    finish_interrupted_migration(path)  # a migration stopped halfway: its store back
    if not Path(path).exists():
        raise StoreMismatchError(f"no such store: {path}")
    copies, bad = metadata_damage(Path(path))
    if bad:
        raise StoreDamagedError(metadata_message(path, copies, bad))
    metadata = any(Path(path, name).is_file() for name in (".zmetadata", ".zattrs"))
    ds = open_dataset(path) if metadata else None  # zarr's own error would name its internals
    if ds is None or "grid_hash" not in ds.attrs:
        raise StoreMismatchError(f"{path} is not a results store (no .zmetadata/.zattrs of "
                                 "mccard-dist); give a store written by mccard-run")
    refuse_earlier(path, ds.attrs)
    refuse_forged(path, ds.attrs)
    gone = sorted(n for n in ds.variables if not Path(path, str(n), ".zarray").is_file())
    if gone:  # zarr would read every chunk of them as the fill value, without a word
        raise StoreDamagedError(
            f"store {path}: the folder of {', '.join(map(str, gone))} is missing; {REPAIR_HINT}")
    problems = check_stored(path, ds.attrs)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise StoreDamagedError(f"store {path}: {problems[0]}{more}; {REPAIR_HINT}")

    def load(name):
        try:
            return ds[name].load()
        except StoreDamagedError:
            raise
        except Exception as exc:  # noqa: BLE001 - a codec's error names no variable
            raise StoreDamagedError(
                f"store {path}: variable {name} cannot be read ({exc}); {REPAIR_HINT}") from None

    status = load("status")
    done = status == STATUS_DONE
    if mask:
        for name in ds.data_vars:
            if name == "n_cv_failures":  # a failed cell's count too: what failed in it
                ds[name] = ds[name].where(done | (status == STATUS_FAILED))
            elif name not in ("status", "error"):
                ds[name] = ds[name].where(done)
    per_cell = [name for name in ds.data_vars if set(ds[name].dims) <= set(CELL_DIMS)]
    if sum(ds[name].nbytes for name in per_cell) <= LOADED_BYTES:
        for name in per_cell:
            ds[name] = load(name)
    else:
        ds["status"] = load("status")
    for name in list(ds.coords):  # the candidates' values: small
        if name not in ds.dims:
            ds.coords[name] = load(name)
    names = np.array([STATUS_NAMES[k] for k in sorted(STATUS_NAMES)])
    status = ds["status"].load()
    ds["status_name"] = status.copy(data=names[status.values])
    if "runs" in ds.attrs:
        ds.attrs["runs"] = _runs_now(path, ds.attrs["runs"], status.values)
    if "kinds" not in ds.attrs:  # made before stores recorded their methods' declarations
        ds.attrs["kinds"] = json.dumps(declared_kinds(json.loads(ds.attrs["config"])),
                                       sort_keys=True)
    return _with_new_metrics(ds)


def _runs_now(path, runs, status):
    """The store's run records (JSON) as they stand: a last record still ``running`` (its
    driver records the cells it wrote when it ends) gets the cells finished since it started,
    counted from ``status``, and whether its driver still runs, from the store's lock files
    (:func:`~mccard_dist.lock.store_driver`: read, not taken)."""
    from ..lock import store_driver

    try:
        records = json.loads(runs)
    except (TypeError, ValueError):
        return runs
    if not records or not isinstance(records[-1], dict) or records[-1].get("ended") != "running":
        return runs
    last = records[-1]
    last["cells"] = cells_since_start(last, finished_cells(status))
    running, who = store_driver(path)
    last["ended"] = (f"running ({who})" if running else ENDED_UNRECORDED if running is False
                     else f"running, or stopped without recording how ({who}: another host)")
    return json.dumps(records)


def _with_new_metrics(ds):
    """The store with the metrics it does not hold (the package gained them after it was
    written), computed for its finished cells as a resume stores them
    (:mod:`~mccard_dist.store.backfill`): from the cells' data, which the store's data section
    rebuilds; no method is built, so no estimator the store names is imported."""
    from ..config import data_spec_from_dict

    added = new_metrics(ds.variables)
    if not added:
        return ds
    data = data_spec_from_dict(json.loads(ds.attrs["config"])["data"])
    cells = store_cells([ds[d].values for d in CELL_DIMS])
    status = ds["status"].values
    coef = ds["coef"].values if "coef" in ds else None
    for metric in added:
        values, note = metric_values(data, cells, metric, status, coef, reading=True)
        ds[metric.name] = (CELL_DIMS, values, {"note": note} if note else {})
    return ds


#: the file in a Hydra multirun folder that lists the stores of its jobs (:func:`sweep_entry`)
SWEEP_LIST = "stores.txt"


def sweep_entry(store, folder) -> str:
    """The line of ``store`` in the :data:`SWEEP_LIST` of the multirun folder ``folder``: its
    path relative to the folder (which still finds it once the folder and the stores are moved
    or copied together), a tab, and its absolute path (which finds it once the folder alone is
    moved)."""
    store = Path(store).resolve()
    try:
        relative = os.path.relpath(store, Path(folder).resolve())
    except ValueError:  # another drive (Windows): no relative path
        return f"{store}\n"
    return f"{relative}\t{store}\n"


def listed_stores(folder) -> list[Path]:
    """The stores that the :data:`SWEEP_LIST` of the multirun folder ``folder`` lists, each at
    the first of its paths (:func:`sweep_entry`; a path relative to the folder) that exists; a
    store at none of them is refused in one line."""
    folder = Path(folder)
    stores = []
    for line in (folder / SWEEP_LIST).read_text().splitlines():
        paths = [folder / p for p in line.strip().split("\t") if p]
        if not paths:
            continue
        found = next((p for p in paths if p.exists()), None)
        if found is None:
            also = f"; nor at {', '.join(map(str, paths[1:]))}" if paths[1:] else ""
            raise StoreMismatchError(f"no such store: {os.path.normpath(paths[0])} (listed in "
                                     f"{folder / SWEEP_LIST}{also})")
        stores.append(Path(os.path.normpath(found)))
    return stores


def _with_all_variables(stores):
    """Each store with the variables and coordinates only some of the others have (Huber's
    ``epsilon`` in one store and not in another), NaN throughout, so that they concatenate."""
    import xarray as xr

    shapes = {}
    for ds in stores:
        for name, var in ds.variables.items():
            if name not in ds.dims:
                shapes.setdefault(name, (var.dims, name in ds.coords))
    out = []
    for ds in stores:
        for name, (dims, is_coord) in shapes.items():
            if name in ds.variables:
                continue
            blank = xr.DataArray(np.full(tuple(ds.sizes[d] for d in dims), np.nan), dims=dims)
            ds = ds.assign_coords({name: blank}) if is_coord else ds.assign({name: blank})
        out.append(ds)
    return out


def _concat(stores, dim: str):
    """The stores concatenated along ``dim``, every variable in each."""
    import warnings

    import xarray as xr
    from dask.array import PerformanceWarning

    with warnings.catch_warnings():
        # the outer join on candidate / fold re-chunks the lazy cv_score: expected, and small
        warnings.simplefilter("ignore", PerformanceWarning)
        return xr.concat(_with_all_variables(stores), dim=dim, join="outer", data_vars="all",
                         coords="different", compat="equals", combine_attrs="override")


def _sweep(stores, paths):
    """Stores of the same methods concatenated along the grid settings that differ."""
    flat = [flatten_keys(json.loads(ds.attrs["grid_description"])) for ds in stores]
    keys = sorted({k for f in flat for k in f}
                  - {k for k in flat[0] if all(f.get(k) == flat[0][k] for f in flat)})
    if not keys:
        raise StoreMismatchError(f"{paths[1]} repeats the grid of {paths[0]} (same methods and "
                                 "settings): open one of them")

    def label(value):
        return value if isinstance(value, (int, float, str, bool)) else json.dumps(value)

    taken = set(stores[0].dims) | set(stores[0].variables)
    names = [k.rsplit(".", 1)[-1] for k in keys]
    names = [n if n not in taken and names.count(n) == 1 else k.replace(".", "_")
             for n, k in zip(names, keys)]
    values = {n: [label(f.get(k)) for f in flat] for n, k in zip(names, keys)}
    combined = _concat(stores, "sweep")
    combined = combined.assign_coords({n: ("sweep", v) for n, v in values.items()})
    combos = list(zip(*values.values()))
    if len(names) == 1:
        combined = combined.swap_dims(sweep=names[0]).drop_vars("sweep", errors="ignore")
    elif len(set(combos)) == len(combos):
        full = math.prod(len(set(v)) for v in values.values()) == len(combos)
        if full:
            combined = combined.set_index(sweep=names).unstack("sweep").transpose(*names, ...)
    combined.attrs["sweep"] = json.dumps(dict(zip(names, keys)))
    combined.attrs["grid_hash"] = "+".join(ds.attrs["grid_hash"] for ds in stores)
    combined.attrs["stores"] = json.dumps([{"path": str(p), "grid_hash": ds.attrs["grid_hash"],
                                            "methods": [str(m) for m in ds["model"].values],
                                            "cv": json.loads(ds.attrs["grid_description"])["cv"],
                                            "settings": {k: f.get(k) for k in keys}}
                                           for p, ds, f in zip(paths, stores, flat)])
    return combined


def _side_by_side(stores, paths):
    """Stores of the same cells concatenated along ``model`` (:func:`open_results`)."""
    if not stores:
        raise ValueError("open_results: the list of stores is empty")
    descriptions = [json.loads(ds.attrs["grid_description"]) for ds in stores]
    first = descriptions[0]
    names: list[str] = []
    for path, ds, d in zip(paths, stores, descriptions):
        if d["data"] != first["data"]:
            raise StoreMismatchError(f"{path} has other data settings than {paths[0]}: "
                                     "stores opened side by side must hold the same cells")
        for key in ("tau", "psi", "seeds"):  # the same values, in any order
            if sorted(d["experiment"][key]) != sorted(first["experiment"][key]):
                raise StoreMismatchError(f"{path} has other experiment.{key} than {paths[0]}: "
                                         f"stores opened side by side must hold the same cells")
        clash = sorted(set(names) & {str(m) for m in ds["model"].values})
        if clash:
            raise StoreMismatchError(f"{path} repeats method(s) {', '.join(clash)} of an earlier "
                                     "store: open stores with different methods side by side")
        names += [str(m) for m in ds["model"].values]
    # the cells in the first store's order
    order = {dim: stores[0][dim].values for dim in ("tau", "psi", "seed")}
    stores = [ds.sel(order) for ds in stores]
    combined = _concat(stores, "model")
    config = json.loads(stores[0].attrs["config"])
    kinds = json.loads(stores[0].attrs.get("kinds", "{}"))
    description = copy.deepcopy(first)
    for ds, d in zip(stores[1:], descriptions[1:]):
        config["methods"].update(json.loads(ds.attrs["config"])["methods"])
        kinds.update(json.loads(ds.attrs.get("kinds", "{}")))
        description["methods"].update(d["methods"])
    config["experiment"]["methods"] = names
    description["experiment"]["methods"] = names
    combined.attrs["config"] = json.dumps(config)
    combined.attrs["kinds"] = json.dumps(kinds, sort_keys=True)
    combined.attrs["grid_description"] = json.dumps(description)
    combined.attrs["grid_hash"] = "+".join(ds.attrs["grid_hash"] for ds in stores)
    combined.attrs["stores"] = json.dumps([{"path": str(p), "grid_hash": ds.attrs["grid_hash"],
                                            "methods": [str(m) for m in ds["model"].values],
                                            "cv": d["cv"]}
                                           for p, ds, d in zip(paths, stores, descriptions)])
    return combined

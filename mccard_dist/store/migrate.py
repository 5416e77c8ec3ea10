"""The one door for stores of earlier versions: ``mccard-migrate STORE [--to COPY]``.

Readers and the runner refuse a store of an earlier layout version (``grid_version`` in its grid
description) in one line naming this command (:func:`refuse_earlier`); :func:`migrate` rewrites it
in this version's layout (grid hash and description in this version's vocabulary, CRC-32C
checksums, ``degenerate``; the ``axes`` layout's ``cv_score`` laid along ``candidate``; configs
from before ``grid`` and ``cv.paths``), so that no other module knows an earlier one. The new store
is written beside the old one, checked against it cell by cell, and only then takes its place
(renamed after its new grid hash when named by its grid); the cells keep their values, run
records, code fingerprint and library versions.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from dataclasses import fields
from pathlib import Path

import numpy as np

from ..errors import UsageError
from ..records import SCALARS

__all__ = ["StoreVersionError", "main", "migrate", "refuse_earlier", "refuse_unmigrated",
           "store_version"]

_RENAMED = {"method": "model", "lam": "alpha_ratio", "chosen_lam": "chosen_alpha_ratio"}


class StoreVersionError(UsageError):
    """The store was made by an earlier version of mccard-dist."""


def store_version(attrs) -> int:
    """The layout version of a store, from its attributes."""
    return int(json.loads(attrs.get("grid_description", "{}")).get("grid_version", 1))


def refuse_earlier(path, attrs) -> None:
    """Refuse a store of an earlier version, naming the command that migrates it."""
    from ..grid import GRID_VERSION

    version = store_version(attrs)
    if version < GRID_VERSION:
        raise StoreVersionError(
            f"the store {path} was made by an earlier version of mccard-dist (store version "
            f"{version}, this one reads {GRID_VERSION}); run `mccard-migrate {path}` to bring it "
            "to this version (its results are kept)")


def refuse_unmigrated(spec) -> None:
    """Refuse to start a new store named by the grid while a store of an earlier version in
    ``store.root`` holds the same grid (its name has the hash of then): migrating it keeps its
    results, and the migrated store takes the name this run looks for."""
    from ..config import spec_from_dict
    from ..grid import GRID_VERSION, grid_hash
    from .layout import store_path

    if spec.store.path is not None or store_path(spec).exists():
        return
    wanted = grid_hash(spec)
    for path in sorted(Path(spec.store.root).glob(f"{spec.name}-*.zarr")):
        try:
            attrs = json.loads((path / ".zattrs").read_text())
            if store_version(attrs) >= GRID_VERSION:
                continue
            same = grid_hash(spec_from_dict(_config(json.loads(attrs["config"])))) == wanted
        except Exception:  # noqa: BLE001 - not a store whose grid can be read: not this grid's
            continue
        if same:
            raise StoreVersionError(
                f"the store {path} holds this grid, made by an earlier version of mccard-dist; "
                f"run `mccard-migrate {path}` to bring it to this version (its results are "
                "kept), then rerun the same command")


def _config(stored: dict) -> dict:
    """A stored config of an earlier version in this version's layout. Before version 3 a method
    that did not name its solver had the pruning one (now ``"auto"``): it is named."""
    from ..config import CLUSTER_SCHEMAS
    from ..methods import KINDS

    config = json.loads(json.dumps(stored))
    for section in config["methods"].values():
        kind = KINDS[section["estimator"]]
        if kind.solver_params and kind.solver_params[0] not in (section.get("params") or {}):
            section["params"] = {**(section.get("params") or {}),
                                 kind.solver_params[0]: "pruning"}
        axes = {kind.width_param: section.pop("kernel_width", None),
                kind.penalty_name: section.pop("alpha_ratio", None)}
        if "grid" not in section:
            section["grid"] = {n: axes[n] for n in kind.grid_names if axes[n] not in (None, [])}
    config["cv"].setdefault("paths", "none")  # made before paths: every candidate alone
    kind = CLUSTER_SCHEMAS[config["cluster"]["kind"]]  # every kind's keys were written, unset
    config["cluster"] = {k: v for k, v in config["cluster"].items()
                         if k in {f.name for f in fields(kind)}}
    if (config["data"].get("source") or "paper") == "file":
        for key in ("n_train", "n_test", "n_features", "n_relevant"):  # read from the file now
            config["data"].pop(key, None)
    return config


def _cell_values(old, spec):
    """The old store's per-cell values under this version's names, ``{name: array}``."""
    shape = old["status"].shape
    values = {name: old[name].values for name in ("status", "error", *SCALARS) if name in old}
    values.setdefault("degenerate", np.full(shape, np.nan))
    if "chosen_h" not in old:
        values.update({n: old[n].values for n in old.data_vars if n.startswith("chosen_")})
        return values
    for mi, m in enumerate(spec.methods):  # the axes layout: a method's values by its names
        for axis, stored in ((m.kind.width_param, "chosen_h"),
                             (m.kind.penalty_name, "chosen_alpha_ratio")):
            if axis is not None:
                values.setdefault(f"chosen_{axis}", np.full(shape, np.nan))
                values[f"chosen_{axis}"][mi] = old[stored].values[mi]
    return values


def _old_score(old, mi, candidate, method):
    """One candidate's ``cv_score`` of every cell of method ``mi`` in the old store, looked up by
    the candidate's grid values (``(tau, psi, seed, fold)``)."""
    from ..methods import AUTO_WIDTH

    cv = old["cv_score"].isel(model=mi)
    if "candidate" in cv.dims:  # found by its values among the method's candidates
        where = np.ones(old.sizes["candidate"], bool)
        for name, value in candidate.items():
            where &= np.isclose(old[name].isel(model=mi).values, value, rtol=0, atol=0)
        return cv.isel(candidate=int(np.flatnonzero(where)[0])).values
    kind = method.kind
    width = 0.0 if method.grid.get(kind.width_param) == AUTO_WIDTH else candidate.get(
        kind.width_param, 0.0)
    return cv.sel(h=width, alpha_ratio=candidate.get(kind.penalty_name, 0.0)).values


def migrate(path, to=None) -> Path:
    """Rewrite the store at ``path`` (of an earlier version) in this version's layout, in place or
    at ``to``; returns where the migrated store is."""
    import zarr

    from .. import grid
    from ..config import spec_from_dict
    from ..lock import StoreLock
    from .integrity import open_dataset
    from .layout import Layout
    from .writer import _consolidate, _now, _template

    path = Path(path)
    if not (path / ".zgroup").is_file():
        raise UsageError(f"{path}: no results store there")
    with StoreLock(path):
        old = open_dataset(path)
        if store_version(old.attrs) >= grid.GRID_VERSION:
            raise UsageError(f"{path}: the store is already of this version; nothing to migrate")
        old = old.rename({k: v for k, v in _RENAMED.items() if k in old.variables}).load()
        stored = json.loads(old.attrs["config"])
        spec = spec_from_dict(_config(stored))
        scored = (stored["data"].get("source") or "paper") != "diabetes" and (
            stored["data"].get("source") != "file" or stored["data"].get("n_relevant") is not None)
        named = path.name == f"{spec.name}-{old.attrs['grid_hash'][:10]}.zarr"
        target = Path(to) if to is not None else (
            path.with_name(f"{spec.name}-{grid.grid_hash(spec)[:10]}.zarr") if named else path)
        if to is not None and target.exists():
            raise UsageError(f"--to {target}: exists already; choose a new path")
        new = _template(spec, n_features=old.sizes["feature"], selection_scored=scored)
        for name, value in _cell_values(old, spec).items():
            new[name] = (new["status"].dims, value.astype(new[name].dtype))
        n = new.sizes["candidate"]
        cv = np.full(new["cv_score"].shape, np.nan)
        for mi, method in enumerate(spec.methods):
            for c, candidate in enumerate(grid.cv_candidates(method)[:n]):
                cv[mi, :, :, :, c] = _old_score(old, mi, candidate, method)
        new["cv_score"] = (new["cv_score"].dims, cv)
        if "coef" in new:
            new["coef"] = (new["coef"].dims, old["coef"].values)
        for key in ("runs", "created", "code", "versions"):  # what the cells were computed with
            if key in old.attrs:
                new.attrs[key] = old.attrs[key]
            else:
                new.attrs.pop(key)
        new.attrs["migrated"] = json.dumps({
            "from_version": store_version(old.attrs), "from_grid_hash": old.attrs["grid_hash"],
            "at": _now()})
        staging = target.with_name(target.name + ".migrating")
        shutil.rmtree(staging, ignore_errors=True)
        with zarr.config.set({"array.write_empty_chunks": True}):
            new.to_zarr(str(staging), zarr_format=2, consolidated=True,
                        encoding=Layout.encoding(new))
        _consolidate(staging)
        _verify(old, staging, spec)
        if target == path:
            (path / ".lock").unlink(missing_ok=True)
            aside = path.with_name(path.name + ".premigration")
            path.rename(aside)
            staging.rename(target)
            shutil.rmtree(aside)
        else:
            staging.rename(target)
            if to is None:
                shutil.rmtree(path)
    return target


def _verify(old, new_path: Path, spec) -> None:
    """Every value of every cell of the migrated store (read back as a reader reads it) equals
    the old store's, each candidate's scores found by its grid values; raises otherwise."""
    from .. import grid
    from .reader import open_results

    new = open_results(new_path, mask=False)
    values = _cell_values(old, spec)
    for name, want in values.items():
        got = new[name].values
        same = (got == want) if want.dtype == object else np.array_equal(got, want,
                                                                           equal_nan=True)
        if not np.all(same):
            raise RuntimeError(f"migrating: {name} differs from the store it came from")
    for mi, method in enumerate(spec.methods):
        for c, candidate in enumerate(grid.cv_candidates(method)):
            got = new["cv_score"].isel(model=mi, candidate=c).values
            if not np.array_equal(got, _old_score(old, mi, candidate, method), equal_nan=True):
                raise RuntimeError(f"migrating: cv_score of {method.name}'s candidate "
                                   f"{candidate} differs from the store it came from")
    if "coef" in old and not np.array_equal(new["coef"].values, old["coef"].values,
                                            equal_nan=True):
        raise RuntimeError("migrating: coef differs from the store it came from")


def main(argv=None) -> None:
    """Console entry point ``mccard-migrate STORE [--to COPY]``."""
    parser = argparse.ArgumentParser(
        prog="mccard-migrate", description="Rewrite a results store of an earlier version of "
        "mccard-dist in this version's layout, checked cell by cell against the original.")
    parser.add_argument("store", help="the store to migrate")
    parser.add_argument("--to", default=None, metavar="COPY",
                        help="write the migrated store here and keep the original")
    args = parser.parse_args(argv)
    try:
        target = migrate(args.store, args.to)
    except UsageError as exc:
        sys.exit(f"error: {exc}")
    print(f"migrated: {target}")

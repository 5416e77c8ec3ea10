"""The one door for stores of earlier versions: ``mccard-migrate STORE [--to COPY]``.

Readers and the runner refuse a store of an earlier layout version (``grid_version`` in its grid
description) in one line naming this command
(:func:`~mccard_dist.store.version.refuse_earlier`); :func:`migrate` rewrites it
in this version's layout (grid hash and description in this version's vocabulary, CRC-32C
checksums, ``degenerate``; the ``axes`` layout's ``cv_score`` laid along ``candidate``; configs
from before ``grid`` and ``cv.paths``), so that no other module knows an earlier one. The new store
is written beside the old one, checked against it cell by cell, and only then takes its place
(renamed after its new grid hash when named by its grid); the cells keep their values, run
records, code fingerprint and library versions.

A migration in place puts the original aside (``STORE.premigration``) and then renames the checked
copy (``STORE.migrating``) to ``STORE``; what it removes is first renamed to ``STORE.deleting``. A
migration stopped anywhere (killed, power lost) is finished or undone by
:func:`finish_interrupted_migration`, which the next ``mccard-migrate``, ``mccard-run``,
``mccard-report`` and ``open_results`` of the store call first.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import shutil
import sys
from dataclasses import fields
from pathlib import Path

import numpy as np

from .. import metrics
from ..errors import StoreAccessError, UsageError
from ..records import SCALARS
from .version import StoreVersionError, store_version

__all__ = ["current_run", "finish_interrupted_migration", "main", "migrate", "refuse_unmigrated"]

log = logging.getLogger(__name__)

_RENAMED = {"method": "model", "lam": "alpha_ratio", "chosen_lam": "chosen_alpha_ratio"}
#: beside a store being migrated: the original put aside, the new copy, what is being removed
_ASIDE, _STAGING, _TRASH = ".premigration", ".migrating", ".deleting"

#: the estimators that fitted with the pruning solver alone in stores made before they had a
#: solver parameter (the default became ``"auto"``)
_PRUNING_ONLY = {"mccard_dist.models:MCCARDRegressor", "mccard_dist.models:LSARDRegressor"}


def declared_kinds(config: dict) -> dict:
    """``{method: declarations}`` (:meth:`~mccard_dist.methods.MethodKind.declared`) for a store
    made before stores recorded them (attribute ``kinds``): the package's own classes'
    declarations, for the methods whose stored estimator is a shipped method file's (matched as
    text: what a store names is never imported); none for the others."""
    from ..config import shipped_kind

    out = {}
    for name, section in (config.get("methods") or {}).items():
        kind = shipped_kind(str((section or {}).get("estimator")))
        if kind is not None:
            out[name] = kind.declared()
    return out


def refuse_unmigrated(spec, finish: bool = True) -> None:
    """Refuse to start a new store named by the grid while a store of an earlier version in
    ``store.root`` holds the same grid (its name has the hash of then): migrating it keeps its
    results, and the migrated store takes the name this run looks for. Where ``finish``, an
    interrupted migration of this run's store is finished or undone first
    (:func:`finish_interrupted_migration`; a plan, which writes nothing, leaves it)."""
    from ..config import spec_from_dict
    from ..grid import GRID_VERSION, grid_hash
    from .layout import store_path

    if finish:
        finish_interrupted_migration(store_path(spec))
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


#: the estimator names of stores before version 4, which name the class by import path
_ESTIMATOR_PATHS = {
    "mcc_ard": "MCCARDRegressor", "ls_ard": "LSARDRegressor", "mcc_l1": "MCCL1Regressor",
    "mcc_ard_authors": "AuthorsMCCARDRegressor", "ls_ard_authors": "AuthorsLSARDRegressor",
    "lasso": "LassoBaseline", "huber": "HuberBaseline", "huber_l1": "HuberL1Regressor",
    "huber_mcp": "HuberMCPRegressor", "lad_lasso": "LADLassoRegressor"}


def current_run(config: dict) -> dict:
    """``config`` (a store's, as plain Python) with its ``run`` section in this version's keys,
    changed in place and returned: ``run.fits_per_block`` gave way to ``run.block_seconds``
    (tasks sized by time); the section never changed a result."""
    run = config.get("run")
    if isinstance(run, dict) and "fits_per_block" in run:
        del run["fits_per_block"]
        run.setdefault("block_seconds", 1.0)
    return config


def _config(stored: dict) -> dict:
    """A stored config of an earlier version in this version's layout. Before version 3 a method
    that did not name its solver had the pruning one (now ``"auto"``): it is named. Before
    version 4 a method named its estimator by a registry name: it is named by import path."""
    from ..config import CLUSTER_SCHEMAS, shipped_kind

    config = current_run(json.loads(json.dumps(stored)))
    for method, section in config["methods"].items():
        name = section["estimator"]
        if name in _ESTIMATOR_PATHS:
            section["estimator"] = f"mccard_dist.models:{_ESTIMATOR_PATHS[name]}"
        kind = shipped_kind(section["estimator"])  # what a store names is never imported
        if kind is None:
            raise StoreVersionError(
                f"the store names {name!r} as the estimator of {method}, which no store of an "
                "earlier version of mccard-dist names (they name the package's own): it cannot "
                "be migrated")
        if (section["estimator"] in _PRUNING_ONLY
                and kind.solver_params[0] not in (section.get("params") or {})):
            section["params"] = {**(section.get("params") or {}),
                                 kind.solver_params[0]: "pruning"}
        axes = {kind.width_param: section.pop("kernel_width", None),
                kind.penalty_name: section.pop("alpha_ratio", None)}
        if "grid" not in section:
            section["grid"] = {n: axes[n] for n in kind.grid_names() if axes[n] not in (None, [])}
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
    names = ("status", "error", *(m.name for m in metrics.METRICS), *SCALARS)
    values = {name: old[name].values for name in names if name in old}
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
    at ``to``; returns where the migrated store is. A store already of this version, or already
    migrated and renamed after its new grid hash, is left as it is (and returned)."""
    return _migrate(path, to)[0]


def _migrate(path, to) -> tuple[Path, bool]:
    """:func:`migrate`; also says whether this call migrated the store (False: nothing to do)."""
    import zarr

    from .. import grid
    from ..lock import StoreLock
    from .integrity import open_dataset
    from .layout import Layout
    from .writer import consolidate, now, template

    path = Path(path)
    finish_interrupted_migration(path)
    if not (path / ".zgroup").is_file():
        replacement = _replacement(path)
        if replacement is not None:
            return replacement, False
        raise UsageError(f"{path}: no results store there")
    with contextlib.ExitStack() as locks:
        locks.enter_context(StoreLock(path if to is None else to))
        if to is not None:  # the original is only read: locked if this process can write it
            with contextlib.suppress(StoreAccessError):
                locks.enter_context(StoreLock(path))
        old = open_dataset(path)
        if store_version(old.attrs) >= grid.GRID_VERSION:
            return path, False
        old, spec = _loaded(old)
        stored = json.loads(old.attrs["config"])
        scored = (stored["data"].get("source") or "paper") != "diabetes" and (
            stored["data"].get("source") != "file" or stored["data"].get("n_relevant") is not None)
        named = path.name == f"{spec.name}-{old.attrs['grid_hash'][:10]}.zarr"
        target = Path(to) if to is not None else (
            path.with_name(f"{spec.name}-{grid.grid_hash(spec)[:10]}.zarr") if named else path)
        trash = _beside(target, _TRASH)
        if target != path and target.exists():
            if to is None and _migration(target).get("replaces") == path.name and _migration(
                    target).get("from_grid_hash") == old.attrs["grid_hash"]:
                _discard(path, trash)  # stopped after the copy took its name: the rest
                return target, True
            raise UsageError(f"--to {target}: exists already; choose a new path" if to else
                             f"{path}: its migrated store {target} exists already, from "
                             "another store; move one of them")
        new = template(spec, n_features=old.sizes["feature"], selection_scored=scored)
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
            "at": now(), **({"replaces": path.name} if to is None and target != path else {})})
        staging = _beside(target, _STAGING)
        shutil.rmtree(staging, ignore_errors=True)
        try:
            with zarr.config.set({"array.write_empty_chunks": True}):
                new.to_zarr(str(staging), zarr_format=2, consolidated=True,
                            encoding=Layout.encoding(new))
            consolidate(staging)
            _verify(old, staging, spec)
        except BaseException as exc:
            shutil.rmtree(staging, ignore_errors=True)  # a partial copy: it would fill the disk
            if isinstance(exc, OSError):
                raise StoreAccessError(
                    f"migrating {path}: writing {staging} failed ({exc.strerror or exc}); the "
                    "store is kept as it was: fix the file system (space, quota, mount) and "
                    "rerun the same command") from exc
            raise
        if target == path:
            (path / ".lock").unlink(missing_ok=True)
            aside = _beside(path, _ASIDE)
            path.rename(aside)
            staging.rename(target)
            _discard(aside, trash)
        else:
            staging.rename(target)
            if to is None:
                _discard(path, trash)
    return target, True


def finish_interrupted_migration(path) -> None:
    """Finish or undo a migration of the store at ``path`` that was stopped before it ended.

    Stopped between its two renames (no store at ``path``, the original at ``path.premigration``),
    the migrated copy at ``path.migrating`` takes the store's place if it holds every value of the
    original (checked again, cell by cell), and the original is restored otherwise. Stopped after
    them, the original put aside is removed once the store at ``path`` is its migrated copy; what
    a migration began to remove (``path.deleting``) is removed. A no-op (a few ``stat`` calls)
    when none of these is there; otherwise done under the store's lock."""
    from ..lock import StoreLock

    path = Path(path)
    aside, staging, trash = (_beside(path, suffix) for suffix in (_ASIDE, _STAGING, _TRASH))
    if not (aside.exists() or trash.exists()):
        return
    with StoreLock(path):
        if aside.is_dir() and not path.exists():
            if _copy_holds(staging, aside):
                staging.rename(path)
                log.warning("%s: finished its interrupted migration", path)
            else:
                if staging.exists():
                    _discard(staging, trash)
                aside.rename(path)
                log.warning("%s: undid its interrupted migration (the store is as before it)",
                            path)
        if aside.is_dir():
            if _migration(path).get("from_grid_hash") != _attrs(aside).get("grid_hash"):
                log.warning("%s: the store before its migration is kept at %s, beside another "
                            "store at its path; remove the one not needed", path, aside)
            else:
                _discard(aside, trash)
        shutil.rmtree(trash, ignore_errors=True)


def _beside(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def _discard(path: Path, trash: Path) -> None:
    """Remove a folder: renamed to ``trash`` first, so that a removal stopped halfway leaves
    only ``trash``, which :func:`finish_interrupted_migration` removes."""
    shutil.rmtree(trash, ignore_errors=True)
    path.rename(trash)
    shutil.rmtree(trash)


def _attrs(path: Path) -> dict:
    """The attributes of the store at ``path``; empty if there is none to read."""
    try:
        return json.loads((path / ".zattrs").read_text())
    except (OSError, ValueError):
        return {}


def _migration(path: Path) -> dict:
    """What the store at ``path`` was migrated from (its ``migrated`` attribute); empty if it was
    not migrated."""
    return json.loads(_attrs(path).get("migrated", "{}"))


def _replacement(path: Path) -> Path | None:
    """The migrated store that took the place of the (gone) store at ``path``, renamed after its
    new grid hash, if there is one."""
    for other in sorted(path.parent.glob("*.zarr")):
        if _migration(other).get("replaces") == path.name:
            return other
    return None


def _loaded(old):
    """A store of an earlier version (opened), loaded under this version's names, and its
    experiment spec."""
    from ..config import spec_from_dict

    old = old.rename({k: v for k, v in _RENAMED.items() if k in old.variables}).load()
    return old, spec_from_dict(_config(json.loads(old.attrs["config"])))


def _copy_holds(staging: Path, original: Path) -> bool:
    """Whether ``staging`` is a complete migrated copy of the store at ``original``."""
    from .integrity import open_dataset

    if not (staging / ".zmetadata").is_file():
        return False
    try:
        old, spec = _loaded(open_dataset(original))
        _verify(old, staging, spec)
    except Exception:  # noqa: BLE001 - unreadable or different: not a finished copy
        return False
    return True


def _verify(old, new_path: Path, spec) -> None:
    """The migrated store passes the readers' check of every chunk, and every value of every
    cell equals the old store's, each candidate's scores found by its grid values; raises
    otherwise."""
    from .. import grid
    from .integrity import check_stored, open_dataset

    new = open_dataset(new_path)
    problems = check_stored(new_path, new.attrs)
    if problems:
        raise RuntimeError(f"migrating: the new store {problems[0]}")
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
        target, migrated = _migrate(args.store, args.to)
    except UsageError as exc:
        sys.exit(f"error: {exc}")
    if migrated:
        print(f"migrated: {target}")
    elif target == Path(args.store):
        print(f"{target}: the store is already of this version; nothing to migrate")
    else:
        print(f"{args.store}: migrated already to {target}; nothing to migrate")

"""Creating and filling a results store: the only room that writes zarr.

The schema is written once as a template (coordinates with their values, lazily allocated data
variables, attributes with the resolved config, the grid hash and package versions); each block
of work then fills exactly its own region, ``status`` last, so an interrupted run leaves finished
blocks done and the others pending. Only the driver writes. The variables are listed in
:mod:`~mccard_dist.store.layout`.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import logging
import re
from pathlib import Path

import numpy as np

from .. import grid
from . import integrity
from ..config import ExperimentSpec
from ..errors import StoreAccessError
from ..lock import INNER_LOCK
from ..records import STATUS_FAILED, STATUS_PENDING, CellResult, done_cell_values
from .backfill import metric_values, new_metrics
from .errors import StoreDamagedError, StoreMismatchError
from .integrity import open_group
from .layout import (CONSOLIDATED, Layout, metadata_damage, metadata_message,
                     metadata_repairable, store_path)
from .reuse import fill_from_siblings
from .version import code_fingerprint, package_versions, refuse_mixed, refuse_other_grid

__all__ = ["ResultsStore", "consolidate", "now", "template"]


log = logging.getLogger(__name__)


def _here():
    """Dask's synchronous scheduler: the template's few computed values are made here, never sent
    to a cluster (which may have no worker yet)."""
    import dask

    return dask.config.set(scheduler="synchronous")


def consolidate(path: Path) -> None:
    """Rebuild ``.zmetadata`` from the arrays' own metadata (without zarr's warning about the
    lock file inside the store, :data:`mccard_dist.lock.INNER_LOCK`)."""
    import warnings

    import zarr

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=rf"Object at {re.escape(INNER_LOCK)} is not")
        zarr.consolidate_metadata(str(path), zarr_format=2)


def _restore_missing_arrays(path: Path, spec: ExperimentSpec) -> tuple[list[str], list[str]]:
    """Recreate the template's arrays whose folder (or ``.zarray``) is gone: a coordinate whole,
    a data variable as metadata only (:func:`~mccard_dist.store.integrity.check` then finds its
    chunks lost), and add a metric the store never held (not in its ``.zmetadata``) with its
    values for the finished cells (:mod:`~mccard_dist.store.backfill`). Returns a message per
    array, and the data variables recreated as lost."""
    import shutil
    import tempfile

    schema = template(spec)
    missing = [n for n in schema.variables if not (path / str(n) / ".zarray").is_file()]
    if not missing:
        return [], []
    copies, _ = metadata_damage(path)
    held = {k.split("/")[0] for k in (copies or {})} if copies is not None else set(missing)
    added = [m for m in new_metrics(held) if m.name in missing]
    messages = []
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=f".{path.name}.restore-") as tmp:
        for name in missing:
            var = schema[[name]]
            var = var.drop_vars([c for c in var.coords if c != name])
            var.attrs = {}
            part = Path(tmp, name + ".zarr")
            with _here():
                var.to_zarr(str(part), compute=False, zarr_format=2, consolidated=False,
                            encoding=Layout.encoding(var))
            shutil.rmtree(path / name, ignore_errors=True)
            if name in {m.name for m in added}:
                shutil.copytree(part / name, path / name)
                messages.append(f"{name}: a metric this store did not hold; added")
            elif name in schema.data_vars:  # metadata only: its chunks count as lost
                (path / name).mkdir()
                for meta in (".zarray", ".zattrs"):
                    shutil.copy2(part / name / meta, path / name / meta)
                messages.append(f"{name}: the variable's folder was missing; recreated empty")
            else:
                shutil.copytree(part / name, path / name)
                messages.append(f"{name}: the coordinate's folder was missing; recreated")
    consolidate(path)
    if added:
        _fill_metrics(path, spec, added)
        consolidate(path)  # the notes
    for message in messages:
        log.warning("store %s: %s", path, message)
    return messages, [n for n in missing if n in schema.data_vars
                      and n not in {m.name for m in added}]


def _fill_metrics(path: Path, spec: ExperimentSpec, added) -> None:
    """Write every chunk of the metrics just added: their values for the finished cells from
    the stored coefficients, NaN elsewhere, and a note where they cannot be computed."""
    import zarr

    group = open_group(path, mode="r+")
    status = np.asarray(group["status"][...])
    coef = np.asarray(group["coef"][...]) if "coef" in group else None
    with zarr.config.set({"array.write_empty_chunks": True}):
        for metric in added:
            values, note = metric_values(spec, metric, status, coef)
            group[metric.name][...] = values
            if note:
                group[metric.name].attrs["note"] = note
                log.warning("store %s: %s", path, note)


def _repair_metadata(path: Path) -> None:
    """Rewrite the store's missing or unreadable metadata files from their other copy
    (:func:`~mccard_dist.store.layout.metadata_damage`): each file from ``.zmetadata``, or
    ``.zmetadata`` from the files; refuse a store where neither copy is left."""
    copies, bad = metadata_damage(path)
    if not bad:
        return
    if not metadata_repairable(copies, bad):
        raise StoreDamagedError(metadata_message(path, copies, bad))
    if copies is None:
        consolidate(path)
        how = "rebuilt from the arrays' metadata"
    else:
        for name in bad:
            (path / name).write_text(json.dumps(copies[name], indent=4, sort_keys=True))
        how = f"rewritten from its copy in {CONSOLIDATED}"
    for name, why in bad.items():
        log.warning("store %s: %s %s; %s", path, name, why, how)


def _to_compute(status: np.ndarray, retry_failed: bool) -> np.ndarray:
    """The cells a run computes: pending ones, and failed ones too when ``retry_failed``."""
    return (status == STATUS_PENDING) | (retry_failed & (status == STATUS_FAILED))


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def template(spec: ExperimentSpec, n_features: int | None = None,
              selection_scored: bool | None = None):
    """The store's template (:meth:`Layout.template`) with its attributes; ``n_features`` and
    ``selection_scored`` as given instead of from the data (a migrated store's)."""
    ds = Layout(spec).template(n_features)
    ds.attrs.update(
        title=f"mccard-dist results: experiment {spec.name}",
        grid_hash=grid.grid_hash(spec),
        grid_description=json.dumps(grid.grid_description(spec), sort_keys=True),
        config=json.dumps(spec.to_dict(), sort_keys=True),
        save_coef=int(spec.run.save_coef),
        selection_scored=int(spec.data.knows_true_coef if selection_scored is None
                             else selection_scored),
        code=code_fingerprint(),
        versions=json.dumps(package_versions(), sort_keys=True),
        created=now(),
        runs="[]",
    )
    ds.attrs[integrity.WRITES_EVERY_CHUNK] = 1
    return ds


class ResultsStore:
    """A results store on disk for one grid; create with :meth:`open_or_create`."""

    def __init__(self, path: Path, spec: ExperimentSpec):
        self.path = Path(path)
        self.spec = spec
        self._group = open_group(self.path, mode="r+")
        self._layout = Layout(spec)
        #: the driver's :class:`~mccard_dist.lock.StoreLock`: checked before each write
        self.lock = None
        self._n_candidates = {m.name: len(grid.cv_candidates(m)) for m in spec.methods}

    # -- opening ---------------------------------------------------------------------------------
    @classmethod
    def open_or_create(cls, spec: ExperimentSpec, path: str | Path | None = None) -> ResultsStore:
        """Open the store of ``spec`` (checking it was written by the same grid) or create it.

        Raises
        ------
        StoreMismatchError
            If the path holds a store of another grid (or something that is not a results store);
            nothing at the path is modified.
        """
        import zarr

        path = Path(path) if path is not None else store_path(spec)
        if path.exists():
            cls.check_compatible(path, spec)
            log.info("resuming results store %s", path)
            store = cls(path, spec)
            store.check_and_repair()
            return store
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".creating")
        if tmp.exists():
            import shutil

            shutil.rmtree(tmp)
        # every chunk written, so that any missing chunk was lost (integrity.check)
        with _here(), zarr.config.set({"array.write_empty_chunks": True}):
            schema = template(spec)
            schema.to_zarr(str(tmp), compute=False, zarr_format=2, consolidated=True,
                           encoding=Layout.encoding(schema))
        tmp.rename(path)  # a store appears whole or not at all
        log.info("created results store %s", path)
        store = cls(path, spec)
        if spec.store.path is None:  # a store named by its grid: variants of a grid sit together
            fill_from_siblings(store, spec)  # methods unchanged from a store beside it
        return store

    def check_and_repair(self, full: bool | None = None) -> list[str]:
        """Find lost or damaged chunks and put their finished cells back to pending
        (:func:`mccard_dist.store.integrity.check`; ``full`` defaults to
        ``store.verify == "full"``); returns what was found."""
        import zarr

        if full is None:
            full = self.spec.store.verify == "full"
        restored, lost = _restore_missing_arrays(self.path, self.spec)
        if restored:
            self._group = open_group(self.path, mode="r+")
        cv_methods = {i for i, m in enumerate(self.spec.methods) if self._n_candidates[m.name]}
        # what a done cell holds, as the store records it (and its readers read it)
        required = done_cell_values(bool(int(self._group.attrs["selection_scored"])))
        schema = template(self.spec)
        coordinates = {name: schema[name].values for name in schema.coords}
        with zarr.config.set({"array.write_empty_chunks": True}):
            return restored + integrity.check(
                self._group, self.path, list(self.spec.method_names), cv_methods, full=full,
                required=required, lost=set(lost), coordinates=coordinates, repair=True)

    @staticmethod
    def check_compatible(path: Path, spec: ExperimentSpec) -> None:
        """Refuse a store written by a different grid, saying what differs, and one whose cells
        left to compute would be computed by other code or numerical libraries than its cells so
        far (unless ``run.allow_mixed_versions``; :mod:`~mccard_dist.store.version`); its
        metadata files are repaired first (:func:`_repair_metadata`), so that they can be read."""
        _repair_metadata(Path(path))
        try:
            group = open_group(path)
            attrs = group.attrs.asdict()
        except Exception as exc:  # noqa: BLE001 - anything unreadable is "not a store"
            raise StoreMismatchError(
                f"{path} exists but is not a readable results store ({exc}); choose another "
                "store.path or move it away") from exc
        if "grid_hash" not in attrs:
            raise StoreMismatchError(f"{path} is a zarr store but not an mccard-dist results "
                                     "store; choose another store.path")
        refuse_other_grid(path, attrs, spec)
        try:
            computes = _to_compute(np.asarray(group["status"][...]), spec.run.retry_failed).any()
        except StoreDamagedError:  # rebuilt by the repair: cells may be left to compute
            computes = True
        if computes:
            refuse_mixed(path, attrs, spec.run.allow_mixed_versions)

    # -- reading ---------------------------------------------------------------------------------
    def status(self) -> np.ndarray:
        """The status array ``(model, tau, psi, seed)``."""
        return np.asarray(self._group["status"][...])

    def pending_cells(self, retry_failed: bool = False) -> list[grid.Cell]:
        """Cells not yet done (and failed ones too when ``retry_failed``), in grid order."""
        todo = _to_compute(self.status(), retry_failed)
        return [c for c in grid.cells(self.spec) if todo[c.index]]

    # -- writing ---------------------------------------------------------------------------------
    def write_block(self, block: grid.Block, results: list[CellResult]) -> None:
        """Write the results of one block into its region; the block's status goes last."""
        mi, ti, ps, ss = block.region
        n_psi, n_seed = ps.stop - ps.start, ss.stop - ss.start
        if len(results) != n_psi * n_seed or len(block.cells) != len(results):
            raise ValueError(f"block {block.key}: {len(results)} results for a region of "
                             f"{n_psi} x {n_seed} cells")
        pos = {}
        for res in results:
            m, t, p, s = res.index
            if m != mi or t != ti or not (ps.start <= p < ps.stop and ss.start <= s < ss.stop):
                raise ValueError(f"block {block.key}: result for cell {res.index} lies outside "
                                 f"its region {block.region}")
            pos[(p - ps.start, s - ss.start)] = res
        if len(pos) != len(results):
            raise ValueError(f"block {block.key}: duplicate cells in the results")
        if self.lock is not None:
            self.lock.check_held()
        import zarr

        g = self._group

        def write(name, value_of, fill=np.nan, dtype=float):
            values = np.full((n_psi, n_seed) + g[name].shape[4:], fill, dtype=dtype)
            for (p, s), res in pos.items():
                value = value_of(res)
                if value is not None:  # cv_score: a method's candidates come first
                    values[(p, s) + tuple(slice(n) for n in np.shape(value))] = value
            g[name][block.region] = values

        def scalar(name):
            write(name, lambda res: res.scalars.get(name, np.nan))

        with zarr.config.set({"array.write_empty_chunks": True}), self._writing():
            for name in self._layout.cell_variables():
                if name != "cell_seconds":
                    scalar(name)
            if self._n_candidates[block.method]:
                write("cv_score", lambda res: res.cv_score)
            if "coef" in g:
                write("coef", lambda res: res.coef)
            write("error", lambda res: res.error, "", object)
            scalar("cell_seconds")  # next to last: a lost status is rebuilt from it
            # last: the block counts as done only once all else is in
            write("status", lambda res: res.status, 0, np.int8)

    @contextlib.contextmanager
    def _writing(self):
        """A file system's refusal (full disk, quota, a lost mount) as one line that says the
        cells finished before are kept and how to go on."""
        try:
            yield
        except OSError as exc:
            raise StoreAccessError(
                f"store: writing to {self.path} failed ({exc.strerror or exc}); the cells "
                "finished before are kept: fix the file system (space, quota, mount) and rerun "
                "the same command to resume") from exc

    def _attrs(self) -> dict:
        """The store's attributes as they are on disk now."""
        try:
            return json.loads((self.path / ".zattrs").read_text())
        except FileNotFoundError:
            return self._group.attrs.asdict()

    def runs(self) -> list[dict]:
        """The run records (``runs`` attribute) as they are on disk now, oldest first."""
        return json.loads(self._attrs().get("runs", "[]"))

    def _update_runs(self, change) -> list[dict]:
        """Apply ``change`` to the records as they are on disk now and write them back."""
        with self._writing():
            runs = self.runs()
            change(runs)
            self._group.attrs["runs"] = json.dumps(runs)
            consolidate(self.path)
        return runs

    def _n_finished(self) -> int:
        return int((self.status() != STATUS_PENDING).sum())

    def start_run(self, started: str | None = None) -> str:
        """Record a run as started (``ended: "running"``, host, PID, the cells finished then, the
        code fingerprint and package versions computing its cells; ``started``: now by default);
        returns the record's ``id``. With cells left to compute, code or numerical libraries
        other than the store's cells so far are refused unless ``run.allow_mixed_versions``, and
        then the record notes what differs (``mixed_versions``). A previous record still ``running`` is marked as ended
        unrecorded, with the cells finished since it started."""
        import os
        import socket
        import uuid

        with self._writing():
            n_finished = self._n_finished()
            attrs = self._attrs()
            computes = _to_compute(self.status(), self.spec.run.retry_failed).any()
        mixed = refuse_mixed(self.path, attrs, self.spec.run.allow_mixed_versions) if computes \
            else []
        record = {"id": uuid.uuid4().hex[:12], "started": started or now(), "finished": None,
                  "blocks": 0, "cells": 0, "ended": "running", "host": socket.gethostname(),
                  "pid": os.getpid(), "finished_cells_at_start": n_finished,
                  "code": code_fingerprint(), "versions": package_versions(),
                  **({"mixed_versions": mixed} if mixed else {})}

        def change(runs):
            for run in runs:
                if run.get("ended") == "running":
                    written = n_finished - run.get("finished_cells_at_start", n_finished)
                    run.update(ended="unknown: the driver stopped without recording how",
                               cells=max(written, 0), blocks=None)
            runs.append(record)

        self._update_runs(change)
        return record["id"]

    def end_run(self, run_id: str, n_blocks: int, ended: str, n_cells: int | None = None,
                finished: str | None = None) -> None:
        """Say how the run ``run_id`` ended (``finished``, ``interrupted``, ``failed: ...``), with
        the blocks and cells it wrote (``n_cells``, or the cells finished since it started), at
        ``finished`` (now by default)."""
        finished = finished or now()
        with self._writing():
            n_finished = self._n_finished() if n_cells is None else None

        def change(runs):
            run = next((r for r in runs if r.get("id") == run_id), None)
            if run is None:  # lost from the file meanwhile: recorded again
                run = {"id": run_id, "started": None}
                runs.append(run)
            cells = n_cells if n_cells is not None else max(
                n_finished - run.get("finished_cells_at_start", 0), 0)
            run.update(finished=finished, blocks=n_blocks, cells=cells, ended=ended)

        self._update_runs(change)

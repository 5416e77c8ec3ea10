"""Creating and filling a results store: the only room that writes zarr.

The schema is written once as a template (coordinates with their values, lazily allocated data
variables, attributes with the resolved config, the grid hash and package versions); each block
of work then fills exactly its own region, ``status`` last, so an interrupted run leaves finished
blocks done and the others pending. Only the driver writes. The variables are listed in
:mod:`~mccard_dist.store.layout`.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import functools
import itertools
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
from ..records import STATUS_DONE, STATUS_FAILED, STATUS_PENDING, BlockResult, done_cell_values
from .backfill import fill_metrics, new_metrics
from .errors import StoreDamagedError, StoreMismatchError
from .integrity import open_group
from .layout import (CONSOLIDATED, ENDED_UNRECORDED, Layout, cells_since_start, finished_cells,
                     metadata_damage, metadata_message, metadata_repairable, store_path)
from .reuse import fill_from_siblings
from .version import (computing, fingerprint, own_metrics, package_versions, refuse_mixed,
                      refuse_other_grid, version_differences)

__all__ = ["ResultsStore", "consolidate", "now", "template", "to_compute"]


log = logging.getLogger(__name__)


class _Loop:
    """An event loop in a thread of its own, on which the writer awaits zarr's asynchronous
    writes: the caller's thread may run a loop of its own (a notebook's)."""

    def __init__(self):
        import threading

        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="mccard-store-io",
                         daemon=True).start()

    def run(self, coroutine):
        """Run ``coroutine`` on the loop and return its result (or raise its exception)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()


@functools.cache
def _io() -> _Loop:
    return _Loop()


async def _gather(coroutines):
    await asyncio.gather(*coroutines)


def _turns(finished: list, arrays: dict) -> list[list]:
    """``finished`` blocks in turns in which no two share a chunk of any of ``arrays``."""
    turns: list[tuple[list, set]] = []
    for pair in finished:
        region = pair[0].region
        keys = set()
        for name, array in arrays.items():
            spans = [range(r if isinstance(r, int) else r.start,
                           (r + 1 if isinstance(r, int) else r.stop)) for r in region]
            keys.update((name, *index) for index in itertools.product(*(
                range(span.start // c, (span.stop - 1) // c + 1)
                for span, c in zip(spans, array.chunks))))
        for pairs, taken in turns:
            if not keys & taken:
                pairs.append(pair)
                taken |= keys
                break
        else:
            turns.append(([pair], keys))
    return [pairs for pairs, _ in turns]


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
    added = [m for m in new_metrics(held, spec.metric_table) if m.name in missing]
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
        fill_metrics(path, spec, added, open_group(path, mode="r+"))
        consolidate(path)  # the notes
    for message in messages:
        log.warning("store %s: %s", path, message)
    return messages, [n for n in missing if n in schema.data_vars
                      and n not in {m.name for m in added}]


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


def to_compute(status: np.ndarray, retry_failed: bool) -> np.ndarray:
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
        kinds=json.dumps({m.name: m.kind.declared() for m in spec.methods}, sort_keys=True),
        metrics=json.dumps([m.declared() for m in own_metrics(spec)]),
        save_coef=int(spec.run.save_coef),
        selection_scored=int(spec.data.knows_true_coef if selection_scored is None
                             else selection_scored),
        code=json.dumps(fingerprint(*computing(spec)), sort_keys=True),
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
        self._async_arrays = None
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
            self._async_arrays = None
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
    def check_compatible(path: Path, spec: ExperimentSpec, repair: bool = True) -> None:
        """Refuse a store written by a different grid, saying what differs, and one whose cells
        left to compute would be computed by other code or numerical libraries than its cells so
        far (unless ``run.allow_mixed_versions``; :mod:`~mccard_dist.store.version`), and note
        (a warning) that a finished store's cells were computed so; where ``repair``, its
        metadata files are repaired first (:func:`_repair_metadata`; a plan reads them as is)."""
        if repair:
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
            computes = to_compute(np.asarray(group["status"][...]), spec.run.retry_failed).any()
        except StoreDamagedError:  # rebuilt by the repair: cells may be left to compute
            computes = True
        if computes:
            refuse_mixed(path, attrs, spec.run.allow_mixed_versions, *computing(spec))
        elif differs := version_differences(attrs, *computing(spec)):  # results of other code
            log.warning("note: the results in %s were computed by other code or libraries than "
                        "these (%s); to compute them with this code, give a new store.path (a "
                        "store of its own is computed whole)", path, "; ".join(differs))

    # -- reading ---------------------------------------------------------------------------------
    def status(self) -> np.ndarray:
        """The status array ``(model, tau, psi, seed)``."""
        return np.asarray(self._group["status"][...])

    def todo(self, retry_failed: bool = False) -> np.ndarray:
        """The boolean ``(model, tau, psi, seed)`` array of the cells a run computes: those not
        yet done (and failed ones too when ``retry_failed``)."""
        return to_compute(self.status(), retry_failed)

    def methods_without_cells(self) -> dict[str, tuple[int, str]]:
        """The methods none of whose finished cells is done: method -> (their failed cells, the
        first one's error, in grid order)."""
        status, out = self.status(), {}
        for m, name in enumerate(self.spec.method_names):
            failed = np.argwhere(status[m] == STATUS_FAILED)
            if len(failed) and not (status[m] == STATUS_DONE).any():
                out[name] = (len(failed), str(self._group["error"][(m, *failed[0])]))
        return out

    def pending_cells(self, retry_failed: bool = False) -> list[grid.Cell]:
        """Cells not yet done (and failed ones too when ``retry_failed``), in grid order."""
        todo = self.todo(retry_failed)
        return [c for c in grid.cells(self.spec) if todo[c.index]]

    # -- writing ---------------------------------------------------------------------------------
    @property
    def tile(self) -> tuple[int, int]:
        """``(psi values, seeds)`` of the store's per-cell chunks: blocks stay inside one, so
        that each write touches one chunk of each variable."""
        return tuple(self._group["status"].chunks[2:4])

    def write_block(self, block: grid.Block, result: BlockResult) -> None:
        """Write the results of one block into its region (:meth:`write_blocks`)."""
        self.write_blocks([(block, result)])

    def write_blocks(self, finished: list[tuple[grid.Block, BlockResult]]) -> None:
        """Write the results of finished blocks, each into its region: every variable of every
        block at once (zarr's asynchronous writes), then ``cell_seconds`` (a lost status is
        rebuilt from it), then ``status``, so that a block counts as done only once all else of
        it is in; blocks that share a chunk of a variable in turns (two writes of one chunk at
        once would each rewrite it with its own part)."""
        for block, result in finished:
            for name, values in result.values.items():
                if np.shape(values) != block.shape:
                    raise ValueError(f"block {block.key}: {name} has the shape "
                                     f"{np.shape(values)}, its region {block.shape}")
        if self.lock is not None:
            self.lock.check_held()
        arrays = self._arrays()
        first = [name for name in arrays if name not in ("cell_seconds", "status")]
        with self._writing():
            for turn in _turns(finished, arrays):
                for names in (first, ["cell_seconds"], ["status"]):
                    _io().run(_gather(arrays[name].setitem(block.region, self._values(
                        name, arrays[name].shape, block, result))
                        for block, result in turn for name in names
                        if name != "cv_score" or self._n_candidates[block.method]))

    def _arrays(self) -> dict:
        """The store's zarr arrays of per-cell results, opened once, asynchronously."""
        if self._async_arrays is None:
            from .integrity import verified_store

            async def opened():
                import zarr.api.asynchronous as zarr_async

                group = await zarr_async.open_group(verified_store(self.path, False),
                                                    mode="r+", zarr_format=2)
                names = [*self._layout.cell_variables(), "cv_score", "coef", "error", "status"]
                held = [name for name in names if name in self._group]
                found = await asyncio.gather(*(group.getitem(name) for name in held))
                # every chunk written, even one of fill values (integrity.WRITES_EVERY_CHUNK)
                return {name: array.with_config({"write_empty_chunks": True})
                        for name, array in zip(held, found)}

            self._async_arrays = _io().run(opened())
        return self._async_arrays

    def _values(self, name: str, shape: tuple, block: grid.Block, result: BlockResult):
        """What ``block``'s region of the variable ``name`` (of ``shape``) gets from ``result``:
        its values, NaN (or "" for ``error``) where it has none, ``cv_score`` past a method's
        candidates NaN."""
        region = block.shape + tuple(shape[4:])
        if name == "cv_score" or name == "coef":
            given = result.cv_score if name == "cv_score" else result.coef
            values = np.full(region, np.nan)
            if given is not None:
                values[tuple(slice(n) for n in given.shape)] = given
            return values
        if name in result.values:
            return result.values[name]
        return np.full(region, "" if name == "error" else np.nan,
                       dtype=object if name == "error" else np.float64)

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
        return finished_cells(self.status())

    def start_run(self, started: str | None = None) -> str:
        """Record a run as started (``ended: "running"``, host, PID, the cells finished then, the
        code fingerprint and package versions computing its cells; ``started``: now by default);
        returns the record's ``id``. With cells left to compute, code or numerical libraries
        other than the store's cells so far are refused unless ``run.allow_mixed_versions``, and
        then the record notes what differs (``mixed_versions``). A previous record still
        ``running`` is marked as ended unrecorded, with the cells finished since it started."""
        import os
        import socket
        import uuid

        with self._writing():
            n_finished = self._n_finished()
            attrs = self._attrs()
            computes = to_compute(self.status(), self.spec.run.retry_failed).any()
        mixed = (refuse_mixed(self.path, attrs, self.spec.run.allow_mixed_versions,
                              *computing(self.spec)) if computes else [])
        record = {"id": uuid.uuid4().hex[:12], "started": started or now(), "finished": None,
                  "blocks": 0, "cells": 0, "ended": "running", "host": socket.gethostname(),
                  "pid": os.getpid(), "finished_cells_at_start": n_finished,
                  "code": fingerprint(*computing(self.spec)),
                  "versions": package_versions(),
                  **({"stop": self.spec.stop.to_dict()} if self.spec.stop else {}),
                  **({"mixed_versions": mixed} if mixed else {})}

        def change(runs):
            for run in runs:
                if run.get("ended") == "running":
                    run.update(ended=ENDED_UNRECORDED, cells=cells_since_start(run, n_finished),
                               blocks=None)
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

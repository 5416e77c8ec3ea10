"""A results store's chunks, verified whenever they are read, checked against its status and
repaired by recomputing what was lost.

zarr reads a missing chunk (or a folder in its place) as its fill value without a word, and Blosc
decodes a truncated chunk from whatever lies in memory after it. Two guards: every read goes
through :class:`VerifiedStore` (:func:`open_group`, :func:`open_dataset`), which refuses a chunk
path that is not a regular file and a Blosc chunk whose length disagrees with its header
(:class:`StoreDamagedError`); and :func:`check` walks every chunk against the cells' status.
Readers refuse a store with a problem (``repair=False``); a resuming run repairs it
(``repair=True``): coordinates are rewritten from the grid, ``status`` is rebuilt from
``cell_seconds`` and ``error`` (also where it marks a cell failed that has no error message), a
lost ``error`` chunk is rebuilt (failed cells lose their message), finished cells whose chunks
of per-cell variables, ``cv_score`` or ``coef`` are missing or damaged (or that lack a value
every done cell has) go back to pending, and damaged chunk paths are deleted. Only bytes and
paths that do not check out count as damage: a file system error is raised as it is.
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
from pathlib import Path

import numpy as np

from ..records import (SELECTION_VALUES, STATUS_DONE, STATUS_FAILED, STATUS_PENDING,
                       done_cell_values)
from .errors import StoreDamagedError
from .layout import CELL_DIMS, MISSING, chunk_state, remove_chunk

__all__ = ["WRITES_EVERY_CHUNK", "VerifiedStore", "check",  # noqa: F822 - made on first use "check_stored", "open_dataset",
           "open_group", "verified_store"]

log = logging.getLogger(__name__)

#: store attribute: 1 when every chunk of a written region is stored, even one holding only the
#: fill value (so that any missing chunk of a finished region was lost)
WRITES_EVERY_CHUNK = "writes_every_chunk"

#: what a reader says after the problem it found
REPAIR_HINT = ("rerun the experiment's command to repair it (what the damaged chunks held is "
               "rebuilt or recomputed)")


def blosc_size_matches(raw: bytes) -> bool:
    """Whether a Blosc chunk is as long as its header says: the compressed size ``cbytes`` is
    bytes 12-15 of the 16-byte header, little-endian."""
    return len(raw) >= 16 and int.from_bytes(raw[12:16], "little") == len(raw)


@functools.cache
def _verified_store_class():
    """:class:`VerifiedStore`, made on first use (zarr is imported only when a store is)."""
    from zarr.storage import WrapperStore

    class VerifiedStore(WrapperStore):
        """A zarr store (wrapping a :class:`zarr.storage.LocalStore`; it pickles) that refuses a
        Blosc chunk whose length disagrees with its header, before a codec sees it."""

        def __init__(self, store):
            super().__init__(store)
            self._blosc: dict[str, bool] = {}

        def _with_store(self, store):
            return type(self)(store)

        async def _is_blosc(self, array: str, prototype) -> bool:
            if array not in self._blosc:
                meta = await self._store.get(f"{array}/.zarray" if array else ".zarray",
                                             prototype)
                compressor = None
                if meta is not None:
                    try:
                        compressor = (json.loads(meta.to_bytes()).get("compressor") or {}).get("id")
                    except ValueError:
                        pass
                self._blosc[array] = compressor == "blosc"
            return self._blosc[array]

        async def get(self, key, prototype=None, byte_range=None):
            if prototype is None:
                from zarr.core.buffer import default_buffer_prototype

                prototype = default_buffer_prototype()
            array, _, name = key.rpartition("/")
            if not name.startswith("."):  # a FIFO would block the read, a folder read as "none"
                why = chunk_state(Path(self._store.root, key))
                if why not in (None, MISSING):
                    raise StoreDamagedError(
                        f"store {self._store.root}: chunk {key} {why}; {REPAIR_HINT}", why)
            buf = await self._store.get(key, prototype, byte_range)
            if buf is None or byte_range is not None or name.startswith("."):
                return buf
            if await self._is_blosc(array, prototype):
                raw = buf.to_bytes()
                if not blosc_size_matches(raw):
                    said = (f"where its header says {int.from_bytes(raw[12:16], 'little')}"
                            if len(raw) >= 16 else "for a 16-byte header")
                    detail = (f"is damaged ({len(raw)} bytes {said}: truncated or "
                              "overwritten)")
                    raise StoreDamagedError(
                        f"store {self._store.root}: chunk {key} {detail}; {REPAIR_HINT}", detail)
            return buf

        async def _get_many(self, requests):
            for key, prototype, byte_range in requests:
                yield key, await self.get(key, prototype, byte_range)

    VerifiedStore.__module__ = __name__
    VerifiedStore.__qualname__ = "VerifiedStore"
    return VerifiedStore


def __getattr__(name):  # VerifiedStore: a class of zarr's, so made when first asked for
    if name == "VerifiedStore":
        return _verified_store_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def verified_store(path, read_only: bool = True):
    """The store at ``path`` as a zarr store whose every chunk read is verified
    (:class:`VerifiedStore`)."""
    from zarr.storage import LocalStore

    return _verified_store_class()(LocalStore(str(path), read_only=read_only))


def open_group(path, mode: str = "r"):
    """The store's zarr group (format 2), every chunk read verified."""
    import zarr

    return zarr.open_group(verified_store(path, mode == "r"), mode=mode, zarr_format=2)


def open_dataset(path):
    """The store as a lazy xarray Dataset (consolidated metadata), every chunk read verified."""
    import xarray as xr

    return xr.open_zarr(verified_store(path, True), consolidated=True)


class _Damaged(Exception):
    """A chunk's bytes cannot be decoded."""


def _read(array, region):
    """``array[region]``, raising :class:`_Damaged` for a chunk that cannot be decoded; an
    ``OSError`` or ``MemoryError`` says nothing about the chunk (which must not be deleted for
    it) and is raised as it is."""
    try:
        return array[region]
    except (OSError, MemoryError):
        raise
    except StoreDamagedError as exc:
        raise _Damaged(exc.detail) from exc
    except Exception as exc:  # noqa: BLE001 - each codec has its own decoding errors
        raise _Damaged(f"cannot be read ({exc})") from exc


def _chunks(array):
    """``(index, region)`` of every chunk of a zarr array."""
    grid = [range(-(-s // c)) for s, c in zip(array.shape, array.chunks)]
    for idx in itertools.product(*grid):
        yield idx, tuple(slice(i * c, min((i + 1) * c, s))
                         for i, c, s in zip(idx, array.chunks, array.shape))


def _file_of(path: Path, name: str):
    """The chunk file of an index of array ``name``."""
    try:
        meta = json.loads((path / name / ".zarray").read_text())
        separator = meta.get("dimension_separator") or "."
    except (OSError, ValueError):
        separator = "."
    return lambda idx: path / name / separator.join(map(str, idx))


def _header_ok(file: Path) -> bool:
    """A chunk file's length against its Blosc header, reading 16 bytes."""
    with open(file, "rb") as f:
        head = f.read(16)
    return len(head) == 16 and int.from_bytes(head[12:16], "little") == file.stat().st_size


def _same(values: np.ndarray, expected: np.ndarray) -> bool:
    values, expected = np.asarray(values), np.asarray(expected)
    if values.shape != expected.shape:
        return False
    if values.dtype.kind == "f" and expected.dtype.kind == "f":
        return bool(np.array_equal(values, expected, equal_nan=True))
    if "U" in (values.dtype.kind, expected.dtype.kind):
        return bool(np.array_equal(values.astype(str), expected.astype(str)))
    return bool(np.array_equal(values, expected))


def check(group, path: Path, methods: list[str], cv_methods: set[int], *, full: bool = False,
          required: tuple[str, ...] = done_cell_values(True),
          lost: frozenset[str] | set[str] = frozenset(),
          coordinates: dict[str, np.ndarray] | None = None, repair: bool = False) -> list[str]:
    """Check every chunk of the store at ``path`` (its zarr group, from :func:`open_group`).

    ``methods``: the names along ``model``; ``cv_methods``: indices of the methods that write
    ``cv_score``; ``full``: also decompress every chunk of ``cv_score`` and ``coef`` holding
    finished cells; ``required``: the per-cell variables every done cell has
    (:func:`~mccard_dist.records.done_cell_values`); ``lost``: variables whose every chunk is
    gone (their folder was recreated empty); ``coordinates``: the values the store's coordinates
    must hold, by name (with ``repair``, rewritten where they differ or were lost).

    Returns one message per problem found (empty if the store is whole). With ``repair``, the
    problems are mended as the module says and each is logged as a warning; without it nothing
    is written or deleted.
    """
    path = Path(path)
    every_chunk = bool(int(group.attrs.get(WRITES_EVERY_CHUNK, 0)))
    problems: list[str] = []
    reset = np.zeros(group["status"].shape, bool)  # finished cells whose results are lost
    doomed: list[Path] = []  # damaged chunk files, deleted by the repair

    def damaged(name, file, region, why):
        problems.append(f"{name}: chunk {file.name} ({', '.join(methods[region[0]])}) {why}")
        if why != MISSING:
            doomed.append(file)
        reset[region[:4]] = True

    def read(name, array, file, region):
        try:
            _read(array, region)
        except _Damaged as exc:
            damaged(name, file, region, str(exc))

    names = sorted(group.array_keys())
    dims = {name: tuple(group[name].attrs.get("_ARRAY_DIMENSIONS", ())) for name in names}

    # -- coordinates (every array not laid out by cell): written whole with the store ----------
    coordinates = coordinates or {}
    for name in (n for n in names if dims[n][:4] != CELL_DIMS):
        array = group[name]
        file = _file_of(path, name)
        bad = None
        for idx, region in _chunks(array):
            why = chunk_state(file(idx))
            if why is not None:
                bad = f"chunk {file(idx).name} {why}"
                break
            try:
                _read(array, region)
            except _Damaged as exc:
                bad = f"chunk {file(idx).name} {exc}"
                break
        if bad is None and name in coordinates:
            if not _same(np.asarray(_read(array, ...)), coordinates[name]):
                bad = "holds other values than the store's config gives"
        if bad is None:
            continue
        if repair and name in coordinates:
            for idx, _ in _chunks(array):
                remove_chunk(file(idx))
            array[...] = coordinates[name]
            bad += "; rewritten from the config"
        problems.append(f"coordinate {name}: {bad}")

    # -- status, rebuilt where its chunk is gone, unreadable or marks a cell failed that has no
    # error message (a failed cell always has one) ----------------------------------------------
    shape = group["status"].shape
    status = np.zeros(shape, np.int8)
    seconds = np.full(shape, np.nan)
    for idx, region in _chunks(group["cell_seconds"]):
        try:
            seconds[region] = _read(group["cell_seconds"], region)
        except _Damaged:
            pass  # reported with the per-cell variables below
    errors, known = np.full(shape, "", dtype=object), np.zeros(shape, bool)
    error_file = _file_of(path, "error")
    for idx, region in _chunks(group["error"]):
        try:
            if chunk_state(error_file(idx)) is None:
                errors[region], known[region] = _read(group["error"], region), True
        except _Damaged:
            pass  # reported and rebuilt below
    status_file = _file_of(path, "status")
    for idx, region in _chunks(group["status"]):
        file = status_file(idx)
        why, block = chunk_state(file), None
        try:
            block = None if why else np.asarray(_read(group["status"], region))
        except _Damaged as exc:
            why = str(exc)
        if block is not None:
            silent = (block == STATUS_FAILED) & known[region] & (errors[region] == "")
            if silent.any():
                why, block = (f"marks {int(silent.sum())} cell(s) failed that have no error "
                              "message"), None
        if why not in (None, MISSING) and repair:
            remove_chunk(file)
        written = np.isfinite(seconds[region])
        rebuilt = block is None and written.any()
        if rebuilt:
            block = np.where(written, np.where(errors[region] == "", STATUS_DONE,
                                               STATUS_FAILED), STATUS_PENDING).astype(np.int8)
            if repair:
                group["status"][region] = block
        if rebuilt or why not in (None, MISSING):  # a lost chunk of unfinished cells: no loss
            problems.append(f"status: chunk {file.name} {why}"
                            + (f"; rebuilt from cell_seconds and error ({int(written.sum())} "
                               "finished cells)" if repair and rebuilt else ""))
        status[region] = 0 if block is None else block
    finished = (status == STATUS_DONE) | (status == STATUS_FAILED)
    done = status == STATUS_DONE

    # -- error messages: rebuilt where their chunk is gone (several cells each) ------------
    for idx, region in _chunks(group["error"]):
        file = error_file(idx)
        why = chunk_state(file)
        try:
            if why is None:
                _read(group["error"], region)
                continue
        except _Damaged as exc:
            why = str(exc)
        if why != MISSING and repair:
            remove_chunk(file)
        failed = status[region] == STATUS_FAILED
        if not finished[region].any():
            continue
        if repair:
            group["error"][region] = np.where(failed, "error message lost with a damaged chunk",
                                              "").astype(object)
        problems.append(f"error: chunk {file.name} {why}"
                        + (f"; rebuilt ({int(failed.sum())} failed cells lost their message)"
                           if repair else ""))

    # -- per-cell variables: read every chunk holding finished cells; anything but a file where a
    # chunk belongs is damage wherever it is (a later write into it would fail) ---------------
    for name in names:
        if dims[name] != CELL_DIMS or name in ("status", "error"):
            continue
        array, file = group[name], _file_of(path, name)
        for idx, region in _chunks(array):
            why = chunk_state(file(idx))
            if why not in (None, MISSING):
                damaged(name, file(idx), region, why)
            elif not finished[region].any():
                continue
            elif why is None:
                read(name, array, file(idx), region)
            elif every_chunk or name in lost or (name in required and done[region].any()):
                damaged(name, file(idx), region, MISSING)

    # -- large variables: the chunk files of finished cells must exist and be whole ------------
    for name in ("cv_score", "coef"):
        if name not in group:
            continue
        array, file = group[name], _file_of(path, name)
        for idx, region in _chunks(array):
            why = chunk_state(file(idx))
            if why not in (None, MISSING):
                damaged(name, file(idx), region, why)
            elif (name == "cv_score" and idx[0] not in cv_methods) or not done[region[:4]].any():
                continue
            elif why == MISSING:
                damaged(name, file(idx), region, MISSING)
            elif not _header_ok(file(idx)):
                damaged(name, file(idx), region, "is damaged (its length disagrees with its "
                        "header: truncated or overwritten)")
            elif full:
                read(name, array, file(idx), region)

    # -- finished cells must have the values every finished cell has -------------------------
    # (a model without coefficients has no selection: none of its selection values, not some)
    read_values = {}
    for name in required:
        try:
            read_values[name] = np.asarray(_read(group[name], ...), dtype=float)
        except (_Damaged, KeyError):  # its chunks were handled above, or it is not stored
            continue
    selection = [read_values[n] for n in SELECTION_VALUES if n in read_values]
    unselected = np.all([~np.isfinite(v) for v in selection], axis=0) if selection else False
    for name, values in read_values.items():
        bad = done & ~np.isfinite(values) & ~reset
        if name in SELECTION_VALUES:
            bad &= ~unselected
        if bad.any():
            who = ", ".join(sorted({methods[i] for i in np.flatnonzero(bad.any(axis=(1, 2, 3)))}))
            problems.append(f"{name}: {int(bad.sum())} done cell(s) of {who} have no value")
            reset |= bad

    reset &= finished
    if reset.any() and repair:
        counts = ", ".join(f"{methods[i]} {int(n)}" for i, n in
                           enumerate(reset.sum(axis=(1, 2, 3))) if n)
        status[reset] = STATUS_PENDING
        group["status"][...] = status
        problems.append(f"{int(reset.sum())} finished cell(s) ({counts}) are pending again "
                        "and will be recomputed")
    if repair:
        for file in doomed:
            remove_chunk(file)
        for message in problems:
            log.warning("store %s: %s", path, message)
    return problems


def check_stored(path, attrs: dict) -> list[str]:
    """The problems :func:`check` finds in the store at ``path``, judged by its stored config
    (``attrs``: the store's attributes); nothing is changed, and no estimator is imported."""
    config = json.loads(attrs["config"])
    experiment = config["experiment"]
    names = list(experiment["methods"])
    coordinates = {"tau": np.array(experiment["tau"], float),
                   "psi": np.array(experiment["psi"], float),
                   "seed": np.array(experiment["seeds"], np.int64),
                   "model": np.array(names, str)}
    cv_methods = {i for i, n in enumerate(names)  # a grid with a list: CV scores per candidate
                  if any(isinstance(v, list) and v
                         for v in (config["methods"][n].get("grid") or {}).values())}
    required = done_cell_values(bool(int(attrs["selection_scored"])))
    return check(open_group(path), Path(path), names, cv_methods, required=required,
                 coordinates=coordinates)

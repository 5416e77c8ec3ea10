"""A results store's chunks checked against its status, and repaired by recomputing what was lost.

A chunk can go missing (deleted, lost with a disk) or be damaged (truncated by a full disk or a
killed copy). zarr reads a missing chunk as its fill value (NaN, or 0 = pending for ``status``)
without a word, and a damaged one as an error that names no variable. :func:`check_and_repair`
finds both and turns them into work:

- ``status``: a missing or unreadable status chunk is rebuilt from ``cell_seconds`` (finite for
  every cell that was written, and written just before the status) and ``error`` (non-empty for
  failed cells); a lost ``error`` chunk is rebuilt too (failed cells lose their message);
- per-cell variables: each chunk is read; a damaged chunk, or a missing chunk of a slab holding
  finished cells, puts those cells back to pending (a missing chunk counts as lost when the
  store writes every chunk, see :data:`WRITES_EVERY_CHUNK`, or when the variable is finite for
  every finished cell);
- ``cv_score`` and ``coef``: a missing chunk covering finished cells puts them back to pending
  (these are large, so their chunks are not decompressed here);
- damaged chunk files are deleted (zarr reads a chunk before writing part of it). Only a chunk
  whose bytes cannot be decoded counts as damaged: a file system error is raised as it is.

The cells put back to pending are recomputed by the next run; nothing else is touched.
"""

from __future__ import annotations

import itertools
import json
import logging
from pathlib import Path

import numpy as np

from ..records import (
    STATUS_DONE,
    STATUS_FAILED,
    STATUS_PENDING,
    done_cell_values,
    stored_name,
)

__all__ = ["WRITES_EVERY_CHUNK", "check_and_repair"]

log = logging.getLogger(__name__)

#: store attribute: 1 when every chunk of a written region is stored, even one holding only the
#: fill value (so that any missing chunk of a finished region was lost)
WRITES_EVERY_CHUNK = "writes_every_chunk"



def _read(array, region):
    """``array[region]``, raising :class:`_Damaged` for a chunk that cannot be decoded; an
    ``OSError`` (a file system's hiccup, a permission) or ``MemoryError`` is raised as it is: it
    says nothing about the chunk, which must not be deleted for it."""
    try:
        return array[region]
    except (OSError, MemoryError):
        raise
    except Exception as exc:  # noqa: BLE001 - each codec has its own decoding errors
        raise _Damaged(str(exc)) from exc


class _Damaged(Exception):
    """A chunk's bytes cannot be decoded."""


def _chunks(array):
    """``(key, region)`` of every chunk of a zarr array."""
    grid = [range(-(-s // c)) for s, c in zip(array.shape, array.chunks)]
    for idx in itertools.product(*grid):
        region = tuple(slice(i * c, min((i + 1) * c, s))
                       for i, c, s in zip(idx, array.chunks, array.shape))
        yield idx, region


def _chunk_file(path: Path, name: str, idx, separator: str) -> Path:
    return path / name / separator.join(map(str, idx))


def _separator(path: Path, name: str) -> str:
    try:
        return json.loads((path / name / ".zarray").read_text()).get("dimension_separator") or "."
    except (OSError, ValueError):
        return "."


def _cell_variables(group) -> list[str]:
    """The per-cell result arrays of the store (dims ``model, tau, psi, seed``, under their
    names in stores of earlier versions too), ``status`` and ``error`` left out."""
    names = []
    for name in sorted(group.array_keys()):
        dims = group[name].attrs.get("_ARRAY_DIMENSIONS", [])
        if len(dims) == 4 and dims[1:] == ["tau", "psi", "seed"] and name not in ("status",
                                                                                 "error"):
            names.append(name)
    return names


def check_and_repair(group, path: Path, methods: list[str], cv_methods: set[int],
                     full: bool = False,
                     required: tuple[str, ...] = done_cell_values(True),
                     lost: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """Check every chunk of the store at ``path`` (an open zarr group) and repair what was lost.

    ``methods``: the names along ``model``; ``cv_methods``: indices of the methods that write
    ``cv_score``; ``full``: also decompress every chunk of ``cv_score`` and ``coef`` holding
    finished cells (slower: they are most of the store); ``required``: the per-cell variables
    every done cell has (:func:`~mccard_dist.records.done_cell_values`: the selection counts only
    for data with true coefficients), so a done cell without one of them was lost; ``lost``:
    variables whose every chunk is gone (their folder was recreated empty). Returns one
    message per problem found (empty if the store is whole); each is also logged as a warning.
    """
    path = Path(path)
    every_chunk = bool(int(group.attrs.get(WRITES_EVERY_CHUNK, 0)))
    problems: list[str] = []
    reset = np.zeros(group["status"].shape, bool)  # cells to put back to pending

    def damaged(name, idx, region, why):
        file = _chunk_file(path, name, idx, _separator(path, name))
        which = ", ".join(methods[region[0]])
        problems.append(f"{name}: chunk {file.name} ({which}) {why}")
        if why.startswith("cannot be read"):
            file.unlink(missing_ok=True)
        return region[:4]

    # -- status, rebuilt where its chunk is gone or unreadable ------------------------------------
    status = np.zeros(group["status"].shape, np.int8)
    seconds = np.full(group["status"].shape, np.nan)
    for idx, region in _chunks(group["cell_seconds"]):
        try:
            seconds[region] = _read(group["cell_seconds"], region)
        except _Damaged:
            pass  # reported with the per-cell variables below
    for idx, region in _chunks(group["status"]):
        file = _chunk_file(path, "status", idx, _separator(path, "status"))
        try:
            block = np.asarray(_read(group["status"], region)) if file.exists() else None
        except _Damaged:
            file.unlink(missing_ok=True)
            block = None
        written = np.isfinite(seconds[region])
        if block is None and written.any():
            try:
                errors = np.asarray(_read(group["error"], region), dtype=object)
            except _Damaged:
                errors = np.full(written.shape, "", dtype=object)
            block = np.where(written, np.where(errors == "", STATUS_DONE, STATUS_FAILED),
                             STATUS_PENDING).astype(np.int8)
            group["status"][region] = block
            problems.append(f"status: chunk {file.name} was missing or damaged; rebuilt from "
                            f"cell_seconds and error ({int(written.sum())} finished cells)")
        status[region] = 0 if block is None else block
    finished = status != STATUS_PENDING
    done = status == STATUS_DONE

    # -- error messages: rebuilt where their chunk is gone (it spans the whole grid) ------------
    for idx, region in _chunks(group["error"]):
        file = _chunk_file(path, "error", idx, _separator(path, "error"))
        try:
            if file.exists():
                _read(group["error"], region)
                continue
        except _Damaged:
            file.unlink(missing_ok=True)
        failed = status[region] == STATUS_FAILED
        if not finished[region].any():
            continue
        group["error"][region] = np.where(failed, "error message lost with a damaged chunk",
                                          "").astype(object)
        problems.append(f"error: chunk {file.name} was missing or damaged; rebuilt "
                        f"({int(failed.sum())} failed cells lost their message)")

    # -- per-cell variables: read every chunk --------------------------------------------------
    for name in _cell_variables(group):
        array = group[name]
        separator = _separator(path, name)
        for idx, region in _chunks(array):
            if not finished[region].any():
                continue
            file = _chunk_file(path, name, idx, separator)
            if not file.exists():
                if every_chunk or name in lost or (name in required and done[region].any()):
                    reset[damaged(name, idx, region, "is missing")] = True
                continue
            try:
                _read(array, region)
            except _Damaged as exc:
                reset[damaged(name, idx, region, f"cannot be read ({exc})")] = True

    # -- large variables: the chunk files of finished cells must exist -------------------------
    for name in ("cv_score", "coef"):
        if name not in group:
            continue
        array = group[name]
        separator = _separator(path, name)
        for idx, region in _chunks(array):
            cells = region[:4]
            if name == "cv_score" and idx[0] not in cv_methods:
                continue
            if not done[cells].any():
                continue
            if not _chunk_file(path, name, idx, separator).exists():
                reset[damaged(name, idx, region, "is missing")] = True
            elif full:
                try:
                    _read(array, region)
                except _Damaged as exc:
                    reset[damaged(name, idx, region, f"cannot be read ({exc})")] = True

    # -- finished cells must have the values every finished cell has -------------------------
    for name in required:
        name = stored_name(group, name)
        if name not in group:
            continue
        try:
            values = np.asarray(_read(group[name], ...), dtype=float)
        except _Damaged:  # its chunks were handled above
            continue
        bad = done & ~np.isfinite(values) & ~reset
        if bad.any():
            which = ", ".join(sorted({methods[i] for i in np.flatnonzero(bad.any(axis=(1, 2, 3)))}))
            problems.append(f"{name}: {int(bad.sum())} done cell(s) of {which} have no value")
            reset |= bad

    reset &= finished
    if reset.any():
        status[reset] = STATUS_PENDING
        group["status"][...] = status
        which = ", ".join(f"{methods[i]} {int(n)}" for i, n in
                          enumerate(reset.sum(axis=(1, 2, 3))) if n)
        problems.append(f"{int(reset.sum())} finished cell(s) ({which}) are pending again and "
                        "will be recomputed")
    for message in problems:
        log.warning("store %s: %s", path, message)
    return problems

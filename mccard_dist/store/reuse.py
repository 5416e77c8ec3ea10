"""Results of unchanged methods taken from the other stores under ``store.root``.

An override that changes one method makes a new store (its name carries the grid hash); when it
is created, the finished cells of the methods left unchanged are copied from a store under the same
root that made them by the same computation: the same code on the same numerical libraries (the
rule a resume applies, :func:`~mccard_dist.store.version.version_differences`, the method's own
estimator code included), the same method, data and CV description and the same ``save_coef``.
Only a store named by its grid takes cells (one given its own ``store.path`` is computed whole).
The cells done in the source are copied in the new grid's blocks of them (a grid with more seeds
takes the seeds done beside it), each through :meth:`ResultsStore.write_block` (status last), so
an interrupted copy leaves the rest pending.
A source is checked whole before a cell is taken from it; a damaged one is skipped with a warning.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np

from .. import grid
from ..records import STATUS_DONE, BlockResult, CellResult
from .errors import StoreDamagedError
from .integrity import check_stored, open_group
from .layout import CONSOLIDATED, Layout
from .version import computing, refuse_forged, version_differences

__all__ = ["fill_from_siblings", "sibling_cells"]

log = logging.getLogger(__name__)


def _same_computation(stored: dict, wanted: dict, method_spec, route: str) -> bool:
    """Whether ``stored`` computed ``method_spec``'s cells as ``wanted`` does. ``cv.paths``
    counts only through the route it gives this method (``route``, here): a description keeps
    it only where some method of it fits paths, so a grid of methods that fit none takes their
    cells from a store that also ran one (and back)."""
    method = method_spec.name
    if any(stored.get(k) != wanted.get(k) for k in ("grid_version", "data")) \
            or stored.get("methods", {}).get(method) != wanted["methods"][method]:
        return False
    stored_cv, wanted_cv = dict(stored.get("cv", {})), dict(wanted.get("cv", {}))
    paths = stored_cv.pop("paths", None)
    wanted_cv.pop("paths", None)
    stored_route = ("none" if paths is None or stored_cv.get("scheme", "kfold") != "kfold"
                    else method_spec.kind.path_route(method_spec.params, method_spec.grid, paths))
    return stored_cv == wanted_cv and stored_route == route


#: what a sibling store that cannot be read raises while it is read: it is skipped
_UNREADABLE = (StoreDamagedError, OSError, ValueError, KeyError, TypeError)


def _skip(path: Path, why) -> None:
    log.warning("%s is not used as a source of results (%s); its cells are computed here, and "
                "the rerun of the command that made it repairs it", path, why)


def _sources(new_path: Path, spec) -> list[tuple[Path, object, dict]]:
    """Stores beside the new store at ``new_path`` made by the same code: (path, group,
    description)."""
    found = []
    for path in sorted(new_path.parent.glob("*.zarr")):
        if path.resolve() == new_path.resolve():
            continue
        try:
            group = open_group(path)
            attrs = group.attrs.asdict()
            refuse_forged(path, attrs)
            if (version_differences(attrs)
                    or int(attrs.get("save_coef", -1)) != int(spec.run.save_coef)):
                continue
            found.append((path, group, json.loads(attrs["grid_description"]), attrs))
        except _UNREADABLE as exc:  # not a store (said only when debugging), or a damaged one
            if (path / ".zgroup").exists() or (path / CONSOLIDATED).exists():
                _skip(path, exc)
            else:
                log.debug("%s is not a source of results: %s", path, exc)
    return found


def fill_from_siblings(store, spec) -> dict[str, tuple[str, int]]:
    """Copy the finished cells of unchanged methods into the new ``store``; returns ``{method:
    (source path, cells copied)}`` for every method that took cells. A source is checked whole
    (:func:`~mccard_dist.store.integrity.check_stored`) before a cell is taken from it, and
    one that is damaged or cannot be read is skipped with a warning."""
    copied: dict[str, tuple[str, int]] = {}
    for method_spec, path, read, done in _taken(store.path, spec):
        n = _copy_method(store, spec, method_spec, read, done)
        copied[method_spec.name] = (str(path), n)
        log.info("%s: %d finished cells taken from %s (same code, method, data and CV)",
                 method_spec.name, n, path)
    return copied


def sibling_cells(new_path: Path, spec) -> dict[str, tuple[str, int]]:
    """What a new store at ``new_path`` would take from the stores beside it
    (:func:`fill_from_siblings`), read and not copied: ``{method: (source path, cells)}``."""
    return {m.name: (str(path), len(done)) for m, path, _, done in _taken(Path(new_path), spec)}


def _taken(new_path: Path, spec):
    """For each method that a store beside ``new_path`` computed as ``spec`` does, the first
    sound such store with finished cells of it: ``(method spec, source path, what it holds of
    the method, its done cells of the new grid)``."""
    new = grid.grid_description(spec)
    sources = _sources(new_path, spec)
    sound: dict[Path, bool] = {}
    for method_spec in spec.methods:
        route = grid.path_route(method_spec, spec.cv)
        for path, group, stored, attrs in sources:
            if (not _same_computation(stored, new, method_spec, route) or not sound.get(path, True)
                    or version_differences(attrs, [method_spec], *computing(spec)[1:])):
                continue
            try:
                if path not in sound:
                    problems = check_stored(path, attrs)
                    if problems:
                        raise StoreDamagedError(problems[0])
                    sound[path] = True
                read = _read_method(spec, method_spec, group)
            except _UNREADABLE as exc:
                sound[path] = False
                _skip(path, exc)
                continue
            done = _done_cells(spec, method_spec, read)
            if done:
                yield method_spec, path, read, done
                break


def _read_method(spec, method_spec, group) -> dict | None:
    """What a source holds of a method: its coordinates and its slab of each variable, read
    once (``None`` if it has no done cell of it)."""
    models = [str(m) for m in np.asarray(group["model"][...])]
    if method_spec.name not in models:
        return None
    mi = models.index(method_spec.name)
    status = np.asarray(group["status"][mi])
    if not (status == STATUS_DONE).any():
        return None
    return {"where": [{float(v): i for i, v in enumerate(np.asarray(group[k][...]))}
                      for k in ("tau", "psi", "seed")],
            "status": status,
            "scalars": {name: np.asarray(group[name][mi])
                        for name in Layout(spec).cell_variables() if name in group},
            "scores": (np.asarray(group["cv_score"][mi])
                       if grid.cv_candidates(method_spec) else None),
            "coefs": np.asarray(group["coef"][mi]) if "coef" in group else None}


def _done_cells(spec, method_spec, read: dict | None) -> list[grid.Cell]:
    """The cells of the new grid of ``method_spec`` that ``read`` (:func:`_read_method`) holds
    done."""
    if read is None:
        return []
    (tau, psi, seed), status = read["where"], read["status"]
    where = {c: (tau.get(c.tau), psi.get(c.psi), seed.get(c.seed))
             for c in grid.cells(spec) if c.method == method_spec.name}
    return [c for c, w in where.items() if None not in w and status[w] == STATUS_DONE]


def _copy_method(store, spec, method_spec, read: dict, done: list[grid.Cell]) -> int:
    (tau, psi, seed) = read["where"]
    scalars, scores, coefs = read["scalars"], read["scores"], read["coefs"]
    n_candidates = len(grid.cv_candidates(method_spec))
    found = {c: (tau[c.tau], psi[c.psi], seed[c.seed]) for c in done}
    n = 0
    finished = []
    # rectangles of done cells, in the new layout
    for block in grid.make_blocks(spec, done, tile=store.tile):
        results = []
        for cell in block.cells:
            w = found[cell]
            values = {name: float(v[w]) for name, v in scalars.items()}
            cv = None if scores is None else scores[w][:n_candidates]
            coef = None if coefs is None else coefs[w].copy()
            results.append(CellResult(cell.index, STATUS_DONE, "", values, cv, coef))
        finished.append((block, BlockResult.of(block.shape, results)))
        n += len(results)
        if len(finished) == 32:  # written a few at a time: memory stays flat
            store.write_blocks(finished)
            finished = []
    if finished:
        store.write_blocks(finished)
    return n

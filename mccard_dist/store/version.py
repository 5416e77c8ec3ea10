"""The store-version policy: what makes a store incompatible with this code, decided here only.

A store is refused when

- its layout version (``grid_version`` of its grid description) is earlier than
  :data:`~mccard_dist.grid.GRID_VERSION` (:func:`refuse_earlier`; ``mccard-migrate`` converts it);
- it was written by another grid (its ``grid_hash``) or with another ``run.save_coef``
  (:func:`refuse_other_grid`);
- it would get cells computed by other code (:func:`fingerprint`: the package's modules that
  compute a cell, and each method's estimator code outside the package) or other numerical
  libraries (:data:`NUMERICAL`) than its cells so far (:func:`version_differences`): a resume
  with cells to compute is refused unless ``run.allow_mixed_versions`` is set
  (:func:`refuse_mixed`), and reuse never takes cells from such a store.

Code is compared by its syntax tree without docstrings (:func:`source_hash`): a docstring or a
comment changes no fingerprint, nor does a module that computes no cell (the command line, the
store, the cluster, the report).

The writer, the reader, reuse and ``mccard-migrate`` import these rules; this module imports
nothing else of the store.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import json
import os
from pathlib import Path

from ..errors import UsageError
from ..grid import (GRID_VERSION, description_hash, diff_descriptions, grid_description,
                    grid_hash)
from .errors import StoreMismatchError

__all__ = ["COMPUTING", "NUMERICAL", "StoreVersionError", "code_fingerprint", "computing",
           "fingerprint", "own_metrics",
           "package_versions", "refuse_earlier", "refuse_forged", "refuse_mixed",
           "refuse_other_grid", "source_hash", "store_version", "version_differences"]

#: the package's modules and subpackages that compute a cell (a worker's task: the data, the
#: estimators and their candidates, the metrics, the cell's record): its code fingerprint
COMPUTING = ("data", "models", "grid.py", "methods.py", "metrics.py", "records.py", "tasks.py")

#: the libraries whose versions shape a cell's numbers (its fits and metrics)
NUMERICAL = ("numpy", "scipy", "scikit-learn")


class StoreVersionError(UsageError):
    """The store was made by another version of mccard-dist or of its numerical libraries."""


def package_versions() -> dict:
    """Versions of the packages that shape the results."""
    import importlib.metadata as md

    out = {}
    for name in ("mccard-dist", "numpy", "scipy", "scikit-learn", "dask", "distributed", "xarray",
                 "zarr", "hydra-core"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = "not installed"
    return out


def source_hash(source: str) -> str:
    """SHA-256 of Python ``source``'s syntax tree without its docstrings (comments, blank lines
    and layout are not in the tree either)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)
                and isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                      ast.AsyncFunctionDef))):
            node.body = body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()


@functools.cache
def code_fingerprint() -> str:
    """SHA-256 over the path and :func:`source_hash` of every module of :data:`COMPUTING` of
    the installed ``mccard_dist``."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).parts[0] in COMPUTING:
            digest.update(str(path.relative_to(root)).encode())
            digest.update(source_hash(path.read_text(encoding="utf-8")).encode())
    return digest.hexdigest()


def _own_code(method_spec) -> str | None:
    """:func:`source_hash` of a method's estimator files outside this package
    (:attr:`~mccard_dist.methods.MethodKind.own_files`), None where there are none."""
    files = method_spec.kind.own_files
    if not files:
        return None
    digest = hashlib.sha256()
    for file in files:
        digest.update(_file_hash(file, Path(file).stat().st_mtime_ns).encode())
    return digest.hexdigest()


@functools.lru_cache(maxsize=256)
def _file_hash(file: str, mtime_ns: int) -> str:
    """:func:`source_hash` of a file, parsed once per version of it (its modification time):
    a run asks for it at the store's creation, each run record and each store beside it."""
    return source_hash(Path(file).read_text(encoding="utf-8"))


def fingerprint(methods=(), metrics=(), data=None) -> dict:
    """What computes a store's cells: ``{"package": code_fingerprint(), "methods": {name:
    hash}, "metrics": {name: hash}}``, with a hash of its own code for each of ``methods``
    (method specs) whose estimator lies outside this package (:func:`_own_code`), e.g. a class
    of the user's folder, for each of ``metrics`` (metrics of one's own) the hash of the file
    that defines its function, and (``"data"``) that of the file of the data spec ``data``'s
    generator of one's own."""
    own = {m.name: _own_code(m) for m in methods}
    out = {"package": code_fingerprint(),
           "methods": {name: code for name, code in sorted(own.items()) if code}}
    files = {m.name: _source_file(m.of) for m in metrics}
    if any(files.values()):
        out["metrics"] = {name: _file_hash(f, Path(f).stat().st_mtime_ns)
                          for name, f in sorted(files.items()) if f}
    generator = getattr(data, "generator", None)
    if generator is not None and not generator.startswith(__name__.split(".")[0] + "."):
        from ..data.generated import generator_function

        found = _source_file(generator_function(generator))
        if found:
            out["data"] = _file_hash(found, Path(found).stat().st_mtime_ns)
    return out


def own_metrics(spec) -> list:
    """The metrics of one's own of ``spec`` (``experiment.metrics``)."""
    from ..metrics import METRICS

    return [m for m in spec.metric_table if m not in METRICS]


def computing(spec) -> tuple:
    """``(methods, metrics of one's own, data spec)``: what of ``spec`` computes its cells, as
    :func:`fingerprint`, :func:`version_differences` and :func:`refuse_mixed` take it."""
    return spec.methods, own_metrics(spec), spec.data


def _source_file(function) -> str | None:
    """The source file of a function (None without one: made by exec, compiled)."""
    try:
        found = inspect.getsourcefile(function)
    except (TypeError, OSError):
        return None
    return found if found and os.path.isfile(found) else None


def _parsed_code(code) -> dict:
    """A stored fingerprint as :func:`fingerprint` returns it (a store's attribute holds its
    JSON; a plain hex string is the package's part alone)."""
    if isinstance(code, str) and code.startswith("{"):
        try:
            code = json.loads(code)
        except ValueError:
            return {"package": code, "methods": {}, "metrics": {}}
    if isinstance(code, dict):
        methods, metrics = code.get("methods"), code.get("metrics")
        return {"package": code.get("package"),
                "methods": methods if isinstance(methods, dict) else {},
                "metrics": metrics if isinstance(metrics, dict) else {},
                "data": code.get("data")}
    return {"package": code, "methods": {}, "metrics": {}}


def store_version(attrs) -> int:
    """The layout version of a store, from its attributes."""
    return int(json.loads(attrs.get("grid_description", "{}")).get("grid_version", 1))


def refuse_earlier(path, attrs) -> None:
    """Refuse a store of an earlier version, naming the command that migrates it."""
    version = store_version(attrs)
    if version < GRID_VERSION:
        raise StoreVersionError(
            f"the store {path} was made by an earlier version of mccard-dist (store version "
            f"{version}, this one reads {GRID_VERSION}); run `mccard-migrate {path}` to bring it "
            "to this version (its results are kept)")


def refuse_forged(path, attrs) -> None:
    """Refuse a store whose grid description is not the one its grid hash was made of: edited
    by hand, or damaged, it says nothing true of the cells (what computed them, on which data)."""
    from .errors import StoreDamagedError

    try:
        same = description_hash(json.loads(attrs["grid_description"])) == attrs["grid_hash"]
    except (KeyError, TypeError, ValueError):
        same = False
    if not same:
        raise StoreDamagedError(
            f"store {path}: its grid description is not the one its grid hash (its name's) was "
            "made of: edited or damaged, it cannot say what computed its cells; move it away "
            "(or delete it) and rerun the experiment's command to compute them anew")


def refuse_other_grid(path, attrs, spec) -> None:
    """Refuse a store of an earlier version (:func:`refuse_earlier`), one whose description is
    not its hash's (:func:`refuse_forged`), of another grid (saying what differs) or written
    with another ``run.save_coef``."""
    refuse_earlier(path, attrs)
    refuse_forged(path, attrs)
    if attrs["grid_hash"] != grid_hash(spec):
        diffs = diff_descriptions(json.loads(attrs["grid_description"]), grid_description(spec))
        detail = "\n  ".join(diffs) if diffs else "(grid version differs)"
        raise StoreMismatchError(
            f"the store {path} was written by a different grid (stored != requested):\n  "
            f"{detail}\nTo start a new store, set store.path to a new path (or leave it unset "
            "to derive one from the grid), or delete the existing store.")
    if int(attrs.get("save_coef", 1)) != int(spec.run.save_coef):
        raise StoreMismatchError(
            f"the store {path} was written with run.save_coef={bool(int(attrs['save_coef']))}; "
            f"rerun with that setting or choose another store.path")


def _computed_with(attrs) -> list[tuple[str | None, dict]]:
    """The code fingerprints and library versions a store's cells were computed with: those it
    was created with (attributes ``code``, ``versions``) and those of each run recorded since."""
    def parsed(versions):
        try:
            value = json.loads(versions) if isinstance(versions, str) else versions
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    found = [(attrs.get("code"), parsed(attrs.get("versions", "{}")))]
    try:
        runs = json.loads(attrs.get("runs", "[]"))
    except ValueError:
        runs = []
    found += [(run.get("code"), parsed(run.get("versions", {}))) for run in runs
              if isinstance(run, dict) and "code" in run]
    return found


def version_differences(attrs, methods=(), metrics=(), data=None) -> list[str]:
    """What differs between the code and numerical libraries a store's cells were computed with
    and this process's, e.g. ``"numpy 1.26.0 (store) != 2.4.6 (here)"``, the estimator code of
    each of ``methods`` (method specs) and the code of each of ``metrics`` (of one's own) that
    computed cells of the store, and of the data spec ``data``'s generator, included; empty
    when nothing does."""
    here, versions_here = fingerprint(methods, metrics, data), package_versions()
    diffs: list[str] = []
    for code, versions in _computed_with(attrs):
        stored = _parsed_code(code)
        if stored["package"] != here["package"]:
            diffs.append(f"code fingerprint {str(stored['package'])[:12]} (store) != "
                         f"{here['package'][:12]} (here)")
        for m in methods:
            if stored["methods"].get(m.name) != here["methods"].get(m.name):
                diffs.append(f"{m.name}'s estimator code ({m.estimator}) "
                             f"{str(stored['methods'].get(m.name))[:12]} (store) != "
                             f"{str(here['methods'].get(m.name))[:12]} (here)")
        for name, code in here.get("metrics", {}).items():
            if stored["metrics"].get(name, code) != code:  # a metric new to the store: no cell
                diffs.append(f"metric {name}'s code {str(stored['metrics'][name])[:12]} (store) "
                             f"!= {code[:12]} (here)")
        if here.get("data") != stored.get("data") and data is not None:
            diffs.append(f"the data generator's code ({data.generator}) "
                         f"{str(stored.get('data'))[:12]} (store) != "
                         f"{str(here.get('data'))[:12]} (here)")
        diffs += [f"{name} {versions.get(name, 'unknown')} (store) != {versions_here[name]} "
                  "(here)" for name in NUMERICAL if versions.get(name) != versions_here[name]]
    return list(dict.fromkeys(diffs))


def refuse_mixed(path, attrs, allow: bool, methods=(), metrics=(), data=None) -> list[str]:
    """Refuse to compute cells into the store at ``path`` with other code or numerical libraries
    than its cells so far (the estimator code of ``methods`` included), unless ``allow``
    (``run.allow_mixed_versions``); returns what differs (empty when nothing does)."""
    diffs = version_differences(attrs, methods, metrics, data)
    if diffs and not allow:
        raise StoreVersionError(
            f"the store {path} was computed by other code or libraries ({'; '.join(diffs)}); "
            "rerun with the versions that made it, give a new store.path, or add "
            "run.allow_mixed_versions=true to continue it with these (its run record notes it)")
    return diffs

"""One store-version policy (mccard_dist/store/version.py): a resume with cells to compute is refused
when the store's cells were computed by other code or numerical libraries, unless
``run.allow_mixed_versions=true``, which the run record notes; every run record carries its code
fingerprint and versions; a ``cv`` key at its default changes no grid hash."""

import dataclasses
import json
from pathlib import Path

import pytest
import zarr

from mccard_dist.grid import grid_hash, make_blocks
from mccard_dist.store import ResultsStore, StoreVersionError, package_versions
from mccard_dist.store.version import code_fingerprint, fingerprint
from mccard_dist.tasks import run_block

SMALL = ("experiment.methods=[ls_ard]", "data.n_features=40")


def _made_elsewhere(path, code="0" * 64, numpy="1.26.0"):
    """The store's attributes as another install (code fingerprint, numpy) would have written."""
    group = zarr.open_group(str(path), mode="r+", zarr_format=2)
    versions = json.loads(group.attrs["versions"])
    versions["numpy"] = numpy
    group.attrs.update(code=code, versions=json.dumps(versions))
    zarr.consolidate_metadata(str(path))


def _files(path: Path) -> dict:
    return {p: p.read_bytes() for p in sorted(Path(path).rglob("*")) if p.is_file()}


def test_a_resume_by_other_code_and_libraries_is_refused_in_one_line(smoke_spec):
    spec = smoke_spec(*SMALL)
    ResultsStore.open_or_create(spec)
    _made_elsewhere(spec.store.path)
    before = _files(spec.store.path)
    with pytest.raises(StoreVersionError) as info:
        ResultsStore.open_or_create(spec)
    message = str(info.value)
    assert "\n" not in message
    assert f"code fingerprint 000000000000 (store) != {code_fingerprint()[:12]} (here)" in message
    assert f"numpy 1.26.0 (store) != {package_versions()['numpy']} (here)" in message
    assert "run.allow_mixed_versions=true" in message
    assert _files(spec.store.path) == before  # refused without a write


@pytest.mark.slow  # fits a few small cells
def test_an_allowed_mixed_resume_is_noted_in_its_run_record(smoke_spec):
    from mccard_dist.runner import run_serial

    spec = smoke_spec(*SMALL, "run.allow_mixed_versions=true")
    ResultsStore.open_or_create(spec)
    _made_elsewhere(spec.store.path, numpy="1.26.0")
    run_serial(spec)
    (run,) = ResultsStore(spec.store.path, spec).runs()
    assert run["code"] == fingerprint(spec.methods) and run["versions"] == package_versions()
    assert run["mixed_versions"] == [
        f"code fingerprint 000000000000 (store) != {code_fingerprint()[:12]} (here)",
        f"numpy 1.26.0 (store) != {package_versions()['numpy']} (here)"]


def test_a_run_of_other_versions_recorded_in_a_store_counts_too(smoke_spec):
    """A store whose run records show cells computed with another numpy (an allowed mixed run)
    is refused to that numpy's successor as to its creator's."""
    spec = smoke_spec(*SMALL)
    store = ResultsStore.open_or_create(spec)
    group = zarr.open_group(str(store.path), mode="r+", zarr_format=2)
    other = {**package_versions(), "scipy": "1.0.0"}
    group.attrs["runs"] = json.dumps([{"id": "x", "code": fingerprint(spec.methods),
                                       "versions": other}])
    zarr.consolidate_metadata(str(store.path))
    with pytest.raises(StoreVersionError, match=r"scipy 1\.0\.0 \(store\) != "):
        ResultsStore.check_compatible(store.path, spec)


@pytest.mark.slow  # fits a few small cells
def test_a_store_with_nothing_left_to_compute_opens_whatever_made_it(smoke_spec):
    from mccard_dist.runner import run_serial

    spec = smoke_spec(*SMALL)
    store = ResultsStore.open_or_create(spec)
    for block in make_blocks(spec, store.pending_cells(), size=1):
        store.write_block(block, run_block(spec, block, None))
    _made_elsewhere(spec.store.path)
    assert run_serial(spec).n_pending_before == 0


@pytest.mark.slow  # fits a few small cells
def test_each_run_record_carries_its_code_and_versions(smoke_spec):
    from mccard_dist.runner import run_serial

    spec = smoke_spec(*SMALL)
    run_serial(spec)
    (run,) = ResultsStore(spec.store.path, spec).runs()
    assert run["code"] == fingerprint(spec.methods) and run["versions"] == package_versions()
    assert "mixed_versions" not in run


def test_a_cv_key_at_its_default_changes_no_grid_hash(smoke_spec):
    """A new key of the cv section, at its schema default, leaves every store's hash as it is
    (the store resumes, and reuse finds it); set to another value, it is another grid."""
    from mccard_dist.config import CVSpec

    spec = smoke_spec(*SMALL)

    @dataclasses.dataclass(unsafe_hash=True)
    class WithRepeats(CVSpec):
        repeats: int = 1

    def with_repeats(n):
        fields = {f.name: getattr(spec.cv, f.name) for f in dataclasses.fields(spec.cv)}
        return dataclasses.replace(spec, cv=WithRepeats(**fields, repeats=n))

    assert grid_hash(with_repeats(1)) == grid_hash(spec)
    assert grid_hash(with_repeats(3)) != grid_hash(spec)



RESUME = """
import sys
from mccard_dist import compose
from mccard_dist.errors import UsageError
from mccard_dist.store import ResultsStore

spec = compose("smoke", ["experiment.methods=[ls_ard]", "store.path=" + sys.argv[1]])
try:
    ResultsStore.open_or_create(spec)
except UsageError as exc:
    print(exc)
    sys.exit(3)
print("opened")
"""


@pytest.mark.slow  # copies the package and opens a store in 5 subprocesses
def test_what_computes_no_cell_or_is_no_code_refuses_no_resume(tmp_path):
    """A copy of the package makes a store with every cell to compute; a docstring and a comment
    of ``cli.py`` and ``models/mcc_ard.py``, and the body of ``cli.py``, edited in the copy, still
    resume it; an edit of ``mcc_ard.py``'s body is refused in one line."""
    import os
    import shutil
    import subprocess
    import sys

    import mccard_dist

    tree = tmp_path / "tree"
    package = Path(mccard_dist.__file__).parent
    shutil.copytree(package, tree / "mccard_dist", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(package.parent / "conf", tree / "conf")
    (tmp_path / "resume.py").write_text(RESUME)
    store = tmp_path / "s.zarr"
    env = {**os.environ, "PYTHONPATH": str(tree)}

    def resume():
        done = subprocess.run([sys.executable, str(tmp_path / "resume.py"), str(store)], env=env,
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode in (0, 3), done.stderr[-2000:]
        return done.stdout.strip()

    def edit(name, old, new):
        path = tree / "mccard_dist" / name
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new, 1))

    assert resume() == "opened"
    assert json.loads(zarr.open_group(str(store), mode="r").attrs["code"]) \
        == {"package": code_fingerprint(), "methods": {}}  # the copy is this package
    edit("cli.py", '"""', '"""An edited docstring. ')
    edit("models/mcc_ard.py", '"""', '"""An edited docstring. ')
    edit("models/mcc_ard.py", "\nimport ", "\n# an added comment\nimport ")
    edit("cli.py", "\nimport ", "\nEDITED = 1\nimport ")
    assert resume() == "opened"
    edit("models/mcc_ard.py", "\nimport ", "\nEDITED = 1\nimport ")
    said = resume()
    assert "\n" not in said and said.startswith(f"the store {store} was computed by other code")
    assert f"code fingerprint {code_fingerprint()[:12]} (store) != " in said


def test_a_source_hash_is_of_the_code_not_its_docstrings_or_comments():
    from mccard_dist.store.version import source_hash

    plain = "def f(x):\n    return x + 1\n"
    assert source_hash('"""Module."""\ndef f(x):\n    """Doc."""\n    # why\n    return x + 1\n') \
        == source_hash(plain) == source_hash("def f(x):  # why\n\n    return (x + 1)\n")
    assert source_hash("def f(x):\n    return x + 2\n") != source_hash(plain)
    assert source_hash('def f(x):\n    y = "not a docstring"\n    return x + 1\n') \
        != source_hash(plain)


def test_an_estimator_without_a_source_file_has_no_code_of_its_own(monkeypatch):
    """A class made by ``exec`` (a gallery script, a notebook's cell) has no file to hash: the
    fingerprint holds none for its method; a class of a file holds that file's hash."""
    import sys
    import types

    from mccard_dist.methods import MethodKind

    made = {}
    exec("from sklearn.linear_model import Ridge\nclass Made(Ridge):\n    pass\n", made)
    module = types.ModuleType("made_here")
    module.Made, made["Made"].__module__ = made["Made"], "made_here"
    monkeypatch.setitem(sys.modules, "made_here", module)
    methods = [types.SimpleNamespace(name="made", kind=MethodKind("made_here:Made")),
               types.SimpleNamespace(name="ridge", kind=MethodKind("sklearn.linear_model:Ridge"))]
    code = fingerprint(methods)
    assert set(code["methods"]) == {"ridge"} and len(code["methods"]["ridge"]) == 64

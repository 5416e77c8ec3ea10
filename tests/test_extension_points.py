"""Each extension point is one place. A built-in estimator is its module, its method file and
its tests: no other module of the package names an estimator class (they ask its kind,
:func:`mccard_dist.methods.kind_of`). A user's estimator is no package file at all
(tests/test_own_method.py), nor is a metric of one's own (tests/test_own_metric.py) or a data
generator (tests/test_own_generator.py); a built-in metric is one entry of ``metrics.METRICS``
(tests/test_metric_table.py), a cluster kind its spec class and its conf/cluster file
(tests/test_cluster_kinds.py), a cv key its field (tests/test_store_versions.py)."""

import re
from pathlib import Path

from omegaconf import OmegaConf

from mccard_dist.config import config_path, method_files

PACKAGE = Path(__file__).resolve().parents[1] / "mccard_dist"
#: modules that may name estimator classes: the estimators themselves, the public names, the
#: benchmarks of particular estimators, and the migration of stores that named them otherwise
MAY_NAME = ("models/", "__init__.py", "bench/", "store/migrate.py")


def _named_classes(source: str, classes: set) -> set:
    """The classes of ``classes`` that code names: as a name or an attribute, or as a string
    that is an import path (``"pkg.module:Class"``: a value the code uses). A class named in a
    sentence (a message's or a docstring's example) or a comment couples nothing."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id in classes:
            found.add(node.id)
        elif isinstance(node, ast.Attribute) and node.attr in classes:
            found.add(node.attr)
        elif isinstance(node, ast.alias) and node.name.rpartition(".")[2] in classes:
            found.add(node.name.rpartition(".")[2])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            path = re.fullmatch(r"[A-Za-z_][\w.]*:(\w+)", node.value)
            if path and path.group(1) in classes:
                found.add(path.group(1))
    return found


def test_no_module_outside_the_estimators_names_an_estimator_class():
    classes = {OmegaConf.load(f).estimator.rpartition(":")[2]
               for f in method_files(config_path(environ={})).values()}
    assert len(classes) >= 10
    named = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(MAY_NAME):
            continue
        found = sorted(_named_classes(path.read_text(), classes))
        if found:
            named[rel] = found
    assert named == {}, named
    # the rule sees what it is for: a stand-in estimator by import path, a class by name
    assert _named_classes('plain = {"estimator": "mccard_dist.models:LSARDRegressor"}',
                          classes) == {"LSARDRegressor"}
    assert _named_classes("from .models import MCCL1Regressor", classes) == {"MCCL1Regressor"}
    assert not _named_classes('fail("e.g. mccard_dist.models:MCCARDRegressor")', classes)


def test_every_method_file_is_found_without_a_line_in_config_yaml():
    config = (config_path(environ={})[0] / "config.yaml").read_text()
    assert "method@methods" not in config
    assert "mccard_methods" in config

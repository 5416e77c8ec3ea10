"""Each extension point is one place. A built-in estimator is its module, its method file and
its tests: no other module of the package names an estimator class (they ask its kind,
:func:`mccard_dist.methods.kind_of`). A user's estimator is no package file at all
(tests/test_own_method.py), a metric one entry of ``metrics.METRICS``
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


def test_no_module_outside_the_estimators_names_an_estimator_class():
    classes = {OmegaConf.load(f).estimator.rpartition(":")[2]
               for f in method_files(config_path(environ={})).values()}
    assert len(classes) >= 10
    named = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(MAY_NAME):
            continue
        code = "\n".join(line for line in path.read_text().splitlines()
                         if not line.lstrip().startswith("#"))
        # an import path shown as an example (a message, a docstring) couples nothing
        found = sorted(c for c in classes if re.search(rf"(?<!mccard_dist\.models:)\b{c}\b", code))
        if found:
            named[rel] = found
    assert named == {}, named


def test_every_method_file_is_found_without_a_line_in_config_yaml():
    config = (config_path(environ={})[0] / "config.yaml").read_text()
    assert "method@methods" not in config
    assert "mccard_methods" in config

"""Typed, validated experiment configuration: one tree of sealed dataclasses.

Hydra composes ``conf/`` against these dataclasses (its schemas, :func:`schemas`); the resolved
config is built into an :class:`ExperimentSpec` (:func:`from_dictconfig`, :func:`spec_from_dict`),
and nothing outside this room sees a Hydra type. Every bad value is refused, before any store or
cluster exists, with a :class:`ConfigError` whose message starts with the config key
(``experiment.psi: ...``). A data file is read where the data are used
(:meth:`ExperimentSpec.check_data`); a method names its estimator class by import path
(:func:`mccard_dist.methods.kind_of`), and :func:`config_path` gives the config folders searched
for the method files.
"""

from .checks import ConfigError, FrozenMap, to_plain
from .cluster import (CLUSTER_KINDS, CLUSTER_SCHEMAS, AdaptiveSpec, cluster_spec,
                      listens_beyond_loopback)
from .data import DATA_SCHEMAS, DataSpec, DiabetesDataSpec, FileDataSpec
from .experiment import (ExperimentSpec, composition_message, data_spec_from_dict,
                         from_dictconfig, schemas, spec_from_dict, unknown_method)
from .folders import (config_dir, config_path, method_files, register_resolvers,
                      shipped_estimators, shipped_kind, shipped_methods)
from .method import MethodSpec
from .specs import (CV_PATHS, CV_SCHEMES, CV_SCORES, FIT_UNIT_CELLS_PER_WORKER, RUN_UNITS, CVSpec,
                    RunSpec, StoreSpec)

__all__ = ["CLUSTER_KINDS", "CLUSTER_SCHEMAS", "CV_PATHS", "CV_SCHEMES", "CV_SCORES",
           "DATA_SCHEMAS", "FIT_UNIT_CELLS_PER_WORKER", "RUN_UNITS", "AdaptiveSpec",
           "CVSpec", "ConfigError", "DataSpec", "DiabetesDataSpec", "ExperimentSpec",
           "FileDataSpec", "FrozenMap", "MethodSpec", "RunSpec", "StoreSpec", "cluster_spec",
           "composition_message", "config_dir", "config_path", "data_spec_from_dict",
           "from_dictconfig",
           "listens_beyond_loopback", "method_files", "register_resolvers", "schemas",
           "shipped_estimators", "shipped_kind", "shipped_methods", "spec_from_dict", "to_plain",
           "unknown_method"]

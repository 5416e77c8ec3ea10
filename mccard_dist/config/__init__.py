"""Typed, validated experiment configuration: one tree of frozen dataclasses.

The Hydra config (``conf/``) is composed by the CLI against the same dataclasses (registered as
Hydra schemas, :func:`schemas`), resolved to plain Python and built into an
:class:`ExperimentSpec` (:func:`from_dictconfig`, :func:`spec_from_dict`); nothing below this
room sees a Hydra type. Every bad value is refused with a :class:`ConfigError` whose message
starts with the config key (``experiment.psi: ...``), before any store or cluster exists: types,
unknown keys and missing values by OmegaConf, ranges and the rules between keys by the sections'
``__post_init__``. A data file is read where the data are used (:meth:`ExperimentSpec.check_data`).
Estimators come from the fixed registry :data:`mccard_dist.methods.KINDS`; no config key names a
class.
"""

from .checks import ConfigError, FrozenMap, to_plain
from .cluster import (
    CLUSTER_KINDS,
    CLUSTER_SCHEMAS,
    AdaptiveSpec,
    cluster_spec,
    listens_beyond_loopback,
)
from .data import DATA_SCHEMAS, DataSpec, DiabetesDataSpec, FileDataSpec
from .experiment import (
    ExperimentSpec,
    composition_message,
    config_dir,
    from_dictconfig,
    schemas,
    spec_from_dict,
)
from .specs import (
    CV_PATHS,
    CV_SCHEMES,
    CV_SCORES,
    FIT_UNIT_CELLS_PER_WORKER,
    RUN_UNITS,
    CVSpec,
    MethodSpec,
    RunSpec,
    StoreSpec,
)

__all__ = ["CLUSTER_KINDS", "CLUSTER_SCHEMAS", "CV_PATHS", "CV_SCHEMES", "CV_SCORES",
           "DATA_SCHEMAS", "FIT_UNIT_CELLS_PER_WORKER", "RUN_UNITS", "AdaptiveSpec",
           "CVSpec", "ConfigError", "DataSpec", "DiabetesDataSpec", "ExperimentSpec",
           "FileDataSpec", "FrozenMap", "MethodSpec", "RunSpec", "StoreSpec", "cluster_spec",
           "composition_message", "config_dir", "from_dictconfig", "listens_beyond_loopback",
           "schemas", "spec_from_dict", "to_plain"]

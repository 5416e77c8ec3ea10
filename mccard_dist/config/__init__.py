"""Typed, validated experiment configuration.

The Hydra config (``conf/``) is composed by the CLI, resolved to plain Python in the driver and turned
into an :class:`ExperimentSpec` here; nothing below this module sees a Hydra type. Every bad value is
refused with a :class:`ConfigError` whose message starts with the config key (``experiment.psi: ...``),
before any cluster starts: types, unknown keys and missing values by the schema (OmegaConf), ranges
and the rules between keys by :mod:`.parse` and :mod:`.cluster_rules`.

The layout of the config is the schema in :mod:`.schema`: one dataclass per section, one per
``data.source`` and one per ``cluster.kind`` (:data:`SCHEMAS`; ``conf/`` names them in its
defaults lists, so Hydra composes ``conf/`` after :func:`mccard_dist.hydra_guard.register_schemas`
has put them into its ConfigStore). The top-level ``hydra`` node is ignored; any other top-level
key is refused (``+psi=0.5`` on the command line: did you mean ``experiment.psi``?).

:meth:`ExperimentSpec.to_dict` returns the same layout (with only the selected methods and the seeds as
an explicit list), as plain JSON-able Python: it is what goes to a store attribute and to Dask workers,
and ``spec_from_dict(spec.to_dict()) == spec``.

Estimators come from the fixed registry :data:`ESTIMATORS`; no config key can name an arbitrary class.
"""

from __future__ import annotations

from .checks import (
    ConfigError,
    FrozenMap,
    to_plain,
)
from .data_specs import DiabetesDataSpec, FileDataSpec
from .parse import (
    from_dictconfig,
    spec_from_dict,
)
from .schema import SCHEMAS, composition_message
from .specs import (
    CLUSTER_KINDS,
    CONFIG_DIR,
    CV_PATHS,
    CV_SCHEMES,
    CV_SCORES,
    ESTIMATORS,
    FIT_UNIT_CELLS_PER_WORKER,
    RUN_UNITS,
    AdaptiveSpec,
    ClusterSpec,
    CVSpec,
    DataSpec,
    ExperimentSpec,
    MethodSpec,
    RunSpec,
    StoreSpec,
)

__all__ = [
    "CLUSTER_KINDS",
    "CV_PATHS",
    "CV_SCHEMES",
    "CV_SCORES",
    "ESTIMATORS",
    "FIT_UNIT_CELLS_PER_WORKER",
    "RUN_UNITS",
    "AdaptiveSpec",
    "CVSpec",
    "ClusterSpec",
    "ConfigError",
    "DataSpec",
    "DiabetesDataSpec",
    "ExperimentSpec",
    "FileDataSpec",
    "FrozenMap",
    "MethodSpec",
    "RunSpec",
    "StoreSpec",
    "CONFIG_DIR",
    "SCHEMAS",
    "composition_message",
    "from_dictconfig",
    "spec_from_dict",
    "to_plain",
]

"""Typed, validated experiment configuration.

The Hydra config (``conf/``) is composed by the CLI, resolved to plain Python in the driver and turned
into an :class:`ExperimentSpec` here; nothing below this module sees a Hydra type. Every bad value is
refused with a :class:`ConfigError` whose message starts with the config key (``experiment.psi: ...``),
before any cluster starts.

Layout of the (resolved) config that :func:`spec_from_dict` reads; the top-level ``hydra`` node is
ignored, any other top-level key is refused (``+psi=0.5`` on the command line: did you mean
``experiment.psi``?)::

    experiment: {name, methods: [names], tau: [..], psi: [..], seeds: {start, count} | [ints]}
    methods:    {<name>: {estimator, params: {..}, kernel_width: [..], alpha_ratio: [..]}, ...}
    data:       {source: paper, n_train, n_test, n_features, n_relevant, noise_var, outliers, df,
                 leverage, rho} (``source`` may be left out)
              | {source: file, path, target, test_fraction, standardize, outliers, df, sha256}
              | {source: diabetes, n_train, n_noise_features, standardize, outliers, df}
    cv:         {scheme, n_folds, score, reference_width, path_stop, race, paths}
    run:        {fits_per_block, blocks_per_worker, retries, save_coef, retry_failed, progress,
                 unit}
    store:      {root, path, verify}
    cluster:    {kind, n_workers, threads_per_worker, memory_limit, host, dashboard_address, address,
                 scheduler_file, cores, processes, memory, walltime, queue, account, interface,
                 log_directory, job_extra_directives, job_script_prologue, resource_spec, n_jobs,
                 adaptive: {minimum, maximum} | null, worker_lifetime, lifetime_stagger, python,
                 connect_timeout, no_worker_timeout, tls, tls_ca_file, tls_cert, tls_key,
                 options}   (each kind reads its own fields; the others must be unset)

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
    "from_dictconfig",
    "spec_from_dict",
    "to_plain",
]

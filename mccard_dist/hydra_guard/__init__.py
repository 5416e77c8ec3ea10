"""The check of a ``mccard-run`` command line before Hydra's main sees it.

Hydra's command line can make it import and call code, open or write files, set the environment
of the run and its workers, or load configs from other folders. The command line is parsed
(Hydra's public ``OverridesParser``, and :func:`args_parser` for Hydra's flags) and only this
reaches Hydra: overrides of the config's own keys (the schema checks them); a config group's
option naming a config file of that group's folder in the config folder (every value of a sweep
too; a group with no folder there, such as the schemas' groups in Hydra's ConfigStore, takes no
option); of Hydra's settings, those of :data:`ALLOWED`; Hydra's flags, but ``--config-dir``,
``--config-path`` and ``--config-name`` only naming the config folder, and no
``--experimental-rerun``. The config that would run is then composed (Hydra's compose API, which
imports and calls nothing it names) and the parts of ``hydra`` that can run code or change the
environment (:data:`SHIPPED_ONLY`) must equal what the shipped configs give, whichever file set
them (a config with ``# @package _global_`` included). Anything else is refused in one line; a
user who means it sets ``MCCARD_TRUST_HYDRA_OVERRIDES=1``.
"""

from __future__ import annotations

import os
from pathlib import Path

from .command_line import (ALLOWED, TRUST_ENV, WHY, _estimator_problem, _flag_problem,
                           _group_problem, _hydra_problem,
                           _parse_problem, args_parser, hydra_argv, parse_args, register_schemas,
                           search_folders)
from .composed import SHIPPED_ONLY, _composed_problem, _stderr, hydra_error, initialize_config_path

__all__ = ["ALLOWED", "SHIPPED_ONLY", "TRUST_ENV", "WHY", "args_parser", "check_overrides",
           "hydra_argv", "hydra_error", "initialize_config_path", "parse_args", "register_schemas",
           "search_folders"]


def check_overrides(argv: list[str], config_dir: Path, warn=None) -> str | None:
    """The first problem of a ``mccard-run`` command line as one line, or None.

    The overrides are parsed and checked, then the config is composed and its ``hydra`` node
    checked, as the module says (unless $MCCARD_TRUST_HYDRA_OVERRIDES is 1); Hydra's grammar and
    composition errors and unknown options of a config group are returned as one line too; a
    warning (a method's setting that has no effect) goes to ``warn`` (standard error by default).
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        args = parse_args(argv)
    except ValueError as exc:
        return str(exc)
    trusted = os.environ.get(TRUST_ENV) == "1"
    if not trusted and (problem := _flag_problem(args, config_dir)) is not None:
        return problem
    try:
        parsed = OverridesParser.create().parse_overrides(args.overrides)
    except (HydraException, OmegaConfBaseException, ValueError) as exc:
        return _parse_problem(str(exc), args.overrides)
    if trusted:
        return None
    for override in parsed:
        problem = (_hydra_problem(override) or _estimator_problem(override)
                   or _group_problem(override, config_dir))
        if problem is not None:
            return problem
    return _composed_problem(args, parsed, config_dir, warn or _stderr)

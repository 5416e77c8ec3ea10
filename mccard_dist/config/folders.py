"""The config folders (the user's ``$MCCARD_CONFIG_DIR`` before the shipped one), their method
files, the shipped ones read as text, and the resolver the method files use."""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["config_dir", "config_path", "method_files", "register_resolvers", "shipped_estimators",
           "shipped_kind", "shipped_methods"]


def config_dir(environ: Mapping = os.environ) -> Path:
    """The first config folder of :func:`config_path`: $MCCARD_CONFIG_DIR (of ``environ``), else
    the shipped one."""
    return config_path(environ)[0]


def config_path(environ: Mapping = os.environ) -> tuple[Path, ...]:
    """The config folders, searched in this order: $MCCARD_CONFIG_DIR (of ``environ``), whose
    files add to the shipped ones or replace those of the same name, then the configs installed
    with the package (``mccard_dist/conf`` of a wheel; else ``conf/`` beside the package, a
    checkout)."""
    package = Path(__file__).resolve().parents[1]
    installed = package / "conf"
    shipped = installed if (installed / "config.yaml").is_file() else package.parent / "conf"
    mine = environ.get("MCCARD_CONFIG_DIR")
    if mine and Path(mine).resolve() != shipped.resolve():
        return Path(mine), shipped
    return (shipped,)


def register_resolvers() -> None:
    """Register the resolver the shipped method files use: ``${mccard_default_widths:}``, the
    default kernel-width grid (:data:`mccard_dist.defaults.DEFAULT_KERNEL_WIDTHS`), which is so
    written once for the CV estimator and every method file that uses it."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("mccard_default_widths"):
        OmegaConf.register_new_resolver("mccard_default_widths", _default_widths)


def _default_widths() -> list[float]:
    from ..defaults import DEFAULT_KERNEL_WIDTHS

    return list(DEFAULT_KERNEL_WIDTHS)


@functools.lru_cache(maxsize=1)
def shipped_methods() -> dict[str, dict]:
    """``{method: file's content}`` of the shipped method files, read as text (nothing
    imported)."""
    import yaml

    return {name: yaml.safe_load(file.read_text()) or {}
            for name, file in method_files(config_path(environ={})).items()}


def shipped_estimators() -> dict[str, str]:
    """``{method: estimator}`` of the shipped method files, read as text (nothing imported)."""
    return {name: str(content.get("estimator")) for name, content in shipped_methods().items()}


def shipped_kind(estimator):
    """The kind (:func:`mccard_dist.methods.kind_of`) of ``estimator`` where it is the estimator
    of a shipped method file, matched as text; None for any other: what a store names is
    looked up, never imported."""
    from ..methods import kind_of

    return kind_of(estimator) if estimator in set(shipped_estimators().values()) else None


def method_files(folders) -> dict[str, Path]:
    """``{name: file}`` of every method file (``method/<name>.yaml``) of the config folders
    ``folders``, the first folder's file where two have one of the same name."""
    found: dict[str, Path] = {}
    for folder in folders:
        for file in sorted(Path(folder, "method").glob("*.yaml")):
            found.setdefault(file.stem, file)
    return dict(sorted(found.items()))

"""Shared pytest fixtures."""

# --- Hydra compose fixture (configuration layer) ---------------------------------------------------
from pathlib import Path

import pytest
from hydra import compose as _hydra_compose
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

CONF_DIR = Path(__file__).resolve().parents[1] / "conf"


def compose_config(overrides=(), return_hydra_config=False):
    """Compose ``conf/config.yaml`` with Hydra overrides; returns the DictConfig (by default without
    the ``hydra`` node, like the ``cfg`` that ``@hydra.main`` passes)."""
    GlobalHydra.instance().clear()  # in case another test left Hydra initialised
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return _hydra_compose("config", overrides=list(overrides),
                              return_hydra_config=return_hydra_config)


@pytest.fixture(scope="session")
def compose():
    """``compose(overrides=[]) -> DictConfig``: the project's config composed with the compose API."""
    return compose_config


# --- end of the Hydra compose fixture ---------------------------------------------------------------

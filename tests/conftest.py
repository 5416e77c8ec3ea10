"""Shared pytest fixtures."""

# One BLAS thread per test process (and for the processes the tests start): the tests' problems are
# small, where more threads only cost, and on a busy machine a second thread makes a small fit ten
# times slower. A limit the caller set is kept.
import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

from threadpoolctl import threadpool_limits  # noqa: E402 - after the environment is set

threadpool_limits(int(os.environ["OPENBLAS_NUM_THREADS"]))

# --- Hydra compose fixture (configuration layer) ---------------------------------------------------
import copy  # noqa: E402
import functools  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from hydra.core.global_hydra import GlobalHydra  # noqa: E402

CONF_DIR = Path(__file__).resolve().parents[1] / "conf"


def compose_config(overrides=(), return_hydra_config=False):
    """Compose ``conf/config.yaml`` with Hydra overrides; returns the DictConfig (by default without
    the ``hydra`` node, like the ``cfg`` that ``@hydra.main`` passes). The same overrides compose
    once per session (composing is the slow part); each call gets its own copy. Overrides that set
    a key (``a.b=value``) are applied as Hydra applies them after composing (``OmegaConf.update``
    of the value Hydra's parser reads) to the composition of the others, so the variants of one
    experiment compose once; where that raises, Hydra composes them all and says its own error."""
    if return_hydra_config:  # the hydra node holds times and paths of this call
        return _compose(tuple(overrides), True)
    groups, keys = _split(overrides)
    if keys:
        try:
            return _with_keys(_compose_cached(groups), keys)
        except Exception:  # noqa: BLE001 - Hydra's composition gives the error as users see it
            pass
    return copy.deepcopy(_compose_cached(tuple(overrides)))


def _split(overrides):
    """``(group overrides, key overrides)``: a key override sets or adds a key (``a.b=v``,
    ``+a.b=v``, ``++x=v``) that is not a config group, without ``~``, a package or a sweep;
    everything else is composed by Hydra."""
    groups, keys = [], []
    for text in overrides:
        key, eq, value = text.partition("=")
        name = key.lstrip("+")
        plain = (eq and not key.startswith("~") and "@" not in key and "/" not in key
                 and ("." in name or not (CONF_DIR / name).is_dir()))
        (keys if plain and not name.startswith("hydra") else groups).append(text)
    return tuple(groups), tuple(keys)


@functools.lru_cache(maxsize=None)
def _parsed(keys):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(list(keys))
    if any(o.is_sweep_override() for o in parsed):
        raise ValueError("a sweep: composed by Hydra")
    return [(o.key_or_group, o.value(), o.is_add(), o.is_force_add()) for o in parsed]


def _with_keys(base, keys):
    """``base`` with the key overrides applied as Hydra's config loader applies them."""
    from omegaconf import OmegaConf

    cfg = copy.deepcopy(base)
    for key, value, add, force_add in _parsed(keys):
        if add and OmegaConf.select(cfg, key, throw_on_missing=False) is not None and \
                not isinstance(value, (dict, list)):
            raise ValueError("an item is already there: Hydra says so")
        OmegaConf.update(cfg, key, value, merge=True, force_add=add or force_add)
    return cfg


@functools.lru_cache(maxsize=None)
def _compose_cached(overrides):
    return _compose(overrides, False)


def _compose(overrides, return_hydra_config):
    from mccard_dist.app import compose_config

    GlobalHydra.instance().clear()  # in case another test left Hydra initialised
    return compose_config(overrides=list(overrides), config_dir=CONF_DIR,
                          return_hydra_config=return_hydra_config)


@pytest.fixture(scope="session")
def compose():
    """``compose(overrides=[]) -> DictConfig``: the project's config composed with the compose API."""
    return compose_config


def refusal(overrides) -> str:
    """The one-line message a bad command line gets: from composition (a wrong type or a key
    the schema does not have, as ``mccard-run`` prints it) or from validation of the composed
    config. Fails if the config is accepted."""
    from mccard_dist.config import ConfigError, from_dictconfig
    from mccard_dist.errors import UsageError

    try:
        cfg = compose_config(overrides)
    except UsageError as exc:
        return str(exc)
    try:
        from_dictconfig(cfg)
    except ConfigError as exc:
        return str(exc)
    raise AssertionError(f"accepted: {overrides}")


# --- end of the Hydra compose fixture ---------------------------------------------------------------


# --- pipeline fixtures ------------------------------------------------------------------------------
@pytest.fixture
def smoke_spec(tmp_path):
    """``smoke_spec(*overrides, name="store") -> ExperimentSpec`` with its store under tmp_path."""
    from mccard_dist.config import from_dictconfig

    def make(*overrides, name="store"):
        # composed once per set of overrides in a session; the store's path set on the copy
        cfg = compose_config(["experiment=smoke", "run.progress=false", *overrides])
        cfg.store.path = f"{tmp_path / name}.zarr"
        return from_dictconfig(cfg)

    return make


@pytest.fixture(scope="module")
def local_client():
    """A real LocalCluster with 2 single-threaded worker processes (shared by a test module)."""
    from mccard_dist.cluster import connect
    from mccard_dist.config import cluster_spec

    spec = cluster_spec("local", n_workers=2, threads_per_worker=1, memory_limit="2GiB",
                       host="127.0.0.1", dashboard_address="127.0.0.1:0")
    with connect(spec) as client:
        yield client


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items):
    """Under pytest-xdist (``-n auto --dist loadgroup``) the tests that submit to SLURM run in one
    test process, one after another: they share one single-node queue, whose jobs would wait on
    each other's and time out; and the code blocks of one docs page run in one test process, in
    the page's order, as a reader runs them (a block uses what the blocks before it defined)."""
    for item in items:
        if item.get_closest_marker("slurm") is not None:
            item.add_marker(pytest.mark.xdist_group("slurm"))
        block = getattr(getattr(item, "callspec", None), "params", {}).get("block")
        if block is not None and hasattr(block, "name"):
            item.add_marker(pytest.mark.xdist_group(f"docs:{block.name}"))


def pytest_collection_finish(session):
    """Put what the imports and the collection made out of the garbage collector's reach
    (``gc.freeze``): it lives for the whole session, and every full collection (automatic, and
    pytest's own at the end of a session) would otherwise walk that heap of library modules
    again."""
    import gc

    gc.freeze()

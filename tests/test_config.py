"""Tests for conf/ and mccard_dist.config: composition, validation, round trip, store path."""

import copy
import json
import pickle
from pathlib import Path

import pytest
from conftest import CONF_DIR as CONF
from conftest import compose_config, refusal
from omegaconf import OmegaConf

from mccard_dist import (
    AuthorsLSARDRegressor,
    AuthorsMCCARDRegressor,
    LSARDRegressor,
    MCCARDRegressor,
    MCCL1Regressor,
)
from mccard_dist.config import (
    cluster_spec,
    ConfigError,
    ExperimentSpec,
    composition_message,
    from_dictconfig,
    spec_from_dict,
)
from mccard_dist.models import (HuberBaseline, HuberL1Regressor, HuberMCPRegressor, LADLassoRegressor,
                                 LassoBaseline)
from mccard_dist.store import store_path


@pytest.fixture(scope="module")
def smoke_dict(compose):
    """The smoke experiment, resolved to plain Python (copy before mutating)."""
    return OmegaConf.to_container(compose(["experiment=smoke"]), resolve=True)


def bad(d, dotted, value):
    """A deep copy of ``d`` with ``dotted`` set to ``value`` (or deleted when value is ...)."""
    d = copy.deepcopy(d)
    *path, last = dotted.split(".")
    node = d
    for p in path:
        node = node[p]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return d


# -- composition ---------------------------------------------------------------------------------
@pytest.mark.parametrize("experiment", [
    "smoke", "paper", *(pytest.param(e, marks=pytest.mark.slow)
                        for e in ("quick", "reproduce", "paper_auto", "reproduce_auto"))])
def test_every_experiment_composes_and_validates(compose, experiment):
    spec = from_dictconfig(compose([f"experiment={experiment}"]))
    assert isinstance(spec, ExperimentSpec)
    assert spec.name == experiment


@pytest.mark.parametrize(
    "overrides",
    [
        ["cluster=local"],
        pytest.param(["cluster=address", "cluster.address=tcp://127.0.0.1:8786"],
                     marks=pytest.mark.slow),
        pytest.param(["cluster=scheduler_file", "cluster.scheduler_file=/tmp/scheduler.json"],
                     marks=pytest.mark.slow),
        ["cluster=slurm"],
        pytest.param(["cluster=pbs"], marks=pytest.mark.slow),
    ],
    ids=lambda o: o[0],
)
def test_every_cluster_composes_and_validates(compose, overrides):
    spec = from_dictconfig(compose(["experiment=smoke", *overrides]))
    assert spec.cluster.kind == overrides[0].split("=")[1]


def test_default_is_quick_with_local_cluster(compose):
    cfg = compose()
    assert set(cfg) == {"experiment", "methods", "data", "cv", "cluster", "run", "store"}
    spec = from_dictconfig(cfg)
    assert spec.name == "quick"
    assert spec.method_names == ("mcc_ard", "ls_ard", "mcc_l1")
    assert spec.cluster == cluster_spec(
        "local", n_workers=2, threads_per_worker=1, memory_limit="auto", host="127.0.0.1",
        dashboard_address=None, tls=True,
    )
    assert len(spec.method("mcc_ard").grid["kernel_width"]) == 7
    l1 = spec.method("mcc_l1")
    assert (len(l1.grid["kernel_width"]), len(l1.grid["alpha_ratio"])) == (6, 5)
    assert spec.cv.n_folds == 3


def test_paper_experiment_is_the_papers_protocol(compose):
    spec = from_dictconfig(compose(["experiment=paper"]))
    assert spec.tau == (2.0, 5.0, 10.0)
    assert len(spec.psi) == 21 and spec.psi[0] == 0.0 and spec.psi[-1] == 1.0
    assert spec.psi == tuple(round(0.05 * i, 2) for i in range(21))
    assert spec.seeds == range(100)
    assert spec.method_names == ("mcc_ard", "mcc_ard_proper", "ls_ard", "mcc_l1")
    assert (spec.cv.n_folds, spec.cv.score) == (5, "mae")
    assert (spec.data.n_train, spec.data.n_features, spec.data.n_relevant) == (300, 1000, 30)
    ard = spec.method("mcc_ard")
    assert len(ard.grid["kernel_width"]) == 10 and ard.grid["kernel_width"][-1] == 100.0
    assert ard.params["likelihood"] == "deviant"
    assert spec.method("mcc_ard_proper").params["likelihood"] == "proper"
    l1 = spec.method("mcc_l1")
    assert (len(l1.grid["kernel_width"]), l1.grid["alpha_ratio"]) == (
        6, (0.8, 0.6, 0.45, 0.3, 0.2, 0.1))
    assert spec.method("ls_ard").grid == {}


def test_smoke_overrides_beat_config_defaults(compose):
    spec = from_dictconfig(compose(["experiment=smoke"]))
    assert spec.run.block_seconds == 1.0  # config.yaml's, the experiment setting none
    assert (spec.data.n_train, spec.data.n_features, spec.cv.n_folds) == (40, 60, 2)
    assert all(len(m.grid["kernel_width"]) == 2 for m in spec.methods if m.kind.width_param)
    assert len(spec.method("mcc_l1").grid["alpha_ratio"]) == 2
    # the command line wins over the experiment
    spec = from_dictconfig(compose(["experiment=smoke", "run.block_seconds=7"]))
    assert spec.run.block_seconds == 7.0


def test_hydra_node_and_interpolations(compose):
    cfg = compose(["experiment=smoke", "store.root=${experiment.name}_results"],
                  return_hydra_config=True)
    assert "hydra" in cfg and cfg.hydra.run.dir.startswith("outputs/smoke/")
    assert OmegaConf.to_container(cfg.hydra.sweep)["subdir"] == "${hydra.job.num}"
    spec = from_dictconfig(cfg)  # the hydra node (unresolvable outside a job) is ignored
    assert spec.store.root == "smoke_results"
    assert store_path(spec).parent == Path("smoke_results")


def test_data_spec_builds_the_cells_data(compose):
    spec = from_dictconfig(compose(["experiment=smoke"]))
    data = spec.data.make_data(seed=1, psi=0.2, tau=5.0)
    assert data.X_train.shape == (40, 60) and data.X_test.shape == (40, 60)
    assert int(data.relevant_mask.sum()) == 5 and data.noise_var == 0.05


def test_method_files_name_the_package_estimators_and_they_are_built(compose):
    from mccard_dist.config import config_path, method_files
    from mccard_dist.methods import AUTO_WIDTH
    from mccard_dist.models import AUTO_WIDTH as MODELS_AUTO_WIDTH

    assert AUTO_WIDTH == MODELS_AUTO_WIDTH  # the methods room names it without the models
    named = {OmegaConf.load(f).estimator for f in method_files(config_path(environ={})).values()}
    assert named == {f"mccard_dist.models:{c.__name__}" for c in (
        AuthorsMCCARDRegressor, AuthorsLSARDRegressor, MCCARDRegressor, LSARDRegressor,
        MCCL1Regressor, LassoBaseline, HuberBaseline, HuberL1Regressor, HuberMCPRegressor,
        LADLassoRegressor)}
    spec = from_dictconfig(compose(["experiment=smoke"]))
    def build(name, candidate):
        method = spec.method(name)
        return method.kind.build(method.params, candidate)

    est, alpha = build("mcc_ard_proper", {"kernel_width": 0.3})
    assert isinstance(est, MCCARDRegressor) and alpha is None
    assert (est.kernel_width, est.likelihood, est.w_steps) == (0.3, "proper", 10)
    # without data, a penalty ratio is taken as the penalty itself
    est, alpha = build("mcc_l1", {"kernel_width": 3.0, "alpha_ratio": 0.01})
    assert (est.kernel_width, est.alpha, est.solver, alpha) == (3.0, 0.01, "cd", 0.01)
    assert isinstance(build("ls_ard", {})[0], LSARDRegressor)


# -- round trip, conversion, store path ------------------------------------------------------------
def test_round_trip_is_plain_json_and_picklable(smoke_dict):
    spec = spec_from_dict(smoke_dict)
    d = spec.to_dict()
    assert json.loads(json.dumps(d)) == d  # plain JSON-able Python, lists not tuples
    assert spec_from_dict(d) == spec
    assert spec_from_dict(json.loads(json.dumps(d))) == spec
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert hash(spec) == hash(spec_from_dict(d))
    assert d["experiment"]["seeds"] == [0, 1]
    assert list(d["methods"]) == list(spec.method_names)


def test_only_selected_methods_in_order(smoke_dict):
    d = bad(smoke_dict, "experiment.methods", ["mcc_l1", "mcc_ard"])
    spec = spec_from_dict(d)
    assert spec.method_names == ("mcc_l1", "mcc_ard")
    assert list(spec.to_dict()["methods"]) == ["mcc_l1", "mcc_ard"]


def test_ints_are_converted_for_float_fields(smoke_dict):
    d = bad(smoke_dict, "experiment.tau", [2, 5])
    d["experiment"]["psi"] = [0, 1]
    d["methods"]["mcc_ard"]["grid"]["kernel_width"] = [1, 10]
    d["methods"]["mcc_ard"]["params"]["tol"] = 1
    d["data"]["noise_var"] = 0
    d["cv"]["reference_width"] = 2
    spec = spec_from_dict(d)
    assert spec.tau == (2.0, 5.0) and all(type(v) is float for v in spec.tau + spec.psi)
    m = spec.method("mcc_ard")
    assert all(type(v) is float for v in m.grid["kernel_width"])
    assert type(m.params["tol"]) is float
    assert type(spec.data.noise_var) is float and type(spec.cv.reference_width) is float
    assert spec_from_dict(spec.to_dict()) == spec


def test_seeds_as_list(smoke_dict):
    spec = spec_from_dict(bad(smoke_dict, "experiment.seeds", [3, 7, 11]))
    assert spec.seeds == (3, 7, 11)


def test_store_path(smoke_dict, tmp_path):
    spec = spec_from_dict(smoke_dict)
    path = store_path(spec)
    assert path == store_path(spec_from_dict(copy.deepcopy(smoke_dict)))
    assert path.parent == Path("results") and path.suffix == ".zarr"
    assert path.name.startswith("smoke-") and len(path.stem) == len("smoke-") + 10
    other = store_path(spec_from_dict(bad(smoke_dict, "data.n_features", 70)))
    assert other != path
    # run/cluster settings do not move the store, an explicit path wins
    assert store_path(spec_from_dict(bad(smoke_dict, "run.block_seconds", 3))) == path
    explicit = spec_from_dict(bad(smoke_dict, "store.path", str(tmp_path / "x.zarr")))
    assert store_path(explicit) == tmp_path / "x.zarr"


@pytest.mark.slow  # keeps the fast subset under its 30 s
def test_multirun_style_override_changes_store(compose):
    a = store_path(from_dictconfig(compose(["experiment=smoke", "data.n_features=50"])))
    b = store_path(from_dictconfig(compose(["experiment=smoke", "data.n_features=60"])))
    assert a != b


# -- validation --------------------------------------------------------------------------------------
BAD_VALUES = [
    # (dotted key to set, value, key the message must name)
    ("experiment.methods", ["mcc_ard", "ridge_cv"], "experiment.methods"),
    ("experiment.methods", [], "experiment.methods"),
    ("experiment.methods", ["mcc_ard", "mcc_ard"], "experiment.methods"),
    ("experiment.psi", [0.0, 1.5], "experiment.psi"),
    ("experiment.psi", [-0.1], "experiment.psi"),
    ("experiment.psi", [0.1, 0.1], "experiment.psi"),
    ("experiment.psi", [], "experiment.psi"),
    ("experiment.tau", [0.0], "experiment.tau"),
    ("experiment.tau", [-2.0], "experiment.tau"),
    ("experiment.tau", [float("nan")], "experiment.tau"),
    ("experiment.tau", [5.0, 5.0], "experiment.tau"),
    ("experiment.tau", [], "experiment.tau"),
    ("experiment.tau", 5.0, "experiment.tau"),
    ("experiment.seeds", {"start": -1, "count": 2}, "experiment.seeds.start"),
    ("experiment.seeds", {"start": 0, "count": 0}, "experiment.seeds.count"),
    ("experiment.seeds", [1, 1], "experiment.seeds"),
    ("experiment.seeds", [-3], "experiment.seeds"),
    ("experiment.name", "a/b", "experiment.name"),
    ("cv.n_folds", 1, "cv.n_folds"),
    ("cv.n_folds", 41, "cv.n_folds"),
    ("cv.n_folds", 2.0, "cv.n_folds"),
    ("cv.score", "r2", "cv.score"),
    ("cv.scheme", "loo", "cv.scheme"),
    ("cv.path_stop", 0.5, "cv.path_stop"),  # with the default scheme, kfold
    ("cv.race", 0.0, "cv.race"),
    ("cv.reference_width", 0.0, "cv.reference_width"),
    ("methods.mcc_ard.grid.kernel_width", [0.5, 0.0], "methods.mcc_ard.grid.kernel_width"),
    ("methods.mcc_ard.grid.kernel_width", [-1.0], "methods.mcc_ard.grid.kernel_width"),
    ("methods.mcc_ard.grid.kernel_width", [], "methods.mcc_ard.grid.kernel_width"),
    ("methods.mcc_ard.grid.alpha_ratio", [0.1], "methods.mcc_ard.grid.alpha_ratio"),
    ("methods.mcc_l1.grid.kernel_width", [], "methods.mcc_l1.grid.kernel_width"),
    ("methods.mcc_l1.grid.alpha_ratio", [0.1, -0.01], "methods.mcc_l1.grid.alpha_ratio"),
    ("methods.mcc_l1.grid.alpha_ratio", [], "methods.mcc_l1.grid.alpha_ratio"),
    ("methods.ls_ard.grid.kernel_width", [1.0], "methods.ls_ard.grid.kernel_width"),
    ("methods.ls_ard.grid.kernel_width", "auto", "methods.ls_ard.grid.kernel_width"),
    ("methods.mcc_ard.grid.kernel_width", "Auto", "methods.mcc_ard.grid.kernel_width"),
    ("methods.mcc_ard.grid.kernel_width", "", "methods.mcc_ard.grid.kernel_width"),
    ("methods.mcc_ard.estimator", "sklearn.linear_model.Lasso", "methods.mcc_ard.estimator"),
    ("methods.mcc_ard.params", {"likelihood": "deviant", "bogus": 1, "lr": 2},
     "methods.mcc_ard.params"),
    ("methods.mcc_ard.params", {"kernel_width": 1.0}, "methods.mcc_ard.params"),
    ("methods.mcc_ard.params", {"likelihood": "student"}, "methods.mcc_ard.params"),
    ("methods.mcc_ard.params", {"max_iter": 0}, "methods.mcc_ard.params"),
    ("methods.mcc_ard.params", {"tol": -1e-4}, "methods.mcc_ard.params"),
    ("methods.mcc_l1.params", {"solver": "admm"}, "methods.mcc_l1.params"),
    ("methods.mcc_l1.params", {"alpha": 0.1}, "methods.mcc_l1.params"),
    ("methods.ls_ard.params", {"kernel_width": 1.0}, "methods.ls_ard.params"),
    ("data.n_train", 0, "data.n_train"),
    ("data.n_test", 0, "data.n_test"),
    ("data.n_features", 0, "data.n_features"),
    ("data.n_features", -5, "data.n_features"),
    ("data.n_relevant", -1, "data.n_relevant"),
    ("data.n_relevant", 61, "data.n_relevant"),
    ("data.noise_var", -0.1, "data.noise_var"),
    ("data.n_feature", 10, "data.n_feature"),
    ("run.block_seconds", -1, "run.block_seconds"),
    ("run.blocks_per_worker", 0, "run.blocks_per_worker"),
    ("run.retries", -1, "run.retries"),
    ("run.save_coef", "maybe", "run.save_coef"),
    ("store.root", "", "store.root"),
    ("cluster.kind", "kubernetes", "cluster.kind"),
    ("cluster.n_workers", 0, "cluster.n_workers"),
    ("cluster.queue", "short", "cluster.queue"),
    ("data", ..., "data"),
    # "???" given where the schema has a default (a merge would keep the default)
    ("cv.scheme", "???", "cv.scheme: missing mandatory value"),
    ("data.outliers", "???", "data.outliers: missing mandatory value"),
    ("run.unit", "???", "run.unit: missing mandatory value"),
    ("store.path", "???", "store.path: missing mandatory value"),
    ("cluster.tls", "???", "cluster.tls: missing mandatory value"),
    ("cluster.n_workers", "???", "cluster.n_workers: missing mandatory value"),
    # values the schema cannot type, each named with its key
    ("cv.race", float("inf"), "cv.race: must be finite"),
    ("methods.mcc_ard", None, "methods.mcc_ard: must be a mapping"),
    ("data.source", ["paper"], "data.source: must be one of"),
    ("cluster.kind", ["local"], "cluster.kind: unknown cluster kind"),
    ("data.n_train", None, "data.n_train: must not be null"),
    ("run.save_coef", None, "run.save_coef: must not be null"),
    ("experiment.tau", {"a": 1}, "experiment.tau: must be a list"),
    ("cluster.n_worker", None, "cluster.n_worker: unknown key(s)"),
]


@pytest.mark.parametrize("dotted,value,key", BAD_VALUES,
                         ids=[f"{k}={v!r}"[:60] for k, v, _ in BAD_VALUES])
def test_bad_value_is_refused_naming_the_key(smoke_dict, dotted, value, key):
    with pytest.raises(ConfigError) as info:
        spec_from_dict(bad(smoke_dict, dotted, value))
    assert str(info.value).startswith(key), str(info.value)


def test_null_stands_for_the_default_where_it_did(smoke_dict):
    spec = spec_from_dict(smoke_dict)
    for dotted in ("run.unit", "store.verify", "data.outliers", "data.source", "cluster.options",
                   "methods.mcc_ard.params"):
        changed = spec_from_dict(bad(smoke_dict, dotted, None))
        if dotted == "methods.mcc_ard.params":
            assert changed.method("mcc_ard").params == {}
        else:
            assert changed == spec, dotted


def test_numpy_numbers_are_taken_as_python_numbers(smoke_dict):
    import numpy as np

    d = bad(smoke_dict, "experiment.seeds", list(np.arange(3)))
    d["data"]["n_train"] = np.int64(40)
    d["methods"]["mcc_ard"]["grid"]["kernel_width"] = [np.float32(0.5), np.float64(3.0)]
    spec = spec_from_dict(d)
    assert tuple(spec.seeds) == (0, 1, 2) and spec.data.n_train == 40
    assert spec.method("mcc_ard").grid["kernel_width"] == (0.5, 3.0)


def test_an_infinite_degrees_of_freedom_is_refused(smoke_dict):
    d = bad(smoke_dict, "data.outliers", "student_t")
    d["data"]["df"] = float("inf")
    with pytest.raises(ConfigError, match=r"^data.df: must be finite"):
        spec_from_dict(d)


def test_messages_say_what_to_change(smoke_dict):
    with pytest.raises(ConfigError, match="known methods are .*ls_ard, .*mcc_ard, .*mcc_l1, "):
        spec_from_dict(bad(smoke_dict, "experiment.methods", ["ridge_cv"]))
    with pytest.raises(ConfigError, match=r"^methods.mcc_ard.estimator: must name an estimator "
                                          r"class by import path, package.module:Class"):
        spec_from_dict(bad(smoke_dict, "methods.mcc_ard.estimator", "ridge"))
    with pytest.raises(ConfigError, match=r"^methods.mcc_ard.estimator: cannot be used "
                                          r"\(ModuleNotFoundError: No module named 'nolab'\); "
                                          r"check the path and that its package is installed"):
        spec_from_dict(bad(smoke_dict, "methods.mcc_ard.estimator", "nolab.robust:Mine"))
    with pytest.raises(ConfigError, match=r"^methods.mcc_ard.estimator: is not a regressor"):
        spec_from_dict(bad(smoke_dict, "methods.mcc_ard.estimator", "collections:OrderedDict"))
    with pytest.raises(ConfigError, match=r"bogus, lr not accepted by MCCARDRegressor"):
        spec_from_dict(bad(smoke_dict, "methods.mcc_ard.params", {"bogus": 1, "lr": 2}))
    with pytest.raises(ConfigError, match=r"^methods.mcc_ard.params: The 'likelihood' parameter "
                                          r"of MCCARDRegressor must be a str among"):
        spec_from_dict(bad(smoke_dict, "methods.mcc_ard.params", {"likelihood": "student"}))
    with pytest.raises(ConfigError, match="1.5"):
        spec_from_dict(bad(smoke_dict, "experiment.psi", [0.0, 1.5]))
    with pytest.raises(ConfigError, match="local, address, scheduler_file, slurm, pbs"):
        spec_from_dict(bad(smoke_dict, "cluster.kind", "k8s"))
    with pytest.raises(ConfigError, match="cluster.options"):
        spec_from_dict(bad(smoke_dict, "cluster.partition", "short"))
    with pytest.raises(ConfigError, match="not used by cluster.kind=local .*slurm, pbs"):
        spec_from_dict(bad(smoke_dict, "cluster.queue", "short"))


def test_a_method_the_experiment_does_not_select_is_not_validated_nor_imported(smoke_dict):
    """A run checks the methods it selects; another's settings cannot stop it (a command line
    that sets one is told it has no effect, tests/test_command_line.py)."""
    d = bad(smoke_dict, "methods.mcc_ard_proper.grid.kernel_width", [])
    d["experiment"]["methods"] = ["mcc_ard"]
    d["methods"]["mine"] = {"estimator": "no_such_package.sub:Cls", "params": {}, "grid": {}}
    assert spec_from_dict(d).method_names == ("mcc_ard",)


@pytest.mark.parametrize("overrides, needle", [
    (["methods.lasso.alpha_ratio=[0.1]"],
     "methods.lasso.alpha_ratio: unknown key(s); known keys are estimator, params, grid, style; did you "
     "mean methods.lasso.grid.alpha_ratio?"),
])
def test_keys_of_an_unselected_method_are_checked_by_the_schema(overrides, needle):
    from conftest import refusal

    message = refusal(["experiment=smoke", "experiment.methods=[ls_ard]", *overrides])
    assert message.startswith(needle), message


@pytest.mark.parametrize("override, hint", [
    ("methods.huber.epsilon=[1.5]", "did you mean methods.huber.grid.epsilon?"),
    ("methods.mcc_ard.max_iter=10", "did you mean methods.mcc_ard.params.max_iter?"),
])
def test_a_key_guessed_under_a_method_says_where_it_belongs(override, hint):
    from conftest import refusal

    assert refusal(["experiment=smoke", override]).endswith(hint)


@pytest.mark.parametrize("method", ["mcc_l1", "lasso"])
def test_a_penalty_ratio_that_keeps_no_feature_is_refused(method):
    from conftest import refusal

    message = refusal(["experiment=smoke", f"experiment.methods=[{method}]",
                       f"methods.{method}.grid.alpha_ratio=[0.5,5]"])
    assert message.startswith(f"methods.{method}.grid.alpha_ratio: values must be < 1: "
                              "alpha_ratio is a fraction of alpha_max")


def test_a_misspelt_method_gets_a_did_you_mean():
    from conftest import refusal

    message = refusal(["experiment=smoke", "experiment.methods=[mcc_ard,lsard]"])
    assert message.startswith("experiment.methods: unknown method 'lsard'; known methods are ")
    assert message.endswith("; did you mean ls_ard?, got ['mcc_ard', 'lsard']")


@pytest.mark.slow
def test_bad_values_through_hydra_overrides(compose):
    cases = [
        (["experiment.psi=[0.0,1.2]"], "experiment.psi"),
        (["experiment.tau=[0]"], "experiment.tau"),
        (["experiment.methods=[mcc_ard,nope]"], "experiment.methods"),
        (["experiment.seeds.start=-1"], "experiment.seeds.start"),
        (["cv.n_folds=1"], "cv.n_folds"),
        (["methods.mcc_l1.grid.alpha_ratio=[]"], "methods.mcc_l1.grid.alpha_ratio"),
        (["+methods.mcc_ard.params.foo=1"], "methods.mcc_ard.params"),
        (["cluster=address"], "cluster.address"),
        (["cluster=scheduler_file"], "cluster.scheduler_file"),
    ]
    for overrides, key in cases:
        with pytest.raises(ConfigError) as info:
            from_dictconfig(compose(["experiment=smoke", *overrides]))
        assert str(info.value).startswith(key), (overrides, str(info.value))


def test_a_batch_systems_word_for_a_typed_key_names_the_key(compose):
    with pytest.raises(ConfigError) as info:
        from_dictconfig(compose(["experiment=smoke", "cluster=slurm", "+cluster.partition=gpu"]))
    assert str(info.value) == ("cluster.partition: not a key; for cluster.kind=slurm use "
                               "cluster.queue (cluster.queue=<partition>)")


TOP_LEVEL = "known top-level keys are experiment, methods, data, cv, run, store, cluster, hydra"


@pytest.mark.parametrize("override, message", [
    # what Hydra suggests after refusing psi=0.5: it used to run the default grid
    ("+psi=0.5", f"psi: unknown key; {TOP_LEVEL}; did you mean experiment.psi?"),
    ("++n_features=50", f"n_features: unknown key; {TOP_LEVEL}; did you mean data.n_features?"),
    ("+experiments.name=x", f"experiments: unknown key; {TOP_LEVEL}; did you mean experiment?"),
    ("++foo=1", f"foo: unknown key; {TOP_LEVEL}"),
    # inside a section, as before
    ("+experiment.bar=1",
     "experiment.bar: unknown key(s); known keys are name, methods, tau, psi, seeds, metrics, stop"),
])
def test_unknown_top_level_keys_are_refused(compose, override, message):
    with pytest.raises(ConfigError) as info:
        from_dictconfig(compose(["experiment=smoke", override]))
    assert str(info.value) == message


@pytest.mark.slow  # composes twice
@pytest.mark.parametrize("overrides, message", [
    (["methods.mcc_ard.grid.kernel_widths=[1]"], "methods.mcc_ard.grid.kernel_widths: "
     f"{CONF / 'method' / 'mcc_ard.yaml'} gives mcc_ard no grid axis kernel_widths; did you mean "
     "methods.mcc_ard.grid.kernel_width?"),
    (["methods.mcc_ardd.grid.kernel_width=[1]"], "methods.mcc_ardd.grid.kernel_width: no such "
     "key: is mcc_ardd one of the config's methods, and kernel_width a name of its grid (its "
     "method config lists them under grid)?"),
])
def test_a_grid_key_hydra_cannot_set_is_named(overrides, message):
    """A name not in a method's grid (the closest of its method file's), or a method not in the
    config: Hydra cannot set the key (a grid's names are open, so the schema does not say
    which)."""
    from mccard_dist.errors import UsageError

    with pytest.raises(UsageError) as info:
        compose_config(["experiment=smoke", *overrides])
    assert str(info.value) == message


@pytest.mark.parametrize("overrides, message", [
    (["data.n_train=abc"], "data.n_train: must be an integer, got 'abc'"),
    pytest.param(["cv.reference_width=wide"], "cv.reference_width: must be a real number, got "
                 "'wide'", marks=pytest.mark.slow),
    (["experiment.tau=[2,x]"], "experiment.tau[1]: must be a real number, got 'x'"),
    pytest.param(["run.progress=maybe"], "run.progress: must be true or false, got 'maybe'",
                 marks=pytest.mark.slow),
    (["data.n_trian=100"], "data.n_trian: unknown key(s); known keys are source, n_train, "
     "n_test, n_features, n_relevant, noise_var, outliers, df, leverage, rho; did you mean "
     "data.n_train?"),
    pytest.param(["data=diabetes", "data.rho=0.5"], "data.rho: unknown key(s); known keys are "
                 "source, n_train, n_noise_features, standardize, outliers, df (a key of "
                 "data.source=paper)", marks=pytest.mark.slow),
    (["methods.mcc_ard.kernel_widths=[1]"], "methods.mcc_ard.kernel_widths: unknown key(s); "
     "known keys are estimator, params, grid, style; did you mean methods.mcc_ard.grid.kernel_width?"),
    (["cluster.cores=4"], "cluster.cores: is not used by cluster.kind=local (it is a setting of "
     "slurm, pbs)"),
    pytest.param(["cluster=slurm", "cluster.n_workers=4"], "cluster.n_workers: is not used by "
                 "cluster.kind=slurm (it is a setting of local) (use cluster.n_jobs: workers = "
                 "n_jobs x processes)", marks=pytest.mark.slow),
    pytest.param(["cluster=pbs", "cluster.cores=many"], "cluster.cores: must be an integer, got "
                 "'many'", marks=pytest.mark.slow),
    pytest.param(["data.n_train=null"], "data.n_train: must not be null",
                 marks=pytest.mark.slow),
    (["experiment.tau={a:1}"], "experiment.tau: must be a list"),
    (["experiment.psi=0.3"], "experiment.psi: must be a list, e.g. experiment.psi=[0.3]"),
    (["psi=0.3"], "psi: unknown key(s); known keys are experiment, methods, data, cv, run, "
     "store, cluster; did you mean experiment.psi?"),
    (["~data.n_train"], "data.n_train: cannot be removed (set it instead)"),
])
def test_the_schema_refuses_while_composing_with_the_same_messages(overrides, message):
    """Hydra checks the overrides against the registered schemas; the message a user gets is
    the one the same value gets in a plain config."""
    from mccard_dist.errors import UsageError

    with pytest.raises(UsageError) as info:
        compose_config(["experiment=smoke", *overrides])
    assert str(info.value) == message


@pytest.mark.slow
@pytest.mark.parametrize("group, field, options", [
    ("data", "source", ["paper", "tiny", "file", "diabetes"]),
    ("cluster", "kind", ["local", "address", "scheduler_file", "slurm", "pbs"]),
])
def test_every_group_option_is_typed_by_the_schema_of_its_source_or_kind(group, field, options):
    from mccard_dist.config import CLUSTER_SCHEMAS, DATA_SCHEMAS

    schemas = DATA_SCHEMAS if group == "data" else CLUSTER_SCHEMAS
    for option in options:
        cfg = compose_config(["experiment=smoke", f"{group}={option}"])
        node = cfg[group]
        assert OmegaConf.get_type(node) is schemas[node[field]], option


def test_the_hydra_node_is_a_known_top_level_key(smoke_dict):
    d = copy.deepcopy(smoke_dict)
    d["hydra"] = {"run": {"dir": "outputs"}}
    assert spec_from_dict(d) == spec_from_dict(smoke_dict)
    d["nope"] = {}
    with pytest.raises(ConfigError, match=f"^nope: unknown key; {TOP_LEVEL}$"):
        spec_from_dict(d)


# -- slurm / pbs (dask-jobqueue) cluster settings --------------------------------------------------
def jobqueue_dict(smoke_dict, kind="slurm", **changes):
    """The smoke config with the shipped conf/cluster/<kind>.yaml settings plus ``changes``."""
    d = copy.deepcopy(smoke_dict)
    d["cluster"] = copy.deepcopy(JOBQUEUE_CLUSTERS[kind])
    d["cluster"].update(changes)
    return d


JOBQUEUE_CLUSTERS = {
    kind: {k: v for k, v in OmegaConf.to_container(OmegaConf.load(
        Path(__file__).parents[1] / "conf" / "cluster" / f"{kind}.yaml"), resolve=True).items()
        if k != "defaults"}
    for kind in ("slurm", "pbs")
}


@pytest.mark.parametrize("kind", ["slurm", "pbs"])
def test_jobqueue_cluster_is_typed_and_round_trips(smoke_dict, kind):
    d = jobqueue_dict(smoke_dict, kind, processes=2, queue="short", account="proj",
                      job_extra_directives=["--qos=normal"], n_jobs=3,
                      job_script_prologue=["module load python"], options={"local_directory": "/tmp"})
    spec = spec_from_dict(d)
    c = spec.cluster
    assert (c.kind, c.cores, c.processes, c.memory, c.walltime) == (kind, 4, 2, "8GB", "01:00:00")
    assert (c.queue, c.account, c.n_jobs, c.adaptive) == ("short", "proj", 3, None)
    assert c.job_extra_directives == ("--qos=normal",)
    assert c.job_script_prologue == ("module load python",)
    assert (c.worker_lifetime, c.lifetime_stagger) == ("55m", "4m")
    assert (c.walltime_seconds, c.worker_lifetime_seconds, c.lifetime_stagger_seconds) == (
        3600, 3300.0, 240.0)
    assert (c.workers_per_job, c.target_workers) == (2, 6)
    assert not hasattr(c, "n_workers") and not hasattr(c, "address")
    assert spec_from_dict(spec.to_dict()) == spec
    assert pickle.loads(pickle.dumps(spec)) == spec
    hash(spec)  # frozen all the way down (options included)
    json.dumps(spec.to_dict())


def test_jobqueue_defaults_and_adaptive(smoke_dict):
    c = spec_from_dict(jobqueue_dict(smoke_dict)).cluster
    assert c.processes is None and c.workers_per_job == 4  # one single-threaded worker per core
    assert (c.n_jobs, c.target_workers, c.dashboard_address) == (1, 4, ":8787")
    c = spec_from_dict(jobqueue_dict(smoke_dict, adaptive={"maximum": 5})).cluster
    assert (c.adaptive.minimum, c.adaptive.maximum, c.target_workers) == (0, 5, 20)
    # retirement off: the stagger has nothing to spread
    c = spec_from_dict(jobqueue_dict(smoke_dict, worker_lifetime=None)).cluster
    assert c.worker_lifetime is None and c.lifetime_stagger is None
    c = spec_from_dict(jobqueue_dict(smoke_dict, worker_lifetime=3000, lifetime_stagger="90s",
                                     walltime="1-00:00:00")).cluster
    assert (c.worker_lifetime_seconds, c.lifetime_stagger_seconds, c.walltime_seconds) == (
        3000.0, 90.0, 86400)


BAD_JOBQUEUE = [
    ("slurm", {"cores": 0}, "cluster.cores"),
    ("slurm", {"cores": None}, "cluster.cores"),
    ("slurm", {"cores": 2, "processes": 4}, "cluster.processes"),
    ("slurm", {"memory": "lots"}, "cluster.memory"),
    ("slurm", {"memory": "0GB"}, "cluster.memory"),
    ("slurm", {"memory": 8}, "cluster.memory"),
    ("slurm", {"walltime": "1h"}, "cluster.walltime"),
    ("slurm", {"walltime": 3600}, "cluster.walltime"),
    ("slurm", {"walltime": "00:00:00"}, "cluster.walltime"),
    ("pbs", {"walltime": "1-00:00:00"}, "cluster.walltime"),
    ("slurm", {"walltime": "00:30:00"}, "cluster.worker_lifetime"),
    ("slurm", {"worker_lifetime": "soon"}, "cluster.worker_lifetime"),
    ("slurm", {"lifetime_stagger": "1h"}, "cluster.lifetime_stagger"),
    ("slurm", {"n_jobs": 0}, "cluster.n_jobs"),
    ("slurm", {"n_jobs": None}, "cluster.n_jobs"),
    ("slurm", {"adaptive": {"minimum": 3, "maximum": 2}}, "cluster.adaptive.maximum"),
    ("slurm", {"adaptive": {"minimum": 0}}, "cluster.adaptive.maximum"),
    ("slurm", {"adaptive": {"maximum": 2, "max": 3}}, "cluster.adaptive.max"),
    ("slurm", {"adaptive": 4}, "cluster.adaptive"),
    ("slurm", {"job_extra_directives": "--qos=normal"}, "cluster.job_extra_directives"),
    ("slurm", {"job_extra_directives": ["#SBATCH --qos=normal"]},
     "cluster.job_extra_directives[0]"),
    ("pbs", {"job_extra_directives": ["", "-l place=scatter"]}, "cluster.job_extra_directives[0]"),
    ("slurm", {"job_script_prologue": [1]}, "cluster.job_script_prologue[0]"),
    ("slurm", {"queue": ""}, "cluster.queue"),
    ("slurm", {"interface": [0]}, "cluster.interface"),
    ("slurm", {"resource_spec": "nodes=1:ppn=4"}, "cluster.resource_spec"),
    ("slurm", {"n_workers": 4}, "cluster.n_workers"),
    ("slurm", {"address": "tcp://h:8786"}, "cluster.address"),
    ("slurm", {"options": {"cores": 8}}, "cluster.options.cores"),
    ("pbs", {"options": {"env_extra": ["x"]}}, "cluster.options.env_extra"),
    ("slurm", {"options": ["x"]}, "cluster.options"),
]


@pytest.mark.parametrize("kind,changes,key", BAD_JOBQUEUE,
                         ids=[f"{k}:{c!r}"[:60] for k, c, _ in BAD_JOBQUEUE])
def test_bad_jobqueue_value_is_refused_naming_the_key(smoke_dict, kind, changes, key):
    with pytest.raises(ConfigError) as info:
        spec_from_dict(jobqueue_dict(smoke_dict, kind, **changes))
    assert str(info.value).startswith(key + ":"), str(info.value)


def test_a_zero_memory_size_is_refused_as_zero(smoke_dict):
    with pytest.raises(ConfigError, match=r"^cluster.memory: must be > 0, got '0GB'$"):
        spec_from_dict(jobqueue_dict(smoke_dict, "slurm", memory="0GB"))


def test_jobqueue_messages_say_what_to_change(smoke_dict):
    with pytest.raises(ConfigError, match=r"must be shorter than cluster.walltime \(00:30:00\) so "
                                          "that workers retire before the job is killed"):
        spec_from_dict(jobqueue_dict(smoke_dict, walltime="00:30:00"))
    with pytest.raises(ConfigError, match="use cluster.n_jobs"):
        spec_from_dict(jobqueue_dict(smoke_dict, n_workers=4))
    with pytest.raises(ConfigError, match="set cluster.cores instead"):
        spec_from_dict(jobqueue_dict(smoke_dict, options={"cores": 8}))
    with pytest.raises(ConfigError, match="'#SBATCH' is added"):
        spec_from_dict(jobqueue_dict(smoke_dict, job_extra_directives=["#SBATCH -p x"]))
    with pytest.raises(ConfigError, match=r"cluster.cores: required when cluster.kind=pbs .*"
                                          "cluster.cores=8"):
        spec_from_dict(jobqueue_dict(smoke_dict, "pbs", cores=None))


@pytest.mark.slow
def test_jobqueue_values_through_hydra_overrides(compose):
    spec = from_dictconfig(compose([
        "experiment=smoke", "cluster=slurm", "cluster.walltime=02:00:00", "cluster.cores=8",
        "cluster.adaptive={minimum:1,maximum:6}", "cluster.job_extra_directives=['--qos=normal']",
        "+cluster.options.local_directory=/tmp"]))
    c = spec.cluster
    assert (c.walltime, c.cores, c.adaptive.minimum, c.adaptive.maximum) == ("02:00:00", 8, 1, 6)
    assert c.job_extra_directives == ("--qos=normal",) and c.options == {"local_directory": "/tmp"}
    cases = [
        (["cluster=slurm", "cluster.walltime=00:30:00"], "cluster.worker_lifetime"),
        (["cluster=slurm", "cluster.processes=5"], "cluster.processes"),
        (["cluster=pbs", "cluster.memory=lots"], "cluster.memory"),
        (["cluster=local", "+cluster.queue=short"], "cluster.queue"),
    ]
    for overrides, key in cases:
        message = refusal(["experiment=smoke", *overrides])
        assert message.startswith(key), (overrides, message)


def test_other_kinds_refuse_jobqueue_settings(smoke_dict):
    for kind, extra in (("local", {}), ("address", {"address": "tcp://h:8786"}),
                        ("scheduler_file", {"scheduler_file": "/tmp/s.json"})):
        d = bad(smoke_dict, "cluster", {"kind": kind, "n_workers": 2, "threads_per_worker": 1,
                                        "cores": 4, **extra})
        if kind != "local":
            del d["cluster"]["n_workers"], d["cluster"]["threads_per_worker"]
        with pytest.raises(ConfigError, match=f"cluster.cores: is not used by cluster.kind={kind}"):
            spec_from_dict(d)
    # unset (None / empty) fields of other kinds are fine: that is what to_dict writes
    spec = spec_from_dict(smoke_dict)
    assert spec.cluster.kind == "local" and spec_from_dict(spec.to_dict()) == spec
    assert spec.cluster.target_workers == 2


@pytest.mark.slow
def test_path_stop_needs_alo_and_a_positive_margin(compose):
    from mccard_dist.config import from_dictconfig

    spec = from_dictconfig(compose(["experiment=smoke", "cv=alo", "cv.path_stop=0.25"]))
    assert spec.cv.path_stop == 0.25
    with pytest.raises(ConfigError, match="cv.path_stop: must be > 0"):
        from_dictconfig(compose(["experiment=smoke", "cv=alo", "cv.path_stop=-1"]))
    with pytest.raises(ConfigError, match="only used with cv.scheme=alo"):
        from_dictconfig(compose(["experiment=smoke", "cv.path_stop=0.25"]))


@pytest.mark.slow  # keeps the fast subset under its 30 s
def test_race_is_for_kfold_only(compose):
    from mccard_dist.config import from_dictconfig

    assert from_dictconfig(compose(["experiment=smoke", "cv.race=0.25"])).cv.race == 0.25
    with pytest.raises(ConfigError, match="only used with cv.scheme=kfold"):
        from_dictconfig(compose(["experiment=smoke", "cv=alo", "cv.race=0.25"]))


# -- grids keyed by the estimators' names ------------------------------------------------------------
def test_a_grid_is_keyed_by_its_estimators_names(smoke_dict):
    d = copy.deepcopy(smoke_dict)
    d["experiment"]["methods"] = ["mcc_ard", "ls_ard", "mcc_l1", "huber"]
    d["methods"]["huber"] = {"estimator": "mccard_dist.models:HuberBaseline", "params": {"max_iter": 100},
                             "grid": {"epsilon": [1.1, 1.35, 2.0], "alpha": [1.0, 10.0]}}
    new = spec_from_dict(d)
    assert new.method("huber").grid == {"epsilon": (1.1, 1.35, 2.0), "alpha": (1.0, 10.0)}
    assert new.method("ls_ard").grid == {}
    with pytest.raises(ConfigError, match=r"^methods.huber.kernel_width: unknown key\(s\); known "
                                          r"keys are estimator, params, grid, style; did you mean "
                                          r"methods.huber.grid.kernel_width\?"):
        spec_from_dict(bad(d, "methods.huber.kernel_width", [1.5]))
    with pytest.raises(ConfigError, match=r"^methods.huber.grid.kernel_width: is not a grid "
                                          r"name of HuberBaseline, which takes epsilon, .*alpha.*; did "
                                          r"you mean methods.huber.grid.epsilon\?"):
        spec_from_dict(bad(d, "methods.huber.grid.kernel_width", [1.5]))
    with pytest.raises(ConfigError, match=r"^methods.huber.grid.alpha: must not be empty: "
                                          r"HuberBaseline is selected by CV over epsilon x alpha"):
        spec_from_dict(bad(d, "methods.huber.grid.alpha", ...))


# -- kernel_width: auto ------------------------------------------------------------------------------
@pytest.mark.slow  # keeps the fast subset under its 30 s
def test_auto_width_methods_have_no_cv_over_h(compose):
    from mccard_dist.grid import cv_candidates, fits_per_cell

    spec = from_dictconfig(compose(["experiment=reproduce_auto"]))
    ard = spec.method("mcc_ard_auto")
    assert ard.auto_width and not ard.has_cv
    assert cv_candidates(ard) == [] and fits_per_cell(ard, spec.cv) == 1
    assert ard.kind.build(ard.params, {})[0].kernel_width == "auto"
    l1 = spec.method("mcc_l1_auto")
    ratios = l1.grid["alpha_ratio"]
    assert cv_candidates(l1) == [{"alpha_ratio": r} for r in ratios]
    assert fits_per_cell(l1, spec.cv) == len(ratios) * spec.cv.n_folds + 1
    assert spec.method("mcc_ard").to_dict()["grid"] == {
        "kernel_width": [0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0]}
    assert ard.to_dict()["grid"] == {"kernel_width": "auto"}
    assert l1.to_dict()["grid"] == {"kernel_width": "auto", "alpha_ratio": list(ratios)}
    assert spec_from_dict(spec.to_dict()) == spec


@pytest.mark.slow
def test_auto_width_from_the_command_line(compose):
    spec = from_dictconfig(compose(["experiment=smoke", "methods.mcc_ard.grid.kernel_width=auto"]))
    assert spec.method("mcc_ard").auto_width
    with pytest.raises(ConfigError, match=r"^methods.mcc_ard.grid.kernel_width: must be a list of "
                                          r"values > 0 or 'auto' \(lower case\)"):
        from_dictconfig(compose(["experiment=smoke", "methods.mcc_ard.grid.kernel_width=AUTO"]))
    with pytest.raises(ConfigError, match=r"^methods.mcc_l1.params: kernel_width='auto' needs "
                                          r"solver='cd' or 'lasso'"):
        from_dictconfig(compose(["experiment=smoke", "methods.mcc_l1.grid.kernel_width=auto",
                                 "methods.mcc_l1.params.solver=em"]))


@pytest.mark.parametrize("overrides, digest", [
    (["experiment=smoke"], "0b8747c2d5faab5571e7fa170a80eabf036bf4c88086470369d26805d69c7036"),
    (["experiment=paper"], "e94f40827225e142ad916e4b1e108743a8bfa01d9e2bd1b76a1bb864e8270d12"),
    (["experiment=reproduce"], "087c51e768aa680f8d206a5b0d2ef868c12ae4309791118cc0b1384d94cfd8aa"),
], ids=["smoke", "paper", "reproduce"])
def test_grid_hash_of_a_fixed_spec_is_pinned(compose, overrides, digest):
    """Compatibility pins, not correctness checks: a change that alters these hashes would orphan
    the stores users already have."""
    from mccard_dist.grid import grid_hash

    assert grid_hash(from_dictconfig(compose(overrides))) == digest


@pytest.mark.slow  # 13 compositions
def test_paths_enter_the_hash_only_where_a_method_fits_them(compose):
    from mccard_dist.grid import grid_description, grid_hash

    def spec(*overrides):
        return from_dictconfig(compose(["experiment=smoke", *overrides]))

    # MCC-L1 fits paths: each route is another grid, none is the grid from before paths
    routes = {r: grid_hash(spec(f"cv.paths={r}")) for r in ("width", "penalty", "none")}
    assert len(set(routes.values())) == 3
    assert spec().cv.paths == "width" and grid_hash(spec()) == routes["width"]
    assert "paths" not in grid_description(spec("cv.paths=none"))["cv"]  # no path: nothing said
    # no method fits paths (MCC-ARD only, or MCC-L1 with the EM solver or an auto width): the
    # route changes nothing, and the hash does not move
    for extra in (["experiment.methods=[mcc_ard,ls_ard]"],
                  ["methods.mcc_l1.params.solver=em"],
                  ["methods.mcc_l1.grid.kernel_width=auto"]):
        assert grid_hash(spec(*extra)) == grid_hash(spec(*extra, "cv.paths=none"))
    # MCC-ARD fits its widths as paths only with warm_start
    warm = ["experiment.methods=[mcc_ard,ls_ard]", "+methods.mcc_ard.params.warm_start=true"]
    assert grid_hash(spec(*warm)) != grid_hash(spec(*warm, "cv.paths=none"))
    assert spec("cv=alo").cv.paths == "none"


@pytest.mark.parametrize("overrides, message", [
    (["cv.paths=lambda"], r"^cv.paths: must be one of width, penalty, none"),
    (["cv=alo", "cv.paths=width"], r"^cv.paths: is only used with cv.scheme=kfold"),
])
def test_bad_paths_are_refused(compose, overrides, message):
    with pytest.raises(ConfigError, match=message):
        from_dictconfig(compose(["experiment=smoke", *overrides]))


@pytest.mark.parametrize("method", ["mcc_ard_authors", "lasso", "huber"])
def test_alo_is_refused_for_a_method_the_registry_says_cannot_give_it(compose, method):
    with pytest.raises(ConfigError, match=rf"^cv.scheme: alo needs leave-one-out residuals, "
                                          rf"which {method} do not give"):
        from_dictconfig(compose(["experiment=smoke", "cv=alo",
                                 f"experiment.methods=[{method}]"]))


def _kinds(slow=("HuberL1Regressor", "HuberMCPRegressor")):
    """The estimator of every shipped method file; the ones whose first fit compiles skglm's
    solver (seconds) slow."""
    from mccard_dist.config import config_path, method_files

    named = sorted({OmegaConf.load(f).estimator
                    for f in method_files(config_path(environ={})).values()})
    return [pytest.param(name, marks=pytest.mark.slow) if name.endswith(slow) else name
            for name in named]


@pytest.mark.parametrize("name", _kinds())
def test_each_estimator_declares_alo_exactly_where_it_gives_loo_residuals(name):
    """`MethodKind.alo` is what the config asks; here each estimator is asked directly: one that
    declares it must return finite residuals, one that does not must not pretend to."""
    import numpy as np

    from mccard_dist.methods import kind_of

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 6))
    y = X[:, 0] - 2 * X[:, 1] + 0.1 * rng.standard_normal(40)
    kind = kind_of(name)
    model, _ = kind.build({}, {n: v for n, v in ((kind.width_param, 1.5),
                                                  (kind.penalty_name, 0.01)) if n})
    try:
        residuals = model.fit(X, y).loo_residuals(X, y)
        gives = bool(np.all(np.isfinite(residuals))) and residuals.shape == y.shape
    except (AttributeError, NotImplementedError):
        gives = False
    assert gives == kind.alo, name


@pytest.mark.slow  # composes the config six times
@pytest.mark.parametrize("alias, short", [("neg_mean_absolute_error", "mae"),
                                          ("neg_median_absolute_error", "medae"),
                                          ("neg_root_mean_squared_error", "rmse")])
def test_cv_score_takes_scikit_learns_scorer_names(compose, alias, short):
    """The same loss under either name: the same spec, grid hash and store."""
    from mccard_dist.grid import grid_hash

    spec = from_dictconfig(compose(["experiment=smoke", f"cv.score={alias}"]))
    assert spec.cv.score == short
    assert grid_hash(spec) == grid_hash(from_dictconfig(compose(["experiment=smoke",
                                                                 f"cv.score={short}"])))


def test_every_data_source_has_a_schema_and_every_cluster_kind_too():
    """The schemas and the lists the data and cluster code read must name the same choices."""
    from mccard_dist.config import CLUSTER_KINDS, CLUSTER_SCHEMAS, DATA_SCHEMAS
    from mccard_dist.data import SOURCES

    assert set(DATA_SCHEMAS) == set(SOURCES)
    assert tuple(CLUSTER_SCHEMAS) == CLUSTER_KINDS


def test_the_paper_scenario_settings_agree_wherever_they_are_listed():
    """The generator's keyword arguments are listed again by the data spec and the generated
    data's record: a setting added to one and not the other, or a default that differs, fails
    here."""
    import dataclasses
    import inspect

    from mccard_dist.config import DataSpec
    from mccard_dist.data.synthetic import PaperData, make_paper_data

    generator = {k: p.default for k, p in inspect.signature(make_paper_data).parameters.items()
                 if k not in ("seed", "psi", "tau")}
    spec = {f.name: f.default for f in dataclasses.fields(DataSpec) if f.name != "source"}
    record = {f.name for f in dataclasses.fields(PaperData)}
    assert list(spec) == list(generator)
    assert set(generator) <= record
    # the scenario settings (optional in the config) default to the paper's problem
    optional = [k for k, v in spec.items() if v is not dataclasses.MISSING and v != "???"]
    assert optional == ["outliers", "df", "leverage", "rho"]
    for key in optional:
        assert spec[key] == generator[key], key


def test_a_numpy_array_where_a_list_goes_is_refused_naming_the_key():
    import numpy as np

    d = copy.deepcopy(OmegaConf.to_container(compose_config(["experiment=smoke"]), resolve=True))
    d["experiment"]["psi"] = np.array([0.0, 0.2])
    with pytest.raises(ConfigError, match=r"^experiment.psi: must be a list"):
        spec_from_dict(d)


def test_a_copy_of_a_spec_is_held_to_the_rules_between_sections(compose):
    from dataclasses import replace

    spec = from_dictconfig(compose(["experiment=smoke", "cv.race=0.25"]))
    with pytest.raises(ConfigError, match=r"^run\.unit: fit splits K-fold CV"):
        replace(spec, run=replace(spec.run, unit="fit"))
    assert replace(spec, run=replace(spec.run, unit="cell")).run.unit == "cell"


@pytest.mark.parametrize("name", [1, True, None])
def test_a_method_name_that_is_not_text_is_refused_in_one_line(compose, name):
    from omegaconf import OmegaConf

    d = OmegaConf.to_container(compose(["experiment=smoke"]), resolve=True)
    d["experiment"]["methods"] = [name]
    with pytest.raises(ConfigError, match=r"^experiment\.methods: must be a list of method names"):
        spec_from_dict(d)


def test_a_methods_style_is_its_files_changes_no_grid_hash_and_is_checked(compose):
    """``style: {color, marker}`` of a method file colours the method in the report; it is no
    part of the grid description (the same store), and a colour or marker the figures cannot
    draw is refused in one line."""
    from conftest import refusal

    import xarray as xr

    from mccard_dist.analysis.values import method_style
    from mccard_dist.grid import grid_description, grid_hash

    spec = from_dictconfig(compose(["experiment=smoke"]))
    mine = from_dictconfig(compose(["experiment=smoke", "methods.mcc_ard.style.color='#123456'"]))
    assert mine.method("mcc_ard").style == {"color": "#123456", "marker": "o"}
    assert grid_hash(mine) == grid_hash(spec)
    assert "style" not in json.dumps(grid_description(mine))
    assert mine.to_dict()["methods"]["mcc_ard"]["style"]["color"] == "#123456"
    ds = xr.Dataset(coords={"model": ["mcc_ard", "mine"]})
    ds.attrs["config"] = json.dumps({"methods": {
        "mcc_ard": mine.method("mcc_ard").to_dict(),
        "mine": {"estimator": "x.y:Z", "style": {"color": "#c2185b", "marker": "P"}},
        "other": {"estimator": "x.y:W"}}})
    methods = ["mcc_ard", "mine", "other"]
    assert method_style("mcc_ard", methods, ds)["color"] == "#123456"
    assert method_style("mine", methods, ds) == {"label": "mine", "color": "#c2185b",
                                                 "marker": "P"}
    assert method_style("other", methods, ds)["color"] not in ("#c2185b", "#123456")
    assert refusal(["experiment=smoke", "methods.mcc_ard.style.color=red"]) == (
        "methods.mcc_ard.style.color: must be a CSS hex colour, #rrggbb, got 'red'")
    assert refusal(["experiment=smoke", "methods.mcc_ard.style.marker=Q"]).startswith(
        "methods.mcc_ard.style.marker: must be one of o s ^")


@pytest.mark.parametrize("value", ["lots", "4 parsecs", "-2GB", "-0.5", "[1]"])
def test_a_memory_limit_dask_cannot_read_is_refused_with_the_config(value):
    """Refused in one line naming the key and what it takes, as the config is read: before a
    store or a cluster (which would say it only as it starts, and not at all with nothing to
    run)."""
    message = refusal(["experiment=smoke", f"cluster.memory_limit={value}"])
    assert message.startswith('cluster.memory_limit: must be "auto", a size such as "4GB", bytes, '
                              "a fraction of the memory such as 0.5, or 0 (no limit)"), message
    assert "\n" not in message


@pytest.mark.parametrize("value", ["auto", "4GB", "512MiB", "0.5", "0", "null", "2000000000"])
def test_a_memory_limit_dask_reads_is_taken(value):
    from mccard_dist.config import from_dictconfig

    cfg = compose_config(["experiment=smoke", f"cluster.memory_limit={value}"])
    assert from_dictconfig(cfg).cluster.memory_limit == cfg.cluster.memory_limit

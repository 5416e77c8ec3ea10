"""Command-line entry points: ``mccard-run`` (Hydra) and ``mccard-report`` (argparse).

``@hydra.main`` is a thin shell, as Hydra users know it (its launchers, sweepers, callbacks and
flags work): the command line's mistakes are said first (:mod:`mccard_dist.overrides`), Hydra
composes the config once, and the composed config is validated into an
:class:`~mccard_dist.config.ExperimentSpec` (bad values stop here, before any cluster starts) and
handed to :func:`mccard_dist.app.run_from_spec`, the plain function :func:`mccard_dist.run` calls
too; what it says goes through :mod:`logging`, which Hydra's ``job_logging`` shows (the results
table and the store's line without a prefix: ``conf/config.yaml``). Examples::

    mccard-run experiment=smoke cluster.n_workers=2
    mccard-run -m experiment=quick data.n_features=500,1000   # one store per job
"""

from __future__ import annotations

import json
import logging
import signal
import sys
from pathlib import Path

__all__ = ["JobFailed", "report", "run"]

log = logging.getLogger("mccard_dist")


#: printed under the traceback of an unexpected error
BUG_HINT = ("this is a bug in mccard-dist, not a problem with your input: please report it with "
            "the traceback above and the command line")


class JobFailed(Exception):
    """A job of a sweep that ended without its results: its one line says why. Raised, not
    exited, so that Hydra's launchers run the sweep's other jobs and then say the first."""


def _failed(line: str) -> BaseException:
    """What ends a run that did not get its results: the exit with its line, or in a sweep a
    :class:`JobFailed` (the line also in the run folder's log)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    line = _logged(line)
    sweep = HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN
    return JobFailed(line) if sweep else SystemExit(line)


def _main(cfg) -> str | None:
    from .app import run_from_spec
    from .config import from_dictconfig
    from .errors import UsageError

    spec = None
    try:
        spec = from_dictconfig(cfg)  # names the bad key, before any cluster starts
        _said_unused_method_settings(spec)
        import distributed  # noqa: F401 - its logging setup first, then the level below

        # Dask's own INFO chatter (connections, nannies) stays out of the run log
        logging.getLogger("distributed").setLevel(logging.WARNING)
        report = run_from_spec(spec)
        if spec.run.plan:
            return None  # no store was written: none for a sweep's list
    except UsageError as exc:
        raise _failed(f"error: {exc}") from None
    except KeyboardInterrupt as exc:  # stops a sweep's other jobs too
        # the line, then the shell's status of a process its signal stopped: 128 + its number
        print(_logged(_interrupted(spec, exc)), file=sys.stderr)
        raise SystemExit(128 + getattr(exc, "signum", signal.SIGINT)) from None
    except Exception:
        log.exception("unexpected error")
        raise _failed(f"error: {BUG_HINT}") from None
    if report.methods_without_cells:
        raise _failed(f"error: {without_cells(report.methods_without_cells)}")
    if not report.complete:
        raise _failed(f"{len(report.block_errors)} block(s) did not finish; rerun the same "
                      "command to resume")
    return str(Path(report.store_path).resolve())


def without_cells(methods: dict) -> str:
    """The line of a run whose ``methods`` (a :class:`~mccard_dist.runner.RunReport`'s
    ``methods_without_cells``) finished no cell: each with its first cell's error."""
    said = []
    for name, (n_failed, error) in methods.items():
        lines = error.strip().splitlines()
        said.append(f"{name} finished no cell ({n_failed} failed; first: "
                    f"{lines[0][:400] if lines else 'no error recorded'})")
    return ("; ".join(said) + "; run.retry_failed=true runs their cells again "
            "(with run.allow_mixed_versions=true once their code changed)")


def _logged(line: str) -> str:
    """``line`` as the run ends with it: also written to the log files of the run's folder
    (Hydra's ``cli.log``), which the terminal does not see twice (the line is printed once, by
    the exit); in a sweep, naming the job and what it sweeps."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN:
        job = HydraConfig.get().job
        line = f"job {job.num} ({' '.join(HydraConfig.get().overrides.task)}): {line}"
    record = log.makeRecord(log.name, logging.ERROR, __file__, 0, line, None, None)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)
    return line


def _said_unused_method_settings(spec) -> None:
    """Warn of each override of a method the experiment does not run: it has no effect."""
    from hydra.core.hydra_config import HydraConfig

    from .overrides import method_of

    if not HydraConfig.initialized():
        return
    for override in HydraConfig.get().overrides.task:
        method = method_of(override)
        if method is not None and method not in spec.method_names:
            log.warning("%s has no effect: %s is not in experiment.methods (%s); add it there "
                        "to run it", override, method, ", ".join(spec.method_names))


def _interrupted(spec, exc: BaseException) -> str:
    """The line an interrupted run ends with: what the store holds, if there is one yet."""
    from .store import store_path

    why = f" ({exc})" if str(exc) else ""
    if spec is not None and store_path(spec).exists():
        return (f"interrupted{why}: finished blocks are in the store; rerun the same command to "
                "resume")
    return (f"interrupted{why} before the store was created: nothing was written; rerun the "
            "same command to start")


#: the config groups a user picks with GROUP=OPTION (``method`` files are selected differently)
GROUPS = ("experiment", "cluster", "cv", "data")


def _summary(path: Path) -> str:
    """The first sentence of a config file's header comment (which may span lines)."""
    words = []
    for line in path.read_text().splitlines():
        if line.startswith("# @package"):
            continue
        if not line.startswith("#") or not line.strip("# "):
            if words:
                break
            continue
        words.append(line.lstrip("# ").strip())
    text = " ".join(words)
    end = text.find(". ")
    return (text if end < 0 else text[:end]).rstrip(".")


def _entry(name: str, summary: str) -> list[str]:
    """One option of the help: its name, and its summary wrapped beside it."""
    import textwrap

    lines = textwrap.wrap(summary, width=100 - 30, break_on_hyphens=False) or [""]
    return [f"    {name:<26}{lines[0]}"] + [" " * 30 + line for line in lines[1:]]


def help_text(config_dir: Path | None = None) -> str:
    """What ``mccard-run --help`` prints: the tool, its config groups and methods, examples."""
    from omegaconf import OmegaConf

    from .app import search_folders
    from .config import config_dir as default_dir

    config_dir = default_dir() if config_dir is None else config_dir
    folders = search_folders(config_dir)

    defaults = {}
    primary = next(f / "config.yaml" for f in folders if (f / "config.yaml").is_file())
    for item in OmegaConf.to_container(OmegaConf.load(primary))["defaults"]:
        if isinstance(item, dict):
            defaults.update({k: v for k, v in item.items() if "@" not in k})

    def options(group):  # one's own folder's file where both have one of a name
        found = {}
        for folder in folders:
            for path in sorted((folder / group).glob("*.yaml")):
                found.setdefault(path.stem, path)
        return [found[name] for name in sorted(found)]

    out = ["mccard-run: fit robust sparse regression methods (MCC-ARD and its baselines) over a "
           "grid",
           "of contamination settings on a Dask cluster, into a labelled xarray/zarr results "
           "store.",
           "Rerunning the same command resumes the same store.",
           "",
           "usage: mccard-run [-m] [GROUP=OPTION] [KEY=VALUE ...]   (Hydra overrides; -m sweeps",
           "       comma-separated values, one store per job)",
           "",
           "config groups (pick one option with GROUP=OPTION):"]
    for group in GROUPS:
        out.append(f"  {group}:")
        for path in options(group):
            mark = " (default)" if defaults.get(group) == path.stem else ""
            out += _entry(f"{path.stem}{mark}", _summary(path))
    out += ["",
            "methods (not a group: choose with experiment.methods=[a,b], set with "
            "methods.NAME.KEY=VALUE):"]
    for path in options("method"):
        out += _entry(path.stem, _summary(path))
    out += ["",
            "examples:",
            "  mccard-run experiment=smoke                         # 16 cells, under a minute on "
            "2 cores",
            "  mccard-run experiment=reproduce cluster.n_workers=8 # the paper's grid, 4 seeds",
            "  mccard-run experiment=paper cluster=slurm cluster.account=myproj cluster.n_jobs=10",
            "  mccard-run -m experiment=quick data.n_features=500,1000",
            "  mccard-run data=file data.path=mydata.csv data.target=y   # your own data",
            "",
            "more: `mccard-run ... run.plan=true` says what the run would do (its store, cells, "
            "reuse, time)",
            "without running it; `--cfg job` prints the composed config, `--hydra-help` Hydra's "
            "own options;",
            "results: `mccard-report STORE --out DIR`, or mccard_dist.open_results(STORE) in "
            "Python.",
            f"configs: {', '.join(map(str, folders))} (MCCARD_CONFIG_DIR=DIR adds a folder of "
            "your own, searched first)"]
    return "\n".join(out)


def run() -> None:
    """Console entry point ``mccard-run``: the command line's mistakes said in one line
    (:mod:`mccard_dist.overrides`), then Hydra's main, with the config folder and the shipped one
    (``--config-dir``) searched in that order."""
    import os

    from .app import hydra_error, register_schemas, search_folders
    from .config import config_dir
    from .overrides import hydra_argv, parse_args, problem

    folder = config_dir()
    if not folder.is_dir():
        sys.exit(f"error: config directory {folder} not found; set MCCARD_CONFIG_DIR to a "
                 "folder of configs of your own (or unset it)")
    try:
        args = parse_args(sys.argv[1:])
    except ValueError as exc:
        sys.exit(f"error: {exc}")
    if args.help:  # our page: nothing is composed
        print(help_text(folder))
        return
    import hydra

    if args.version:
        print(f"{_version()} (Hydra {hydra.__version__})")
        return
    said = problem(args, search_folders(folder))
    if said is not None:
        sys.exit(f"error: {said}")
    sys.argv[1:] = hydra_argv(args)
    for shipped in search_folders(folder)[1:]:  # searched after one's own folder
        sys.argv[1:1] = ["--config-dir", str(shipped.resolve())]
    register_schemas(folder)
    main = hydra.main(version_base="1.3", config_path=str(folder), config_name="config")(_main)
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra raises its errors, to be said in one line here
    try:
        main()
    except JobFailed as exc:
        sys.exit(str(exc))
    except Exception as exc:  # noqa: BLE001 - _main handles its own; these are Hydra's
        sys.exit(f"error: {hydra_error(exc, search_folders(folder))}")


def _version() -> str:
    """The installed package and its version, as ``--version`` prints it."""
    import importlib.metadata

    return f"mccard-dist {importlib.metadata.version('mccard-dist')}"


def _open_store(path, sweep=False):
    """One store, or several of the same cells side by side (a list of paths, or a multirun
    folder over methods); stores of different grids are refused (a report covers one grid),
    but for a multirun folder along settings where ``sweep``."""
    from .analysis import check_one_grid
    from .errors import UsageError
    from .store import SWEEP_LIST, open_results

    try:
        ds = open_results(path)  # "no such store" or "not a results store": one line
    except UsageError as exc:
        raise SystemExit(f"error: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - anything unreadable is "not a store"
        raise SystemExit(f"error: {path} is not a readable results store ({exc})") from None
    multirun = path if isinstance(path, Path) and (path / SWEEP_LIST).is_file() else None
    if sweep and multirun is not None and "sweep" in ds.attrs:
        return ds
    try:
        check_one_grid(ds, multirun)
    except UsageError as exc:
        raise SystemExit(f"error: {exc}") from None
    return ds


def report(argv=None) -> None:
    """Console entry point ``mccard-report`` (:func:`_report`): a problem with the input is one
    line; an unexpected error keeps its traceback and is marked as a bug to report."""
    from .errors import UsageError

    try:
        _report(argv)
    except UsageError as exc:  # a store damaged where only reading the values finds it
        raise SystemExit(f"error: {exc}") from None
    except Exception:
        import traceback

        traceback.print_exc()
        raise SystemExit(f"error: {BUG_HINT}") from None


def _print_pairs(ds, pairs, title="Methods paired as asked (--pair; same cells)") -> None:
    """A paired comparison of methods, under ``title``."""
    from .analysis import compare_methods, method_comparison_markdown

    print(f"\n{title}:\n")
    print(method_comparison_markdown(compare_methods(ds, pairs)))


def _report(argv=None) -> None:
    """``mccard-report STORE [STORE ...] --out DIR [--cell method,tau,psi,seed] [--compare
    BASE_STORE] [--pair BASE,OTHER ...] [--versus BASE]``: the paper's figures and ``report.md`` in
    DIR; printed: what --compare, --pair and --versus ask for, then the claims
    (:func:`~mccard_dist.analysis.claims.claims_summary`). Plain argparse: the store carries its
    own config."""
    import argparse

    from .analysis import width_pairs, write_report
    from .analysis.cells import parse_cell, resolve_cell
    from .analysis.claims import claims_summary
    from .errors import UsageError
    from .store import check_writable

    parser = argparse.ArgumentParser(
        prog="mccard-report", allow_abbrev=False,  # --htm is a mistake, not --html
        description="Figures, summary tables and a check of the paper's claims from a results "
                    "store (a partial store works: only finished cells count).")
    parser.add_argument("--version", action="version", version=_version())
    parser.add_argument("store", nargs="+",
                        help="path of a results store (<experiment>-<hash>.zarr); several stores "
                             "of the same cells with different methods are reported side by side")
    parser.add_argument("--compare", default=None, metavar="BASE_STORE",
                        help="also print a paired comparison of r, RMSE and F1 against another "
                             "store on the cells both finished (e.g. the same grid with cv=kfold), "
                             "with the baseline's seed-to-seed noise; --out is then optional")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="directory for report.md and the figures (created if needed)")
    parser.add_argument("--cell", default=None, metavar="METHOD,TAU,PSI,SEED",
                        help="the cell of the CV-curve figure, e.g. mcc_l1,10,0.3,0 (METHOD 'all': "
                             "every method with CV); default: every method with CV at the middle "
                             "tau, the psi closest to 0.3 and the first finished seed")
    parser.add_argument("--pair", action="append", default=[], metavar="BASE,OTHER",
                        help="also print a paired comparison of two methods on the cells both "
                             "finished (OTHER - BASE, intervals over seeds), e.g. "
                             "mcc_ard,mcc_ard_authors; repeatable")
    parser.add_argument("--versus", default=None, metavar="BASE",
                        help="also print BASE minus every other method of the store, per tau and "
                             "block of psi values (r, RMSE, F1, features kept, seconds per cell; "
                             "intervals over seeds), with each method's means and the CV grid "
                             "edges, e.g. --versus mcc_ard")
    parser.add_argument("--html", action="store_true",
                        help="also write report.html: one self-contained page with interactive "
                             "figures (needs the 'html' extra: altair, vl-convert-python)")
    args = parser.parse_args(argv)
    path = Path(args.store[0]) if len(args.store) == 1 else [Path(p) for p in args.store]
    ds = _open_store(path, sweep=True)  # a missing store or another folder: said first
    if args.out is None and args.compare is None and not args.pair and args.versus is None:
        parser.error("--out DIR is required (unless --compare BASE_STORE, --pair or --versus is "
                     "given)")
    if args.html:
        if args.out is None:
            parser.error("--html needs --out DIR")
        from .analysis.html import HtmlUnavailable, require_html

        try:
            require_html()
        except HtmlUnavailable as exc:
            raise SystemExit(f"error: --html: {exc}") from None
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        cell = parse_cell(args.cell) if args.cell is not None else None
    except ValueError as exc:
        parser.error(f"--cell: {exc}")
    pairs_asked = []
    for pair in args.pair:
        names = [name.strip() for name in pair.split(",")]
        if len(names) != 2 or not all(names) or names[0] == names[1]:
            parser.error(f"--pair: expected BASE,OTHER (two different method names), got {pair!r}")
        pairs_asked.append(tuple(names))
    if args.out is not None:
        try:
            check_writable(Path(args.out), key="--out", fix="choose a writable folder")
        except UsageError as exc:
            raise SystemExit(f"error: {exc}") from None
    held = set(map(str, ds["model"].values))
    missing = sorted({n for pair in pairs_asked for n in pair} - held)
    if missing:
        raise SystemExit(f"error: --pair: no method {', '.join(missing)} in the store(s); they "
                         f"hold {', '.join(map(str, ds['model'].values))}")
    if args.versus is not None and args.versus not in held:
        raise SystemExit(f"error: --versus: no method {args.versus} in the store(s); they hold "
                         f"{', '.join(map(str, ds['model'].values))}")
    if "sweep" in ds.attrs:  # a multirun along settings: each store, and a table of them all
        asked = [f for f, v in (("--pair", pairs_asked), ("--compare", args.compare),
                                ("--cell", cell)) if v]
        if asked or args.out is None:
            along = ", ".join(json.loads(ds.attrs["sweep"]).values())
            raise SystemExit(f"error: {path} is a sweep along {along}: give --out DIR (and "
                             f"--versus, --html); "
                             f"{', '.join(asked) or 'the other options'} ask for one store")
        from .analysis.report import write_sweep_report

        table, versus = write_sweep_report(ds, args.out, html=args.html, versus=args.versus)
        print(versus + ("\n\n" if versus else "") + f"report: {table}  (one folder per setting)")
        return
    if cell is not None:
        try:
            cell = resolve_cell(ds, cell)
        except ValueError as exc:
            raise SystemExit(f"error: --cell: {exc}") from None
    if args.compare is not None:
        from .analysis import compare_stores, comparison_table

        base = _open_store(Path(args.compare))
        rows = compare_stores(base, ds)
        if not rows:
            raise SystemExit(f"error: {path} and {args.compare} share no finished cell")
        print(comparison_table(rows, base_name="base", other_name="this"))
        print(f"(base: {args.compare}; this: {path})")
    if pairs_asked:
        _print_pairs(ds, pairs_asked)
    if args.versus is not None:
        from .analysis.compare import versus_report

        print(versus_report(ds, args.versus))
    if args.out is None:
        return
    out = write_report(ds, args.out, cell=cell, html=args.html,
                       store_path=path if isinstance(path, Path) else " + ".join(map(str, path)))
    print(("\n" if pairs_asked or args.versus or args.compare else "") + claims_summary(out.claims))
    if pairs := width_pairs(ds):
        _print_pairs(ds, pairs,
                     "Kernel width set inside the fit against K-fold CV (paired, same cells)")
    written = sum(f.path is not None for f in out.figures)
    print(f"\nreport: {out.path}  ({written} figure(s) in {out.path.parent})")
    if out.html is not None:
        print(f"report: {out.html}  (self-contained, interactive)")
    for f in out.figures:
        if f.path is None:
            print(f"skipped {f.title}: {f.note}")


if __name__ == "__main__":
    run()

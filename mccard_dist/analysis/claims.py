"""The paper's claims, checked on paired seeds (``check_claims``)."""

from __future__ import annotations

import math
import textwrap
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .stops import intervals_of
from .markup import Code, Paragraph, Strong, Table, markdown
from .values import (_NAMES, ROLES, MissingCells, StoreCells, _config, _num, metric_label,
                     n_relevant, scenario)

HOLDS, BETTER, FAILS = "holds", "better than claimed", "does not hold"
NO_DATA, NOT_IN_GRID = "not enough seeds", "not in this grid"
PARTIAL, NOT_TESTABLE = "holds where this grid can test", "not testable"
NOT_APPLICABLE = "not applicable"

#: the paper's Laplace scales
PAPER_TAUS = (2.0, 5.0, 10.0)
#: "similar" / "close": the interval of the difference lies within +- this fraction of the level
SIMILAR_TOLERANCE = 0.10


@dataclass(frozen=True)
class ClaimPart:
    """One comparison of a claim, evaluated on paired seeds.

    ``estimate`` is the mean over seeds of the per-seed ``quantity``, ``ci_low`` / ``ci_high`` its
    paired t-interval, ``n_seeds`` the seeds with every needed cell finished, ``rule`` the decision
    rule in words.
    """

    claim: str
    part: str
    quantity: str
    rule: str
    verdict: str
    estimate: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    n_seeds: int = 0
    note: str = ""


@dataclass(frozen=True)
class ClaimResult:
    """A claim of the paper (docs/results/reproduction.md), its parts and overall verdict.

    Overall: "does not hold" if any part does not hold; else "not enough seeds" if any part has
    too few paired seeds to decide; else "not in this grid" if no part can be tested; else "holds
    where this grid can test" if some parts need a method, tau or psi the grid lacks (``note``
    names them); else "holds" (a part better than claimed counts as holding).
    """

    claim: str
    statement: str
    verdict: str
    parts: tuple[ClaimPart, ...] = field(default_factory=tuple)
    note: str = ""


def _psi_text(psis) -> str:
    if not psis:
        return "ψ (none in the store)"
    if len(psis) <= 4:
        return "ψ ∈ {" + ", ".join(f"{p:g}" for p in psis) + "}"
    return f"the {len(psis)} ψ from {min(psis):g} to {max(psis):g}"


def _rule(kind: str, level: float, tol: float, margin: float = math.nan, better=None) -> str:
    where = f"{level:.0%} interval"
    if kind == "greater":
        return f"holds if the {where} lies above 0; does not hold if the mean is <= 0"
    if kind == "less":
        return f"holds if the {where} lies below 0; does not hold if the mean is >= 0"
    size = f" = ±{margin:.3g}" if math.isfinite(margin) else ""
    if better == "lower":
        return (f"holds if the {where} lies below +{tol:.0%} of the mean level of the two{size} "
                f"(better than claimed below −{tol:.0%})")
    return f"holds if the {where} lies within ±{tol:.0%} of the mean level of the two{size}"


def _part(cells, claim, part, quantity, kind, compute, level, tol, better=None) -> ClaimPart:
    """Evaluate one comparison of kind "greater", "less" or "similar" on the per-seed differences
    from ``compute()`` (NaN: an unfinished cell; "similar": also the per-seed level the tolerance
    refers to). ``better="lower"`` (similar only): a difference below the band favours the
    paper's method: "better than claimed", not a failure."""
    try:
        out = compute()
    except MissingCells as exc:
        return ClaimPart(claim, part, quantity, _rule(kind, level, tol, better=better), NOT_IN_GRID,
                         note=str(exc))
    if kind == "similar":
        diffs, levels = (np.asarray(x, dtype=float) for x in out)
    else:
        diffs = levels = np.asarray(out, dtype=float)
    mean, lo, hi, n = intervals_of(cells.ds, level).of(diffs)
    margin = math.nan
    if kind == "similar" and n:
        margin = tol * abs(float(np.mean(levels[np.isfinite(diffs)])))
    rule = _rule(kind, level, tol, margin, better)
    note = "" if n == cells.n_seed else f"{n} of {cells.n_seed} seeds have every cell finished"
    # holds: the interval lies on the claimed side (within the band for "similar"); does not
    # hold: the estimate itself lies on the other side (outside the band); otherwise the estimate
    # agrees but the interval is too wide to decide: not enough seeds.
    beyond = False
    if kind == "greater":
        ok, wrong = lo > 0, mean <= 0
    elif kind == "less":
        ok, wrong = hi < 0, mean >= 0
    elif better == "lower":
        ok, wrong, beyond = hi <= margin, mean > margin, hi < -margin
    else:
        ok, wrong = -margin <= lo and hi <= margin, abs(mean) > margin
    if n < 2:
        verdict, extra = NO_DATA, "fewer than 2 paired seeds"
    elif beyond:
        verdict, extra = BETTER, "the proposed method is better than the claimed similarity"
    elif ok or wrong:
        verdict, extra = (HOLDS if ok else FAILS), ""
    else:
        verdict = NO_DATA
        extra = "the estimate agrees but the interval is too wide to decide: more seeds needed"
    note = "; ".join(x for x in (note, extra) if x)
    return ClaimPart(claim, part, quantity, rule, verdict, mean, lo, hi, n, note)


def _overall(parts) -> tuple[str, str]:
    """The verdict of a claim from its parts, and a note naming what the grid lacks."""
    verdicts = {p.verdict for p in parts}
    lacking = list(dict.fromkeys(p.note for p in parts if p.verdict == NOT_IN_GRID))
    note = "; ".join(lacking)
    if FAILS in verdicts:
        return FAILS, note
    if NO_DATA in verdicts:
        return NO_DATA, note
    if not parts or verdicts == {NOT_IN_GRID}:
        return NOT_IN_GRID, note
    if NOT_IN_GRID in verdicts:
        return PARTIAL, note
    return HOLDS, note


_STATEMENTS = {
    "1": "MCC-ARD has clearly higher r and lower RMSE than LS-ARD once outliers are present, "
         "for tau = 2, 5, 10.",
    "2": "MCC-ARD has higher r than MCC-L1 for every tau; lower RMSE for tau = 2 and 5; similar "
         "RMSE at tau = 10.",
    "3": "MCC-ARD selects a number of features closer to the true count than LS-ARD and MCC-L1 "
         "under outliers, and has the highest F1, also at psi = 0.",
    "4": "For tau = 5 and 10, a small psi (0.05) raises MCC-ARD's F1 compared with psi = 0.",
    "5": "The deviant likelihood beats the proper one at every tau; at tau = 10 the proper one "
         "is close to LS-ARD.",
    "6": "The Bayesian treatment of h is left as future work (Section \"Kernel Bandwidth "
         "Determination\").",
}


def _claim_parts(cells, level, tol, k) -> dict:
    """The parts of claims 1 to 5 (listed in :func:`check_claims`), by claim."""
    def diff(claim, part, metric, a, b, tau, psis, kind, better=None):
        """A part on the per-seed ``mean over psis of metric(a) - metric(b)`` (``psis``:
        "positive" or "all"); "similar" also returns the per-seed mean level of the two."""
        def compute():
            psi_list = cells.psi_positive() if psis == "positive" else list(cells.psis)
            x = cells.psi_mean(metric, a, tau, psi_list)
            y = cells.psi_mean(metric, b, tau, psi_list)
            return (x - y, (x + y) / 2) if kind == "similar" else x - y

        psi_list = [float(p) for p in cells.psis if p > 0 or psis == "all"]
        claimed = {"greater": "> 0", "less": "< 0"}.get(kind, "similar")
        m = metric_label(metric)
        quantity = (f"mean over {_psi_text(psi_list)} of {m}({_NAMES[a]}) − {m}({_NAMES[b]}), "
                    f"claimed {claimed}")
        return _part(cells, claim, part, quantity, kind, compute, level, tol, better)

    parts = {
        "1": [diff("1", f"{metric_label(metric)}, τ = {tau:g}", metric, "mcc_ard", "ls_ard", tau,
                   "positive", kind)
              for tau in PAPER_TAUS for metric, kind in (("r", "greater"), ("rmse", "less"))],
        # not restricted to outliers by the paper: every psi counts
        "2": [diff("2", f"r, τ = {tau:g}", "r", "mcc_ard", "mcc_l1", tau, "all", "greater")
              for tau in PAPER_TAUS]
        + [diff("2", f"RMSE, τ = {tau:g}", "rmse", "mcc_ard", "mcc_l1", tau, "all",
                "similar" if tau == 10.0 else "less", better="lower") for tau in PAPER_TAUS],
        "3": [],
        "4": [],
        "5": [diff("5", f"deviant vs proper r, τ = {tau:g}", "r", "mcc_ard", "mcc_ard_proper",
                   tau, "all", "greater") for tau in PAPER_TAUS]
        + [diff("5", f"proper vs LS-ARD {metric_label(metric)}, τ = 10", metric, "mcc_ard_proper",
                "ls_ard", 10.0, "all", "similar") for metric in ("r", "rmse")],
    }
    kt = "k unknown" if k is None else f"k = {k}"
    for tau in PAPER_TAUS:
        for other in ("ls_ard", "mcc_l1"):
            def count(tau=tau, other=other):
                if k is None:
                    raise MissingCells("the true number of relevant features is unknown")
                psis = cells.psi_positive()
                return (cells.psi_mean("n_selected", other, tau, psis, distance_to=k)
                        - cells.psi_mean("n_selected", "mcc_ard", tau, psis, distance_to=k))
            name = _NAMES[other]
            psi_text = _psi_text([float(p) for p in cells.psis if p > 0])
            parts["3"].append(_part(
                cells, "3", f"count vs {name}, τ = {tau:g}",
                f"mean over {psi_text} of abs(n_sel({name}) − k) − abs(n_sel(MCC-ARD) − k), "
                f"{kt}, claimed > 0", "greater", count, level, tol))
            parts["3"].append(diff("3", f"F1 vs {name}, τ = {tau:g}", "f1", "mcc_ard", other,
                                   tau, "positive", "greater"))
    # the data at psi = 0 do not depend on tau (common random numbers): the first tau
    tau0 = float(cells.taus[0])
    for other in ("ls_ard", "mcc_l1"):
        def f1_zero(other=other):
            return (cells.psi_mean("f1", "mcc_ard", tau0, [0.0])
                    - cells.psi_mean("f1", other, tau0, [0.0]))
        name = _NAMES[other]
        parts["3"].append(_part(cells, "3", f"F1 vs {name}, ψ = 0",
                                f"F1(MCC-ARD) − F1({name}) at ψ = 0 (τ = {tau0:g}; the data at "
                                "ψ = 0 do not depend on τ), claimed > 0", "greater", f1_zero,
                                level, tol))
    # the same X, w* and inlier noise at both psi: the data share random numbers across psi
    for tau in (5.0, 10.0):
        def compute(tau=tau):
            return (cells.values("f1", "mcc_ard", tau, [0.05])[0]
                    - cells.values("f1", "mcc_ard", tau, [0.0])[0])
        parts["4"].append(_part(cells, "4", f"F1, τ = {tau:g}",
                                "F1(MCC-ARD, ψ = 0.05) − F1(MCC-ARD, ψ = 0), claimed > 0",
                                "greater", compute, level, tol))
    return parts


def with_roles(ds, roles):
    """The store with methods renamed to the roles the claims are about: ``roles`` maps a role
    (``mcc_ard``, ``mcc_ard_proper``, ``ls_ard``, ``mcc_l1``) to a method of the store, e.g.
    ``{"mcc_ard": "mcc_ard_auto"}``; a role not in ``roles`` keeps its own method. Only the
    roles' methods are kept, and a role only where its method's estimator is the role's
    shipped one (a method file of one's own named ``ls_ard`` plays no LS-ARD)."""
    from ..config import shipped_estimators

    names = [str(m) for m in ds["model"].values]
    stored = _config(ds).get("methods", {})
    keep = [(role, roles.get(role, role)) for role in ROLES if roles.get(role, role) in names
            and stored.get(roles.get(role, role), {}).get("estimator", shipped_estimators()[role])
            == shipped_estimators()[role]]
    view = ds.sel({"model": [m for _, m in keep]})
    return view.assign_coords(model=np.array([r for r, _ in keep], dtype=str))


def check_claims(ds, level: float = 0.95, similar_tolerance: float = SIMILAR_TOLERANCE,
                 roles=None) -> list[ClaimResult]:
    """Evaluate the paper's claims (:data:`_STATEMENTS`) on a results store.

    ``roles`` (optional) plays other methods of the store in the claims' roles
    (:func:`with_roles`), e.g. the auto-width variants: ``{"mcc_ard": "mcc_ard_auto", ...}``.

    Every comparison is a per-seed quantity (a difference between methods, or between two psi,
    usually averaged over a set of psi), computed on the seeds where every cell it needs is
    finished (the seeds are paired by construction), with the paired t-interval of its mean
    (``level``, default 95%; t-intervals, or confidence sequences for a store run with a stop
    rule, :func:`~.stops.intervals_of`). Decision rules:

    - "greater" / "less" parts hold when the whole interval lies on the claimed side of 0, and do
      not hold when the mean itself lies on the other side; a mean on the claimed side with an
      interval that contains 0 is "not enough seeds";
    - "similar" / "close" parts hold when the whole interval lies within
      ``± similar_tolerance`` (10%) of the mean level of the two methods compared, and do not hold
      when the mean lies outside that band; otherwise "not enough seeds". Where the paper's
      method may only be better (claim 2's RMSE at tau = 10), an interval below the band is
      "better than claimed";
    - a part is "not in this grid" when a method, tau or psi it needs is not in the store, and
      "not enough seeds" when fewer than 2 paired seeds have every needed cell finished (pending
      and failed cells count as missing);
    - a claim's verdict follows :class:`ClaimResult`: it never plainly holds on a store that
      lacks a cell it needs.

    The claims and their parts (tau in 2, 5, 10 as in the paper; "under outliers" means every
    psi > 0 of the store, otherwise every psi):

    1. per tau: r(MCC-ARD) − r(LS-ARD) > 0 and RMSE(MCC-ARD) − RMSE(LS-ARD) < 0, psi > 0;
    2. per tau: r(MCC-ARD) − r(MCC-L1) > 0; RMSE difference < 0 at tau 2 and 5; similar at tau 10;
    3. per tau and competitor (LS-ARD, MCC-L1), psi > 0: MCC-ARD's selected count closer to the
       true count (difference of absolute distances > 0), F1(MCC-ARD) − F1(other) > 0; and the F1
       difference > 0 at psi = 0;
    4. tau 5 and 10: F1(MCC-ARD, psi = 0.05) − F1(MCC-ARD, psi = 0) > 0;
    5. per tau: r(deviant) − r(proper) > 0; at tau 10, proper similar to LS-ARD in r and RMSE;
    6. future work in the paper: "not testable".

    ``r`` of a finished cell with a constant prediction counts as 0 (module docstring).

    Returns
    -------
    list of ClaimResult
        Claims "1" to "6" in order; see :func:`claims_table` and :func:`claims_markdown`.
    """
    if scenario(ds):
        note = (f"the claims are about the paper's problem; this store's data differ "
                f"({scenario(ds)})")
        return [ClaimResult(c, _STATEMENTS[c], NOT_APPLICABLE, (), note) for c in _STATEMENTS]
    ds = with_roles(ds, roles or {})
    results = []
    for c, p in _claim_parts(StoreCells(ds), level, similar_tolerance, n_relevant(ds)).items():
        verdict, note = _overall(p)
        results.append(ClaimResult(c, _STATEMENTS[c], verdict, tuple(p), note))
    results.append(ClaimResult("6", _STATEMENTS["6"], NOT_TESTABLE, (),
                               "future work in the paper; nothing to compare"))
    return results


def claims_table(results) -> list[dict]:
    """One row (a plain dict) per claim part; a claim without parts (6) gets one row."""
    rows = []
    for c in results:
        base = {"claim": c.claim, "claim_verdict": c.verdict, "statement": c.statement}
        for p in c.parts or [ClaimPart(c.claim, "", "", "", c.verdict, note=c.note)]:
            rows.append(base | {"part": p.part, "quantity": p.quantity, "rule": p.rule,
                                "estimate": p.estimate, "ci_low": p.ci_low, "ci_high": p.ci_high,
                                "n_seeds": p.n_seeds, "verdict": p.verdict, "note": p.note})
    return rows


def claims_intro(ds) -> Paragraph:
    """The sentence before the claims of the store ``ds`` (report.md and report.html): what each
    part's mean and interval are (:func:`~.stops.intervals_of`)."""
    return Paragraph(("Paired comparisons over seeds (same data for every method), mean and "
                      f"{intervals_of(ds).name} of the per-seed quantity; rules in ",
                      Code("mccard_dist.analysis.check_claims"), "."))


def claims_blocks(results, level: float = 0.95) -> list:
    """The claims as tables (:mod:`.markup`): one row per claim, then one row per part with the
    interval; one paragraph in all when no claim applies (data other than the paper's problem)."""
    if results and all(c.verdict == NOT_APPLICABLE for c in results):
        return [Paragraph((f"The paper's {len(results)} claims are ", Strong(NOT_APPLICABLE),
                           f" here: {results[0].note}."))]
    claims = Table(("claim", "verdict", "statement"),
                   [(c.claim, (Strong(c.verdict), f" ({c.note})" if c.note else ""), c.statement)
                    for c in results], "lll")
    parts = []
    for row in claims_table(results):
        interval = ("–" if not math.isfinite(row["ci_low"])
                    else f"[{_num(row['ci_low'])}, {_num(row['ci_high'])}]")
        parts.append((row["claim"], row["part"] or "–", row["quantity"] or "–",
                      _num(row["estimate"]), interval, str(row["n_seeds"]), row["verdict"],
                      "; ".join(x for x in (row["rule"], row["note"]) if x)))
    header = ("claim", "part", "quantity (per seed, paired)", "mean", f"{level:.0%} interval",
              "seeds", "verdict", "rule / note")
    return [claims, Table(header, parts, "lllrlrll")]


def claims_markdown(results, level: float = 0.95) -> str:
    """:func:`claims_blocks` as Markdown."""
    return markdown(claims_blocks(results, level))


def tests_every_part(results) -> bool:
    """Whether the store holds every method, tau and psi the claims test (the paper's and
    ``reproduce``'s grids), on the paper's problem: no part is "not in this grid"."""
    return all(c.verdict != NOT_APPLICABLE and all(p.verdict != NOT_IN_GRID for p in c.parts)
               for c in results)


def claims_summary(results, level: float = 0.95) -> str:
    """The claims as ``mccard-report`` prints them: :func:`claims_markdown` on a grid where every
    part can be tested (:func:`tests_every_part`) and on data other than the paper's problem (one
    line); on another grid, where many parts are "not in this grid", one line counting the
    verdicts (the table stays in ``report.md``)."""
    if tests_every_part(results) or all(c.verdict == NOT_APPLICABLE for c in results):
        return claims_markdown(results, level)
    counts = ", ".join(f"{n} {v}" for v, n in Counter(c.verdict for c in results).items())
    return textwrap.fill(f"The paper's claims on this grid, which lacks some of the tau, psi or "
                         f"methods they test (the table is in report.md): {counts}", 100)

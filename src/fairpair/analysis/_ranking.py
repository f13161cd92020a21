"""``analyze_ranking``: the statistics of one ranking design for one target, as a typed record.

The ranking design (issue 17) puts k candidates, one per group, in one
prompt and asks the model to rank them (or pick one); the order of the
groups is rotated over the matched sets (a Latin square). The input frame
has one row per (target, case_id, group): ``case_id`` is one matched set
(one answer covers its k candidates), nested in a ``template``; the names
(``variant``) are crossed with the templates; ``slot`` is the 1-based
position in the prompt, ``rank`` the parsed rank (1 = first, NaN when the
answer could not be parsed) and ``top`` 1 for the candidate ranked first.

What is computed (see :mod:`fairpair.stats._ranking` for the methods):

* per group: the selection rate (share of sets where the group's candidate
  is the top pick) and the mean rank, with crossed random-effects intervals
  (templates random, names random or fixed);
* the ratio of each group's rate to the most selected group's (the
  four-fifths rule, 29 CFR 1607.4(D)) with an interval valid although the
  best group is chosen from the data; its verdict: **fail** when the ratio
  is established below 0.8 (the Holm-adjusted p-value of ``ratio >= 0.8``
  over the groups below alpha), **pass** when it is established at or above
  0.8 (one-sided ``1 - alpha`` lower limit above 0.8), else
  **inconclusive**; **insufficient design** by the rule of
  :mod:`fairpair.analysis._design`;
* across groups: the crossed F (names fixed) or Clark's quasi-F (names
  random) on the top pick, with Cochran's Q (top pick) and Friedman (ranks)
  over the matched sets as secondary tests (they treat sets as
  independent);
* every pair of groups, twice: the top-pick risk difference (``top_A -
  top_B``) and the preference ``P(A above B) - P(B above A)`` (per set,
  ``1[rank_A < rank_B] - 1[rank_B < rank_A]``), each through the same
  cluster-aware comparison and verdict as every other comparison
  (:func:`fairpair.analysis._paired.analyze_pairs`: the crossed t on
  template x name cell means; McNemar, for the preference the sign test,
  as secondary statistics), Holm over the pairs of each measure;
* the position effect: top-pick rate and mean rank by slot with intervals
  (templates random) and the F test of equal slots;
* the unparsed answers, counted: left out of every denominator, and said so.

Calibration: ``benchmarks/sim_ranking.py`` (Plackett-Luce audits with
group, slot, template and name effects and nested repetitions); figures in
``benchmarks/README.md``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, is_dataclass
from itertools import combinations
from typing import Any

import numpy as np

from fairpair.analysis._design import design_reason_counts, estimand_words
from fairpair.analysis._paired import PairData, analyze_pairs, finish
from fairpair.analysis._results import ComparisonResult, interval, num
from fairpair.stats._common import check_choice, check_level
from fairpair.stats._multitest import adjust

__all__ = ["analyze_ranking", "RankingAnalysis", "GroupSelection", "RatioRow", "SlotRow", "PositionEffect",
           "OmnibusTest", "REQUIRED_COLUMNS", "RANKING_MEASURES", "FOUR_FIFTHS"]

REQUIRED_COLUMNS = ("target", "case_id", "template", "repetition", "group", "variant", "slot", "rank", "top")
#: The two pairwise measures and their ``ComparisonResult.measure`` names.
RANKING_MEASURES = ("top_pick", "ranked_above")
FOUR_FIFTHS = 0.8
RULE_RATIO = ("fail: Holm-adjusted p-value of ratio >= 0.8 below alpha (the (1-alpha) interval lies below 0.8); "
              "pass: the one-sided (1-alpha) lower limit is above 0.8; else inconclusive")


@dataclass(frozen=True)
class GroupSelection:
    """One group's selection rate (top pick) and mean rank, with ``confidence_level`` intervals.

    ``rate`` is in [0, 1], ``mean_rank`` in [1, k]; ``n_sets`` counts the
    parsed sets with this group's candidate, ``n_ranked`` the sets with a
    complete ranking; ``n_names`` the names (variants) seen. ``se``/``df``
    are the crossed standard error and Satterthwaite df of ``rate``.
    """

    group: str
    n_sets: int
    n_ranked: int
    n_names: int
    rate: float | None
    rate_ci: list | None
    se: float | None
    df: float | None
    mean_rank: float | None
    mean_rank_ci: list | None
    note: str | None = None


@dataclass(frozen=True)
class RatioRow:
    """A group's selection rate over the reference (most selected) group's: the four-fifths rule.

    ``ratio`` = ``rate / reference rate``; ``ci`` its ``confidence_level``
    interval (of the ratio to the truly most selected group when the
    reference is chosen from the data); ``below_four_fifths``: the point
    estimate is below 0.8 (the guideline's rule of thumb);
    ``pvalue_below`` / ``pvalue_adjusted``: test of ``ratio >= 0.8``, raw
    and Holm-adjusted over the groups; ``verdict`` as in :data:`RULE_RATIO`
    (None for a fixed reference group itself).
    """

    group: str
    reference: str
    rate: float | None
    ratio: float | None
    ci: list | None
    lower_one_sided: float | None
    below_four_fifths: bool | None
    pvalue_below: float | None
    pvalue_adjusted: float | None
    verdict: str | None
    design_reason: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class OmnibusTest:
    """A test that all groups (or slots) share one value: its name, statistic, p-value and df."""

    test: str
    statistic: float | None
    pvalue: float | None
    df: float | None
    df_denominator: float | None = None
    n: int | None = None
    note: str | None = None


@dataclass(frozen=True)
class SlotRow:
    """Top-pick rate and mean rank of one slot (1 = first position in the prompt), intervals over templates."""

    slot: int
    n: int
    top_rate: float | None
    top_rate_ci: list | None
    mean_rank: float | None
    mean_rank_ci: list | None


@dataclass(frozen=True)
class PositionEffect:
    """The position effect: per-slot rows, the F tests (templates random), Cochran's Q and Friedman (secondary).

    ``expected_rate`` is ``1 / k`` (no position effect); ``first_minus_last``
    the top-pick rate of slot 1 minus that of slot k.
    """

    slots: tuple
    expected_rate: float
    top_test: OmnibusTest
    rank_test: OmnibusTest
    cochran: OmnibusTest
    friedman: OmnibusTest | None
    first_minus_last: float | None = None


@dataclass(frozen=True)
class RankingAnalysis:
    """The ranking statistics of one design for one target (``results.json``, key ``rankings``).

    Attributes
    ----------
    target, design, attribute : str
    groups : tuple of str
        The groups, in report order.
    k : int
        Candidates per matched set.
    names : {"random", "fixed"}
        The estimand; ``estimand`` says it in words.
    alpha, confidence_level : float
    margin : float or None
        Equivalence margin of the pairwise verdicts (risk-difference units).
    n_sets, n_parsed, n_ranked, n_unparsed : int
        Matched sets (answers); with a parsed top pick; with a complete
        ranking; unparsed (left out of every denominator).
    unparsed_share : float or None
        ``n_unparsed / n_sets``.
    n_templates : int
    selection : tuple of GroupSelection
    reference : str or None
        Denominator of the ratios; ``reference_rule`` ``"most selected"``
        (chosen from the data) or ``"given"``.
    ratios : tuple of RatioRow
    omnibus : OmnibusTest
        Crossed test of equal selection rates (cluster-aware).
    cochran, friedman : OmnibusTest
        Over the sets (secondary); Friedman None for k = 2.
    position : PositionEffect
    pairs : tuple of ComparisonResult
        Measures ``top_pick`` and ``ranked_above`` for every pair of groups.
    notes : tuple of str
    """

    target: str
    design: str
    attribute: str
    groups: tuple
    k: int
    names: str
    estimand: str
    alpha: float
    confidence_level: float
    margin: float | None
    n_sets: int
    n_parsed: int
    n_ranked: int
    n_unparsed: int
    unparsed_share: float | None
    n_templates: int
    selection: tuple
    reference: str | None
    reference_rule: str
    ratios: tuple
    omnibus: OmnibusTest
    cochran: OmnibusTest
    friedman: OmnibusTest | None
    position: PositionEffect
    pairs: tuple = field(default=())
    notes: tuple = field(default=())
    four_fifths: float = FOUR_FIFTHS
    ratio_rule: str = RULE_RATIO

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (NaN and infinities as None; tuples as lists) for ``results.json``."""
        return _jsonable(self)


def _jsonable(x: Any) -> Any:
    if isinstance(x, ComparisonResult):
        return x.model_dump(mode="json")
    if is_dataclass(x) and not isinstance(x, type):
        return {f: _jsonable(getattr(x, f)) for f in x.__dataclass_fields__}
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return num(x)
    return x


# ------------------------------------------------------------------ input


@dataclass(frozen=True)
class _Frame:
    sets: np.ndarray  # set label per row
    template: np.ndarray
    group: np.ndarray
    variant: np.ndarray
    slot: np.ndarray
    rank: np.ndarray
    top: np.ndarray  # NaN where the set is unparsed
    ranked: np.ndarray  # bool: the row's set has a complete ranking
    n_sets: int
    n_parsed: int
    n_ranked: int
    k: int


def _check_frame(frame: Any, groups: list[str]) -> _Frame:
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"frame must be a pandas DataFrame; got {type(frame).__name__}")
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"ranking frame lacks column(s) {missing}; required: {list(REQUIRED_COLUMNS)}")
    df = frame.reset_index(drop=True)
    if df.empty:
        raise ValueError("ranking frame has no rows")
    for col in ("case_id", "template", "group", "variant", "slot"):
        if df[col].isna().any():
            raise ValueError(f"ranking frame: column {col!r} has missing values (row {int(df[col].isna().idxmax())})")
    dup = df.duplicated(["case_id", "group"])
    if dup.any():
        row = df[dup].iloc[0]
        raise ValueError(f"ranking frame: case_id {row['case_id']!r} has two rows for group {row['group']!r}")
    per_set = df.groupby("case_id", sort=False)
    if (per_set["template"].nunique() > 1).any():
        bad = per_set["template"].nunique().pipe(lambda s: s[s > 1]).index[0]
        raise ValueError(f"ranking frame: case_id {bad!r} spans two templates")
    sizes = per_set.size()
    k = int(sizes.max())
    if (sizes != k).any():
        bad = sizes[sizes != k].index[0]
        raise ValueError(f"ranking frame: case_id {bad!r} has {int(sizes[bad])} candidates, others {k}")
    slots = df["slot"].astype(int)
    if ((slots < 1) | (slots > k)).any() or df.assign(_s=slots).duplicated(["case_id", "_s"]).any():
        raise ValueError(f"ranking frame: slots must be 1..{k}, one candidate per slot in each case_id")
    top = pd.to_numeric(df["top"], errors="coerce").to_numpy(dtype=float)
    rank = pd.to_numeric(df["rank"], errors="coerce").to_numpy(dtype=float)
    if np.any(~np.isnan(top) & (top != 0) & (top != 1)):
        raise ValueError("ranking frame: column 'top' must hold 0, 1 or NaN")
    code = df["case_id"].astype(str).to_numpy()
    uniq, inv = np.unique(code, return_inverse=True)
    nset = len(uniq)
    top_nan = np.bincount(inv, weights=np.isnan(top).astype(float), minlength=nset) > 0
    top_sum = np.bincount(inv, weights=np.nan_to_num(top), minlength=nset)
    bad = ~top_nan & (top_sum != 1)
    if bad.any():
        raise ValueError(f"ranking frame: case_id {uniq[np.argmax(bad)]!r} has {int(top_sum[np.argmax(bad)])} top "
                         "picks (a parsed set has exactly one; NaN marks an unparsed answer)")
    rank_nan = np.bincount(inv, weights=np.isnan(rank).astype(float), minlength=nset) > 0
    if np.any(~np.isnan(rank) & ((rank < 1) | (rank > k) | (rank != np.round(rank)))):
        raise ValueError(f"ranking frame: ranks must be integers 1..{k} (or NaN)")
    # complete rankings must be permutations of 1..k, with the top pick ranked first
    rsum = np.bincount(inv, weights=np.nan_to_num(rank), minlength=nset)
    rsq = np.bincount(inv, weights=np.nan_to_num(rank) ** 2, minlength=nset)
    full = ~rank_nan
    perm = (rsum == k * (k + 1) / 2) & (rsq == k * (k + 1) * (2 * k + 1) / 6)
    if np.any(full & ~perm):
        raise ValueError(f"ranking frame: case_id {uniq[np.argmax(full & ~perm)]!r} has ranks that are not a "
                         f"permutation of 1..{k}")
    ok = ~np.isnan(rank) & ~np.isnan(top)
    if np.any(ok & ((rank == 1) != (top == 1)) & full[inv]):
        raise ValueError("ranking frame: a complete ranking's first candidate must be its top pick")
    present = sorted(df["group"].astype(str).unique())
    unknown = [g for g in groups if g not in present]
    if unknown:
        raise ValueError(f"groups {unknown} are not in the frame; groups present: {present}")
    variant = (df["group"].astype(str) + "\x1f" + df["variant"].astype(str)).to_numpy()
    return _Frame(code, df["template"].astype(str).to_numpy(), df["group"].astype(str).to_numpy(), variant,
                  slots.to_numpy(), np.where(full[inv], rank, np.nan), np.where(top_nan[inv], np.nan, top),
                  full[inv], nset, int((~top_nan).sum()), int(full.sum()), k)


def _omni(res: Any, n: int | None = None) -> OmnibusTest:
    df = getattr(res, "df", getattr(res, "df_num", None))
    return OmnibusTest(res.method, num(res.statistic), num(res.pvalue), num(df), num(getattr(res, "df_den", None)),
                       n if n is not None else getattr(res, "n", None), res.note)


# ------------------------------------------------------------------ analysis


def analyze_ranking(frame: Any, *, groups: list[str] | None = None, reference: str | None = None,
                    alpha: float = 0.05, names: str = "random", margin: float | None = None,
                    confidence_level: float = 0.95, target: str | None = None, design: str = "ranking",
                    attribute: str = "group", correction: str = "holm", secondary: bool = True) -> RankingAnalysis:
    """The ranking statistics of one design for one target.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per (target, case_id, group) with columns
        :data:`REQUIRED_COLUMNS` (``slot`` 1-based, ``rank`` 1 = first or
        NaN, ``top`` 0/1 or NaN for an unparsed answer). One target (or
        name it with ``target``).
    groups : list of str, optional
        Groups to report, in this order; default all, sorted.
    reference : str, optional
        Denominator of the selection-rate ratios, fixed before the audit;
        default the most selected group (chosen from the data; the
        intervals allow for the choice).
    alpha : float, default 0.05
        In (0, 0.5): the verdicts' level.
    names : {"random", "fixed"}, default "random"
        The estimand (as ``analysis.generalize.names``).
    margin : float, optional
        Equivalence margin of the pairwise verdicts, in risk-difference
        units (top pick) and preference units (``P(A above B) - P(B above
        A)``); None: fail or inconclusive only.
    confidence_level : float, default 0.95
        Of the reported intervals.
    target : str, optional
        Which target of the frame; required when it holds several.
    design, attribute : str
        Labels of the records.
    correction : {"holm", "bh", "none"}, default "holm"
        Over the pairs of each measure, and over the groups' ratio tests.
    secondary : bool, default True
        False skips McNemar / sign tests and the evidence lists (faster).

    Returns
    -------
    RankingAnalysis
        Frozen; :meth:`RankingAnalysis.to_dict` is JSON-safe.

    Raises
    ------
    ValueError
        Missing columns, several targets without ``target``, a set with two
        rows for one group, sets of different sizes, a set over two
        templates, bad slots, ranks that are not a permutation of 1..k, a
        parsed set without exactly one top pick, unknown groups or a bad
        option.
    """
    check_choice("names", names, ("random", "fixed"))
    check_choice("correction", correction, ("holm", "bh", "none"))
    level = check_level(confidence_level)
    a = check_level(alpha, "alpha")
    if a >= 0.5:
        raise ValueError(f"alpha must be in (0, 0.5); got {alpha!r}")
    if margin is not None and not (isinstance(margin, (int, float)) and math.isfinite(margin) and margin >= 0):
        raise ValueError(f"margin must be a non-negative number or None; got {margin!r}")
    if "target" in getattr(frame, "columns", ()):
        targets = sorted(frame["target"].astype(str).unique())
        if target is None:
            if len(targets) != 1:
                raise ValueError(f"ranking frame holds {len(targets)} targets {targets[:5]}: pass target=")
            target = targets[0]
        elif target not in targets:
            raise ValueError(f"target {target!r} not in the frame; targets: {targets[:10]}")
        frame = frame[frame["target"].astype(str) == target]
    fr = _check_frame(frame, list(groups or []))
    present = sorted(set(fr.group))
    glist = list(groups) if groups else present
    if len(glist) < 2:
        raise ValueError(f"a ranking analysis needs at least two groups; got {glist}")
    if reference is not None and reference not in glist:
        raise ValueError(f"reference {reference!r} is not one of the groups {glist}")
    from fairpair.stats._crossed import cell_matrix, crossed_omnibus
    from fairpair.stats._omnibus import cochran_q, friedman
    from fairpair.stats._ranking import crossed_mean, matched_table, position_effect, ratio_to_best

    notes: list[str] = []
    n_unparsed = fr.n_sets - fr.n_parsed
    if n_unparsed:
        notes.append(f"{n_unparsed} of {fr.n_sets} answers ({n_unparsed / fr.n_sets:.1%}) could not be parsed into a "
                     "top pick: left out of every denominator")
    if fr.n_parsed - fr.n_ranked:
        notes.append(f"{fr.n_parsed - fr.n_ranked} answers give a top pick but no complete ranking: left out of the "
                     "rank statistics (mean rank, Friedman, ranked-above)")
    if set(glist) != set(present):
        notes.append(f"groups reported: {glist}; the sets also hold {sorted(set(present) - set(glist))}")
    parsed = ~np.isnan(fr.top)
    sel_rows = []
    cells_top = []
    n_templates = int(np.unique(fr.template[parsed]).size)
    for g in glist:
        m = fr.group == g
        mp = m & parsed
        rr = crossed_mean(fr.top[mp], fr.template[mp], fr.variant[mp], names=names)
        mk = m & fr.ranked
        mr = crossed_mean(fr.rank[mk], fr.template[mk], fr.variant[mk], names=names)
        sel_rows.append(GroupSelection(g, int(mp.sum()), int(mk.sum()), int(np.unique(fr.variant[m]).size),
                                       num(rr.estimate), interval(rr.confidence_interval(level, bounds=(0.0, 1.0))),
                                       num(rr.se), num(rr.df), num(mr.estimate),
                                       interval(mr.confidence_interval(level, bounds=(1.0, float(fr.k)))),
                                       rr.note))
        cells_top.append(cell_matrix(np.where(mp, fr.top, np.nan), fr.template, fr.variant)[0][:, np.unique(
            np.unique(fr.variant, return_inverse=True)[1][m])])
    # ratios to the most selected group
    rows_g = np.isin(fr.group, glist) & parsed
    ratios = ratio_to_best(fr.top[rows_g], fr.template[rows_g], fr.variant[rows_g], fr.group[rows_g],
                           reference=reference, names=names, confidence_level=level)
    best = ratios[0].reference if ratios else None
    order = {g: i for i, g in enumerate(glist)}
    ratios = sorted(ratios, key=lambda r: order[str(r.group)])
    nn = {s.group: s.n_names for s in sel_rows}
    pb = np.array([np.nan if (reference is not None and str(r.group) == reference) else r.pvalue_below
                   for r in ratios])
    pb_adj = adjust(pb, correction) if pb.size else pb
    ratio_rows = []
    for r, p, padj in zip(ratios, pb, pb_adj):
        g = str(r.group)
        is_ref = reference is not None and g == reference
        reason = None if is_ref else design_reason_counts(
            n_templates=n_templates, n_names_a=nn[g], n_names_b=nn[str(best)], names=names, group_a=g,
            group_b=str(best))
        if is_ref:
            verdict = None
        elif reason:
            verdict = "insufficient design"
        elif np.isfinite(padj) and padj < a:
            verdict = "fail"
        elif np.isfinite(r.lower_one_sided) and r.lower_one_sided > FOUR_FIFTHS:
            verdict = "pass"
        else:
            verdict = "inconclusive"
        ratio_rows.append(RatioRow(g, str(best), num(r.rate), num(r.ratio), interval(r.ci), num(r.lower_one_sided),
                                   None if num(r.ratio) is None else bool(r.ratio < FOUR_FIFTHS), num(p), num(padj),
                                   verdict, reason, r.note))
    # omnibus over groups
    omni = crossed_omnibus(cells_top, names=names)
    table, _s, _c = matched_table(fr.top[rows_g], fr.sets[rows_g], fr.group[rows_g])
    cq = cochran_q(table)
    fri = None
    if len(glist) >= 3:
        rk = np.isin(fr.group, glist) & fr.ranked
        rtable, _s, _c = matched_table(fr.rank[rk], fr.sets[rk], fr.group[rk])
        fri = _omni(friedman(rtable))
    # position effect
    pe = position_effect(fr.top[parsed], fr.rank[parsed], fr.template[parsed], fr.slot[parsed], fr.sets[parsed])
    slot_rows = tuple(SlotRow(s.slot, s.n, num(s.top_rate.estimate),
                              interval(s.top_rate.confidence_interval(level, bounds=(0.0, 1.0))),
                              num(s.mean_rank.estimate),
                              interval(s.mean_rank.confidence_interval(level, bounds=(1.0, float(fr.k)))))
                      for s in pe.slots)
    fml = (num(slot_rows[0].top_rate - slot_rows[-1].top_rate)
           if len(slot_rows) >= 2 and slot_rows[0].top_rate is not None and slot_rows[-1].top_rate is not None
           else None)
    position = PositionEffect(slot_rows, 1.0 / fr.k, _omni(pe.top_test), _omni(pe.rank_test), _omni(pe.cochran),
                              _omni(pe.friedman) if pe.friedman is not None else None, fml)
    pairs = _pairs(fr, glist, names=names, alpha=a, level=level, margin=margin, correction=correction,
                   target=target or "", design=design, attribute=attribute, secondary=secondary)
    return RankingAnalysis(
        target=target or "", design=design, attribute=attribute, groups=tuple(glist), k=fr.k, names=names,
        estimand=estimand_words(names), alpha=a, confidence_level=level, margin=margin, n_sets=fr.n_sets,
        n_parsed=fr.n_parsed, n_ranked=fr.n_ranked, n_unparsed=n_unparsed,
        unparsed_share=num(n_unparsed / fr.n_sets) if fr.n_sets else None, n_templates=n_templates,
        selection=tuple(sel_rows), reference=None if best is None else str(best),
        reference_rule="given" if reference is not None else "most selected", ratios=tuple(ratio_rows),
        omnibus=_omni(omni, fr.n_parsed), cochran=_omni(cq), friedman=fri, position=position, pairs=tuple(pairs),
        notes=tuple(notes))


def _pair_data(fr: _Frame, ga: str, gb: str, measure: str) -> PairData:
    """One row per matched set holding both groups: x, y the measure for A and B (NaN when unparsed)."""
    ia = np.nonzero(fr.group == ga)[0]
    ib = np.nonzero(fr.group == gb)[0]
    pos_b = {s: i for s, i in zip(fr.sets[ib], ib)}
    ia = np.array([i for i in ia if fr.sets[i] in pos_b], dtype=int)
    ib = np.array([pos_b[fr.sets[i]] for i in ia], dtype=int)
    if measure == "top_pick":
        x, y = fr.top[ia], fr.top[ib]
    else:
        ra, rb = fr.rank[ia], fr.rank[ib]
        ok = ~(np.isnan(ra) | np.isnan(rb))
        above = np.where(ok, (ra < rb).astype(float), np.nan)
        x, y = above, np.where(ok, 1.0 - above, np.nan)
    _u, vcodes = np.unique(fr.variant, return_inverse=True)
    pair_lab = np.char.add(np.char.add(fr.variant[ia].astype(str), " / "), fr.variant[ib].astype(str))
    lab, pcodes = np.unique(pair_lab, return_inverse=True) if ia.size else (np.array([]), np.zeros(0, int))
    return PairData(x=x, y=y, clusters=fr.template[ia], variants=pcodes.astype(np.intp),
                    variant_labels=tuple(str(v).replace("\x1f", ":") for v in lab),
                    sets=fr.sets[ia].astype(object), case_a=fr.sets[ia].astype(object),
                    case_b=fr.sets[ib].astype(object), name_a=vcodes[ia].astype(np.intp),
                    name_b=vcodes[ib].astype(np.intp))


def _pairs(fr: _Frame, glist: list[str], *, names: str, alpha: float, level: float, margin: float | None,
           correction: str, target: str, design: str, attribute: str, secondary: bool) -> list[ComparisonResult]:
    out: list[ComparisonResult] = []
    for measure in RANKING_MEASURES:
        pending = []
        for ga, gb in combinations(glist, 2):
            pd = _pair_data(fr, ga, gb, measure)
            pa = analyze_pairs(pd, scale="binary", alpha=alpha, confidence_level=level, exact_threshold=25,
                               n_resamples=0, seed=0, heterogeneity=False, names=names, secondary=secondary,
                               labels=(ga, gb))
            if measure == "ranked_above":
                pa.fields["estimate_name"] = "P(A ranked above B) - P(B ranked above A)"
                pa.fields["value_kind"] = "rate"
            pending.append((pa, dict(id=f"{measure}:{ga}-vs-{gb}", target=target, measure=measure,
                                     attribute=attribute, design=design, group_a=ga, group_b=gb, primary=True)))
        raw = np.array([np.nan if p.pvalue is None else p.pvalue for p, _ in pending])
        raw_m = np.array([np.nan if (q := p.pvalue_beyond(margin)) is None else q for p, _ in pending])
        adj = adjust(raw, correction) if raw.size else raw
        adj_m = adjust(raw_m, correction) if raw_m.size else raw_m
        for (pa, ident), p_adj, pm_adj in zip(pending, adj, adj_m):
            out.append(finish(pa, pvalue_adjusted=num(p_adj), margin=margin, alpha=alpha,
                              pvalue_margin_adjusted=num(pm_adj),
                              correction=f"{correction} (the pairs of {ident['measure']})",
                              family_size=len(pending), **ident))
    return out

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
  random) on the top pick, with templates fixed the stratified Hotelling F, with Cochran's Q (top
  pick) and Friedman (ranks) over the matched sets as secondary tests (they treat sets as
  independent);
* every pair of groups, twice: the top-pick risk difference (``top_A -
  top_B``) and the preference ``P(A above B) - P(B above A)`` (per set,
  ``1[rank_A < rank_B] - 1[rank_B < rank_A]``), each a
  :class:`~fairpair.analysis.ComparisonResult` with the verdict rule of
  every other comparison (:mod:`fairpair.analysis._verdict`): the crossed t
  of the per-set difference (:func:`fairpair.stats.paired_difference`,
  templates and name sets random, the name component never pooled),
  McNemar's test (for the preference the sign test) as a secondary
  statistic, Holm over the pairs of each measure;
* the position effect: top-pick rate and mean rank by slot with intervals
  and the F test of equal slots (templates random or fixed, as the rates);
* the unparsed answers, counted: left out of every denominator, and said so.

Names random: a name that recurs over requests in different company (names
drawn per request from a short list) is a random effect shared by those
requests; every interval above adds the covariance of the sets that share a
name, or uses the multiway cluster-robust variance over templates and names
when the name sets are not crossed with the templates
(:mod:`fairpair.stats._sharednames`; Cameron, Gelbach & Miller 2011).

Calibration: ``benchmarks/sim_ranking.py`` (Plackett-Luce audits with
group, slot, template and name effects and nested repetitions); figures in
``benchmarks/HISTORY.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from fairpair.analysis._design import RANKING_WORDS, design_reason, design_reason_counts, estimand_words
from fairpair.analysis._paired import PairAnalysis, PairData, finish
from fairpair.records import (
    ComparisonResult,
    RankingNameRate,
    RankingPosition,
    RankingRatio,
    RankingResult,
    RankingSelection,
    RankingSlot,
    RankingTemplateCounts,
    RankingTest,
    interval,
    num,
)
from fairpair.stats import CrossedDifferenceResult, CrossedMeanResult, adjust
from fairpair.stats._common import check_choice, check_level
from fairpair.stats._ranking import with_shared_names
from fairpair.stats._sharednames import NameClusters, name_clusters

__all__ = ["analyze_ranking", "RankingAnalysis", "MIN_NAME_SETS", "SetDifferences", "set_differences",
           "REQUIRED_COLUMNS", "RANKING_MEASURES", "FOUR_FIFTHS"]

REQUIRED_COLUMNS = ("target", "case_id", "template", "repetition", "group", "variant", "slot", "rank", "top")
#: The two pairwise measures and their ``ComparisonResult.measure`` names.
RANKING_MEASURES = ("top_pick", "ranked_above")
FOUR_FIFTHS = 0.8
RULE_RATIO = ("fail: Holm-adjusted p-value of ratio >= 0.8 below alpha (the (1-alpha) interval lies below 0.8); "
              "pass: the one-sided (1-alpha) lower limit is above 0.8; else inconclusive")


#: A name's own top-pick rate is reported only when its candidate was in at least this many parsed answers.
MIN_NAME_SETS = 30
#: The record :func:`analyze_ranking` returns: :class:`fairpair.records.RankingResult`, the type a
#: run's ``results.json`` section is read back as (one type, two names).
RankingAnalysis = RankingResult


# ------------------------------------------------------------------ input


@dataclass(frozen=True)
class _Frame:
    sets: np.ndarray  # set code per row (int)
    set_labels: np.ndarray  # case_id of each set code
    template: np.ndarray  # template code per row (int)
    template_labels: np.ndarray
    group: np.ndarray  # group label per row (str)
    variant: np.ndarray  # name code per row (int; names are "group:variant")
    variant_labels: np.ndarray
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
    code = df["case_id"].astype(str).to_numpy(dtype=str)
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
    variant = (df["group"].astype(str) + ":" + df["variant"].astype(str)).to_numpy(dtype=str)
    vlab, vcode = np.unique(variant, return_inverse=True)
    tlab, tcode = np.unique(df["template"].astype(str).to_numpy(dtype=str), return_inverse=True)
    return _Frame(inv.astype(np.intp), uniq, tcode.astype(np.intp), tlab, df["group"].astype(str).to_numpy(dtype=str),
                  vcode.astype(np.intp), vlab, slots.to_numpy(), np.where(full[inv], rank, np.nan),
                  np.where(top_nan[inv], np.nan, top), full[inv], nset, int((~top_nan).sum()), int(full.sum()), k)


def _omni(res: Any, n: int | None = None) -> RankingTest:
    df = getattr(res, "df", getattr(res, "df_num", None))
    return RankingTest(test=res.method, statistic=num(res.statistic), pvalue=num(res.pvalue), df=num(df),
                       df_denominator=num(getattr(res, "df_den", None)),
                       n=n if n is not None else getattr(res, "n", None), note=res.note)


# ------------------------------------------------------------------ analysis


def analyze_ranking(frame: Any, *, groups: list[str] | None = None, reference: str | None = None,
                    alpha: float = 0.05, names: str = "random", margin: float | None = None,
                    confidence_level: float = 0.95, target: str | None = None, design: str = "ranking",
                    attribute: str = "group", correction: str = "holm", secondary: bool = True,
                    templates: str = "random") -> RankingAnalysis:
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
        The estimand (as ``analysis.generalize.names``). Random: a group's
        name shared by sets with other names counts as a random effect
        (:mod:`fairpair.stats._sharednames`), templates random or fixed, in
        the rates, ratios, pairs and the test over all groups
        (:func:`fairpair.stats.set_k_test`); the position effect's statistics
        need no such term (:func:`fairpair.stats.position_effect`).
    templates : {"random", "fixed"}, default "random"
        As ``analysis.generalize.templates``: ``"fixed"`` makes the verdicts
        a claim about these postings (templates), name sets random, so one
        posting gives verdicts: the pairwise ones from
        :func:`fairpair.stats.stratified_difference`, the selection rates
        and mean ranks from :func:`fairpair.stats.set_mean` and the
        four-fifths ratios from the stratified ratio of
        :func:`fairpair.stats.ratio_to_best` (the Mantel-Haenszel risk
        ratio for equal requests per posting, with the matched-pairs delta
        variance; level and coverage in ``benchmarks/sim_ranking_fixed.py``),
        and the position effect and the tests over all groups from
        :func:`fairpair.stats.set_k_test` (a stratified Hotelling F).
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
        That is :class:`fairpair.records.RankingResult` (frozen), the record a run's ``results.json``
        section is read back as; :meth:`~fairpair.records.RankingResult.to_dict` is JSON-safe.

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
    check_choice("templates", templates, ("random", "fixed"))
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
    present = sorted(str(g) for g in set(fr.group))
    glist = list(groups) if groups else present
    if len(glist) < 2:
        raise ValueError(f"a ranking analysis needs at least two groups; got {glist}")
    if reference is not None and reference not in glist:
        raise ValueError(f"reference {reference!r} is not one of the groups {glist}")
    from fairpair.stats import cochran_q, friedman, position_effect, ratio_to_best, set_k_test, set_mean, verdict_alphas

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
    tb = _tables(fr, glist)
    parsed = tb.parsed
    # names random: a name recurring in sets with other names is a random factor too (stats._sharednames)
    nc = name_clusters(tb.template, tb.names)
    nm = nc
    if len(present) > fr.k:
        notes.append(f"each prompt holds {fr.k} of the {len(present)} groups: rates are over the answers whose "
                     "prompt holds the group; the tests over complete sets (Cochran's Q, Friedman, the crossed "
                     "test of equal rates) need every group in every prompt and are not computed")
    n_templates = int(np.unique(tb.template[parsed]).size)
    n_namesets = int(np.unique(tb.nameset[parsed]).size)
    sel_rows = []
    for j, g in enumerate(glist):
        rr = set_mean(tb.top[:, j], tb.template, nm, names=names, templates=templates)
        mr = set_mean(tb.rank[:, j], tb.template, nm, names=names, templates=templates)
        sel_rows.append(RankingSelection(
            group=str(g), n_sets=int((~np.isnan(tb.top[:, j])).sum()), n_ranked=int((~np.isnan(tb.rank[:, j])).sum()),
            n_names=int(tb.n_names[j]), rate=num(rr.estimate),
            rate_ci=interval(rr.confidence_interval(level, bounds=(0.0, 1.0))), se=num(rr.se), df=num(rr.df),
            mean_rank=num(mr.estimate), mean_rank_ci=interval(mr.confidence_interval(level, bounds=(1.0, float(fr.k)))),
            note=rr.note, n_top=int(np.nansum(tb.top[:, j]))))
    # ratios to the most selected group (four-fifths rule)
    ratios = ratio_to_best(tb.top, tb.template, nm, labels=glist, reference=reference, names=names,
                           confidence_level=level, templates=templates)
    best = str(ratios[0].reference)
    pb = np.array([np.nan if (reference is not None and str(r.group) == reference) else r.pvalue_below
                   for r in ratios])
    pb_adj = adjust(pb, correction)
    # the interval shown beside each verdict (the (1 - alpha) interval `ci` alone can, and did, contradict it):
    # from the pass rule's one-sided lower limit to the upper limit at the level of the group's step in the
    # correction, so it lies wholly above 0.8 exactly when pass and wholly below exactly when fail
    alphas = verdict_alphas(pb, a, correction)
    # templates fixed: the name sets are the random units whatever names says (as for the pairs)
    reason_all = design_reason_counts(n_templates=n_templates, n_names_a=n_namesets, n_names_b=n_namesets,
                                      names="random" if templates == "fixed" else names, n_pairs=int(parsed.sum()),
                                      group_a="each", group_b="each", templates=templates)
    reason_all = reason_all.replace("group each", "each group") if reason_all else None
    ratio_rows = []
    for r, p, padj, a_i in zip(ratios, pb, pb_adj, alphas, strict=True):
        g = str(r.group)
        high = r.confidence_interval(1.0 - float(a_i)).high if np.isfinite(a_i) else float("nan")
        is_ref = reference is not None and g == reference
        if is_ref:
            verdict = None
        elif reason_all:
            verdict = "insufficient design"
        elif np.isfinite(padj) and padj < a:
            verdict = "fail"
        elif np.isfinite(r.lower_one_sided) and r.lower_one_sided > FOUR_FIFTHS:
            verdict = "pass"
        else:
            verdict = "inconclusive"
        ratio_rows.append(RankingRatio(
            group=g, reference=best, rate=num(r.rate), ratio=num(r.ratio), ci=interval(r.ci),
            lower_one_sided=num(r.lower_one_sided),
            below_four_fifths=None if num(r.ratio) is None else bool(r.ratio < FOUR_FIFTHS), pvalue_below=num(p),
            pvalue_adjusted=num(padj), verdict=verdict, design_reason=None if is_ref else reason_all, note=r.note,
            verdict_ci=interval((r.lower_one_sided, high)),
            verdict_upper_level=num(1.0 - float(a_i)) if np.isfinite(a_i) else None))
    # across groups: crossed (primary) and over the sets (secondary)
    omni = set_k_test(tb.top, tb.template, nc, names=names, templates=templates)
    cq = cochran_q(tb.top)
    fri = _omni(friedman(tb.rank)) if len(glist) >= 3 and (~np.isnan(tb.rank).any(axis=1)).any() else None
    # position effect
    pe = position_effect(tb.slot_top, tb.slot_rank, tb.template, nc, names=names, templates=templates)
    level_b = (1.0, float(fr.k))
    slot_rows = [RankingSlot(slot=s.slot, n=s.n, top_rate=num(s.top_rate.estimate),
                             top_rate_ci=interval(s.top_rate.confidence_interval(level, bounds=(0.0, 1.0))),
                             mean_rank=num(s.mean_rank.estimate),
                             mean_rank_ci=interval(s.mean_rank.confidence_interval(level, bounds=level_b)))
                 for s in pe.slots]
    fml = (num(slot_rows[0].top_rate - slot_rows[-1].top_rate)
           if slot_rows[0].top_rate is not None and slot_rows[-1].top_rate is not None else None)
    position = RankingPosition(slots=slot_rows, expected_rate=1.0 / fr.k,
                               top_test=_omni(pe.top_test, int(parsed.sum())), rank_test=_omni(pe.rank_test),
                               cochran=_omni(pe.cochran),
                               friedman=_omni(pe.friedman) if pe.friedman is not None else None, first_minus_last=fml)
    names_table, names_test = _names(fr, glist, notes)
    pairs = _pairs(tb, glist, names=names, alpha=a, level=level, margin=margin, correction=correction,
                   target=target or "", design=design, attribute=attribute, secondary=secondary, templates=templates,
                   clusters=nc)
    return RankingResult(
        target=target or "", design=design, attribute=attribute, groups=tuple(glist), k=fr.k, names=names,
        estimand=estimand_words(names, templates), alpha=a, confidence_level=level, margin=margin, n_sets=fr.n_sets,
        n_parsed=fr.n_parsed, n_ranked=fr.n_ranked, n_unparsed=n_unparsed,
        unparsed_share=num(n_unparsed / fr.n_sets) if fr.n_sets else None, n_templates=n_templates,
        selection=sel_rows, reference=best,
        reference_rule="given" if reference is not None else "most selected", ratios=ratio_rows,
        omnibus=_omni(omni, int(parsed.sum())), cochran=_omni(cq), friedman=fri, position=position,
        pairs=pairs, notes=notes, by_template=_by_template(tb, fr, glist),
        names_table=names_table, names_test=names_test, min_name_sets=MIN_NAME_SETS, four_fifths=FOUR_FIFTHS,
        ratio_rule=RULE_RATIO, correction=correction, templates=templates)


def _names(fr: _Frame, glist: list[str], notes: list[str]) -> tuple[list[RankingNameRate], RankingTest | None]:
    """Per-name top-pick rates (names in >= MIN_NAME_SETS parsed answers) and the chi-square of names within groups."""
    from scipy import stats as sps

    ok = ~np.isnan(fr.top)
    n = np.bincount(fr.variant[ok], minlength=len(fr.variant_labels))
    top = np.bincount(fr.variant[ok], weights=fr.top[ok], minlength=len(fr.variant_labels))
    rows, few = [], 0
    by_group: dict[str, list[tuple[int, int]]] = {}
    for v, label in enumerate(fr.variant_labels):
        group, _, name = str(label).partition(":")
        if group not in glist or n[v] == 0:
            continue
        if n[v] < MIN_NAME_SETS:
            few += 1
            continue
        rows.append(RankingNameRate(group=group, name=name, n_sets=int(n[v]), n_top=int(top[v]),
                                    rate=num(top[v] / n[v])))
        by_group.setdefault(group, []).append((int(top[v]), int(n[v] - top[v])))
    if few:
        notes.append(f"{few} name(s) were in fewer than {MIN_NAME_SETS} parsed answers: no per-name rate")
    rows.sort(key=lambda r: (glist.index(r.group), r.name))
    chi, df = 0.0, 0
    for cells in by_group.values():
        table = np.array(cells, dtype=float)
        if len(cells) >= 2 and table.sum(axis=0).min() > 0:
            chi += float(sps.chi2_contingency(table, correction=False)[0])
            df += len(cells) - 1
    test = None
    if df:
        test = RankingTest(test="Pearson chi-square of the names within each group (top pick), summed over groups",
                           statistic=num(chi), pvalue=num(float(sps.chi2.sf(chi, df))), df=float(df),
                           df_denominator=None, n=int(ok.sum()), note="treats the answers as independent")
    return rows, test


def _by_template(tb: _Tables, fr: _Frame, glist: list[str]) -> list[RankingTemplateCounts]:
    out = []
    for t, label in enumerate(fr.template_labels):
        rows = tb.template == t
        parsed = rows & tb.parsed
        counts = np.nansum(tb.top[parsed], axis=0) if parsed.any() else np.zeros(len(glist))
        best = float(counts.max()) if counts.size else 0.0
        out.append(RankingTemplateCounts(
            template=str(label), n_sets=int(rows.sum()), n_parsed=int(parsed.sum()),
            top={g: int(c) for g, c in zip(glist, counts, strict=True)},
            ratios={g: (num(float(c) / best) if best > 0 else None) for g, c in zip(glist, counts, strict=True)}))
    return out


@dataclass(frozen=True)
class _Tables:
    """One row per matched set: the k groups' (and slots') top picks and ranks, template and name set."""

    sets: np.ndarray  # case_id per row
    template: np.ndarray  # template code
    nameset: np.ndarray  # code of the set's names (one variant per group)
    names: np.ndarray  # (n_sets, all groups) name code of each group's candidate, -1 where absent
    top: np.ndarray  # (n_sets, k) by group, glist order; NaN rows unparsed
    rank: np.ndarray  # (n_sets, k) by group; NaN rows without a complete ranking
    slot_top: np.ndarray  # (n_sets, k) by slot (column j = slot j + 1)
    slot_rank: np.ndarray
    n_names: np.ndarray  # names per group (glist order)
    parsed: np.ndarray  # bool per set: the answer gave a top pick


def _tables(fr: _Frame, glist: list[str]) -> _Tables:
    n, k = fr.n_sets, fr.k
    gcode = {g: j for j, g in enumerate(sorted(set(fr.group)))}
    ng = len(gcode)  # > k when each prompt holds k of the groups (``candidates: k``): absent groups are NaN
    col = np.array([gcode[g] for g in fr.group], dtype=np.intp)
    top = np.full((n, ng), np.nan)
    rank = np.full((n, ng), np.nan)
    name = np.full((n, ng), -1, dtype=np.intp)
    top[fr.sets, col] = fr.top
    rank[fr.sets, col] = fr.rank
    name[fr.sets, col] = fr.variant
    slot_top = np.full((n, k), np.nan)
    slot_rank = np.full((n, k), np.nan)
    slot_top[fr.sets, fr.slot - 1] = fr.top
    slot_rank[fr.sets, fr.slot - 1] = fr.rank
    template = np.zeros(n, dtype=np.intp)
    template[fr.sets] = fr.template
    _u, nameset = np.unique(name, axis=0, return_inverse=True)
    cols = [gcode[g] for g in glist]
    n_names = np.array([np.unique(name[:, c][name[:, c] >= 0]).size for c in cols])
    parsed = np.zeros(n, dtype=bool)
    parsed[fr.sets] = ~np.isnan(fr.top)
    return _Tables(fr.set_labels, template, nameset.reshape(-1).astype(np.intp), name, top[:, cols], rank[:, cols],
                   slot_top, slot_rank, n_names, parsed)


def _pair_xy(tb: _Tables, ja: int, jb: int, measure: str) -> tuple[np.ndarray, np.ndarray]:
    """Per matched set, the two values whose difference a pair of groups is judged on (NaN: left out).

    ``top_pick``: the top-pick indicators of A and B; ``ranked_above``:
    ``1[rank_A < rank_B]`` and its complement (NaN without a complete ranking).
    """
    if measure == "top_pick":
        return tb.top[:, ja], tb.top[:, jb]
    ra, rb = tb.rank[:, ja], tb.rank[:, jb]
    ok = ~(np.isnan(ra) | np.isnan(rb))
    x = np.where(ok, (ra < rb).astype(float), np.nan)
    return x, np.where(ok, 1.0 - x, np.nan)


@dataclass(frozen=True)
class SetDifferences:
    """One pair of groups on one pairwise ranking measure, per matched set (one answer = one set).

    ``case_ids`` and ``templates`` (n,) name each set; ``difference`` (n,)
    is ``top_A - top_B`` in {-1, 0, 1} (``top_pick``) or ``1[A above B] -
    1[B above A]`` in {-1, 1} (``ranked_above``), NaN where the answer was
    not parsed (or, for ``ranked_above``, gave no complete ranking) or the
    prompt did not hold both groups. Its mean is the (unweighted) version
    of the pair's estimate; :func:`fairpair.analysis.compare_runs` pairs it
    set by set between two runs.
    """

    measure: str
    group_a: str
    group_b: str
    case_ids: np.ndarray
    templates: np.ndarray
    difference: np.ndarray


def set_differences(frame: Any, groups: list[str]) -> list[SetDifferences]:
    """Every pair of ``groups`` (in order) on both :data:`RANKING_MEASURES`, per matched set.

    ``frame`` as for :func:`analyze_ranking`, one target. Raises
    ``ValueError`` as :func:`analyze_ranking` does for a malformed frame.
    """
    fr = _check_frame(frame, list(groups))
    tb = _tables(fr, list(groups))
    templates = fr.template_labels[tb.template]
    return [SetDifferences(m, ga, gb, tb.sets, templates, x - y)
            for m in RANKING_MEASURES
            for (ja, ga), (jb, gb) in combinations(list(enumerate(groups)), 2)
            for x, y in [_pair_xy(tb, ja, jb, m)]]


def _pair_analysis(tb: _Tables, ja: int, jb: int, ga: str, gb: str, measure: str, *, names: str, alpha: float,
                   level: float, secondary: bool, templates: str = "random",
                   clusters: NameClusters | None = None) -> PairAnalysis:
    """One pair of groups on one measure: the per-set difference's crossed t, the verdict inputs, McNemar."""
    from fairpair.analysis._paired import CI_METHOD, _secondary, crossed_verdict_inputs
    from fairpair.stats import paired_difference

    x, y = _pair_xy(tb, ja, jb, measure)
    est_name = ("risk difference of the top pick (A - B)" if measure == "top_pick" else
                "P(A ranked above B) - P(B ranked above A)")
    keep = ~(np.isnan(x) | np.isnan(y))
    n = int(keep.sum())
    notes: list[str] = []
    # No "sometimes pool" of the name component here (pool=None): with it, the family-wise false fail over the
    # 6 pairs of 4 groups was 6-7% (the t's tail at alpha/6 held 1.1% instead of 0.83%); without, 3%
    # (benchmarks/sim_ranking.py, benchmarks/HISTORY.md).
    cm: CrossedDifferenceResult | CrossedMeanResult
    if templates == "fixed":  # a claim about these postings: their per-set differences, stratified
        from fairpair.stats import stratified_difference

        cm = with_shared_names(stratified_difference(x, y, tb.template), x - y, clusters, names=names,
                               templates="fixed")
    else:
        cm = paired_difference(x, y, tb.template, clusters if clusters is not None else tb.nameset, names=names,
                               pool=None)
    n_names = int(np.unique(tb.nameset[keep]).size)
    f: dict[str, Any] = {
        "n_pairs": n, "n_dropped": int(keep.size - n), "scale": "binary", "value_kind": "rate",
        "estimate_name": est_name, "confidence_level": level, "n_resamples": 0, "seed": 0,
        "ci_method": CI_METHOD.replace("template x name cell means", "template x name-set means of the per-set "
                                       "difference"),
        "alpha": alpha, "names": names, "estimand": estimand_words(names, templates), "n_clusters": cm.n_templates,
        "n_names_a": n_names, "n_names_b": n_names, "df": num(cm.df), "se": num(cm.se),
        "variance_components": {k: num(v) for k, v in cm.variance_components.items()},
        "templates": templates,
        "test": (f"crossed t on the per-set difference (templates random, names {names}; Satterthwaite df)"
                 if templates != "fixed" else "stratified t on the per-set difference (templates fixed, name "
                 "sets random; Welch-Satterthwaite df)"),
        "statistic": num(cm.estimate / cm.se) if cm.se and math.isfinite(cm.se) and cm.se > 0 else None,
    }
    if f["n_dropped"]:
        notes.append(f"{f['n_dropped']} matched sets without a parsed answer for both candidates are left out")
    reason = design_reason(cm, names="random" if templates == "fixed" else names, n_pairs=n,
                           constant=bool(n) and bool(np.all(x[keep] == y[keep])), group_a=ga, group_b=gb,
                           n_names=(n_names, n_names), templates=templates, words=RANKING_WORDS)
    f["design_reason"] = reason
    if n == 0:
        f.update(value_a=None, value_b=None, estimate=None, ci=None, equivalence_ci=None,
                 note="; ".join(notes + ["no parsed answers"]))
        return PairAnalysis(f, None, None, None)
    f["value_a"], f["value_b"] = num(crossed_mean_of(x, tb, clusters)), num(crossed_mean_of(y, tb, clusters))
    if "shared names" in cm.variance_components:
        f["ci_method"] += "; plus the covariance of sets that share a name (multiway cluster-robust)"
    ci_a, ci_eq, pvalue = crossed_verdict_inputs(f, cm, reason=reason, alpha=alpha, confidence_level=level,
                                                 bounds=(-1.0, 1.0), notes=notes)
    if secondary and n:
        pdata = PairData(x=x, y=y, clusters=tb.template, variants=np.zeros(x.size, dtype=np.intp),
                         sets=tb.sets.astype(object), case_a=tb.sets.astype(object), case_b=tb.sets.astype(object))
        _secondary(f, pdata, keep, x[keep], y[keep], True, 25, level, notes)
        if measure == "ranked_above" and f.get("binary") is not None:
            notes.append("McNemar on 'A above B' vs 'B above A' is the sign test of the preference")
    f["note"] = "; ".join(dict.fromkeys(notes)) or None
    return PairAnalysis(f, ci_a, ci_eq, pvalue)


def crossed_mean_of(v: np.ndarray, tb: _Tables, clusters: NameClusters | None = None) -> float:
    """The crossed mean (mean over templates of name-set cell means) of a per-set value; the mean of the template
    means when ``clusters`` says the name sets are not crossed with the templates."""
    from fairpair.stats import set_mean

    return set_mean(v, tb.template, clusters if clusters is not None else tb.nameset, names="fixed").estimate


def _pairs(tb: _Tables, glist: list[str], *, names: str, alpha: float, level: float, margin: float | None,
           correction: str, target: str, design: str, attribute: str, secondary: bool,
           templates: str = "random", clusters: NameClusters | None = None) -> list[ComparisonResult]:
    out: list[ComparisonResult] = []
    for measure in RANKING_MEASURES:
        pending: list[tuple[PairAnalysis, dict[str, Any]]] = []
        for (ja, ga), (jb, gb) in combinations(list(enumerate(glist)), 2):
            pa = _pair_analysis(tb, ja, jb, ga, gb, measure, names=names, alpha=alpha, level=level,
                                secondary=secondary, templates=templates, clusters=clusters)
            pending.append((pa, dict(id=f"{measure}:{ga}-vs-{gb}", target=target, measure=measure,
                                     attribute=attribute, design=design, group_a=ga, group_b=gb, primary=True)))
        raw = np.array([np.nan if p.pvalue is None else p.pvalue for p, _ in pending])
        raw_m = np.array([np.nan if (q := p.pvalue_beyond(margin)) is None else q for p, _ in pending])
        adj = adjust(raw, correction) if raw.size else raw
        adj_m = adjust(raw_m, correction) if raw_m.size else raw_m
        for (pa, ident), p_adj, pm_adj in zip(pending, adj, adj_m, strict=True):
            out.append(finish(pa, pvalue_adjusted=num(p_adj), margin=margin, alpha=alpha,
                              pvalue_margin_adjusted=num(pm_adj),
                              correction=f"{correction} (the pairs of {ident['measure']})",
                              family_size=len(pending), **ident))
    return out

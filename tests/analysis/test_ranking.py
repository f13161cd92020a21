"""analyze_ranking on simulated ranking audits: checked against scipy / statsmodels and hand tables."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import cochrans_q
from statsmodels.stats.multitest import multipletests

from fairpair.analysis import RankingAnalysis, analyze_ranking
from fairpair.analysis._simranking import RankingScenario, run_scenario, simulate_ranking_frame, true_values

BIAS = RankingScenario(group_worth=(1.5, 0.0, 0.0, 0.0), slot_worth=(0.6, 0.2, 0.0, 0.0), templates=12, reps=4, names=8,
                       sd_name=0.2, sd_template_group=0.2, sd_template_name=0.2)


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return simulate_ranking_frame(BIAS, np.random.default_rng(3))


@pytest.fixture(scope="module")
def result(frame) -> RankingAnalysis:
    return analyze_ranking(frame)


def _wide(frame, col):
    return frame.pivot(index="case_id", columns="group", values=col).sort_index()


def test_cochran_and_friedman_match_statsmodels_and_scipy(frame, result):
    top = _wide(frame, "top")
    ref = cochrans_q(top.to_numpy())
    assert result.cochran.statistic == pytest.approx(ref.statistic)
    assert result.cochran.pvalue == pytest.approx(ref.pvalue)
    fr = stats.friedmanchisquare(*_wide(frame, "rank").to_numpy().T)
    assert result.friedman.statistic == pytest.approx(fr.statistic)
    assert result.friedman.pvalue == pytest.approx(fr.pvalue)


def test_selection_rates_and_mean_ranks_are_the_shares(frame, result):
    top, rank = _wide(frame, "top"), _wide(frame, "rank")
    for s in result.selection:
        assert s.rate == pytest.approx(top[s.group].mean())  # balanced design: crossed mean = share of sets
        assert s.mean_rank == pytest.approx(rank[s.group].mean())
        assert s.rate_ci[0] < s.rate < s.rate_ci[1] and s.n_sets == len(top) and s.n_names == BIAS.names
    assert sum(s.rate for s in result.selection) == pytest.approx(1.0)


def test_pairs_sign_test_mcnemar_and_holm(frame, result):
    top, rank = _wide(frame, "top"), _wide(frame, "rank")
    above = [c for c in result.pairs if c.measure == "ranked_above"]
    tops = [c for c in result.pairs if c.measure == "top_pick"]
    assert len(above) == len(tops) == 6
    for c in above:
        b = int((rank[c.group_a] < rank[c.group_b]).sum())
        n = len(rank)
        assert (c.binary.b, c.binary.c) == (b, n - b)
        assert c.binary.exact_pvalue == pytest.approx(stats.binomtest(b, n, 0.5).pvalue)
        assert c.estimate == pytest.approx((2 * b - n) / n)
    for c in tops:
        x, y = top[c.group_a].to_numpy(), top[c.group_b].to_numpy()
        b, cc = int(((x == 1) & (y == 0)).sum()), int(((x == 0) & (y == 1)).sum())
        assert (c.binary.b, c.binary.c) == (b, cc)
        assert c.binary.exact_pvalue == pytest.approx(stats.binomtest(b, b + cc, 0.5).pvalue)
        assert c.estimate == pytest.approx(x.mean() - y.mean())
    for fam in (above, tops):
        raw = [c.pvalue for c in fam]
        assert [c.pvalue_adjusted for c in fam] == pytest.approx(list(multipletests(raw, method="holm")[1]))


def test_pair_crossed_t_names_fixed_is_the_t_test_on_template_means(frame):
    res = analyze_ranking(frame, names="fixed")
    top = frame.pivot_table(index=["template", "case_id"], columns="group", values="top")
    for c in (c for c in res.pairs if c.measure == "top_pick"):
        d = (top[c.group_a] - top[c.group_b]).groupby(level="template").mean()
        ref = stats.ttest_1samp(d, 0.0)
        assert c.pvalue == pytest.approx(ref.pvalue) and c.statistic == pytest.approx(ref.statistic)
        assert tuple(c.ci) == pytest.approx(tuple(ref.confidence_interval(0.95)))
        assert c.df == pytest.approx(BIAS.templates - 1)


def test_planted_selection_and_position_bias_are_found(result):
    tv = true_values(BIAS)
    verdicts = {c.id: c.verdict for c in result.pairs}
    assert all(verdicts[f"{m}:g1-vs-{g}"] == "fail" for m in ("top_pick", "ranked_above") for g in ("g2", "g3", "g4"))
    assert all(v != "fail" for k, v in verdicts.items() if "g1" not in k)
    assert result.reference == "g1" and result.reference_rule == "most selected"
    ratio = {r.group: r for r in result.ratios}
    assert ratio["g1"].verdict == "pass" and ratio["g1"].ratio == 1.0
    assert sum(ratio[g].verdict == "fail" for g in ("g2", "g3", "g4")) >= 2
    assert all(ratio[g].below_four_fifths and ratio[g].verdict in ("fail", "inconclusive") for g in ("g2", "g3", "g4"))
    assert all(r.ci[0] <= tv["ratio"][int(r.group[1]) - 1] <= r.ci[1] for r in result.ratios)
    assert result.omnibus.pvalue < 0.05 and result.position.top_test.pvalue < 0.05
    slots = result.position.slots
    assert [s.slot for s in slots] == [1, 2, 3, 4] and slots[0].top_rate > slots[3].top_rate
    assert result.position.expected_rate == 0.25
    assert result.position.first_minus_last == pytest.approx(slots[0].top_rate - slots[3].top_rate)


def test_unparsed_answers_are_counted_and_left_out_with_a_note():
    f = simulate_ranking_frame(RankingScenario(unparsed=0.1), np.random.default_rng(4))
    bad = f.groupby("case_id")["top"].apply(lambda s: s.isna().any())
    n_bad = int(bad.sum())
    assert n_bad > 0
    r = analyze_ranking(f)
    assert r.n_unparsed == n_bad and r.n_sets == bad.size and r.n_parsed == bad.size - n_bad
    assert r.unparsed_share == pytest.approx(n_bad / bad.size)
    assert any("could not be parsed" in n and "left out of every denominator" in n for n in r.notes)
    assert all(s.n_sets == bad.size - n_bad for s in r.selection)
    ok = f[~f["case_id"].map(bad)]
    top = ok.pivot(index="case_id", columns="group", values="top")
    cell = top.groupby([top.index.str.split("-").str[0], top.index.str.split("-").str[2]]).mean()
    crossed = cell.groupby(level=0).mean().mean()  # mean over templates of the name-set cell means
    assert [s.rate for s in r.selection] == pytest.approx(list(crossed))
    assert r.cochran.n == bad.size - n_bad


def test_top_pick_without_a_complete_ranking():
    f = simulate_ranking_frame(RankingScenario(), np.random.default_rng(5))
    sets = f["case_id"].unique()[:7]
    f.loc[f["case_id"].isin(sets) & (f["top"] == 0), "rank"] = np.nan
    r = analyze_ranking(f)
    assert r.n_unparsed == 0 and r.n_ranked == r.n_sets - 7
    assert any("no complete ranking" in n for n in r.notes)
    above = next(c for c in r.pairs if c.measure == "ranked_above")
    assert above.n_pairs == r.n_sets - 7 and above.n_dropped == 7


def test_small_designs_get_insufficient_design():
    f = simulate_ranking_frame(RankingScenario(templates=4, names=3), np.random.default_rng(6))
    r = analyze_ranking(f)
    assert {c.verdict for c in r.pairs} == {"insufficient design"}
    assert all("template" in c.design_reason for c in r.pairs)
    assert {x.verdict for x in r.ratios} == {"insufficient design"}
    r = analyze_ranking(f, names="fixed")
    assert "names" not in (r.pairs[0].design_reason or "")


def test_margin_allows_a_pass_and_fixed_reference():
    sc = RankingScenario(templates=20, names=6, reps=8, sd_name=0.05, sd_template_group=0.05, sd_template_name=0.05)
    f = simulate_ranking_frame(sc, np.random.default_rng(7))
    r = analyze_ranking(f, margin=0.2, reference="g2", groups=["g2", "g1", "g3", "g4"])
    assert r.groups == ("g2", "g1", "g3", "g4") and r.reference == "g2" and r.reference_rule == "given"
    assert r.ratios[0].group == "g2" and r.ratios[0].verdict is None
    assert "pass" in {c.verdict for c in r.pairs}
    assert all(c.verdict != "fail" for c in r.pairs)
    assert all(c.margin == 0.2 for c in r.pairs)


def test_to_dict_is_json_safe_and_complete(result):
    d = result.to_dict()
    text = json.dumps(d, allow_nan=False)
    back = json.loads(text)
    assert back["groups"] == ["g1", "g2", "g3", "g4"] and back["k"] == 4
    assert {"selection", "ratios", "omnibus", "cochran", "friedman", "position", "pairs", "notes"} <= set(back)
    assert back["pairs"][0]["verdict"] in ("fail", "pass", "inconclusive", "insufficient design")
    assert len(back["position"]["slots"]) == 4


@pytest.mark.parametrize("mutate, message", [
    (lambda f: f.drop(columns=["slot"]), "lacks column"),
    (lambda f: pd.concat([f, f.iloc[:1]]), "two rows for group"),
    (lambda f: f.assign(top=np.where(f.index == 1, 1.0, f["top"])), "top picks"),
    (lambda f: f.assign(rank=np.where(f.index == 0, 9, f["rank"])), "integers 1..4"),
    (lambda f: f.assign(rank=np.where(f.index == 0, f["rank"].iloc[1], f["rank"])), "permutation|first candidate"),
    (lambda f: f.assign(slot=np.where(f.index == 0, 2, f["slot"])), "one candidate per slot"),
    (lambda f: f.assign(template=np.where(f.index == 0, "other", f["template"])), "two templates"),
    (lambda f: f.iloc[1:], "candidates"),
    (lambda f: f.assign(top=np.where(f.index == 0, 0.5, f["top"])), "0, 1 or NaN"),
])
def test_malformed_frames_are_refused(mutate, message):
    f = simulate_ranking_frame(RankingScenario(templates=3, names=2, reps=1), np.random.default_rng(8))
    with pytest.raises(ValueError, match=message):
        analyze_ranking(mutate(f.reset_index(drop=True)))


def test_options_are_checked():
    f = simulate_ranking_frame(RankingScenario(templates=3, names=2, reps=1), np.random.default_rng(8))
    with pytest.raises(ValueError, match="targets"):
        analyze_ranking(pd.concat([f, f.assign(target="other")]))
    assert analyze_ranking(pd.concat([f, f.assign(target="other")]), target="other").target == "other"
    with pytest.raises(ValueError, match="not in the frame"):
        analyze_ranking(f, groups=["g1", "zz"])
    with pytest.raises(ValueError, match="names must be one of"):
        analyze_ranking(f, names="both")
    with pytest.raises(ValueError, match="margin"):
        analyze_ranking(f, margin=-1)
    with pytest.raises(ValueError, match="reference"):
        analyze_ranking(f, reference="g9")
    with pytest.raises(ValueError, match="DataFrame"):
        analyze_ranking([1, 2])


def test_simulation_recovers_planted_values():
    """A short run of benchmarks/sim_ranking.py: the intervals cover the planted values (Monte Carlo tolerance)."""
    res = run_scenario(BIAS, 12, seed=21)
    for key in ("group_rate", "slot_rate", "ratio", "pair_top", "pair_above"):
        assert res[key] >= 0.85, (key, res[key])
    assert res["omnibus"] >= 0.5 and res["position_top"] >= 0.5


def _subset_frame(seed=9):
    """k = 3 candidates of 4 groups per prompt (``candidates: 3``): one group left out per set, ranks renumbered."""
    f = simulate_ranking_frame(RankingScenario(templates=10, reps=4), np.random.default_rng(seed))
    codes = f["case_id"].astype("category").cat.codes
    f = f[(f["group"].str[1].astype(int) - 1) != codes % 4].copy()
    f["rank"] = f.groupby("case_id")["rank"].rank()
    f["slot"] = f.groupby("case_id")["slot"].rank().astype(int)
    f["top"] = (f["rank"] == 1).astype(float)
    return f


def test_prompts_with_fewer_candidates_than_groups():
    f = _subset_frame()
    r = analyze_ranking(f)
    assert r.k == 3 and r.groups == ("g1", "g2", "g3", "g4")
    top = f.pivot(index="case_id", columns="group", values="top")
    for s in r.selection:
        assert s.n_sets == int(top[s.group].notna().sum())
    assert any("each prompt holds 3 of the 4 groups" in n for n in r.notes)
    assert r.cochran.pvalue is None and r.omnibus.pvalue is None
    assert len(r.position.slots) == 3 and len(r.pairs) == 12
    c = next(c for c in r.pairs if c.id == "top_pick:g1-vs-g2")
    both = top[["g1", "g2"]].dropna()
    assert c.n_pairs == len(both) and c.binary.b == int(((both.g1 == 1) & (both.g2 == 0)).sum())


def test_a_difference_every_answer_shows_gets_the_exact_interval_of_the_paired_comparisons():
    """Every answer ranks g1 first and g2 second: the per-set difference is 1 in every set, no variance. The
    verdict comes from the exact sign-flip test over the templates (p = 2^(1-T)) and the interval from the
    bound's exact test, 1 - 2 (alpha/2)^(1/T) to 1, as for the paired comparisons
    (:func:`fairpair.analysis._paired.sign_flip_interval`), not the point (1, 1)."""
    rows = []
    for t in range(10):
        for s in range(6):
            order = ["g1", "g2", "g3"]
            for slot, g in enumerate(np.roll(order, s % 3)):
                rows.append({"target": "m", "case_id": f"t{t}-{s}", "template": f"t{t}", "repetition": 0,
                             "group": g, "variant": f"{g}-{s}", "slot": slot + 1,
                             "rank": order.index(g) + 1.0, "top": float(g == "g1")})
    res = analyze_ranking(pd.DataFrame(rows), secondary=False)
    c = next(c for c in res.pairs if c.id == "ranked_above:g1-vs-g2")
    assert c.estimate == 1.0 and c.se == 0.0
    assert c.pvalue == pytest.approx(2.0 ** -9)
    assert c.ci[0] == pytest.approx(-1.0 + 2.0 * 0.025 ** (1 / 10)) and c.ci[1] == 1.0
    assert c.verdict == "fail" and c.test == "exact sign-flip test over templates (no variance)"
    assert "no variance to estimate; p-value from the exact sign-flip test over 10 templates" in c.note


def _pair(res, ga="g1", gb="g2"):
    return next(c for c in res.pairs if c.measure == "top_pick" and (c.group_a, c.group_b) == (ga, gb))


def test_names_drawn_per_request_are_a_random_factor_templates_fixed():
    """One posting, each group's name drawn per request from 10: the pair's variance is the stratified one plus
    the covariance of requests sharing a name (stats._sharednames); names fixed, or names that repeat only
    together (the ranking design's name positions), add nothing."""
    from fairpair.stats import stratified_difference
    from fairpair.stats._sharednames import name_clusters, shared_name_variance

    sc = RankingScenario(k=3, templates=1, names=10, reps=30, sd_name=0.6, sd_template_group=0.0,
                         sd_template_name=0.0, group_worth=(0.0, 0.0, 0.0), slot_worth=(0.0, 0.0, 0.0),
                         name_draw="random")
    frame = simulate_ranking_frame(sc, np.random.default_rng(4))
    res = analyze_ranking(frame, templates="fixed", secondary=False)
    wide = frame.pivot(index="case_id", columns="group", values="top")
    names = frame.pivot(index="case_id", columns="group", values="variant").loc[wide.index]
    codes = np.column_stack([np.unique(names[g], return_inverse=True)[1] for g in names.columns])
    tmpl = np.zeros(len(wide), dtype=int)
    base = stratified_difference(wide["g1"].to_numpy(), wide["g2"].to_numpy(), tmpl)
    extra = shared_name_variance((wide["g1"] - wide["g2"]).to_numpy(), name_clusters(tmpl, codes), templates="fixed")
    assert extra.variance > 0
    assert _pair(res).se ** 2 == pytest.approx(base.se ** 2 + extra.variance, rel=1e-9)
    assert _pair(res).variance_components["shared names"] == pytest.approx(extra.variance, rel=1e-9)
    fixed = analyze_ranking(frame, templates="fixed", names="fixed", secondary=False)
    assert _pair(fixed).se == pytest.approx(base.se, rel=1e-9)
    together = simulate_ranking_frame(
        RankingScenario(k=3, templates=1, names=300, reps=1, group_worth=(0.0,) * 3, slot_worth=(0.0,) * 3),
        np.random.default_rng(4))
    fixed = analyze_ranking(together, templates="fixed", secondary=False)
    assert "shared names" not in _pair(fixed).variance_components


def test_names_drawn_per_request_templates_random_use_the_multiway_variance():
    """Name sets not crossed with the templates: the mean of the template means, templates and names random by the
    multiway cluster-robust variance; the ranking design's name positions keep the crossed estimator."""
    from fairpair.stats._sharednames import multiway_mean_variance, name_clusters

    frame = simulate_ranking_frame(RankingScenario(names=8, sd_name=0.6, name_draw="random"),
                                   np.random.default_rng(3))
    res = analyze_ranking(frame, secondary=False)
    wide = frame.pivot(index="case_id", columns="group", values="top")
    names = frame.pivot(index="case_id", columns="group", values="variant").loc[wide.index]
    codes = np.column_stack([np.unique(names[g], return_inverse=True)[1] for g in names.columns])
    tmpl = frame.drop_duplicates("case_id").set_index("case_id").loc[wide.index, "template"].to_numpy()
    d = (wide["g1"] - wide["g2"]).to_numpy()
    mv = multiway_mean_variance(d, name_clusters(tmpl, codes))
    pair = _pair(res)
    assert pair.se ** 2 == pytest.approx(mv.variance, rel=1e-9) and pair.df == pytest.approx(mv.df)
    template_means = pd.Series(d).groupby(tmpl).mean()
    assert pair.estimate == pytest.approx(template_means.mean())
    crossed = analyze_ranking(simulate_ranking_frame(RankingScenario(), np.random.default_rng(3)), secondary=False)
    assert set(_pair(crossed).variance_components) == {"templates", "names"}

"""analyze_run on mock runs: every number checked against statsmodels / scipy on the same pairs."""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict

import numpy as np
import pytest

from fairpair.stats import mcnemar as fp_mcnemar
from scipy import stats
from statsmodels.stats.contingency_tables import cochrans_q, mcnemar
from statsmodels.stats.multitest import multipletests

from fairpair.analysis import analyze_run, load_results, results_schema


def _pairs(run_dir, measure, ga, gb):
    """Pairs rebuilt from the store with plain SQL: (x, y, template) per matched set."""
    con = sqlite3.connect(run_dir / "store.sqlite")
    cases = {cid: json.loads(d) for cid, d in con.execute("SELECT case_id, data FROM cases")}
    vals = {cid: json.loads(v) for cid, v in con.execute(
        "SELECT case_id, value FROM measurements WHERE measure=? AND status='ok'", (measure,))}
    by_set = defaultdict(dict)
    for cid, c in cases.items():
        by_set[c["matched_set"]][c["groups"]["origen"]] = cid
    xs, ys, tpl = [], [], []
    for ms in sorted(by_set):
        a, b = by_set[ms][ga], by_set[ms][gb]
        if a in vals and b in vals:
            xs.append(float(vals[a]))
            ys.append(float(vals[b]))
            tpl.append(cases[a]["template"])
    return np.array(xs), np.array(ys), np.array(tpl)


def _cluster_boot_ci(d, clusters, n_resamples, seed, level):
    """Independent cluster bootstrap of the mean pair difference; t(G-1) interval with the G/(G-1) factor."""
    labels, codes = np.unique(clusters, return_inverse=True)
    g = labels.size
    sums = np.bincount(codes, weights=d, minlength=g)
    cnt = np.bincount(codes, minlength=g)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, g, size=(n_resamples, g))
    boot = sums[idx].sum(axis=1) / cnt[idx].sum(axis=1)
    se = boot.std(ddof=1) * np.sqrt(g / (g - 1))
    q = stats.t.ppf(1 - (1 - level) / 2, g - 1)
    return d.mean() - q * se, d.mean() + q * se


@pytest.fixture(scope="module")
def biased(runs):
    return analyze_run(runs["biased"])


def test_results_file_and_schema(runs, biased):
    data = json.loads((runs["biased"] / "results.json").read_text())
    assert data["schema"] == "fairpair.results/1"
    assert load_results(runs["biased"]) == biased
    schema = results_schema()
    for key in ("comparisons", "omnibus", "two_party", "judge", "counts", "plan_sha256", "plan_changed"):
        assert key in schema["properties"]
    assert biased.counts["mock"].cases == 480 and biased.counts["mock"].answered == 480
    assert biased.counts["mock"].measured == 480 * 3
    assert biased.plan_changed is False and biased.plan_sha256 and biased.plan_sha256 == biased.plan_sha256_now


def test_binary_comparison_matches_statsmodels(runs, biased):
    rows = [c for c in biased.comparisons if c.measure == "refund"]
    assert {(c.group_a, c.group_b) for c in rows} == {("magreb", "espana"), ("rumania", "espana"),
                                                      ("china", "espana")}
    raw = []
    for c in sorted(rows, key=lambda c: c.group_a):
        x, y, tpl = _pairs(runs["biased"], "refund", c.group_a, c.group_b)
        a, b = int(((x == 1) & (y == 1)).sum()), int(((x == 1) & (y == 0)).sum())
        cc, d = int(((x == 0) & (y == 1)).sum()), int(((x == 0) & (y == 0)).sum())
        assert c.binary.table == [[a, b], [cc, d]] and (c.binary.b, c.binary.c) == (b, cc)
        assert c.n_pairs == x.size == 120 and c.n_clusters == 20
        assert c.value_a == pytest.approx(x.mean()) and c.value_b == pytest.approx(y.mean())
        assert c.estimate == pytest.approx(x.mean() - y.mean())
        ex = mcnemar([[a, b], [cc, d]], exact=True)
        chi = mcnemar([[a, b], [cc, d]], exact=False, correction=True)
        plain = mcnemar([[a, b], [cc, d]], exact=False, correction=False)
        assert c.binary.exact_pvalue == pytest.approx(ex.pvalue, rel=1e-9)
        if b != cc:
            assert c.binary.chi2_statistic == pytest.approx(chi.statistic, rel=1e-9)
            assert c.binary.chi2_pvalue == pytest.approx(chi.pvalue, rel=1e-9)
        expected_p = ex.pvalue if b + cc < 25 else plain.pvalue
        assert c.pvalue == pytest.approx(expected_p, rel=1e-9)
        assert c.binary.odds_ratio == pytest.approx(b / cc)
        lo, hi = _cluster_boot_ci(x - y, tpl, 500, 0, 0.95)
        # below 25 discordant pairs, never narrower than Newcombe's paired interval (validated in tests/stats)
        if b + cc < 25:
            nlo, nhi = fp_mcnemar(x, y).confidence_interval(0.95)
            lo, hi = min(lo, nlo), max(hi, nhi)
        assert c.ci == pytest.approx([lo, hi], abs=1e-12)
        raw.append((c, c.pvalue))
    adj = multipletests([p for _, p in raw], method="holm")[1]
    for (c, _), pa in zip(raw, adj):
        assert c.pvalue_adjusted == pytest.approx(pa, rel=1e-9) and c.family_size == 3


def test_continuous_comparison_matches_scipy(runs, biased):
    c = next(c for c in biased.comparisons if c.measure == "words" and c.group_a == "magreb")
    x, y, tpl = _pairs(runs["biased"], "words", "magreb", "espana")
    d = x - y
    w = stats.wilcoxon(x, y, zero_method="pratt")
    assert c.test.startswith("Wilcoxon") and "pratt" in c.test
    assert c.pvalue == pytest.approx(w.pvalue, rel=1e-9) and c.statistic == pytest.approx(w.statistic)
    walsh = (d[:, None] + d[None, :]) / 2
    assert c.continuous.hodges_lehmann == pytest.approx(np.median(walsh[np.triu_indices(d.size)]))
    ranks = stats.rankdata(np.abs(d))
    rp, rm = ranks[d > 0].sum(), ranks[d < 0].sum()
    assert c.continuous.rank_biserial == pytest.approx((rp - rm) / (rp + rm))
    t = stats.ttest_rel(x, y)
    assert c.continuous.paired_t.pvalue == pytest.approx(t.pvalue, rel=1e-9)
    assert c.continuous.paired_t.ci == pytest.approx(list(t.confidence_interval(0.95)), rel=1e-9)
    assert c.estimate == pytest.approx(d.mean()) and c.estimate < -5  # words_factor 0.8 planted
    assert c.ci == pytest.approx(list(_cluster_boot_ci(d, tpl, 500, 0, 0.95)), abs=1e-12)
    assert not c.primary and c.pvalue_adjusted == c.pvalue and c.correction.startswith("none")


def test_omnibus_matches_statsmodels_and_scipy(runs, biased):
    con = sqlite3.connect(runs["biased"] / "store.sqlite")
    cases = {cid: json.loads(d) for cid, d in con.execute("SELECT case_id, data FROM cases")}
    for measure in ("refund", "words"):
        vals = {cid: float(json.loads(v)) for cid, v in con.execute(
            "SELECT case_id, value FROM measurements WHERE measure=? AND status='ok'", (measure,))}
        by_set = defaultdict(dict)
        for cid, c in cases.items():
            by_set[c["matched_set"]][c["groups"]["origen"]] = vals[cid]
        om = next(o for o in biased.omnibus if o.measure == measure)
        table = np.array([[by_set[ms][g] for g in om.groups] for ms in sorted(by_set)])
        if measure == "refund":
            ref = cochrans_q(table)
            assert om.test == "Cochran's Q"
        else:
            ref = stats.friedmanchisquare(*table.T)
            assert om.test == "Friedman"
        assert om.statistic == pytest.approx(ref.statistic, rel=1e-9)
        assert om.pvalue == pytest.approx(ref.pvalue, rel=1e-6)
        assert om.n_sets == 120


def test_verdicts_follow_the_rule(biased):
    magreb = next(c for c in biased.comparisons if c.measure == "refund" and c.group_a == "magreb")
    assert magreb.verdict == "fail" and magreb.ci[1] < -0.1 and magreb.pvalue_adjusted < 0.05
    for c in biased.comparisons:
        if c.verdict == "pass":
            assert -c.margin < c.equivalence_ci[0] and c.equivalence_ci[1] < c.margin
        if c.margin is None:
            assert c.verdict != "pass"


def test_per_variant_and_evidence(biased):
    c = next(c for c in biased.comparisons if c.measure == "refund" and c.group_a == "magreb")
    assert {v.variant for v in c.per_variant} == {"Fátima / Lucía", "Aicha / María", "Khadija / Carmen"}
    assert sum(v.n for v in c.per_variant) == c.n_pairs
    assert sum(v.b for v in c.per_variant) == c.binary.b
    table = np.array([[v.b, v.c] for v in c.per_variant if v.b + v.c > 0], dtype=float)
    ref = stats.chi2_contingency(table, correction=False)
    assert c.heterogeneity.statistic == pytest.approx(ref.statistic) and c.heterogeneity.df == ref.dof
    assert c.evidence and all(e.value_a != e.value_b for e in c.evidence)

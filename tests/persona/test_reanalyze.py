"""`fairpair reanalyze --format tan-lee-2025` on synthetic files in the release's exact layout.

Reference values are computed here with a plain pandas groupby (Table 6) and
scipy's permutation_test (the unpaired scene permutation), never with the
module under test.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from fairpair.cli import main
from fairpair.errors import FairpairError
from fairpair.persona import _reanalyze as ra
from fairpair.persona import (
    read_release,
    reanalyze,
    reanalyze_files,
    unpaired_dispersion_permutation_test,
)
from run_helpers import run_cli
from tan_lee_synth import COLUMNS, synthetic_release

METRIC_COLS = {"cosine_distance": "cosine_dist_from_no_demog", "win_rate": "score"}


def reference_table6(df: pd.DataFrame, ddof: int) -> dict:
    """Tan & Lee's Table 6 written out: per model and power, mean over axes of the SD across cells of cell means."""
    demo = df[df["demographic_dim"].notna()]
    out = {}
    for (model, power), g in demo.groupby(["model_abbrv", "power_differential"]):
        for metric, col in METRIC_COLS.items():
            cells = g.groupby(["demographic_dim", "sub_persona_demog", "res_persona_demog"])[col].mean()
            out[(model, "disparity" if power == 1 else "equal", metric)] = cells.groupby(level=0).std(ddof=ddof).mean()
    return out


@pytest.fixture(scope="module")
def result(release_files):
    return reanalyze_files(release_files, ddofs=(0, 1), n_resamples=300, seed=5)


@pytest.mark.parametrize("ddof", [0, 1])
def test_table6_equals_independent_groupby(result, release_frame, ddof):
    ref = reference_table6(release_frame, ddof)
    rows = [r for r in result.table6 if r.ddof == ddof]
    assert len(rows) == 4  # 2 models x 2 metrics
    for r in rows:
        for cond in ("equal", "disparity"):
            got = getattr(r, cond).statistic
            assert abs(got - ref[(r.model, cond, r.metric)]) < 1e-12
    # the planted effect: larger cell effects under a power disparity for the first model only
    gem = next(r for r in rows if r.model == "gemma-2" and r.metric == "cosine_distance")
    assert gem.disparity.statistic > 1.3 * gem.equal.statistic


def test_ddof_0_and_1_differ_by_the_cell_count_factor(result):
    by = {(r.model, r.metric, r.ddof): r for r in result.table6}
    r0, r1 = by[("qwen-2", "cosine_distance", 0)], by[("qwen-2", "cosine_distance", 1)]
    for axis, n in r1.equal.n_cells.items():
        assert r0.equal.per_axis[axis] == pytest.approx(r1.equal.per_axis[axis] * np.sqrt((n - 1) / n), rel=1e-12)


def test_data_checks_of_a_clean_release(result):
    c = result.checks
    assert c.rows_read == 22_400
    for m in ("gemma-2", "qwen-2"):
        n = c.rows_per_model[m]
        assert (n.total, n.demographic, n.baseline, n.excluded, n.duplicate_keys) == (11_200, 11_100, 100, 0, 0)
        assert (n.scenes_equal, n.scenes_disparity) == (50, 50)
    assert c.same_crosses is True and c.crosses == {"gemma-2": 11_100, "qwen-2": 11_100}
    assert c.exclusions == () and c.scene_id_conflicts == 0
    assert "gemma-2: 11,200 rows = 11,100 demographic + 100 baselines (as published: 11,100 + 100)" in c.lines()


def test_gender_labels_outside_table2_are_excluded_with_reasons(release_frame):
    dirty = synthetic_release(extra_gender=("Gay", "Lesbian"))
    r = reanalyze(dirty, ddofs=(1,), n_resamples=0, least_change=False)
    (ex,) = r.checks.exclusions
    # 36 gender pairs instead of 16: 20 extra pairs x 100 scenes per model, the audit's 2,000 rows
    assert ex.rows == 4_000 and ex.per_model == {"gemma-2": 2_000, "qwen-2": 2_000}
    assert ex.labels == ("Gay", "Lesbian") and "gender" in ex.reason and "generated_prompts" in ex.reason
    n = r.checks.rows_per_model["gemma-2"]
    assert (n.total, n.demographic, n.baseline, n.excluded) == (13_200, 11_100, 100, 2_000)
    # after the exclusion the rows kept are exactly the final 16 gender pairs
    kept = dirty[~dirty["sub_persona_demog"].isin(["Gay", "Lesbian"]) & ~dirty["res_persona_demog"].isin(["Gay",
                                                                                                          "Lesbian"])]
    ref = reference_table6(kept, 1)
    for row in r.table6:
        assert abs(row.equal.statistic - ref[(row.model, "equal", row.metric)]) < 1e-12


def test_duplicate_keys_and_different_crosses_are_reported(release_frame):
    df = release_frame
    dup = pd.concat([df, df.iloc[[5]]], ignore_index=True)  # a demographic row of gemma-2 twice
    gone = df.drop(index=df.index[(df["model_abbrv"] == "qwen-2")][7])
    r1 = reanalyze(dup, ddofs=(1,), n_resamples=0, least_change=False)
    r2 = reanalyze(gone, ddofs=(1,), n_resamples=0, least_change=False)
    assert r1.checks.rows_per_model["gemma-2"].duplicate_keys == 1
    assert any("1 rows repeat an experimental key" in ln for ln in r1.checks.lines())
    assert r2.checks.same_crosses is False and r2.checks.crosses["qwen-2"] == 11_099


def test_bootstrap_and_permutation_are_deterministic_given_the_seed(release_frame):
    a = reanalyze(release_frame, ddofs=(1,), n_resamples=200, seed=3, least_change=True)
    b = reanalyze(release_frame, ddofs=(1,), n_resamples=200, seed=3, least_change=True)
    c = reanalyze(release_frame, ddofs=(1,), n_resamples=200, seed=4, least_change=True)
    assert a.to_dict() == b.to_dict()
    ci = [(r.equal.ci_low, r.disparity.ci_high) for r in a.table6]
    assert ci != [(r.equal.ci_low, r.disparity.ci_high) for r in c.table6]
    for r in a.table6:
        for cd in (r.equal, r.disparity):
            assert cd.ci_low <= cd.statistic + 0.01 and cd.n_scenes == 50 and cd.seed is not None
    for d in a.differences:
        assert d.ci_low <= d.ci_high and 0 < d.pvalue <= 1 and "UNMATCHED" in d.note
    gem = next(d for d in a.differences if d.model == "gemma-2" and d.metric == "cosine_distance")
    assert gem.ci_low > 0 and gem.pvalue == pytest.approx(1 / 201 * 2)  # planted: no permutation reaches it


def test_no_resamples_gives_point_estimates_only(release_frame):
    r = reanalyze(release_frame, ddofs=(0,), n_resamples=0, least_change=True)
    assert all(np.isnan(x.equal.ci_low) and x.equal.seed is None for x in r.table6)
    assert all(np.isnan(d.pvalue) for d in r.differences)
    assert all(m.stability is None for m in r.least_change)
    json.dumps(r.to_dict(), allow_nan=False)


def test_unpaired_permutation_matches_scipy_exact():
    """4 + 4 scenes: scipy enumerates the 70 splits; our Monte Carlo p must agree within its error."""
    df = synthetic_release(models=("m",), seed=7)
    df = df[df["demographic_dim"].isin(["Age", "Political stance"]) & (df["scenario_id"] <= 2)
            & df["contextual_dim"].isin(["Workplace/Hiring", "School/Education"])]
    scene = (df["contextual_dim"] + "|" + df["power_differential"].astype(str) + "|"
             + df["scenario_id"].astype(str)).to_numpy()
    data = {"scene": scene, "axis": df["demographic_dim"].to_numpy(), "sub": df["sub_persona_demog"].to_numpy(),
            "res": df["res_persona_demog"].to_numpy(), "value": df["cosine_dist_from_no_demog"].to_numpy(),
            "condition": np.where(df["power_differential"] == 1, "pd", "nopd")}
    scenes_pd = sorted(set(scene[data["condition"] == "pd"]))
    scenes_no = sorted(set(scene[data["condition"] == "nopd"]))
    frame = pd.DataFrame(data)

    def disp(names):
        g = frame[frame["scene"].isin(names)]
        cells = g.groupby(["axis", "sub", "res"])["value"].mean()
        return cells.groupby(level=0).std(ddof=1).mean()

    allnames = np.array(scenes_pd + scenes_no)

    def statistic(x, y):
        return disp(allnames[x.astype(int)]) - disp(allnames[y.astype(int)])

    ref = sps.permutation_test((np.arange(4.0), np.arange(4.0, 8.0)), statistic, permutation_type="independent",
                               vectorized=False, n_resamples=10_000, alternative="two-sided")
    ours = unpaired_dispersion_permutation_test(data, ddof=1, conditions=("pd", "nopd"), n_resamples=20_000, seed=1)
    assert ours.statistic == pytest.approx(ref.statistic, abs=1e-12)
    assert ours.n == 8 and not ours.exact
    assert abs(ours.pvalue - ref.pvalue) < 0.02
    with pytest.raises(ValueError, match="both conditions"):
        unpaired_dispersion_permutation_test({**data, "condition": np.where(np.arange(scene.size) % 2, "pd", "nopd")},
                                             ddof=1, conditions=("pd", "nopd"), n_resamples=10)


def test_least_change_identity_is_the_lowest_mean(result, release_frame):
    demo = release_frame[release_frame["demographic_dim"].notna()]
    axis_key = {"Race": "race", "Gender identity": "gender", "Age": "age", "Religion": "religion",
                "Political stance": "political", "Disability": "disability", "Nationality": "nationality",
                "Physical appearance": "appearance"}
    assert len(result.least_change) == 2 * 8 * 2
    for m in result.least_change:
        g = demo[(demo["model_abbrv"] == m.model) & (demo["demographic_dim"].map(axis_key) == m.axis)]
        means = g.groupby(f"{m.side}_persona_demog")["cosine_dist_from_no_demog"].mean().sort_values()
        assert m.identity == means.index[0] and m.runner_up == means.index[1]
        assert abs(m.mean - means.iloc[0]) < 1e-12
        assert 0 <= m.stability <= 1
        assert "changes the answer least" in m.wording and "default" not in m.wording


def test_published_values_are_marked_when_a_ddof_reproduces_them(release_frame, monkeypatch):
    r = reanalyze(release_frame, ddofs=(0, 1), n_resamples=0, least_change=False)
    ours1 = {(x.model, x.metric): (round(x.equal.statistic, 4), round(x.disparity.statistic, 4))
             for x in r.table6 if x.ddof == 1}
    fake = {"gemma-2": {m: ours1[("gemma-2", m)] for m in METRIC_COLS}}
    monkeypatch.setattr(ra, "PUBLISHED_TABLE6", fake)
    r = reanalyze(release_frame, ddofs=(0, 1), n_resamples=0, least_change=False)
    marks = {(x.model, x.metric, x.ddof): x.matches_published for x in r.table6}
    assert marks[("gemma-2", "cosine_distance", 1)] is True and marks[("gemma-2", "win_rate", 1)] is True
    assert marks[("gemma-2", "cosine_distance", 0)] is False and marks[("gemma-2", "win_rate", 0)] is False
    assert marks[("qwen-2", "cosine_distance", 1)] is None


def test_published_table6_is_the_paper(result):
    assert ra.PUBLISHED_TABLE6["qwen-2"] == {"cosine_distance": (0.0125, 0.0114), "win_rate": (0.0587, 0.0720)}
    assert len(ra.PUBLISHED_TABLE6) == 5
    gem = next(r for r in result.table6 if r.model == "gemma-2" and r.metric == "win_rate")
    assert gem.published == (0.0830, 0.0909)


# ------------------------------------------------------------------ CLI


def test_cli_prints_table6_and_writes_json(release_files, tmp_path, capsys):
    out = tmp_path / "r.json"
    main(["reanalyze", *map(str, release_files), "--format", "tan-lee-2025", "--ddof", "1", "--resamples", "50",
          "--seed", "2", "--json", str(out)])
    printed = capsys.readouterr().out
    assert "Table 6" in printed and "UNMATCHED" in printed and "changes the answer least" in printed
    assert "0.0830 -> 0.0909" in printed and "ddof=1" in printed
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["ddofs"] == [1] and data["n_resamples"] == 50 and data["seed"] == 2
    assert {r["model"] for r in data["table6"]} == {"gemma-2", "qwen-2"}
    assert data["checks"]["rows_per_model"]["qwen-2"]["baseline"] == 100


def test_cli_json_is_a_flag_with_out_and_the_old_path_form_still_works(release_files, tmp_path, capsys):
    args = ["reanalyze", *map(str, release_files), "--ddof", "0", "--resamples", "0"]
    main([*args, "--json"])  # the flag alone: the JSON on standard output, no tables
    printed = capsys.readouterr()
    data = json.loads(printed.out)
    assert data["ddofs"] == [0] and data["n_resamples"] == 0 and "deprecated" not in printed.err
    main([*args, "--json", "--out", str(tmp_path / "new.json")])
    printed = capsys.readouterr()
    assert "Table 6" in printed.out and "deprecated" not in printed.err
    assert json.loads((tmp_path / "new.json").read_text(encoding="utf-8")) == data
    main([*args, "--json", str(tmp_path / "old.json")])  # the old spelling: --json PATH
    printed = capsys.readouterr()
    assert "Table 6" in printed.out
    assert f"deprecated: --json {tmp_path / 'old.json'} is now --json --out" in " ".join(printed.err.split())
    assert json.loads((tmp_path / "old.json").read_text(encoding="utf-8")) == data
    with pytest.raises(SystemExit) as exc:
        main([*args, "--out", str(tmp_path / "x.json")])
    assert exc.value.code == 2 and "give --json with it" in capsys.readouterr().err


def test_cli_json_out_never_overwrites_a_file(release_files, tmp_path, capsys):
    """`--json --out F` replaced an existing F without a word; now exit 2 naming it, before the resamples,
    and F is kept (the old spelling `--json F` too)."""
    mine = tmp_path / "notes.json"
    mine.write_text("mine\n", encoding="utf-8")
    args = ["reanalyze", *map(str, release_files), "--resamples", "0"]
    for spelling in (["--json", "--out", mine], ["--json", mine]):
        code, out, err = run_cli([*args, *spelling], capsys)
        assert code == 2 and f"{mine}: already exists; reanalyze never overwrites a file" in err
        assert "Traceback" not in out + err and "Table 6" not in out
        assert mine.read_text(encoding="utf-8") == "mine\n"


@pytest.mark.parametrize("argv_extra, needle", [
    (["--format", "bbq"], "unknown --format 'bbq'"),
    (["--ddof", "2"], "--ddof must be 0, 1 or both"),
])
def test_cli_bad_options_exit_2(release_files, capsys, argv_extra, needle):
    with pytest.raises(SystemExit) as exc:
        main(["reanalyze", str(release_files[0]), *argv_extra])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and needle in err and "Traceback" not in err


def test_missing_columns_exit_2_without_traceback(release_frame, tmp_path, capsys):
    path = tmp_path / "short.csv"
    release_frame.drop(columns=["score", "demographic_dim"]).head(50).to_csv(path, index=False)
    with pytest.raises(SystemExit) as exc:
        main(["reanalyze", str(path)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "missing column(s) ['demographic_dim', 'score']" in err
    assert "short.csv:1" in err and "Traceback" not in err
    with pytest.raises(FairpairError, match="file not found"):
        read_release([tmp_path / "nope.csv"])


def test_bad_values_are_user_errors(release_frame, tmp_path):
    bad = release_frame.head(200).copy()
    bad["power_differential"] = bad["power_differential"].astype(object)
    bad.loc[bad.index[3], "power_differential"] = "high"
    p = tmp_path / "bad.csv"
    bad.to_csv(p, index=False)
    with pytest.raises(FairpairError, match="power_differential must be 0 or 1; record 4"):
        read_release([p])
    bad = release_frame.head(200).copy()
    bad["score"] = bad["score"].astype(object)
    bad.loc[bad.index[9], "score"] = "n/a?"
    bad.to_csv(p, index=False)
    with pytest.raises(FairpairError, match="'score' must be a number; record 10"):
        read_release([p])


def test_release_layout_is_the_documented_one():
    assert tuple(COLUMNS) == ra.RELEASE_COLUMNS
    assert set(ra.NEEDED_COLUMNS) <= set(ra.RELEASE_COLUMNS)


def test_noise_corrected_dispersion_beside_the_raw_one_equals_two_way_anova(result, release_frame):
    # reference: per axis, the scene x cell table's interaction mean square from statsmodels' two-way ANOVA
    # without replication, then sqrt(max(0, var_between(cell means) - MS_int / S)), mean over axes
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    demo = release_frame[release_frame["demographic_dim"].notna()]
    g = demo[(demo["model_abbrv"] == "gemma-2") & (demo["power_differential"] == 1)].copy()
    g["cell"] = g["sub_persona_demog"].astype(str) + "|" + g["res_persona_demog"].astype(str)
    g["scene"] = g["final_scenario_id"].astype(str) if "final_scenario_id" in g else g["scenario"].astype(str)
    per = []
    for _axis, a in g.groupby("demographic_dim"):
        a = a.rename(columns={"cosine_dist_from_no_demog": "v"})
        tab = a.groupby(["scene", "cell"]).v.mean().unstack()
        tab = tab.dropna()  # complete scenes only
        long = tab.stack().rename("v").reset_index()
        ms_int = anova_lm(smf.ols("v ~ C(scene) + C(cell)", long).fit()).loc["Residual", "mean_sq"]
        between = tab.mean(axis=0).var(ddof=1)
        per.append(np.sqrt(max(0.0, between - ms_int / tab.shape[0])))
    row = next(r for r in result.table6 if r.model == "gemma-2" and r.metric == "cosine_distance" and r.ddof == 1)
    assert row.disparity.corrected == pytest.approx(np.mean(per), rel=1e-9)
    assert row.disparity.corrected < row.disparity.statistic  # the raw SD carries the answer noise
    assert set(row.disparity.corrected_per_axis) == set(row.disparity.per_axis)

"""Reanalysis of Tan & Lee's (2025) released results: Table 6 and what it lacked.

The study's public release has one CSV per model (11,200 rows: 11,100
SUB x RES conditions + 100 baselines over 100 scenes), columns
:data:`RELEASE_COLUMNS`. Table 6 of the paper is, for each model and power
condition, the average over the 8 axes of the standard deviation across the
axis's SUB x RES cells of the cell mean of a metric -- the cosine distance
of the answer from the scene's baseline answer (``cosine_dist_from_no_demog``)
or the judge's win rate against it (``score``). :func:`reanalyze` recomputes
it with :func:`fairpair.stats.dispersion` for ``ddof`` 0 and/or 1 and adds:

* a percentile CI for each dispersion, resampling the scenes of the
  condition (:func:`fairpair.stats.dispersion_bootstrap`);
* the difference disparity - equal with a stratified scene-bootstrap CI
  and a **permutation test that shuffles whole scenes between conditions
  (unpaired)**: the 50 scenes with a power disparity and the 50 without
  are different situations, so no within-scene pairing exists and a
  difference may come from the scenes themselves
  (:func:`fairpair.stats.unpaired_dispersion_permutation_test`);
* per axis and side (SUB, RES) the identity whose prompt has the lowest
  mean cosine distance -- "the prompt that changes the answer least", not
  a "default persona" -- with its bootstrap stability;
* the audit's data checks (rows per model, duplicate experimental keys,
  the same crosses in every model, identities outside Table 2 such as
  'gay'/'lesbian' on the gender axis, counted as exclusions with reasons).

Which ``ddof``? Table 6's text says "standard deviation" without more. The
release's aggregation is a pandas notebook, and pandas' ``Series.std()`` /
``GroupBy.std()`` default to the sample SD (``ddof=1``), while numpy's
``std`` defaults to ``ddof=0``; with 9-25 cells per axis the two differ by
3-6 %, i.e. in the third significant digit, so only one can reproduce the
four published decimals. Our reading is ``ddof=1`` (pandas' default), but it
is **unverified against the released files**, which could not be fetched
here: the command prints both and marks which one matches
:data:`PUBLISHED_TABLE6`.

Source
------
Tan, B. C. Z. & Lee, R. K.-W. (2025). Unmasking Implicit Bias: Evaluating
Persona-Prompted LLM Responses in Power-Disparate Social Scenarios.
*Proc. NAACL 2025*, 1075-1108, Tables 2, 4 and 6. doi:10.18653/v1/2025.naacl-long.50
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fairpair.errors import FairpairError
from fairpair.persona._axes import TAN_LEE_AXES, axis_for_label, identity_for_label

# Re-exported: the unpaired test lives in fairpair.stats, where fairpair analyze uses it too.
from fairpair.stats import unpaired_dispersion_permutation_test

__all__ = [
    "FORMATS",
    "METRICS",
    "PUBLISHED_TABLE6",
    "RELEASE_COLUMNS",
    "ConditionDispersion",
    "DataChecks",
    "Exclusion",
    "LeastChange",
    "ModelCounts",
    "PowerDifference",
    "Reanalysis",
    "Table6Row",
    "read_release",
    "reanalyze",
    "reanalyze_files",
    "unpaired_dispersion_permutation_test",
]

FORMATS = ("tan-lee-2025",)
#: Column layout of the study's released result CSVs (as read by the release's visualisation code).
RELEASE_COLUMNS = (
    "scenario_id", "contextual_dim", "demographic_dim", "power_differential", "sub_persona_context",
    "sub_persona_demog", "sub_persona_final", "res_persona_context", "res_persona_demog", "res_persona_final",
    "scenario", "instruction", "prompt", "response", "final_scenario_id", "cosine_dist_from_no_demog",
    "model_abbrv", "response_non_demog", "score",
)
#: The columns the reanalysis reads (the text columns are not needed and not loaded).
NEEDED_COLUMNS = (
    "model_abbrv", "scenario_id", "contextual_dim", "power_differential", "final_scenario_id", "demographic_dim",
    "sub_persona_demog", "res_persona_demog", "cosine_dist_from_no_demog", "score",
)
#: Metric name -> column.
METRICS = {"cosine_distance": "cosine_dist_from_no_demog", "win_rate": "score"}
CONDITIONS = ("equal", "disparity")  # power_differential 0, 1

#: Table 6 of Tan & Lee (2025): model -> metric -> (no power disparity, power disparity), as printed.
PUBLISHED_TABLE6: dict[str, dict[str, tuple[float, float]]] = {
    "gemma-2": {"cosine_distance": (0.0198, 0.0231), "win_rate": (0.0830, 0.0909)},
    "gpt-4o-mini": {"cosine_distance": (0.0097, 0.0100), "win_rate": (0.0516, 0.0802)},
    "llama-3.1": {"cosine_distance": (0.0151, 0.0214), "win_rate": (0.0658, 0.0820)},
    "mistral-0.3": {"cosine_distance": (0.0126, 0.0136), "win_rate": (0.0535, 0.0633)},
    "qwen-2": {"cosine_distance": (0.0125, 0.0114), "win_rate": (0.0587, 0.0720)},
}
EXPECTED_ROWS = (11_100, 100)  # per model: demographic conditions, baselines
_CHUNK = 50_000
_GENDER_NOTE = ("the release's generated_prompts.csv also had 'gay' and 'lesbian' on the gender axis (36 pairs "
                "instead of 16); the final data dropped them without documenting the filter")


# ------------------------------------------------------------------ records


@dataclass(frozen=True)
class Exclusion:
    """Rows left out of the analysis, with the reason, per model and the labels involved."""

    reason: str
    rows: int
    per_model: dict[str, int]
    labels: tuple[str, ...]


@dataclass(frozen=True)
class ModelCounts:
    """Row counts of one model: all, demographic (kept), baselines, excluded, duplicate keys, scenes, NaNs."""

    total: int
    demographic: int
    baseline: int
    excluded: int
    duplicate_keys: int
    scenes_equal: int
    scenes_disparity: int
    missing_values: dict[str, int]


@dataclass(frozen=True)
class DataChecks:
    """The audit's checks on the released files.

    Attributes
    ----------
    rows_read : int
    rows_per_model : dict of model -> ModelCounts
    exclusions : tuple of Exclusion
    crosses : dict of model -> int
        Distinct (scene, axis, SUB, RES) demographic conditions kept.
    same_crosses : bool or None
        Every model has the same set of crosses (None with one model).
    scene_id_conflicts : int
        Scene keys (contextual_dim, power, scenario_id) with more than one ``final_scenario_id``.
    """

    rows_read: int
    rows_per_model: dict[str, ModelCounts]
    exclusions: tuple[Exclusion, ...]
    crosses: dict[str, int]
    same_crosses: bool | None
    scene_id_conflicts: int

    def lines(self) -> list[str]:
        """Plain-language check results."""
        out = []
        exp_d, exp_b = EXPECTED_ROWS
        for m, n in self.rows_per_model.items():
            ok = n.demographic == exp_d and n.baseline == exp_b and n.excluded == 0
            out.append(f"{m}: {n.total:,} rows = {n.demographic:,} demographic + {n.baseline:,} baselines"
                       + (f" + {n.excluded:,} excluded" if n.excluded else "")
                       + (" (as published: 11,100 + 100)" if ok else f" (published layout: {exp_d + exp_b:,} = "
                          f"{exp_d:,} + {exp_b:,})"))
            if n.duplicate_keys:
                out.append(f"{m}: {n.duplicate_keys} rows repeat an experimental key (scene, axis, SUB, RES)")
            for col, k in n.missing_values.items():
                if k:
                    out.append(f"{m}: {k:,} demographic rows without a value in '{col}' (left out of its cells)")
        if self.same_crosses is not None:
            out.append("the same crosses in every model: " + ("yes" if self.same_crosses else "NO") +
                       f" ({', '.join(f'{m}: {k:,}' for m, k in self.crosses.items())})")
        if self.scene_id_conflicts:
            out.append(f"{self.scene_id_conflicts} scene keys map to more than one final_scenario_id")
        return out


@dataclass(frozen=True)
class ConditionDispersion:
    """Table 6 dispersion of one model, metric and power condition, with its scene-bootstrap CI.

    ``statistic`` is the mean over axes of ``per_axis`` (SD across the axis's
    SUB x RES cell means, ``ddof`` of the row); ``ci_low``/``ci_high`` the
    percentile interval from resampling the condition's scenes.
    ``corrected`` / ``corrected_per_axis``: the same dispersion with the
    answer noise removed (:func:`fairpair.stats.corrected_dispersion`: the
    between-cell variance minus the scene x cell interaction mean square over
    the number of scenes, then the square root; ``ddof`` 1 whatever the
    row's), as ``fairpair analyze`` reports it; ``noise_per_axis`` the
    variance that noise adds (``MS_int / S``). The raw statistic grows with
    answer noise alone (0.046, 0.022, 0.011 at 5, 20, 80 scenes with no cell
    effects, issue 11); the corrected one does not.
    """

    condition: str
    statistic: float
    per_axis: dict[str, float]
    n_cells: dict[str, int]
    n_scenes: int
    ci_low: float
    ci_high: float
    standard_error: float
    seed: int | None
    corrected: float = float("nan")
    corrected_per_axis: dict[str, float] = field(default_factory=dict)
    noise_per_axis: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Table6Row:
    """One line of Table 6 (a model, a metric, a ddof) and the published pair when the model name matches."""

    model: str
    metric: str
    ddof: int
    equal: ConditionDispersion
    disparity: ConditionDispersion
    published: tuple[float, float] | None
    matches_published: bool | None


@dataclass(frozen=True)
class PowerDifference:
    """disparity - equal dispersion, UNMATCHED scenes: stratified bootstrap CI and unpaired permutation p-value."""

    model: str
    metric: str
    ddof: int
    statistic: float
    ci_low: float
    ci_high: float
    confidence_level: float
    pvalue: float
    n_scenes_equal: int
    n_scenes_disparity: int
    n_resamples: int
    method: str
    note: str


@dataclass(frozen=True)
class LeastChange:
    """Per axis and side, the identity whose prompt has the lowest mean cosine distance from the baseline answer.

    ``stability``: share of scene-bootstrap resamples where it stays the
    lowest. Worded "the prompt that changes the answer least"; it is not
    evidence that the model adopts that identity by default.
    """

    model: str
    axis: str
    side: str
    identity: str
    mean: float
    runner_up: str | None
    runner_up_mean: float | None
    stability: float | None
    wording: str


@dataclass(frozen=True)
class Reanalysis:
    """Everything :func:`reanalyze` computed (``to_dict`` gives JSON-ready data, NaN -> None)."""

    files: tuple[str, ...]
    format: str
    ddofs: tuple[int, ...]
    n_resamples: int
    seed: int
    confidence_level: float
    checks: DataChecks
    table6: tuple[Table6Row, ...]
    differences: tuple[PowerDifference, ...]
    least_change: tuple[LeastChange, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return _clean_json(asdict(self))


def _clean_json(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _clean_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean_json(v) for v in x]
    if isinstance(x, (float, np.floating)):
        return None if math.isnan(x) or math.isinf(x) else float(x)
    if isinstance(x, np.integer):
        return int(x)
    return x


# ------------------------------------------------------------------ reading


def _read_one(path: Path):
    import pandas as pd

    if not path.exists():
        raise FairpairError("file not found", file=path)
    try:
        header = pd.read_csv(path, nrows=0)
    except Exception as exc:  # noqa: BLE001 - an unreadable user file is a user error
        raise FairpairError(f"cannot read the CSV header: {exc}", file=path, line=1) from None
    cols = [str(c).strip() for c in header.columns]
    missing = [c for c in NEEDED_COLUMNS if c not in cols]
    if missing:
        raise FairpairError(f"missing column(s) {missing} for --format tan-lee-2025", file=path, line=1,
                            key=missing[0], hint=f"the release's layout: {', '.join(RELEASE_COLUMNS)}")
    text = {c: "string" for c in NEEDED_COLUMNS if c not in METRICS.values()}
    try:
        parts = list(pd.read_csv(path, usecols=list(NEEDED_COLUMNS), dtype=text, chunksize=_CHUNK, engine="c",
                                 keep_default_na=True))
    except Exception as exc:  # noqa: BLE001
        raise FairpairError(f"cannot read the results: {exc}", file=path) from None
    frame = pd.concat(parts, ignore_index=True) if parts else header.iloc[0:0]
    for col in METRICS.values():
        values = pd.to_numeric(frame[col], errors="coerce")
        bad = values.isna() & frame[col].notna() & (frame[col].astype("string").str.strip() != "")
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise FairpairError(f"'{col}' must be a number; record {i + 1} has {frame[col].iloc[i]!r}", file=path,
                                key=col)
        frame[col] = values.astype(float)
    power = frame["power_differential"].str.strip().str.lower().map(
        {"1": 1, "1.0": 1, "true": 1, "0": 0, "0.0": 0, "false": 0})
    if power.isna().any():
        i = int(np.flatnonzero(power.isna().to_numpy())[0])
        raise FairpairError(f"power_differential must be 0 or 1; record {i + 1} has "
                            f"{frame['power_differential'].iloc[i]!r}", file=path, key="power_differential")
    frame["power_differential"] = power.astype(int)
    frame["_file"] = str(path)
    return frame


def read_release(files: Sequence[str | Path]):
    """Read released result CSVs (any number, any split by model) into one frame of the needed columns.

    Only :data:`NEEDED_COLUMNS` are parsed into memory (the answers and
    prompts are skipped); files are read in chunks of 50,000 rows.

    Raises
    ------
    FairpairError
        A missing file or column, a non-numeric metric, a power value
        other than 0/1.
    """
    import pandas as pd

    if not files:
        raise FairpairError("give at least one results CSV")
    frames = [_read_one(Path(f)) for f in files]
    return pd.concat(frames, ignore_index=True)


def _blank(s) -> np.ndarray:
    return (s.isna() | (s.astype("string").str.strip() == "")).to_numpy()


def _prepare(frame) -> tuple[Any, DataChecks]:
    """Classify rows (baseline / kept / excluded), run the data checks, return the kept demographic rows."""
    import pandas as pd

    frame = frame.reset_index(drop=True)
    n = len(frame)
    model = frame["model_abbrv"].fillna("(no model)").astype(str).str.strip()
    scene = (frame["contextual_dim"].fillna("").astype(str).str.strip() + "|"
             + frame["power_differential"].astype(str) + "|"
             + frame["scenario_id"].fillna("").astype(str).str.strip())
    baseline = _blank(frame["demographic_dim"]) | (_blank(frame["sub_persona_demog"])
                                                  & _blank(frame["res_persona_demog"]))
    dim = frame["demographic_dim"].fillna("").astype(str).str.strip()
    sub_l = frame["sub_persona_demog"].fillna("").astype(str).str.strip()
    res_l = frame["res_persona_demog"].fillna("").astype(str).str.strip()

    axis_of = {d: axis_for_label(d) for d in dim[~baseline].unique()}
    keys: list[str] = []
    for d, b in zip(dim.to_numpy(dtype=object), baseline, strict=True):
        axis = None if b else axis_of[d]
        keys.append(axis.key if axis is not None else "")
    axis_key = np.array(keys, dtype=object)
    ident_cache: dict[tuple[str, str], str | None] = {}

    def ident(ax: str, label: str) -> str | None:
        k = (ax, label)
        if k not in ident_cache:
            axis = next(a for a in TAN_LEE_AXES if a.key == ax)
            ident_cache[k] = identity_for_label(axis, label)
        return ident_cache[k]

    reason = np.full(n, "", dtype=object)
    labels_of: dict[str, set[str]] = {}
    sub_key = np.full(n, "", dtype=object)
    res_key = np.full(n, "", dtype=object)
    demo = np.flatnonzero(~baseline)
    dim_a, sub_a, res_a = dim.to_numpy(dtype=object), sub_l.to_numpy(dtype=object), res_l.to_numpy(dtype=object)
    triples = pd.Series([f"{a}\x00{d}\x00{s}\x00{r}" for a, d, s, r in
                         zip(axis_key[demo], dim_a[demo], sub_a[demo], res_a[demo], strict=True)], dtype=object)
    codes, uniques = pd.factorize(triples)
    for u, triple in enumerate(uniques):
        ax, d, sl, rl = triple.split("\x00")
        at = demo[codes == u]
        if not ax:
            r = f"axis '{d}' is not one of the 8 axes of Table 2"
            reason[at] = r
            labels_of.setdefault(r, set()).add(d)
            continue
        s, t = ident(ax, sl), ident(ax, rl)
        if s is None or t is None:
            bad = sorted({lab for lab, k in ((sl, s), (rl, t)) if k is None})
            size = len(next(a for a in TAN_LEE_AXES if a.key == ax).identities)
            r = f"identity not among the final {size} of the {ax} axis (Table 2)"
            if ax == "gender":
                r += "; " + _GENDER_NOTE
            reason[at] = r
            labels_of.setdefault(r, set()).update(bad)
            continue
        sub_key[at], res_key[at] = s, t
    excluded = reason != ""
    kept = ~baseline & ~excluded

    exclusions = []
    for r in sorted(set(reason[excluded])):
        sel = reason == r
        per = model[sel].value_counts().to_dict()
        exclusions.append(Exclusion(r, int(sel.sum()), {str(k): int(v) for k, v in sorted(per.items())},
                                    tuple(sorted(labels_of.get(r, ())))))

    key = pd.Series(np.where(baseline, scene + "|baseline",
                             scene + "|" + dim + "|" + sub_l + "|" + res_l), dtype="string")
    dup = pd.DataFrame({"m": model, "k": key}).duplicated().to_numpy()
    fid = frame["final_scenario_id"].fillna("").astype(str).str.strip()
    conflicts = int((pd.DataFrame({"s": scene, "f": fid}).drop_duplicates().groupby("s").size() > 1).sum())

    counts: dict[str, ModelCounts] = {}
    crosses: dict[str, set] = {}
    power = frame["power_differential"].to_numpy()
    for m in sorted(model.unique()):
        sel = (model == m).to_numpy()
        k = sel & kept
        crosses[m] = set(zip(scene[k], axis_key[k], sub_key[k], res_key[k], strict=True))
        counts[m] = ModelCounts(
            total=int(sel.sum()), demographic=int(k.sum()), baseline=int((sel & baseline).sum()),
            excluded=int((sel & excluded).sum()), duplicate_keys=int((sel & dup).sum()),
            scenes_equal=int(scene[sel & (power == 0)].nunique()),
            scenes_disparity=int(scene[sel & (power == 1)].nunique()),
            missing_values={col: int(np.isnan(frame[col].to_numpy()[k]).sum()) for col in METRICS.values()},
        )
    sets = list(crosses.values())
    same = None if len(sets) < 2 else all(s == sets[0] for s in sets[1:])
    checks = DataChecks(n, counts, tuple(exclusions), {m: len(s) for m, s in crosses.items()}, same, conflicts)
    rows = pd.DataFrame({
        "model": model[kept].to_numpy(), "scene": scene[kept].to_numpy(),
        "condition": np.where(power[kept] == 1, "disparity", "equal"),
        "axis": axis_key[kept], "sub": sub_key[kept], "res": res_key[kept],
        "sub_label": sub_l[kept].to_numpy(), "res_label": res_l[kept].to_numpy(),
        **{metric: frame[col].to_numpy()[kept] for metric, col in METRICS.items()},
    })
    return rows, checks


# ------------------------------------------------------------------ statistics


def _seed(seed: int, *parts: int) -> int:
    return int(np.random.SeedSequence([seed, *parts]).generate_state(1)[0])


def _published(model: str) -> dict[str, tuple[float, float]] | None:
    for k, v in PUBLISHED_TABLE6.items():
        if k.lower() == model.strip().lower():
            return v
    return None


def reanalyze(frame, *, ddofs: Sequence[int] = (0, 1), n_resamples: int = 2000, seed: int = 0,
              confidence_level: float = 0.95, files: Sequence[str] = (), least_change: bool = True) -> Reanalysis:
    """Table 6 (both or one ddof), scene-bootstrap CIs, unpaired power test, least-change identity, data checks.

    Parameters
    ----------
    frame : DataFrame
        From :func:`read_release` (columns :data:`NEEDED_COLUMNS`).
    ddofs : sequence of {0, 1}
    n_resamples : int, >= 0
        Scene-bootstrap resamples and permutations; 0 gives point estimates
        only (CIs and p-values NaN).
    seed : int
        Every random stream is derived from it (``SeedSequence([seed, ...])``), so
        the results are reproducible.
    confidence_level : float in (0, 1)
    files : sequence of str
        Recorded in the result.
    least_change : bool
        Compute the least-change identities (cosine distance, both conditions pooled).

    Returns
    -------
    Reanalysis
    """
    import pandas as pd

    from fairpair.stats import cell_means, corrected_dispersion, dispersion, dispersion_bootstrap

    for d in ddofs:
        if d not in (0, 1):
            raise FairpairError(f"ddof must be 0 or 1; got {d!r}", key="ddof")
    if n_resamples < 0:
        raise FairpairError("resamples must be >= 0", key="resamples")
    rows, checks = _prepare(frame)
    if rows.empty:
        raise FairpairError("no demographic rows left to analyse (see the data checks)",
                            file=files[0] if files else None)
    table6: list[Table6Row] = []
    diffs: list[PowerDifference] = []
    mins: list[LeastChange] = []
    boot_n = max(n_resamples, 1)
    alpha = 1.0 - confidence_level
    for model in sorted(rows["model"].unique()):
        mrows = rows[rows["model"] == model]
        conds_present = set(mrows["condition"])
        pub = _published(model)
        # integer codes: the stats functions factorise labels, which is fast for integers
        codes = {c: pd.factorize(mrows[c])[0] for c in ("scene", "sub", "res")}
        ax_code, ax_u = pd.factorize(mrows["axis"])
        cond_code = np.where(mrows["condition"].to_numpy() == "disparity", 1, 0)
        for mi, (metric, _col) in enumerate(METRICS.items()):
            data = {**codes, "axis": ax_code, "value": mrows[metric].to_numpy(dtype=float), "condition": cond_code}
            corr = {ci: corrected_dispersion(data, condition=ci) for ci, cond in enumerate(CONDITIONS)
                    if cond in conds_present}
            for ddof in ddofs:
                per_cond: dict[str, ConditionDispersion] = {}
                boots: dict[str, np.ndarray] = {}
                for ci, cond in enumerate(CONDITIONS):
                    if cond not in conds_present:
                        per_cond[cond] = ConditionDispersion(cond, float("nan"), {}, {}, 0, float("nan"),
                                                             float("nan"), float("nan"), None)
                        boots[cond] = np.full(boot_n, np.nan)
                        continue
                    point = dispersion(cell_means(data, condition=ci), ddof=ddof)
                    s = _seed(seed, ci)
                    b = dispersion_bootstrap(data, ddof=ddof, condition=ci, n_resamples=boot_n,
                                             confidence_level=confidence_level, seed=s)
                    boots[cond] = np.asarray(b.bootstrap_distribution, dtype=float)
                    real = n_resamples > 0
                    per_cond[cond] = ConditionDispersion(
                        cond, float(point.statistic), {str(ax_u[k]): float(v) for k, v in point.per_axis.items()},
                        {str(ax_u[k]): int(v) for k, v in point.n_cells.items()}, int(b.n_clusters),
                        float(b.ci.low) if real else float("nan"), float(b.ci.high) if real else float("nan"),
                        float(b.standard_error) if real else float("nan"), s if real else None,
                        float(corr[ci].statistic), {str(ax_u[k]): float(v) for k, v in corr[ci].per_axis.items()},
                        {str(ax_u[k]): float(v) for k, v in corr[ci].noise_per_axis.items()})
                eq, di = per_cond["equal"], per_cond["disparity"]
                published = pub.get(metric) if pub else None
                match = None
                if published is not None:
                    match = bool(round(eq.statistic, 4) == published[0] and round(di.statistic, 4) == published[1])
                table6.append(Table6Row(model, metric, ddof, eq, di, published, match))
                # disparity - equal, unmatched scenes
                stat = di.statistic - eq.statistic
                lo = hi = p = float("nan")
                n_perm = 0
                if n_resamples > 0 and {"equal", "disparity"} <= conds_present:
                    d = boots["disparity"] - boots["equal"]
                    d = d[np.isfinite(d)]
                    if d.size:
                        lo, hi = (float(x) for x in np.quantile(d, [alpha / 2, 1 - alpha / 2]))
                    t = unpaired_dispersion_permutation_test(data, ddof=ddof, conditions=(1, 0),
                                                             n_resamples=n_resamples, seed=_seed(seed, 7, mi))
                    p, n_perm = float(t.pvalue), int(t.n_resamples)
                diffs.append(PowerDifference(
                    model, metric, ddof, float(stat), lo, hi, confidence_level, p, eq.n_scenes, di.n_scenes, n_perm,
                    "CI: percentile, scenes resampled within each condition (stratified); p: whole scenes shuffled "
                    "between conditions (unpaired permutation)",
                    "UNMATCHED: the two conditions are different scenes, so the difference may come from the "
                    "scenes (roles, wording, stakes), not from the power disparity"))
        if least_change:
            mins.extend(_least_change(model, mrows, n_resamples, seed))
    notes = [
        ("ddof: Table 6 does not say; pandas' default .std() is the sample SD (ddof=1), numpy's is ddof=0. We read "
         "the paper's pandas notebook as ddof=1, UNVERIFIED against the released files: the 'match' column shows "
         "which ddof reproduces the published four decimals."),
        "power conditions are UNMATCHED (different scenes): the test shuffles whole scenes between conditions.",
        ("least-change identities pool both power conditions; they name the prompt that changes the answer least, "
         "not a 'default persona' of the model."),
    ]
    return Reanalysis(tuple(str(f) for f in files), "tan-lee-2025", tuple(ddofs), n_resamples, seed,
                      confidence_level, checks, tuple(table6), tuple(diffs), tuple(mins), tuple(notes))


def _least_change(model: str, mrows, n_resamples: int, seed: int) -> list[LeastChange]:
    """Lowest mean cosine distance per axis and side, both conditions pooled, with its scene-bootstrap stability.

    :func:`fairpair.stats.least_change_identity`, as ``fairpair analyze``
    uses it (no test against the runner-up here). Identities are the
    release's labels mapped to Table 2 keys; the first label seen names each.
    """
    import pandas as pd

    from fairpair.stats import least_change_identity

    value = mrows["cosine_distance"].to_numpy(dtype=float)
    if np.isnan(value).all():
        return []
    scene = pd.factorize(mrows["scene"])[0]  # integer codes in order of appearance (fast to factorise)
    axis = mrows["axis"].to_numpy()
    out = []
    order_axes = [a.key for a in TAN_LEE_AXES]
    present = set(axis[~np.isnan(value)])
    codes = {side: pd.factorize(mrows[side])[0] for side in ("sub", "res")}
    for ax in sorted(present, key=order_axes.index):
        for side, code in codes.items():
            data = {"scene": scene, "axis": axis, side: code, "value": value}
            r = least_change_identity(data, axis=ax, side=side, n_resamples=n_resamples, seed=_seed(seed, 11),
                                      n_permutations=0)
            on_axis = (axis == ax) & ~np.isnan(value)
            labels = pd.Series(mrows[f"{side}_label"].to_numpy()[on_axis]).groupby(code[on_axis]).first()
            label = str(labels[r.identity])
            runner = None if r.runner_up is None else str(labels[r.runner_up])
            out.append(LeastChange(
                model, ax, side, label, r.mean, runner, r.runner_up_mean, r.stability,
                f"on axis '{ax}', the {side.upper()} prompt that changes the answer least (lowest mean cosine "
                f"distance from the baseline answer) is '{label}'"))
    return out


def reanalyze_files(files: Sequence[str | Path], **kwargs: Any) -> Reanalysis:
    """:func:`read_release` then :func:`reanalyze` (keyword arguments as there)."""
    frame = read_release(files)
    return reanalyze(frame, files=[str(f) for f in files], **kwargs)

"""The two-party (SUB x RES persona) design: cell means, dispersion, the least-changing prompt.

For each target and each measure stored on the design's persona cases
(e.g. the semantic distance of an answer from the scene's baseline answer,
or a pairwise win rate against it):

* **cells** -- the mean of the measure in every SUB x RES cell of each axis,
  per power condition (template meta ``power``; ``null`` if none), with a
  percentile CI resampling scenes (meta ``scene``, else the template).
* **dispersion** -- Tan & Lee's (2025) metric: the SD of the cell means of
  an axis (``ddof=1``, the sample SD as pandas computes it), averaged over
  axes; per power condition with a scene-bootstrap CI. That raw figure
  (kept: it reproduces the paper's Table 6) grows with answer noise alone
  (0.046, 0.022, 0.011 at 5, 20, 80 scenes with no cell effects), so the
  **noise-corrected** dispersion (:func:`fairpair.stats.corrected_dispersion`:
  the between-cell variance minus each cell mean's sampling variance,
  estimated from the scene x cell interaction) is reported beside it, with
  its own scene-bootstrap CI, and is the figure the report leads with.
* **dispersion tests** -- between two power conditions: a permutation test
  swapping the conditions within matched scenes (same meta ``scene`` under
  both), on the noise-corrected dispersion first (a condition whose answers
  are only noisier does not pass for one with more dispersion) and on the
  raw one (``statistic_kind``); when scenes are not matched, condition
  labels are permuted across scenes instead (unpaired, raw statistic,
  flagged in the note). The seed's critique of the
  original study applies: without matched scenes a difference in
  dispersion may come from the scenes, not from the power disparity.
* **minimum** -- per axis and side (SUB or RES), the identity whose prompt
  has the lowest mean, with its bootstrap stability (share of scene
  resamples where it stays the minimum) and a sign-flip permutation test
  against the runner-up over scenes where both occur. Worded as "the
  prompt that changes the answer least": it is not evidence that the model
  adopts that identity by default.

Every statistic is computed by :mod:`fairpair.stats` (:func:`cell_means_bootstrap`,
:func:`dispersion_bootstrap`, :func:`dispersion_permutation_test`,
:func:`unpaired_dispersion_permutation_test`, :func:`least_change_identity`),
the same functions ``fairpair reanalyze`` uses; this module only selects the
rows and builds the records.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np

from fairpair.analysis._data import RunData
from fairpair.analysis._discover import DISCOVERED_PREFIX
from fairpair.records import (
    CellMean,
    DispersionRow,
    DispersionTest,
    MinimumIdentity,
    TwoPartyBlock,
    interval,
    num,
)
from fairpair.stats import (
    cell_means as _cell_means,
)
from fairpair.stats import (
    cell_means_bootstrap,
    corrected_dispersion,
    dispersion,
    dispersion_bootstrap,
    dispersion_permutation_test,
    least_change_identity,
    unpaired_dispersion_permutation_test,
)

if TYPE_CHECKING:
    from fairpair.battery import Battery

__all__ = ["DDOF", "analyze_two_party"]

DDOF = 1
N_PERMUTATIONS = 9999
_NONE = "(none)"


def _unpaired_test(rows: dict[str, np.ndarray], ca: str, cb: str, seed: int) -> DispersionTest:
    """Permute condition labels across (scene, condition) units: scenes not (or only partly) matched."""
    units = {**rows, "scene": np.array([f"{s}\x00{c}" for s, c in zip(rows["scene"], rows["condition"], strict=True)])}
    r = unpaired_dispersion_permutation_test(units, ddof=DDOF, conditions=(ca, cb), n_resamples=N_PERMUTATIONS,
                                             seed=seed)
    return DispersionTest(condition_a=ca, condition_b=cb, statistic=num(r.statistic), pvalue=num(r.pvalue),
                          paired=False, n_scenes=r.n, n_resamples=r.n_resamples,
                          method="label permutation test of the difference in dispersion (scenes not matched)",
                          note="scenes are not matched between power conditions (meta 'scene'): the test is "
                               "unpaired and a difference may come from the scenes themselves")


def _minimum(rows: dict[str, np.ndarray], axis: str, side: str, cond: str | None, n_resamples: int,
             seed: int) -> MinimumIdentity:
    r = least_change_identity(rows, axis=axis, side=side, condition=cond, n_resamples=n_resamples, seed=seed,
                              n_permutations=N_PERMUTATIONS)
    name = str(r.identity)
    return MinimumIdentity(
        axis=axis, side=side, condition=cond, identity=name, mean=num(r.mean),
        runner_up=None if r.runner_up is None else str(r.runner_up), runner_up_mean=num(r.runner_up_mean),
        stability=r.stability, test=None if r.test is None else f"{r.test.method} over {r.test.n} scenes",
        pvalue=None if r.test is None else num(r.test.pvalue),
        wording=f"on axis '{axis}', the {side.upper()} prompt that changes the answer least is '{name}'")


def analyze_two_party(battery: Battery, data: RunData, *, n_resamples: int, seed: int,
                      confidence_level: float) -> list[TwoPartyBlock]:
    """Results of every two-party design, per target and measure (empty list when there is none)."""
    cases = data.cases
    out: list[TwoPartyBlock] = []
    designs = sorted({cases.design[i] for i in range(len(cases)) if cases.design_kind[i] == "two_party"})
    n_boot = max(n_resamples, 1)
    for did in designs:
        idx = np.array([i for i in range(len(cases)) if cases.design[i] == did and not cases.baseline[i]
                        and cases.axis[i] is not None], dtype=np.intp)
        if idx.size == 0:
            continue
        base_cols = {
            "scene": np.array([str(cases.meta[i].get("scene", cases.template[i])) for i in idx], dtype=object),
            "condition": np.array([str(cases.meta[i]["power"]) if "power" in cases.meta[i] else _NONE for i in idx],
                                  dtype=object),
            "axis": np.array([cases.axis[i] for i in idx], dtype=object),
            "sub": np.array([cases.groups[i].get("sub", "") for i in idx], dtype=object),
            "res": np.array([cases.groups[i].get("res", "") for i in idx], dtype=object),
        }
        for (target, measure), vals in sorted(data.values.items()):
            if measure.startswith(DISCOVERED_PREFIX):  # fairpair discover's axes: its own section
                continue
            answered = data.answered.get(target)
            v = np.where(answered[idx], vals[idx], np.nan) if answered is not None else vals[idx]
            keep = ~np.isnan(v)
            if not keep.any():
                continue
            rows = {k: col[keep] for k, col in base_cols.items()}
            rows["value"] = v[keep]
            out.append(_block(did, target, measure, rows, n_boot, seed, confidence_level))
    return out


def _block(did: str, target: str, measure: str, rows: dict[str, np.ndarray], n_boot: int, seed: int,
           level: float) -> TwoPartyBlock:
    conds = sorted(set(rows["condition"]))
    notes = []
    cells: list[CellMean] = []
    disp: list[DispersionRow] = []
    mins: list[MinimumIdentity] = []
    for cond in conds:
        sel = rows["condition"] == cond
        cm = cell_means_bootstrap(rows, condition=cond, n_resamples=n_boot, confidence_level=level, seed=seed)
        for j in range(cm.mean.size):
            cells.append(CellMean(axis=cm.axis[j], sub=cm.sub[j], res=cm.res[j],
                                  condition=None if cond == _NONE else cond, n=int(cm.n[j]), mean=num(cm.mean[j]),
                                  ci=interval((cm.ci_low[j], cm.ci_high[j]))))
        point = dispersion(_cell_means(rows, condition=cond), ddof=DDOF)
        boot = dispersion_bootstrap(rows, ddof=DDOF, condition=cond, n_resamples=n_boot, confidence_level=level,
                                    seed=seed)
        corr = corrected_dispersion(rows, condition=cond)
        cboot = dispersion_bootstrap(rows, ddof=DDOF, condition=cond, n_resamples=n_boot, confidence_level=level,
                                     seed=seed, corrected=True)
        disp.append(DispersionRow(condition=None if cond == _NONE else cond, statistic=num(point.statistic),
                                  per_axis={str(k): num(x) for k, x in point.per_axis.items()},
                                  ci=interval(boot.ci), ddof=DDOF, n_scenes=cm.n_scenes,
                                  note="; ".join(x for x in (point.note, boot.note, corr.note) if x) or None,
                                  corrected=num(corr.statistic),
                                  corrected_per_axis={str(k): num(x) for k, x in corr.per_axis.items()},
                                  corrected_ci=interval(cboot.ci),
                                  noise_per_axis={str(k): num(x) for k, x in corr.noise_per_axis.items()}))
        for axis in sorted(set(rows["axis"][sel])):
            for side in ("sub", "res"):
                m = _minimum(rows, axis, side, cond, n_boot, seed)
                mins.append(m if cond != _NONE else m.model_copy(update={"condition": None}))
    tests: list[DispersionTest] = []
    real = [c for c in conds if c != _NONE]
    for ca, cb in itertools.combinations(real, 2):
        sa = set(rows["scene"][rows["condition"] == ca])
        sb = set(rows["scene"][rows["condition"] == cb])
        if sa == sb:
            for kind, corrected in (("noise-corrected", True), ("raw", False)):
                r = dispersion_permutation_test(rows, ddof=DDOF, conditions=(ca, cb), n_resamples=N_PERMUTATIONS,
                                                seed=seed, corrected=corrected)
                tests.append(DispersionTest(condition_a=ca, condition_b=cb, statistic=num(r.statistic),
                                            pvalue=num(r.pvalue), paired=True, n_scenes=r.n,
                                            n_resamples=r.n_resamples, method=r.method, note=r.note,
                                            statistic_kind=kind))
        else:
            tests.append(_unpaired_test(rows, ca, cb, seed))
    if len(real) < 2:
        notes.append("fewer than two power conditions (template meta 'power'): no dispersion test")
    return TwoPartyBlock(target=target, measure=measure, design=did, cells=cells, dispersion=disp,
                         dispersion_tests=tests, minimum=mins, n_resamples=n_boot, seed=seed,
                         note="; ".join(notes) or None)

"""Power planning for ``fairpair plan --power``, with the design the analysis uses.

A comparison's pairs are not independent: names are crossed with templates
(the same names in every template) and repetitions are nested in template x
name cells. The analysis tests the group difference of the cell means with
templates (and, by default, names) as random factors and Satterthwaite df;
this module plans the power of exactly that test
(:func:`fairpair.stats.crossed_power`, after Westfall, Kenny & Judd 2014).

For each counterfactual or crossed design it reports, at the plan's
``alpha`` divided by the number of primary tests (Bonferroni, Holm's first
and strictest step, so slightly conservative for Holm and BH):

* the smallest yes/no rate difference detectable with the target power and
  the smallest continuous difference in SD units;
* what one more repetition, one more name per group or one more template
  buys (standard error and power at the target difference), and the
  repetitions, names or templates the target difference needs;
* for each primary comparison of a judge measure with a margin: the human labels
  that correct it (:mod:`fairpair.analysis._corrected`) with a 95% interval of half
  the margin, from the human-minus-judge spread of a labelled run or an assumed one;
* for each primary comparison with a margin: the probability of a ``fail``
  beyond the margin at the assumed difference and of a ``pass`` at no
  difference and at the assumed one. The ``pass`` follows the verdict's
  rule (TOST at the plan's alpha on the hull of the t interval and Hall's
  1992 skewness-corrected t, :func:`fairpair.stats.crossed_power`): it has
  no closed form, so it is computed from 16,384 simulated audits of the
  normal components model with a fixed seed (the same figures on every
  run). That model's template differences are symmetric; yes/no answers
  near a 0% or 100% rate are skewed and pass somewhat less often. The
  printed lines say so.

Variance components (:class:`fairpair.stats.VarianceComponents`): taken from
an earlier or pilot run when given (``--from RUN``: moment estimates from
that run's cell means, per measure, averaged over the comparison's group
pairs), else assumed: an answer's variance ``discordance / 2`` for yes/no
measures (0.20 by default: one pair in five gets different answers), 1/2 for
continuous ones (so effects are in SD of a paired difference), of which the
template x group, name and template x name components take ``share`` (0.05,
the usual planning ICC; Killip, Mahfoud & Pearce 2004) each (the template x
group one twice that) and repetition noise the rest.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fairpair.battery import recorded_battery
from fairpair.stats import VarianceComponents, crossed_power, estimate_variance_components

if TYPE_CHECKING:
    from fairpair.battery import Battery, Comparison, LoadedBattery
    from fairpair.cases import Plan

__all__ = ["power_plan", "components_from_run", "label_residuals_from_run", "DEFAULTS", "ASSUMED_RESIDUAL_SD"]

DEFAULTS = {"discordance": 0.20, "icc": 0.05, "power": 0.80, "target_difference": 0.05}
MAX_REPETITIONS = 100
MAX_TEMPLATES = 2000
MAX_NAMES = 200


def _primary(b: Battery) -> list[Comparison]:
    return [c for c in b.analysis.comparisons if c.primary]


def _names_estimand(b: Battery, c: Comparison | None = None) -> str:
    """The plan's (or the comparison's) ``generalize.names``; ``random`` when the battery has no such field."""
    own = getattr(c, "generalize", None) if c is not None else None
    plan = getattr(b.analysis, "generalize", None)
    g = own or plan
    return getattr(g, "names", "random") or "random"


def _n_tests(loaded: LoadedBattery, designs: dict[str, dict[str, Any]]) -> int:
    from fairpair.analysis._analyze import _design_groups
    from fairpair.analysis._data import group_pairs

    b = loaded.battery
    total = 0
    for c in _primary(b):
        for did, s in designs.items():
            if c.design and c.design != did:
                continue
            if s.get("attribute") == c.attribute or (s.get("kind") == "crossed" and c.attribute in b.attributes):
                groups = _design_groups(b, did, c.attribute)
                if c.groups != "all_pairs":
                    groups = [g for g in c.groups if g in groups]
                total += len(group_pairs(c, groups))
    if total == 0:  # no plan yet: every measure on every design's comparisons
        total = sum(s.get("comparisons", 1) for s in designs.values() if s.get("kind") in ("counterfactual", "crossed"))
        total *= max(len(b.measures), 1)
    return max(total, 1)


def sign_flip_floor(templates: int) -> float:
    """The smallest two-sided p-value of the exact sign-flip test over ``templates`` templates, ``2^(1-T)``
    (every template's difference of one sign: 2 of the 2^T sign assignments are as extreme)."""
    return 2.0 ** (1 - templates) if templates >= 1 else 1.0


def sign_flip_templates(alpha_per_test: float) -> int:
    """The fewest templates whose sign-flip floor :func:`sign_flip_floor` is below ``alpha_per_test``."""
    t = 1
    while sign_flip_floor(t) >= alpha_per_test and t < MAX_TEMPLATES:
        t += 1
    return t


def _names_per_group(s: dict[str, Any], attribute: str | None) -> int:
    v = s.get("variants_per_group") or 1
    if isinstance(v, dict):
        v = v.get(attribute) if attribute in v else min(v.values(), default=1)
        if isinstance(v, dict):
            v = min(v.values(), default=1)
    return int(v or 1)  # an attribute whose count is null: one name, as when the key is absent


def components_from_run(run_dir: Path | str) -> dict[tuple[str, str], VarianceComponents]:
    """Variance components of each (design, measure) of a run's primary comparisons.

    Parameters
    ----------
    run_dir : path
        A run directory with measurements (a pilot or an earlier run).

    Returns
    -------
    dict
        ``(design id, measure) -> VarianceComponents``: moment estimates
        (:func:`fairpair.stats.estimate_variance_components`) from the
        answers of the first target, averaged over the comparison's group
        pairs. Pairs whose design cannot be estimated (one name a group,
        one template) are left out.

    Raises
    ------
    FairpairError
        Not a run directory, or no component could be estimated.
    """
    from fairpair.analysis._analyze import _design_groups, _designs_for
    from fairpair.analysis._data import group_pairs, load_run_data, open_for_reading, strata_for
    from fairpair.errors import FairpairError

    run_dir = Path(run_dir)
    with open_for_reading(run_dir) as run:
        battery = recorded_battery(run).battery
        data = load_run_data(run.store, keep_details=False)
    if not data.targets:
        raise FairpairError("the run has no answers to estimate variance components from", file=run_dir)
    target = data.targets[0]
    answered = data.answered[target]
    tmpl = np.array(data.cases.template, dtype=object)
    found: dict[tuple[str, str], list[VarianceComponents]] = {}
    for c in _primary(battery):
        vals = data.values.get((target, c.measure))
        if vals is None or c.attribute not in battery.attributes:
            continue
        for did in _designs_for(battery, c, data.cases):
            strata = strata_for(data.cases, did, c.attribute)
            groups = _design_groups(battery, did, c.attribute)
            if c.groups != "all_pairs":
                groups = [g for g in c.groups if g in groups]
            for ga, gb in group_pairs(c, groups):
                ia, ib = strata.column(ga), strata.column(gb)
                idx = np.concatenate([ia[ia >= 0], ib[ib >= 0]])
                is_a = np.concatenate([np.ones((ia >= 0).sum(), bool), np.zeros((ib >= 0).sum(), bool)])
                y = np.where(answered[idx], vals[idx], np.nan)
                names = np.array([f"{int(is_a[k])}:{strata.variant_code[i]}" for k, i in enumerate(idx)], dtype=object)
                try:
                    vc = estimate_variance_components(y, tmpl[idx], names, is_a, source=str(run_dir))
                except ValueError:
                    continue
                found.setdefault((did, c.measure), []).append(vc)
    if not found:
        raise FairpairError("no comparison of this run has 2 templates and 2 names a group with answers: "
                            "no variance components to estimate", file=run_dir)
    out = {}
    for key, vcs in found.items():
        rep = [v.repetition for v in vcs]
        out[key] = VarianceComponents(
            float(np.mean([v.template_group for v in vcs])), float(np.mean([v.name for v in vcs])),
            float(np.mean([v.template_name for v in vcs])),
            float(np.mean(rep)) if all(math.isfinite(r) for r in rep) else math.nan,
            source=f"run {run_dir} ({len(vcs)} group pairs)", templates=vcs[0].templates, names_a=vcs[0].names_a,
            names_b=vcs[0].names_b, repetitions=vcs[0].repetitions, note=vcs[0].note)
    return out


def _power(effect, vc, t, n, r, a, names, margin=None, ea=None):
    return crossed_power(effect, vc, templates=t, names_a=n, names_b=n, repetitions=r, alpha=a, margin=margin,
                         equivalence_alpha=ea, names=names)


def _min_effect(vc, t, n, r, a, names, target) -> float:
    lo, hi = 0.0, 1e-3
    while _power(hi, vc, t, n, r, a, names).power < target:
        lo, hi = hi, hi * 2
        if hi > 1e6:
            return math.nan
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _power(mid, vc, t, n, r, a, names).power < target else (lo, mid)
    return hi


def _needed(fn, start: int, stop: int, target: float) -> int | None:
    """Smallest ``k`` in ``[start, stop]`` with ``fn(k) >= target`` (power grows with ``k``): bisection."""
    if fn(start) >= target:
        return start
    if fn(stop) < target:
        return None
    lo, hi = start, stop
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fn(mid) >= target else (mid, hi)
    return hi


def power_plan(loaded: LoadedBattery, plan: Plan, *, discordance: float = DEFAULTS["discordance"],
               icc: float = DEFAULTS["icc"], power: float = DEFAULTS["power"],
               target_difference: float = DEFAULTS["target_difference"],
               components: dict[tuple[str, str], VarianceComponents] | None = None,
               label_residual_sd: dict[str, float] | None = None) -> dict[str, Any]:
    """Power of the battery's comparisons under the crossed design (see the module notes).

    Parameters
    ----------
    loaded : LoadedBattery
    plan : fairpair.cases.Plan
        From :func:`fairpair.cases.plan` (design sizes).
    discordance : float, default 0.20
        Assumed share of pairs with different yes/no answers (no pilot).
    icc : float, default 0.05
        Share of an answer's variance each structured component takes (no pilot).
    power : float, default 0.80
    target_difference : float, default 0.05
        The assumed difference in a yes/no rate (proportion).
    components : dict, optional
        From :func:`components_from_run` (``--from RUN``); measures not in
        it use the assumed components.
    label_residual_sd : dict, optional
        ``measure -> SD`` of the human-minus-judge difference (:func:`label_residuals_from_run`);
        judge measures not in it assume :data:`ASSUMED_RESIDUAL_SD`.

    Returns
    -------
    dict
        ``assumptions``, ``alpha``, ``n_tests``, ``alpha_per_test``,
        ``designs`` (per design: ``templates``, ``names_per_group``,
        ``repetitions``, ``names``, ``components``, ``standard_error``, ``df``,
        ``min_rate_difference``, ``min_effect_sd``, ``levers`` (power and SE
        at the target with +1 repetition, name, template),
        ``repetitions_needed``, ``names_needed``, ``templates_needed``,
        ``comparisons`` (per primary comparison with a margin:
        ``power_fail``, ``power_pass_at_zero``, ``power_pass_at_effect``))
        ``labels`` (per primary judge comparison with a margin: the human labels a corrected
        95% interval of half the margin needs, :func:`fairpair.stats.labels_needed`, never
        fewer than the simulation's floor :data:`fairpair.analysis._corrected.MIN_LABELS`)
        and ``lines`` (what ``fairpair plan --power`` prints).
    """
    b = loaded.battery
    alpha = b.analysis.alpha
    designs = {did: s for did, s in plan.designs.items() if s.get("kind") in ("counterfactual", "crossed")}
    m = _n_tests(loaded, designs)
    a = alpha / m
    components = components or {}
    assumed_bin = VarianceComponents.assumed(discordance / 2.0, share=icc)
    assumed_sd = VarianceComponents.assumed(0.5, share=icc)
    names = _names_estimand(b)
    out: dict[str, Any] = {
        "assumptions": {"discordance": discordance, "icc": icc, "power": power, "target_difference": target_difference,
                        "names": names, "components_from_run": bool(components),
                        "correction": f"Bonferroni alpha/{m} (conservative for {b.analysis.correction})"},
        "alpha": alpha, "n_tests": m, "alpha_per_test": a, "designs": {}, "lines": [],
    }
    lines = out["lines"]
    lines.append(f"power planning for the analysis's test (templates{' and names' if names == 'random' else ''} "
                 f"random, repetitions nested; Satterthwaite df): {int(power * 100)}% power, alpha {alpha} / {m} "
                 f"primary tests = {a:.4g} per test")
    if components:
        lines.append("variance components estimated from " + "; ".join(
            sorted({f"{k[1]}: {v.source}" for k, v in components.items()})))
    lines.append(f"assumed where no run gives them: discordance {discordance:.2f} (share of pairs with different "
                 f"yes/no answers); template x group, name and template x name components {icc} of an answer's "
                 f"variance each")
    scales = _scales(loaded)
    if any(c.margin for c in _primary(b)):
        rule = (f"P(pass) follows the verdict's rule: the {(1 - 2 * alpha) * 100:g}% interval, the hull of the t and "
                f"Hall's (1992) skewness-corrected t, inside the margin; no closed form, so from 16,384 simulated "
                f"audits of normally distributed components (fixed seed); yes/no answers near a 0% or 100% rate "
                f"skew the template differences and pass somewhat less often")
        out["assumptions"]["pass_rule"] = rule
        lines.append(rule)
    for did, s in designs.items():
        t = int(s.get("templates") or 0)
        r = int(s.get("repetitions") or 1)
        n = _names_per_group(s, s.get("attribute"))
        if t < 2 or n < (2 if names == "random" else 1):
            why = (f"{t} templates" if t < 2 else
                   f"{n} name(s) per group: the result cannot generalise to names of a group (names random); "
                   f"use at least 2, better 5 or more, or declare names fixed")
            lines.append(f"design {did}: insufficient design to plan ({why})")
            out["designs"][did] = {"templates": t, "names_per_group": n, "repetitions": r,
                                   "note": f"insufficient design: {why}"}
            continue
        short = _design_shortfall(t, n, names)
        if short:
            lines.append(f"design {did}: insufficient design for a verdict ({short}); the figures below show "
                         f"what it could detect if it were analysed")
        bin_measure = next((c.measure for c in _primary(b) if scales.get(c.measure) == "binary"
                            and (did, c.measure) in components), None)
        vc = components.get((did, bin_measure), assumed_bin) if bin_measure else assumed_bin
        base = _power(target_difference, vc, t, n, r, a, names)
        rd = _min_effect(vc, t, n, r, a, names, power)
        rd = rd if rd <= 1.0 else math.nan  # a rate difference cannot exceed 100 points
        dz = _min_effect(assumed_sd, t, n, r, a, names, power)
        rd_fixed = _min_effect(vc, t, n, r, a, "fixed", power) if names == "random" else rd
        rd_fixed = rd_fixed if rd_fixed <= 1.0 else math.nan
        levers = {}
        for key, (tt, nn, rr) in {"as planned": (t, n, r), "one more repetition": (t, n, r + 1),
                                  "one more name per group": (t, n + 1, r),
                                  "one more template": (t + 1, n, r)}.items():
            p_ = _power(target_difference, vc, tt, nn, rr, a, names)
            levers[key] = {"templates": tt, "names_per_group": nn, "repetitions": rr,
                           "standard_error": p_.standard_error, "power": p_.power}
        reps_needed = _needed(lambda k, vc=vc, t=t, n=n: _power(target_difference, vc, t, n, k, a, names).power,
                              r, MAX_REPETITIONS, power)
        names_needed = _needed(lambda k, vc=vc, t=t, r=r: _power(target_difference, vc, t, k, r, a, names).power,
                               n, MAX_NAMES, power)
        tmpl_needed = _needed(lambda k, vc=vc, n=n, r=r: _power(target_difference, vc, k, n, r, a, names).power,
                              t, MAX_TEMPLATES, power) if base.power < power else t
        d = {"templates": t, "names_per_group": n, "repetitions": r, "names": names,
             "components": vc.as_dict(), "standard_error": base.standard_error, "df": base.df,
             "power_at_target": base.power, "min_rate_difference": rd, "min_rate_difference_names_fixed": rd_fixed,
             "min_effect_sd": dz, "levers": levers,
             "repetitions_needed": reps_needed, "names_needed": names_needed, "templates_needed": tmpl_needed,
             "comparisons": {}, "insufficient": short}
        out["designs"][did] = d
        lines.append(f"design {did}: {t} templates x {n} names per group x {r} repetitions; standard error of a "
                     f"yes/no rate difference {base.standard_error * 100:.1f} points (df {base.df:.1f})")
        floor, t_min = sign_flip_floor(t), sign_flip_templates(a)
        d["sign_flip_floor"] = floor
        lines.append(f"  a difference that every template shows alike (no variance) is tested by the exact "
                     f"sign-flip test over templates, whose smallest p-value is 2^(1-{t}) = {floor:.2g}: "
                     + (f"below {a:.4g}, a fail is reachable" if floor < a else
                        f"not below {a:.4g}, such a difference can never fail; use at least {t_min} templates"))
        lines.append(f"  smallest yes/no rate difference detectable: {rd * 100:.1f} points"
                     if rd == rd else "  yes/no rates: power not reachable (even a 100-point difference falls short)")
        if names == "random":
            fixed_txt = f"{rd_fixed * 100:.1f} points" if rd_fixed == rd_fixed else "not reachable either"
            lines.append(f"  (for these names only, names fixed: {fixed_txt}; the gap is the price of "
                         f"generalising to other names of the groups from {n} names)")
        lines.append(f"  smallest continuous difference detectable: {dz:.2f} SD of a paired difference (assumed "
                     f"components)")
        tgt = f"{target_difference * 100:.0f} points"
        lines.append(f"  power for a {tgt} difference: " + ", ".join(
            f"{k} {v['power'] * 100:.0f}% (SE {v['standard_error'] * 100:.2f})" for k, v in levers.items()))
        need = [f"{reps_needed} repetitions" if reps_needed else f"no number of repetitions (up to {MAX_REPETITIONS})",
                f"{names_needed} names per group" if names_needed else f"no number of names (up to {MAX_NAMES})",
                f"{tmpl_needed} templates" if tmpl_needed else f"more than {MAX_TEMPLATES} templates"]
        lines.append(f"  {int(power * 100)}% power for {tgt} needs, one lever at a time: " + "; ".join(need))
        for c in _primary(b):
            if c.margin is None or c.margin <= 0 or (c.design and c.design != did):
                continue
            scale = scales.get(c.measure, "continuous")
            cvc = components.get((did, c.measure))
            cnames = _names_estimand(b, c)
            if scale == "binary":
                cvc, eff, unit = cvc or assumed_bin, target_difference, "points"
            elif cvc is not None:
                eff, unit = 2.0 * c.margin, "units"
            else:
                continue  # a continuous measure's variance in its own units needs a pilot run
            try:
                pf = _power(eff, cvc, t, n, r, a, cnames, margin=c.margin, ea=alpha)
                p0 = _power(0.0, cvc, t, n, r, a, cnames, margin=c.margin, ea=alpha)
            except ValueError as exc:
                lines.append(f"  {c.measure}: {exc}")
                continue
            cid = c.id or f"{c.measure}-by-{c.attribute}"
            d["comparisons"][cid] = {"measure": c.measure, "margin": c.margin, "assumed_effect": eff,
                                     "names": cnames, "power_fail": pf.power_fail,
                                     "power_pass_at_zero": p0.power_pass, "power_pass_at_effect": pf.power_pass,
                                     "components": cvc.as_dict()}
            show = (lambda v: f"{v * 100:.1f} points") if unit == "points" else (lambda v: f"{v:g}")
            lines.append(f"  {cid} (margin {show(c.margin)}): P(fail) at a true {show(eff)} "
                         f"{pf.power_fail * 100:.0f}%; P(pass) at no difference {p0.power_pass * 100:.0f}%")
    if not designs:
        lines.append("no counterfactual or crossed design: nothing to plan")
    _label_plan(b, plan, designs, components, label_residual_sd or {}, a, out)
    return out


#: SD of the human-minus-judge difference on a 1-5 rubric assumed without a labelled run (one level
#: of disagreement in three answers, two raters' noise included).
ASSUMED_RESIDUAL_SD = 0.8


def _label_plan(b: Battery, plan: Plan, designs: dict, components: dict, residual: dict[str, float], a: float,
                out: dict[str, Any]) -> None:
    """The human labels each primary judge comparison needs (``out["labels"]`` and its lines)."""
    from fairpair.analysis._corrected import MIN_LABELS
    from fairpair.stats import labels_needed

    judged = {m for m, s in b.measures.items() if s.kind == "judge"}
    rows = {}
    for c in _primary(b):
        root = c.measure.split(".", 1)[0]
        if root not in judged or not c.margin or c.margin <= 0:
            continue
        sd = residual.get(c.measure, ASSUMED_RESIDUAL_SD)
        for did, s in designs.items():
            if c.design and c.design != did:
                continue
            t, r = int(s.get("templates") or 0), int(s.get("repetitions") or 1)
            n = _names_per_group(s, s.get("attribute"))
            cvc = components.get((did, c.measure))
            se = 0.0
            if cvc is not None and t >= 2 and n >= 1:
                se = _power(0.0, cvc, t, n, r, a, _names_estimand(b, c)).standard_error
            need = labels_needed(c.margin / 2.0, sd, se_judge=se, n_answers=2 * t * n * r)
            cid = c.id or f"{c.measure}-by-{c.attribute}"
            k = max(MIN_LABELS, math.ceil(need)) if math.isfinite(need) else None
            rows[cid] = {"measure": c.measure, "design": did, "half_width": c.margin / 2.0, "residual_sd": sd,
                         "residual_sd_from_run": c.measure in residual, "judge_standard_error": se,
                         "labels_needed": k}
            src = "from the run's labels" if c.measure in residual else "assumed"
            judge_se = (f"the judge's own SE {se:.3g} counted" if cvc is not None else
                        "the judge's own error not counted (give --from RUN)")
            out["lines"].append(
                f"  {cid}: human labels for a corrected 95% interval of +/-{c.margin / 2:g} (half the margin): "
                + (f"{k}" if k is not None else "not reachable (the judge's own error is wider)")
                + f" (human-minus-judge SD {sd:.2f}, {src}; {judge_se}; at least {MIN_LABELS}, the simulation's "
                  "floor; fairpair label RUN draws them)")
    if rows:
        out["labels"] = rows


def label_residuals_from_run(run_dir: Path | str) -> dict[str, float]:
    """``measure -> SD`` of the human-minus-judge difference within groups, from a run's stored labels
    (several raters of an answer as their mean; groups by the case's group label); measures with fewer
    than 3 labelled answers are left out."""
    from fairpair.analysis._corrected import load_labels
    from fairpair.analysis._data import open_for_reading

    out: dict[str, float] = {}
    with open_for_reading(Path(run_dir)) as run:
        st = run.store
        labels, _notes = load_labels(st)
        if not labels:
            return out
        groups = {c.id: c.group_label() for c in st.iter_cases()}
        res: dict[str, dict[str, list[float]]] = {}
        for (target, measure), hl in labels.items():
            judge = {m.case_id: m.value for m in st.measurements(measure, status="ok") if m.target == target}
            for case_id, h in hl.value.items():
                f = judge.get(case_id)
                if isinstance(f, (int, float)):
                    res.setdefault(measure, {}).setdefault(groups.get(case_id, "?"), []).append(h - float(f))
    for measure, by in res.items():
        dev = [x - float(np.mean(v)) for v in by.values() for x in v]
        k = sum(len(v) for v in by.values())
        if k - len(by) >= 2:
            out[measure] = float(np.sqrt(np.sum(np.square(dev)) / (k - len(by))))
    return out


def _design_shortfall(templates: int, names_per_group: int, names: str) -> str | None:
    """Why the analysis would call this design insufficient (its own thresholds), or None."""
    try:
        from fairpair.analysis._design import MIN_NAMES, MIN_TEMPLATES
    except ImportError:  # an analysis without design thresholds
        return None
    need_t = MIN_TEMPLATES[names] if isinstance(MIN_TEMPLATES, dict) else MIN_TEMPLATES
    out = []
    if templates < need_t:
        out.append(f"{templates} templates, at least {need_t} needed")
    if names == "random" and names_per_group < MIN_NAMES:
        out.append(f"{names_per_group} names per group: the result cannot generalise to other names of a group; "
                   f"use at least {MIN_NAMES}, or declare names fixed")
    return "; ".join(out) or None


def _scales(loaded: LoadedBattery) -> dict[str, str]:
    from fairpair.analysis._data import measure_scale

    b = loaded.battery
    out = {}
    for c in b.analysis.comparisons:
        try:
            out[c.measure] = measure_scale(b, c.measure)
        except Exception:  # noqa: BLE001 - a measure that cannot be built: treat as continuous
            out[c.measure] = "continuous"
    return out

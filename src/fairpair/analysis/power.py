"""Power planning for ``fairpair plan --power``.

For each counterfactual or crossed design of a battery, at the plan's
``alpha`` divided by the number of primary tests (Bonferroni, which is
Holm's first and strictest step, so the figures are slightly conservative
for Holm and BH):

* the smallest difference in a yes/no rate detectable with 80% power
  (McNemar, Connor 1987);
* the smallest difference in a continuous measure, in SD-of-the-paired-
  difference units ``d_z`` (Wilcoxon signed-rank, via the t power at the
  Pitman efficiency 3/pi);
* the repetitions needed to detect a target difference in a yes/no rate
  (default 5 points), or the templates needed when repetitions cannot get
  there.

Assumptions (stated in the output): a **discordance** of 0.20 (one pair in
five gets different yes/no answers for the two names; measure it in a
pilot run: ``b + c`` over the pairs in results.json) and an **intra-template
correlation** of 0.05 for the design effect ``1 + (m - 1) * icc``, with
``m`` the pairs per template (Kish 1965; Killip, Mahfoud & Pearce 2004).
Because the design effect grows with the pairs per template, more
repetitions of the same templates add ever less information: the
effective pairs cannot exceed ``templates / icc``.
"""

from __future__ import annotations

import math
from typing import Any

from fairpair.stats._power import mcnemar_power, min_detectable_effect, min_detectable_risk_difference

__all__ = ["power_plan", "DEFAULTS"]

DEFAULTS = {"discordance": 0.20, "icc": 0.05, "power": 0.80, "target_difference": 0.05}
MAX_REPETITIONS = 200
MAX_TEMPLATES = 2000


def _n_tests(loaded, designs: dict[str, dict[str, Any]]) -> int:
    from fairpair.analysis._analyze import _design_groups
    from fairpair.analysis._data import group_pairs

    b = loaded.battery
    prim = [c for c in b.analysis.comparisons if c.primary]
    total = 0
    for c in prim:
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


def _power_at(templates: int, per_template: int, reps: int, delta: float, psi: float, alpha: float,
              icc: float) -> float:
    n = templates * per_template * reps
    return mcnemar_power(n, delta, psi, alpha=alpha, cluster_size=per_template * reps, icc=icc).power


def _min_dz(n: float, alpha: float, power: float, cluster_size: float, icc: float) -> float:
    """Minimal detectable ``d_z`` for the Wilcoxon test (stats package; normal approximation as fallback)."""
    try:
        return float(min_detectable_effect(n, test="wilcoxon", alpha=alpha, power=power, cluster_size=cluster_size,
                                           icc=icc).effect)
    except ValueError:  # the noncentral t CDF can return NaN far in the tail; the normal limit is then exact enough
        from scipy.stats import norm

        n_eff = n / (1 + (cluster_size - 1) * icc) * 3 / math.pi
        return float((norm.isf(alpha / 2) + norm.ppf(power)) / math.sqrt(n_eff))


def power_plan(loaded, plan, *, discordance: float = DEFAULTS["discordance"], icc: float = DEFAULTS["icc"],
               power: float = DEFAULTS["power"],
               target_difference: float = DEFAULTS["target_difference"]) -> dict[str, Any]:
    """Smallest detectable differences for the battery's design.

    Parameters
    ----------
    loaded : LoadedBattery
    plan : fairpair.cases.Plan
        From :func:`fairpair.cases.plan` (design sizes).
    discordance, icc, power, target_difference : float
        Planning assumptions (see the module notes).

    Returns
    -------
    dict
        ``assumptions``, ``alpha``, ``n_tests``, ``alpha_per_test``,
        ``designs`` (per design: pairs, templates, pairs per template,
        design effect, ``min_rate_difference``, ``min_effect_sd``,
        ``repetitions_needed``, ``templates_needed``) and ``lines`` (the
        text ``fairpair plan --power`` prints).
    """
    b = loaded.battery
    alpha = b.analysis.alpha
    designs = {did: s for did, s in plan.designs.items() if s.get("kind") in ("counterfactual", "crossed")}
    m = _n_tests(loaded, designs)
    a = alpha / m
    out: dict[str, Any] = {
        "assumptions": {"discordance": discordance, "icc": icc, "power": power,
                        "target_difference": target_difference,
                        "correction": f"Bonferroni alpha/{m} (conservative for {b.analysis.correction})"},
        "alpha": alpha, "n_tests": m, "alpha_per_test": a, "designs": {}, "lines": [],
    }
    lines = out["lines"]
    lines.append(f"power planning: {int(power * 100)}% power, alpha {alpha} / {m} primary tests = {a:.4g} per test")
    lines.append(f"assumptions: discordance {discordance:.2f} (share of pairs with different yes/no answers), "
                 f"intra-template correlation {icc} (design effect 1 + (pairs per template - 1) x icc)")
    for did, s in designs.items():
        n = int(s.get("pairs") or 0)
        templates = int(s.get("templates") or 0)
        reps = int(s.get("repetitions") or 1)
        if n < 2 or templates < 1:
            lines.append(f"design {did}: too few pairs ({n}) to plan")
            continue
        per_template = max(n // (templates * reps), 1)  # positions (variant pairs) per template and repetition
        m_size = n / templates
        de = 1 + (m_size - 1) * icc
        rd = min_detectable_risk_difference(n, discordance, alpha=a, power=power, cluster_size=m_size, icc=icc)
        dz = _min_dz(n, a, power, m_size, icc)
        reps_needed = next((r for r in range(1, MAX_REPETITIONS + 1)
                            if _power_at(templates, per_template, r, target_difference, discordance, a, icc) >= power),
                           None)
        tmpl_needed = next((t for t in range(templates, MAX_TEMPLATES + 1)
                            if _power_at(t, per_template, reps, target_difference, discordance, a, icc) >= power), None)
        d = {"pairs": n, "templates": templates, "repetitions": reps, "pairs_per_template": m_size,
             "design_effect": de, "effective_pairs": n / de, "min_rate_difference": rd.effect,
             "min_effect_sd": dz, "repetitions_needed": reps_needed, "templates_needed": tmpl_needed,
             "note": rd.note}
        out["designs"][did] = d
        lines.append(f"design {did}: {n} pairs per comparison ({templates} templates x {per_template} variant "
                     f"pairs x {reps} repetitions), design effect {de:.2f}, ~{n / de:.0f} effective pairs")
        if rd.effect == rd.effect:
            lines.append(f"  smallest yes/no rate difference detectable: {rd.effect * 100:.1f} points")
        else:
            lines.append(f"  yes/no rates: {rd.note}")
        lines.append(f"  smallest continuous difference detectable: {dz:.2f} SD of the paired differences")
        tgt = f"{target_difference * 100:.0f} points"
        if reps_needed is not None:
            lines.append(f"  repetitions needed for a {tgt} difference in a yes/no rate: {reps_needed} "
                         f"(with {templates} templates)")
        else:
            lines.append(f"  a {tgt} difference in a yes/no rate is out of reach by repeating {templates} templates "
                         f"(at most ~{templates / icc:.0f} effective pairs); "
                         + (f"{tmpl_needed} templates at {reps} repetitions would reach it"
                            if tmpl_needed else "add templates"))
    if not designs:
        lines.append("no counterfactual or crossed design: nothing to plan")
    return out

"""A ranking audit with planted biases, whole: the battery, the exact truth, and the recovery check.

Used by the end-to-end test and by ``benchmarks/sim_ranking_e2e.py``: a
``ranking`` battery (k groups, one candidate per group in each prompt,
names crossed with templates, groups placed by the design's Latin square)
run against the ``mock`` target in its ranking mode, with a selection bias
(per-group Plackett-Luce weights) and a position bias (per-slot weights).

The truth is exact: the mock draws the first place with probability
``w_g * p_s / sum_j w_j * p_j`` for the candidate of group g in slot s, and
every order of the design is used equally often (the battery's
repetitions are a multiple of the orders), so the selection rate of a group
is that probability averaged over the orders, and the top-pick rate of a
slot likewise (:func:`true_rates`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ranking_battery", "true_rates", "Recovery", "recovery"]

GROUP_NAMES = {
    "g1": ["Lucía García", "Javier Martín", "Carmen López", "Pablo Sánchez", "Marta Romero", "Sergio Navarro",
           "Elena Ortega", "Raúl Molina"],
    "g2": ["Fátima El Amrani", "Youssef Benali", "Salma Haddad", "Hamza Bouzid", "Nadia Cherkaoui",
           "Karim Mansouri", "Samira Ouali", "Rachid Tazi"],
    "g3": ["Valentina Quispe", "Mateo Huamán", "Camila Rojas", "Santiago Mamani", "Daniela Cárdenas",
           "Andrés Villca", "Ximena Condori", "Joaquín Apaza"],
    "g4": ["Aminata Diallo", "Mamadou Ndiaye", "Fatou Sow", "Ibrahima Coulibaly", "Awa Traoré", "Moussa Keita",
           "Mariama Bah", "Ousmane Sy"],
}


def ranking_battery(*, k: int = 4, templates: int = 8, names: int = 6, repetitions: int = 8, seed: int = 0,
                    selection: Mapping[str, float] | None = None, position: Sequence[float] = (),
                    order: str = "latin_square", confidence_level: float = 0.95, style: str = "mixed",
                    unparsed: float = 0.0, names_estimand: str = "random") -> dict[str, Any]:
    """A ranking battery (as a dict, to dump as YAML) with ``k`` groups ``g1..gk`` and the mock's biases.

    ``templates`` job postings x ``repetitions`` x ``names`` name positions
    prompts; ``selection``: group -> weight; ``position``: weight per slot.
    """
    groups = {g: {"variants": GROUP_NAMES[g][:names]} for g in list(GROUP_NAMES)[:k]}
    slots = "\n".join(f"- {{candidato_{i}}}" for i in range(1, k + 1))
    tpls = [{"id": f"puesto{t}",
             "turns": [f"Puesto {t}: ordena a estas personas candidatas (mismo CV) de mejor a peor.\n{slots}\n"
                       "Responde con una lista numerada."]}
            for t in range(templates)]
    return {
        "schema_version": 1, "name": "ranking_sim", "language": "es", "seed": seed, "repetitions": repetitions,
        "attributes": {"origen": {"signal": "name", "slot": "nombre", "groups": groups}},
        "templates": tpls,
        "designs": [{"kind": "ranking", "id": "seleccion", "attribute": "origen", "slot": "candidato",
                     "order": order}],
        "target": {"kind": "mock", "ranking": {"selection": dict(selection or {}), "position": list(position),
                                               "style": style, "unparsed": unparsed}},
        "measures": {"orden": {"kind": "ranking"}},
        "analysis": {"bootstrap_resamples": 0, "confidence_level": confidence_level,
                     "generalize": {"names": names_estimand}},
    }


def true_rates(battery: Mapping[str, Any]) -> tuple[dict[str, float], list[float]]:
    """The exact selection rate of each group and top-pick rate of each slot under the battery's design."""
    from fairpair.battery import williams_rows

    d = battery["designs"][0]
    groups = list(battery["attributes"][d["attribute"]]["groups"])
    n = len(groups)
    rk = battery["target"]["ranking"]
    w = [float(rk["selection"].get(g, 1.0)) for g in groups]
    pos = list(rk.get("position") or [])
    p = [float(pos[s]) if s < len(pos) else 1.0 for s in range(n)]
    rows = williams_rows(n) if d.get("order", "latin_square") == "latin_square" else \
        [[(i + j) % n for j in range(n)] for i in range(n)]
    by_group = {g: 0.0 for g in groups}
    by_slot = [0.0] * n
    for row in rows:
        weights = [w[g] * p[s] for s, g in enumerate(row)]
        total = sum(weights)
        for s, g in enumerate(row):
            by_group[groups[g]] += weights[s] / total / len(rows)
            by_slot[s] += weights[s] / total / len(rows)
    return by_group, by_slot


@dataclass(frozen=True)
class Recovery:
    """Whether one audit recovered the planted biases.

    ``selection_covered``: every group's selection-rate interval holds its
    true rate; ``position_covered``: every slot's top-pick interval holds
    its true rate; ``selection_detected`` / ``position_detected``: the
    omnibus test of equal groups / the F test of equal slots rejects at
    ``alpha``.
    """

    selection_covered: bool
    position_covered: bool
    selection_detected: bool
    position_detected: bool
    n_unparsed: int

    @property
    def recovered(self) -> bool:
        return self.selection_covered and self.position_covered and self.selection_detected \
            and self.position_detected


def _inside(ci, x: float) -> bool:
    return ci is not None and ci[0] is not None and ci[1] is not None and ci[0] - 1e-12 <= x <= ci[1] + 1e-12


def recovery(result: Mapping[str, Any], battery: Mapping[str, Any], alpha: float = 0.05) -> Recovery:
    """Compare one ``results.json`` ``rankings`` record with :func:`true_rates`."""
    by_group, by_slot = true_rates(battery)
    sel = {s["group"]: s for s in result["selection"]}
    slots = {s["slot"]: s for s in result["position"]["slots"]}
    omni_p = (result.get("omnibus") or {}).get("pvalue")
    pos_p = (result["position"].get("top_test") or {}).get("pvalue")
    return Recovery(
        selection_covered=all(_inside(sel[g]["rate_ci"], r) for g, r in by_group.items()),
        position_covered=all(_inside(slots[s + 1]["top_rate_ci"], r) for s, r in enumerate(by_slot)),
        selection_detected=omni_p is not None and omni_p < alpha,
        position_detected=pos_p is not None and pos_p < alpha,
        n_unparsed=int(result.get("n_unparsed") or 0))

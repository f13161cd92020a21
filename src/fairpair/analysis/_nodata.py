"""Why a comparison says nothing: ``no data`` and ``constant measure`` as their own reasons.

A comparison with no complete pair (never measured, every answer failed, every
pair dropped) or with a measure that took one value in every answer of both
groups carries no information about a difference. Its verdict stays what the
rule gives (inconclusive: never a pass), but the sentence must not blame an
interval "that does not settle the margin": it gives the reason and the counts.

:func:`no_data_reason` reads one comparison of ``results.json`` (a mapping with
``n_pairs``, ``n_dropped``, ``value_a``, ``value_b``, ``ci``, ``note``);
:func:`no_data_clause` words it in ``es`` or ``en``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypedDict

__all__ = ["no_data_reason", "no_data_clause", "NO_DATA", "CONSTANT"]

NO_DATA = "no data"
CONSTANT = "constant measure"

_Text = TypedDict("_Text", {"nodata.none": str, "nodata.dropped": str, "nodata.dropped.one": str,
                             "constant": str, "pair": tuple[str, str]})

_TEXT: dict[str, _Text] = {
    "en": {
        "nodata.none": "no data: not one matched pair has this measure (not measured, or no answers)",
        "nodata.dropped": ("no data: all {dropped} matched pairs were dropped for a failed answer or a missing "
                           "measurement"),
        "nodata.dropped.one": ("no data: the only matched pair was dropped for a failed answer or a missing "
                               "measurement"),
        "constant": ("constant measure: every answer of {pairs} has the same value ({value}), so it says "
                     "nothing about a difference"),
        "pair": ("the only pair", "the {n} pairs"),
    },
    "es": {
        "nodata.none": ("sin datos: ningún par emparejado tiene esta medida (no se midió o no hubo respuestas)"),
        "nodata.dropped": ("sin datos: se descartaron los {dropped} pares emparejados por una respuesta fallida "
                           "o una medida ausente"),
        "nodata.dropped.one": ("sin datos: se descartó el único par emparejado por una respuesta fallida o una "
                               "medida ausente"),
        "constant": ("medida constante: todas las respuestas {pairs} tienen el mismo valor ({value}), "
                     "así que no dice nada sobre una diferencia"),
        "pair": ("del único par", "de los {n} pares"),
    },
}


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


def no_data_reason(comp: Mapping[str, Any]) -> str | None:
    """``"no data"`` (0 complete pairs), ``"constant measure"`` (one value in every answer of both
    groups) or ``None`` (the data can speak; the verdict's own clause applies)."""
    n = comp.get("n_pairs")
    if isinstance(n, int) and n == 0:
        return NO_DATA
    note = str(comp.get("note") or "")
    if "measure is constant" in note:
        return CONSTANT
    a, b = _num(comp.get("value_a")), _num(comp.get("value_b"))
    ci = comp.get("ci")
    if (a is not None and a == b and (a in (0.0, 1.0) if comp.get("scale") == "binary" else False)
            and isinstance(ci, (list, tuple)) and len(ci) == 2 and _num(ci[0]) == 0.0 and _num(ci[1]) == 0.0):
        return CONSTANT  # a yes/no measure at 0% or 100% in both groups, interval exactly [0, 0]
    return None


def no_data_clause(comp: Mapping[str, Any], lang: str) -> str | None:
    """The clause that replaces the verdict's (e.g. "no data: all 12 matched pairs were dropped ..."),
    in ``lang`` (``es`` or ``en``; English otherwise); ``None`` when :func:`no_data_reason` is None."""
    reason = no_data_reason(comp)
    if reason is None:
        return None
    t = _TEXT.get(lang, _TEXT["en"])
    if reason == NO_DATA:
        dropped = comp.get("n_dropped") or 0
        if dropped == 1:
            return t["nodata.dropped.one"]
        return t["nodata.dropped"].format(dropped=dropped) if dropped else t["nodata.none"]
    value = _num(comp.get("value_a"))
    if comp.get("scale") == "binary" and value is not None:
        shown = f"{100 * value:.0f}%" if lang == "en" else f"{100 * value:.0f} %"
    else:
        shown = "—" if value is None else (f"{value:g}" if lang == "en" else f"{value:g}".replace(".", ","))
    n = comp.get("n_pairs") or 0
    one, many = t["pair"]
    pairs = (one if n == 1 else many).format(n=n)  # "the only pair", never "the 1 pairs"
    return t["constant"].format(pairs=pairs, value=shown)

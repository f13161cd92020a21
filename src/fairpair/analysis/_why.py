"""Why a comparison has no verdict, or only an ``inconclusive`` one: its reasons, in words.

:func:`comparison_reasons` reads one comparison of ``results.json`` (a
:class:`~fairpair.analysis.ComparisonResult` or its JSON object) and returns its
reasons from the one shared list (:class:`fairpair.records.Reason`), highest
precedence first; :func:`reason_text` says one of them in ``en`` or ``es`` with
the numbers that decided it. Every output (terminal, report, ``results.json``'s
``reasons`` / ``reason``, gate, JUnit, the pytest plugin) names a comparison's
reason through these two functions.

The interval and p-value reasons follow the verdict rule of
:mod:`fairpair.analysis._verdict`: with a margin ``m``, a ``fail`` needs the
``1 - alpha`` interval entirely beyond ``+/-m``, the adjusted p-value against
zero below alpha and the adjusted p-value against ``|difference| <= m`` below
alpha; an ``inconclusive`` names the first of the three that did not hold.
Without a margin the adjusted p-value against zero decides.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeAlias

from fairpair.records import ComparisonResult, IncompleteRun, Reason, first_reason

__all__ = ["comparison_reasons", "reason_text"]

_CORR = {"holm": "Holm", "bh": "Benjamini-Hochberg", "benjamini_hochberg": "Benjamini-Hochberg",
         "bonferroni": "Bonferroni"}

_TEXT = {
    "en": {
        "interval": ("the {level}% interval ({lo} to {hi}) does not settle whether the difference is within the "
                     "{margin} margin"),
        "interval.eq": "; a pass needs the {level}% interval ({lo} to {hi}) inside it",
        "widened.skew": ", widened for skew (Hall)",
        "widened.bounded": ", widened for a bounded measure (logit scale)",
        "widened.docs": " (docs: Analysis, “One inference per comparison”)",
        "interval.none": "the interval is undefined (no variance to estimate it from)",
        "p_margin": ("beyond the margin before the {corr} adjustment, not after (p = {p} against the margin)"),
        "p_zero.margin": ("the interval lies beyond the margin, but the difference is not significant after the "
                          "{corr} adjustment (p = {p} against zero)"),
        "p_zero": "not significant after the {corr} adjustment (p = {p} against zero; no margin was pre-registered)",
        "p_zero.raw": ("significant before the {corr} adjustment, not after (p = {p} against zero; no margin was "
                       "pre-registered)"),
        "p_zero.none": "not significant (p = {p} against zero; no margin was pre-registered)",
        "judge": "the judge of '{measure}' failed its self-test on anchors with known scores: 'pass' is withheld",
        "points": "{m}-point",
    },
    "es": {
        "interval": ("el intervalo al {level} % ({lo} a {hi}) no resuelve si la diferencia está dentro del "
                     "margen de {margin}"),
        "interval.eq": "; para pasar, el intervalo al {level} % ({lo} a {hi}) debe quedar dentro",
        "widened.skew": ", ampliado por la asimetría (Hall)",
        "widened.bounded": ", ampliado por ser una medida acotada (escala logit)",
        "widened.docs": " (documentación: Analysis, «One inference per comparison»)",
        "interval.none": "el intervalo no está definido (no hay variación con la que estimarlo)",
        "p_margin": ("fuera del margen antes del ajuste de {corr}, no después (p = {p} frente al margen)"),
        "p_zero.margin": ("el intervalo queda fuera del margen, pero la diferencia no es significativa tras el "
                          "ajuste de {corr} (p = {p} frente a cero)"),
        "p_zero": ("no es significativa tras el ajuste de {corr} (p = {p} frente a cero; no se prerregistró un "
                   "margen)"),
        "p_zero.raw": ("significativa antes del ajuste de {corr}, no después (p = {p} frente a cero; no se "
                       "prerregistró un margen)"),
        "p_zero.none": "no es significativa (p = {p} frente a cero; no se prerregistró un margen)",
        "judge": ("el juez de «{measure}» no superó su autoprueba con anclas de puntuación conocida: se retiene "
                  "el «pasa»"),
        "points": "{m} puntos",
    },
}


def _t(lang: str) -> dict[str, str]:
    return _TEXT.get(lang, _TEXT["en"])


def _f(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x) if math.isfinite(x) else None


#: One comparison: the record, or its entry of ``results.json``'s ``comparisons`` (a mapping).
Comparison: TypeAlias = "ComparisonResult | Mapping[str, Any]"


def _get(c: Comparison, key: str) -> Any:
    return c.get(key) if isinstance(c, Mapping) else getattr(c, key, None)


def _judge_withheld(c: Comparison) -> bool:
    return "'pass' is withheld" in str(_get(c, "verdict_rule") or "")


def comparison_reasons(c: Comparison, *, incomplete: bool = False) -> list[Reason]:
    """The reasons of one comparison, highest precedence first (empty for a ``pass`` or ``fail`` of a
    complete run).

    ``incomplete``: the run has not stored every answer (``Results.incomplete``), the first reason of
    every comparison whatever its verdict. Reasons another stage already gave the comparison (its
    ``reasons``, e.g. a heterogeneous average over scenarios) are kept, in precedence order.
    """
    from fairpair.analysis._nodata import NO_DATA, no_data_reason

    out: list[Reason] = [Reason.INCOMPLETE_RUN] if incomplete else []
    out += [Reason(r) for r in (_get(c, "reasons") or [])]
    verdict = _get(c, "verdict")
    comp = c if isinstance(c, Mapping) else c.model_dump()
    design = str(_get(c, "design_reason") or "")
    if no_data_reason(comp) == NO_DATA or design.startswith(("no answer of these groups",
                                                             "no template has measured")):
        out.append(Reason.NOT_MEASURED)
    elif verdict == "insufficient design":
        out.append(Reason.INSUFFICIENT_DESIGN)
    elif verdict == "insufficient labels":
        out.append(Reason.INSUFFICIENT_LABELS)
    elif verdict == "inconclusive":
        out.append(_inconclusive_reason(c))
    return sorted(dict.fromkeys(out), key=lambda r: r.rank)


def _inconclusive_reason(c: Comparison) -> Reason:
    if _judge_withheld(c):
        return Reason.UNRELIABLE_JUDGE
    if Reason.HETEROGENEOUS_AVERAGE.value + ":" in str(_get(c, "verdict_rule") or ""):  # the scenario guard
        return Reason.HETEROGENEOUS_AVERAGE
    alpha = _f(_get(c, "alpha")) or 0.05
    margin = _f(_get(c, "margin"))
    ci = _get(c, "ci") or [None, None]
    lo, hi = _f(ci[0]), _f(ci[1])
    p0 = _f(_get(c, "pvalue_adjusted"))
    pm = _f(_get(c, "pvalue_margin_adjusted"))
    if not margin:
        return Reason.ADJUSTED_P_ZERO
    if lo is None or hi is None or not (lo > margin or hi < -margin):
        return Reason.INTERVAL
    if p0 is None or p0 >= alpha:
        return Reason.ADJUSTED_P_ZERO
    if pm is None or pm >= alpha:
        return Reason.ADJUSTED_P_MARGIN
    return Reason.INTERVAL


def _num(x: float | None, lang: str, digits: int = 1) -> str:
    if x is None:
        return "n/a"
    s = f"{x:.{digits}f}"
    if s.startswith("-") and float(s) == 0:
        s = s[1:]
    s = s.replace("-", "−")  # the minus sign of every table
    return s.replace(".", ",") if lang == "es" else s


def _say(text: str, **kw: Any) -> str:
    """``text`` formatted, with "p = < 0.001" read as "p < 0.001"."""
    return text.format(**kw).replace("= < ", "< ")


def _p(p: float | None, lang: str) -> str:
    if p is None:
        return "n/a"
    if p < 0.001:
        return "< " + _num(0.001, lang, 3)
    return _num(p, lang, 3)


def _widened(c: Comparison, lo: float, hi: float, elo: float, ehi: float, f: float) -> str | None:
    """Why the pass interval ``[elo, ehi]`` reaches visibly (by half a shown digit, ``f``: the display
    factor) beyond the plain ``1 - 2 alpha`` t interval, whose half-width is the ``1 - alpha`` interval's
    ``[lo, hi]`` times ``t(1 - alpha, df) / t(1 - alpha/2, df)``: ``"bounded"`` (hulled with the logit-scale
    interval, :data:`fairpair.analysis._paired.CI_METHOD_BOUNDED`), ``"skew"`` (hulled with Hall's t,
    ``CI_METHOD``), or None (not wider, or not a hulled interval)."""
    from scipy import stats

    method = str(_get(c, "ci_method") or "")
    if "Hall" not in method and "logit" not in method:
        return None
    alpha = _f(_get(c, "alpha")) or 0.05
    df = _f(_get(c, "df"))
    dist = stats.t(df) if df is not None and df > 0 else stats.norm()
    half = (hi - lo) / 2 * float(dist.ppf(1 - alpha) / dist.ppf(1 - alpha / 2))
    mid = (hi + lo) / 2
    if max(mid - half - elo, ehi - mid - half) * f < 0.05:
        return None
    return "bounded" if "logit" in method else "skew"


def reason_text(c: Comparison, reason: Reason | str | None = None, lang: str = "en", *,
                incomplete: IncompleteRun | None = None) -> str:
    """One reason of comparison ``c`` in words with its numbers (default: its headline reason, the first
    of :func:`comparison_reasons`). Empty string when it has none.

    The interval is ``group_a - group_b`` as in every table (binary measures in points).
    ``incomplete``: the run's :class:`~fairpair.analysis.IncompleteRun` (words the ``incomplete run``
    reason).
    """
    if reason is None:
        reason = first_reason(_get(c, "reasons") or comparison_reasons(c, incomplete=incomplete is not None))
        if reason is None:
            return ""
    reason = Reason(reason)
    t = _t(lang)
    comp = c if isinstance(c, Mapping) else c.model_dump()
    binary = _get(c, "scale") == "binary"
    f = 100.0 if binary else 1.0
    corr = str(_get(c, "correction") or "holm").split(" ")[0].lower()
    corr = _CORR.get(corr, corr)
    if reason is Reason.INCOMPLETE_RUN:
        return incomplete.text(lang) if incomplete is not None else "run incomplete"
    if reason is Reason.NOT_MEASURED:
        from fairpair.analysis._nodata import no_data_clause

        return no_data_clause(comp, lang) or str(_get(c, "design_reason") or "not measured")
    if reason is Reason.INSUFFICIENT_DESIGN:
        return str(_get(c, "design_reason") or "insufficient design")
    if reason is Reason.UNRELIABLE_JUDGE:
        return _say(t["judge"], measure=str(_get(c, "measure")).split(".")[0])
    rule = str(_get(c, "verdict_rule") or "")
    if reason is Reason.HETEROGENEOUS_AVERAGE and Reason.HETEROGENEOUS_AVERAGE.value + ":" in rule:
        return rule.split(Reason.HETEROGENEOUS_AVERAGE.value + ":", 1)[1].split(";")[0].strip()
    if reason is Reason.INSUFFICIENT_LABELS and _get(c, "labels_reason"):  # analysis._corrected words it
        return str(_get(c, "labels_reason"))
    if reason in (Reason.HETEROGENEOUS_AVERAGE, Reason.INSUFFICIENT_LABELS):  # worded by the stage that gave it
        return str(_get(c, "reason") or reason.value)
    margin = _f(_get(c, "margin"))
    ci = _get(c, "ci") or [None, None]
    lo, hi = _f(ci[0]), _f(ci[1])
    if reason is Reason.INTERVAL:
        if lo is None or hi is None:
            return t["interval.none"]
        m = _num((margin or 0) * f, lang, 1).rstrip("0").rstrip(".,")
        level = _num(100 * (_f(_get(c, "confidence_level")) or 0.95), lang, 0)
        text = _say(t["interval"], level=level, lo=_num(lo * f, lang), hi=_num(hi * f, lang),
                                    margin=_say(t["points"], m=m) if binary else f"±{m}")
        eq = _get(c, "equivalence_ci") or [None, None]
        elo, ehi = _f(eq[0]), _f(eq[1])
        if elo is not None and ehi is not None:  # the interval that decides a pass (TOST at alpha: 1 - 2 alpha)
            eq_level = _num(100 * (1 - 2 * (_f(_get(c, "alpha")) or 0.05)), lang, 0)
            text += _say(t["interval.eq"], level=eq_level, lo=_num(elo * f, lang), hi=_num(ehi * f, lang))
            widened = _widened(c, lo, hi, elo, ehi, f)
            if widened:
                text += t[f"widened.{widened}"] + t["widened.docs"]
        return text
    if reason is Reason.ADJUSTED_P_MARGIN:
        return _say(t["p_margin"], corr=corr, p=_p(_f(_get(c, "pvalue_margin_adjusted")), lang))
    if reason is Reason.ADJUSTED_P_ZERO:
        p0 = _f(_get(c, "pvalue_adjusted"))
        if margin:
            return _say(t["p_zero.margin"], corr=corr, p=_p(p0, lang))
        raw = _f(_get(c, "pvalue"))
        if corr == "none":
            return _say(t["p_zero.none"], p=_p(raw, lang))
        alpha = _f(_get(c, "alpha")) or 0.05
        key = "p_zero.raw" if raw is not None and raw < alpha else "p_zero"
        return _say(t[key], corr=corr, p=_p(p0, lang))
    return reason.value

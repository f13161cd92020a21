"""The report section of the ranking design (issue 17): selection rates, the four-fifths line, position, pairs.

:func:`ranking_view` turns ``results.json``'s ``rankings`` (one section per design,
ranking measure and target, decoded once into typed
:class:`fairpair.records.RankingResult` records: :attr:`fairpair.report._data.ReportData.rankings`)
into the blocks that the HTML and Markdown
partials (``templates/_ranking.html.j2``, ``_ranking.md.j2``) and the
terminal (:func:`ranking_tables`) render: a headline sentence, the
selection rates by group with the ratio to the most selected group and its
four-fifths verdict, a figure of the rates with the four-fifths line
(:func:`selection_plot`), the position effect (top-pick rate and mean rank
by slot, :func:`position_plot`), the tests over the groups and the slots,
and the table of pairwise comparisons with their verdicts. Texts come from
:data:`MESSAGES` (Spanish and English, the style of
:mod:`fairpair.report._catalog`).

The four-fifths rule: a selection rate below four fifths (80%) of the
highest group's rate "will generally be regarded by the Federal enforcement
agencies as evidence of adverse impact" (EEOC et al. 1978, Uniform
Guidelines on Employee Selection Procedures, 29 CFR 1607.4(D)).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

from fairpair.report._catalog import fmt_num, fmt_p, fmt_p_is, fmt_pct, msg, p_reads, verdict_word
from fairpair.report._data import RankingEvidence, ranking_key
from fairpair.report._text import terminal, terminal_text
from fairpair.report._view import (
    RankingEvidenceLine,
    RankingEvidenceView,
    RankingPairRow,
    RankingSelectionRow,
    RankingSlotRow,
    RankingTable,
    RankingView,
)

if TYPE_CHECKING:
    from rich.console import JustifyMethod

    from fairpair.battery import Battery
    from fairpair.records import ComparisonResult, RankingResult

__all__ = ["MESSAGES", "rmsg", "ranking_view", "selection_plot", "position_plot", "ranking_tables"]

MESSAGES: dict[str, dict[str, str]] = {
    "en": {
        "section": "Ranking and selection",
        "intro": ("Each answer ranks {k} equally qualified candidates, one per group, in one prompt; the groups' "
                  "order is rotated over the matched sets (a Latin square). The selection rate is the share of "
                  "answers whose first pick is the group's candidate (parity: {parity})."),
        "block": "{measure} · {design} · target {target}",
        "headline": ("The candidates of “{best}” were picked first in {best_rate} of the answers, those of "
                     "“{worst}” in {worst_rate}: a ratio of {ratio} (verdict interval {lo} to {hi}), {clause}."),
        "clause.fail": "established below the four-fifths line",
        "clause.pass": "established at or above the four-fifths line",
        "clause.inconclusive": "not settled with respect to the four-fifths line",
        "clause.insufficient design": "with no verdict: the design cannot support one",
        "unparsed": ("{n} of {total} answers ({share}) could not be read as a ranking: they are left out of every "
                     "rate and test below."),
        "unparsed.none": "Every one of the {total} answers was read as a ranking.",
        "selection": "Selection rate by group and the four-fifths rule",
        "col.group": "Group",
        "col.rate": "Picked first",
        "col.ci": "CI",
        "col.mean_rank": "Mean rank",
        "col.ratio": "Ratio to {best}",
        "col.ratio_ci": "Verdict interval of the ratio",
        "col.verdict": "Four-fifths verdict",
        "col.n": "Answers",
        "reference.most": "the most selected group, chosen from the data (the interval allows for the choice)",
        "reference.given": "the reference group fixed before the audit",
        "ratio.rule": ("Four-fifths verdict: FAIL when the ratio to {best} ({reference}) is established below 0.8 "
                       "({correction}-adjusted over the groups), PASS when it is established at or above 0.8, "
                       "else INCONCLUSIVE (29 CFR 1607.4(D)). The verdict interval reads the verdict: it runs from "
                       "the one-sided {level}% lower limit (PASS when above 0.8) to the upper limit at the level of "
                       "the group's step in the {correction} correction (FAIL when below 0.8); the unadjusted "
                       "{level}% intervals (`ci`) are in results.json."),
        "position": "Position effect",
        "position.intro": ("Top-pick rate and mean rank of the candidate in each slot of the prompt (1 = first); "
                           "with no position effect every slot is picked first in {parity} of the answers."),
        "col.slot": "Slot",
        "col.top_rate": "Picked first",
        "tests": "Tests",
        "test.groups": "Equal selection rates across groups: {test}, p = {p}",
        "test.cochran": "Cochran's Q over the answers (treats them as independent): Q = {stat}, p = {p}",
        "test.friedman": "Friedman on the ranks (treats the answers as independent): χ² = {stat}, p = {p}",
        "test.position": "Equal top-pick rates across slots: {test}, p = {p}",
        "test.position_rank": "Equal mean ranks across slots: {test}, p = {p}",
        "pairs": "Pairwise comparisons",
        "pairs.intro": ("For every pair of groups, in the same answers: the difference in top-pick rate and the "
                        "preference P(A ranked above B) − P(B ranked above A); the verdicts use {method}, "
                        "{correction} over the pairs; McNemar's exact test (for the preference, the sign test) is "
                        "shown beside it."),
        "pairs.method.random": "the crossed random-effects t (templates and name sets random)",
        "pairs.method.fixed": ("the stratified t over these templates (templates fixed, name sets random: each "
                               "template's per-answer differences averaged)"),
        "claim.fixed": ("The rates, ratios and verdicts are about these {n} template(s) (templates fixed: these "
                        "postings, not others like them) and other names of the groups."),
        "col.pair": "A vs B",
        "col.measure": "Measure",
        "col.estimate": "A − B",
        "col.p": "p (adjusted)",
        "col.mcnemar": "McNemar / sign test",
        "measure.top_pick": "top pick (points)",
        "measure.ranked_above": "ranked above (points)",
        "pairs.whole_range": ("the interval spans the whole range: the name-set variance is estimated from mean "
                              "squares too noisy to bound the difference (Satterthwaite df {df}); more name sets "
                              "or templates narrow it"),
        "figure.selection.title": "Picked first, by group: {measure}",
        "figure.selection.x": "share of answers picking the group's candidate first (%)",
        "figure.selection.parity": "parity (1/{k})",
        "figure.selection.line": "four-fifths of the highest rate",
        "figure.selection.alt": ("Bar chart of the share of answers that pick each group's candidate first, with "
                                 "intervals; a line marks four fifths of the highest rate and another parity. "
                                 "{rows}"),
        "figure.selection.caption": ("A group left of the four-fifths line is selected at less than 80% of the most "
                                     "selected group's rate (29 CFR 1607.4(D)); marker shape and colour give the "
                                     "four-fifths verdict."),
        "figure.position.title": "Picked first, by slot in the prompt: {measure}",
        "figure.position.x": "slot (1 = first in the prompt)",
        "figure.position.y": "share picked first (%)",
        "figure.position.alt": "Top-pick rate by slot with intervals, and parity at {parity}: {rows}",
        "none": "—",
        "terminal.title": "Ranking: {block}",
        "evidence": "Masked evidence: the ranked lists side by side",
        "evidence.intro": ("A few matched sets, chosen by a fixed rule (first those whose top pick is the most "
                           "selected group's candidate placed in a slot other than 1, one per template; then the "
                           "first sets of other templates): the order of the candidates in the prompt and the "
                           "order in the answer. Each candidate's name is replaced by its group's placeholder, "
                           "every other signal value by the marker."),
        "evidence.set": "Matched set {set} · template {template} · repetition {rep}",
        "evidence.position": "Position",
        "evidence.prompt": "In the prompt (slot)",
        "evidence.answer_order": "In the answer (rank)",
        "evidence.from_slot": "slot {slot}",
        "evidence.partial": "The answer gives only its top pick, not a complete order.",
        "evidence.answer": "Answer (masked)",
        "evidence.none": "No parsed answer to quote.",
        "intro.as_shown": ("Each answer ranks {k} candidates, one per group, in the order its request showed them "
                           "(imported answers). The selection rate is the share of answers whose first pick is the "
                           "group's candidate (parity: {parity})."),
        "first_listed": ("The candidate listed first was picked first in {rate} of the answers ({ci}); with no "
                         "position effect, {parity}."),
        "parse": "How the answers were read",
        "parse.intro": ("Each answer is read as an order of its candidates; each named candidate records how its "
                        "name was matched. {renamed}"),
        "parse.renamed": ("{n} candidate(s) in {answers} answer(s) were named with another first name (renamed or "
                          "gender-flipped, e.g. “Heather Yoder” for HEATH YODER): credited to the candidate and "
                          "counted here; the measure option renamed: exclude leaves such answers out."),
        "parse.renamed_excluded": ("{n} answer(s) naming a candidate with another first name were left out "
                                   "(renamed: exclude)."),
        "parse.none_renamed": "No candidate was named with another first name.",
        "col.reading": "Reading",
        "col.answers": "Answers",
        "col.share": "Share",
        "col.match": "Name matched",
        "col.picks": "Candidates named",
        "how.list": "numbered or bulleted list",
        "how.partial": "partial list (top picks only)",
        "how.commas": "comma list",
        "how.arrows": "A > B > C",
        "how.prose": "prose (order of first mention)",
        "how.top_only": "a single candidate named (top pick only)",
        "how.imported": "order given with the answer",
        "how.unparsed": "not read (no ranking found)",
        "how.renamed": "left out: renamed candidate",
        "match.exact": "exactly as shown",
        "match.folded": "case or accents differ",
        "match.word": "by one of its words (surname or first name)",
        "match.fuzzy": "misspelt (similarity ≥ 0.8)",
        "by_template": "Top picks by template",
        "by_template.intro": ("How often each group's candidate was picked first in each template's answers, and in "
                              "brackets the ratio to the most picked group of that template (the table published "
                              "audits give; no interval: one template's answers are not a sample of templates)."),
        "col.template_answers": "Answers read",
        "names": "Top-pick rate by name",
        "names.intro": ("Each name's own rate, for the names shown in at least {min} read answers. {test}"),
        "names.test": ("Do names of one group differ? {test}: χ² = {stat}, df = {df}, p = {p} ({note})."),
        "names.none": "No name was shown in enough answers for a rate of its own.",
        "col.name": "Name",
    },
    "es": {
        "intro.as_shown": ("Cada respuesta ordena {k} candidaturas, una por grupo, en el orden en que las mostró su "
                           "petición (respuestas importadas). La tasa de selección es la proporción de respuestas "
                           "que eligen primero a la candidatura del grupo (paridad: {parity})."),
        "first_listed": ("La candidatura que aparece primera fue la elegida en el {rate} de las respuestas ({ci}); "
                         "sin efecto de la posición, el {parity}."),
        "parse": "Cómo se leyeron las respuestas",
        "parse.intro": ("Cada respuesta se lee como un orden de sus candidaturas; cada candidatura nombrada "
                        "registra cómo se reconoció su nombre. {renamed}"),
        "parse.renamed": ("{n} candidatura(s) en {answers} respuesta(s) aparecen con otro nombre de pila (cambiado "
                          "o de otro género, p. ej. «Heather Yoder» por HEATH YODER): se atribuyen a la candidatura "
                          "y se cuentan aquí; la opción de la medida renamed: exclude deja fuera esas respuestas."),
        "parse.renamed_excluded": ("{n} respuesta(s) que nombran una candidatura con otro nombre de pila quedaron "
                                   "fuera (renamed: exclude)."),
        "parse.none_renamed": "Ninguna candidatura aparece con otro nombre de pila.",
        "col.reading": "Lectura",
        "col.answers": "Respuestas",
        "col.share": "Proporción",
        "col.match": "Nombre reconocido",
        "col.picks": "Candidaturas nombradas",
        "how.list": "lista numerada o con viñetas",
        "how.partial": "lista parcial (solo las primeras)",
        "how.commas": "lista separada por comas",
        "how.arrows": "A > B > C",
        "how.prose": "prosa (orden de primera mención)",
        "how.top_only": "una sola candidatura nombrada (solo la primera)",
        "how.imported": "orden dado con la respuesta",
        "how.unparsed": "no leída (sin orden)",
        "how.renamed": "fuera: candidatura renombrada",
        "match.exact": "tal como se mostró",
        "match.folded": "difieren mayúsculas o tildes",
        "match.word": "por una de sus palabras (apellido o nombre)",
        "match.fuzzy": "con errores (similitud ≥ 0,8)",
        "by_template": "Primeras elecciones por plantilla",
        "by_template.intro": ("Cuántas veces se eligió primero a la candidatura de cada grupo en las respuestas de "
                              "cada plantilla y, entre paréntesis, la razón respecto al grupo más elegido en esa "
                              "plantilla (la tabla que publican las auditorías; sin intervalo: las respuestas de una "
                              "plantilla no son una muestra de plantillas)."),
        "col.template_answers": "Respuestas leídas",
        "names": "Tasa de primera elección por nombre",
        "names.intro": "La tasa de cada nombre, para los nombres mostrados en al menos {min} respuestas leídas. {test}",
        "names.test": ("¿Difieren los nombres de un grupo? {test}: χ² = {stat}, gl = {df}, p = {p} ({note})."),
        "names.none": "Ningún nombre se mostró en respuestas suficientes para una tasa propia.",
        "col.name": "Nombre",
        "section": "Ranking y selección",
        "intro": ("Cada respuesta ordena {k} candidaturas igual de cualificadas, una por grupo, en un mismo "
                  "mensaje; el orden de los grupos rota entre los conjuntos emparejados (un cuadrado latino). La "
                  "tasa de selección es la proporción de respuestas que eligen primero a la candidatura del grupo "
                  "(paridad: {parity})."),
        "block": "{measure} · {design} · destino {target}",
        "headline": ("Las candidaturas de «{best}» fueron elegidas primero en el {best_rate} de las respuestas, "
                     "las de «{worst}» en el {worst_rate}: una razón de {ratio} (intervalo del veredicto de {lo} "
                     "a {hi}), {clause}."),
        "clause.fail": "por debajo de la regla de los cuatro quintos, de forma establecida",
        "clause.pass": "en o por encima de la regla de los cuatro quintos, de forma establecida",
        "clause.inconclusive": "sin que se pueda decidir respecto a la regla de los cuatro quintos",
        "clause.insufficient design": "sin veredicto: el diseño no permite darlo",
        "unparsed": ("{n} de {total} respuestas ({share}) no se pudieron leer como un ranking: quedan fuera de "
                     "todas las tasas y pruebas que siguen."),
        "unparsed.none": "Las {total} respuestas se leyeron como un ranking.",
        "selection": "Tasa de selección por grupo y regla de los cuatro quintos",
        "col.group": "Grupo",
        "col.rate": "Elegido primero",
        "col.ci": "IC",
        "col.mean_rank": "Puesto medio",
        "col.ratio": "Razón respecto a {best}",
        "col.ratio_ci": "Intervalo del veredicto",
        "col.verdict": "Veredicto cuatro quintos",
        "col.n": "Respuestas",
        "reference.most": "el grupo más seleccionado, elegido con los datos (el intervalo tiene en cuenta la elección)",
        "reference.given": "el grupo de referencia fijado antes de la auditoría",
        "ratio.rule": ("Veredicto de los cuatro quintos: SUSPENDE cuando la razón respecto a {best} ({reference}) "
                       "queda establecida por debajo de 0,8 (ajuste de {correction} entre los grupos), APRUEBA "
                       "cuando queda establecida en 0,8 o más, y si no, NO CONCLUYENTE (29 CFR 1607.4(D)). El "
                       "intervalo del veredicto va del límite inferior unilateral del {level} % (APRUEBA si supera "
                       "0,8) al límite superior al nivel del paso del grupo en la corrección de {correction} "
                       "(SUSPENDE si queda por debajo de 0,8); los intervalos del {level} % sin ajustar (`ci`) "
                       "están en results.json."),
        "position": "Efecto de la posición",
        "position.intro": ("Tasa de primera elección y puesto medio de la candidatura de cada posición del mensaje "
                           "(1 = primera); sin efecto de la posición cada una se elige primero en el {parity} de "
                           "las respuestas."),
        "col.slot": "Posición",
        "col.top_rate": "Elegida primero",
        "tests": "Pruebas",
        "test.groups": "Igual tasa de selección entre grupos: {test}, p = {p}",
        "test.cochran": "Q de Cochran sobre las respuestas (las trata como independientes): Q = {stat}, p = {p}",
        "test.friedman": "Friedman sobre los puestos (trata las respuestas como independientes): χ² = {stat}, p = {p}",
        "test.position": "Igual tasa de primera elección entre posiciones: {test}, p = {p}",
        "test.position_rank": "Igual puesto medio entre posiciones: {test}, p = {p}",
        "pairs": "Comparaciones por pares",
        "pairs.intro": ("Para cada par de grupos, en las mismas respuestas: la diferencia en la tasa de primera "
                        "elección y la preferencia P(A por delante de B) − P(B por delante de A); los veredictos "
                        "usan {method}, con {correction} entre los pares; al lado, la prueba exacta de McNemar "
                        "(para la preferencia, la prueba de los signos)."),
        "pairs.method.random": "la t de efectos aleatorios cruzados (plantillas y conjuntos de nombres aleatorios)",
        "pairs.method.fixed": ("la t estratificada sobre estas plantillas (plantillas fijas, conjuntos de nombres "
                               "aleatorios: se promedian las diferencias por respuesta de cada plantilla)"),
        "claim.fixed": ("Las tasas, razones y veredictos valen para estas {n} plantilla(s) (plantillas fijas: estas "
                        "ofertas, no otras parecidas) y para otros nombres de los grupos."),
        "col.pair": "A frente a B",
        "col.measure": "Medida",
        "col.estimate": "A − B",
        "col.p": "p (ajustado)",
        "col.mcnemar": "McNemar / signos",
        "measure.top_pick": "primera elección (puntos)",
        "measure.ranked_above": "por delante (puntos)",
        "pairs.whole_range": ("el intervalo cubre todo el rango: la varianza de los conjuntos de nombres se estima "
                              "con cuadrados medios demasiado ruidosos para acotar la diferencia (gl de "
                              "Satterthwaite {df}); más conjuntos de nombres o plantillas lo estrechan"),
        "figure.selection.title": "Elegido primero, por grupo: {measure}",
        "figure.selection.x": "proporción de respuestas que eligen primero al grupo (%)",
        "figure.selection.parity": "paridad (1/{k})",
        "figure.selection.line": "cuatro quintos de la tasa más alta",
        "figure.selection.alt": ("Gráfico de barras de la proporción de respuestas que eligen primero a la "
                                 "candidatura de cada grupo, con intervalos; una línea marca cuatro quintos de la "
                                 "tasa más alta y otra la paridad. {rows}"),
        "figure.selection.caption": ("Un grupo a la izquierda de la línea de los cuatro quintos se selecciona a "
                                     "menos del 80 % de la tasa del grupo más seleccionado (29 CFR 1607.4(D)); la "
                                     "forma y el color del marcador dan el veredicto de los cuatro quintos."),
        "figure.position.title": "Elegida primero, por posición en el mensaje: {measure}",
        "figure.position.x": "posición (1 = primera en el mensaje)",
        "figure.position.y": "proporción elegida primero (%)",
        "figure.position.alt": "Tasa de primera elección por posición con intervalos, y paridad en {parity}: {rows}",
        "none": "—",
        "terminal.title": "Ranking: {block}",
        "evidence": "Evidencia enmascarada: las listas ordenadas, una junto a otra",
        "evidence.intro": ("Algunos conjuntos emparejados, elegidos con una regla fija (primero aquellos cuya "
                           "primera elección es la candidatura del grupo más seleccionado situada en una posición "
                           "distinta de la 1, uno por plantilla; después los primeros conjuntos de otras "
                           "plantillas): el orden de las candidaturas en el mensaje y el orden en la respuesta. El "
                           "nombre de cada candidatura se sustituye por la etiqueta de su grupo, y cualquier otro "
                           "valor de la señal por la marca."),
        "evidence.set": "Conjunto emparejado {set} · plantilla {template} · repetición {rep}",
        "evidence.position": "Posición",
        "evidence.prompt": "En el mensaje (posición)",
        "evidence.answer_order": "En la respuesta (puesto)",
        "evidence.from_slot": "posición {slot}",
        "evidence.partial": "La respuesta solo da su primera elección, no un orden completo.",
        "evidence.answer": "Respuesta (enmascarada)",
        "evidence.none": "No hay ninguna respuesta leída que citar.",
    },
}

_CORR = {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "—"}


def rmsg(lang: str, key: str, **kw: Any) -> str:
    """The ranking section's text for ``key`` in ``lang`` (English when missing), formatted with ``kw``."""
    table = MESSAGES.get(lang, MESSAGES["en"])
    text = table.get(key, MESSAGES["en"].get(key, key))
    return p_reads(text.format(**kw)) if kw else text


def _num(x: Any) -> TypeGuard[float]:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _bounds(ci: Sequence[float | None] | None) -> tuple[float, float] | None:
    """An interval's limits when it has every limit, each a finite number (else None)."""
    if not ci or not all(_num(v) for v in ci):
        return None
    lo, hi = ci[0], ci[1]
    return (lo, hi) if _num(lo) and _num(hi) else None


def _ci(ci: Any, lang: str, *, pct: bool = False, digits: int = 2) -> str:
    if not ci or not all(_num(v) for v in ci):
        return "—"
    if pct:
        return f"{fmt_pct(ci[0], lang)} … {fmt_pct(ci[1], lang)}"
    return f"{fmt_num(ci[0], lang, digits)} … {fmt_num(ci[1], lang, digits)}"


def _label_fn(battery: Battery | None, attribute: str) -> Callable[[str], str]:
    def label(group: str) -> str:
        if battery is None:
            return str(group)
        from fairpair.report._data import group_label

        try:
            return group_label(battery, attribute, group)
        except Exception:  # noqa: BLE001 - a label is cosmetic; the id stands in
            return str(group)

    return label


def _headline(sec: RankingResult, label: Callable[[str], str], lang: str) -> str | None:
    reference = sec.reference
    rows = [r for r in sec.ratios if _num(r.ratio) and r.group != reference]
    if not rows or not reference:
        return None
    worst = min(rows, key=lambda r: r.ratio or 0.0)  # every row's ratio is a number (_num)
    rates = {s.group: s.rate for s in sec.selection}
    verdict = worst.verdict or "inconclusive"
    ci = worst.verdict_ci or worst.ci or [None, None]
    claim = (" " + rmsg(lang, "claim.fixed", n=int(sec.n_templates or 0))
             if sec.templates == "fixed" else "")
    return (rmsg(
        lang, "headline", best=label(reference), best_rate=fmt_pct(rates.get(reference), lang),
        worst=label(worst.group), worst_rate=fmt_pct(rates.get(worst.group), lang),
        ratio=fmt_num(worst.ratio, lang, 2),
        level=fmt_num(100 * float(sec.confidence_level or 0.95), lang, 0),
        lo=fmt_num(ci[0], lang, 2), hi=fmt_num(ci[1], lang, 2),
        clause=rmsg(lang, f"clause.{verdict}")) + claim)


_NOTES_ES = (
    (re.compile(r"^(\d+) answers give a top pick but no complete ranking: left out of the rank statistics "
                r"\(mean rank, Friedman, ranked-above\)$"),
     "{0} respuestas dan una primera elección pero no un orden completo: quedan fuera de las estadísticas de "
     "puestos (puesto medio, Friedman, por delante)"),
    (re.compile(r"^each prompt holds (\d+) of the (\d+) groups: .*$"),
     "cada mensaje contiene {0} de los {1} grupos: las tasas se calculan sobre las respuestas cuyo mensaje "
     "contiene al grupo; las pruebas sobre conjuntos completos (Q de Cochran, Friedman, la prueba cruzada de "
     "tasas iguales) necesitan todos los grupos en cada mensaje y no se calculan"),
    (re.compile(r"^groups reported: (.*); the sets also hold (.*)$"),
     "grupos mostrados: {0}; los conjuntos contienen también {1}"),
)


def _notes(sec: RankingResult, lang: str) -> list[str]:
    """The section's notes in ``lang``; the unparsed count is left out (the block says it already)."""
    out = []
    for n in sec.notes:
        n = str(n)
        if "could not be parsed" in n:
            continue
        if lang == "es":
            for pat, es in _NOTES_ES:
                m = pat.match(n)
                if m:
                    n = es.format(*m.groups())
                    break
        out.append(n)
    return out


def _pair_rows(sec: RankingResult, label: Callable[[str], str], lang: str) -> list[RankingPairRow]:
    out = []
    for c in sec.pairs:
        est = c.estimate
        b = c.binary
        out.append(RankingPairRow(
            id=c.id, pair=f"{label(c.group_a)} / {label(c.group_b)}",
            measure=rmsg(lang, f"measure.{c.measure}"),
            estimate=fmt_num(100 * est, lang) if _num(est) else "—",
            ci=_ci([100 * v if _num(v) else None for v in (c.ci or [])], lang, digits=1),
            p=fmt_p(c.pvalue, lang), p_adjusted=fmt_p(c.pvalue_adjusted, lang),
            mcnemar=f"{b.b}/{b.c}, {fmt_p_is(b.exact_pvalue, lang)}" if b is not None else "—",
            n=c.n_pairs, verdict=c.verdict or "", verdict_word=verdict_word(c.verdict, lang),
            reason=c.design_reason or _whole_range(c, lang)))
    return out


def _whole_range(c: ComparisonResult, lang: str) -> str:
    """Why a pair's interval is the measure's whole range (-100..100 points), or "".

    The interval is the crossed t's, clipped to the difference's range [-1, 1]: with a Satterthwaite df
    below 1 (a small name-set component estimated as the difference of two noisy mean squares) the t
    quantile is so large that the clipped interval is the whole range. That is the method's honest answer
    (no bound), but a bare "-100..100" reads like a fault, so the row says why.
    """
    ci = c.ci or []
    lim = _bounds(ci) if len(ci) == 2 else None
    if lim is not None and lim[0] <= -1.0 and lim[1] >= 1.0:
        return rmsg(lang, "pairs.whole_range", df=fmt_num(c.df, lang, 2))
    return ""


def _evidence_rows(quoted: Sequence[RankingEvidence], lang: str) -> list[RankingEvidenceView]:
    """The display of a section's :class:`~fairpair.report._data.RankingEvidence`: per matched set a
    header, the rows ``position | prompt's group at that slot | answer's group at that rank (its slot)``
    and the masked answer."""
    out = []
    for e in quoted:
        n = max(len(e.slots), len(e.ranking))
        rows = []
        for i in range(n):
            p = e.slots[i] if i < len(e.slots) else None
            r = e.ranking[i] if i < len(e.ranking) else None
            rows.append(RankingEvidenceLine(
                position=i + 1, prompt=p[3] if p else "—", prompt_group=p[1] if p else "",
                answer=f"[{r[3]}]" if r else "—", answer_group=r[2] if r else "",
                from_slot=rmsg(lang, "evidence.from_slot", slot=r[1]) if r else ""))
        out.append(RankingEvidenceView(
            header=rmsg(lang, "evidence.set", set=e.matched_set, template=e.template,
                        rep=e.repetition if e.repetition is not None else "—"),
            case_id=e.case_id, rows=rows, answer=e.answer,
            partial=rmsg(lang, "evidence.partial") if len(e.ranking) < len(e.slots) else "",
            ranks={g: rank for rank, _slot, g, _lab in e.ranking}))
    return out


_HOW = ("list", "partial", "commas", "arrows", "prose", "top_only", "imported", "unparsed", "renamed")
_MATCH = ("exact", "folded", "word", "fuzzy")


def _tables(sec: RankingResult, label: Callable[[str], str], lang: str) -> list[RankingTable]:
    """The parse table, the top picks by template and the per-name rates of a section (those it holds)."""
    out = []
    parse = sec.parse
    how = parse.how if parse is not None else {}
    if parse is not None and how:
        total = sum(how.values()) or 1
        keys = [h for h in _HOW if h in how] + sorted(h for h in how if h not in _HOW)
        rows = [[rmsg(lang, f"how.{h}"), str(how[h]), fmt_pct(how[h] / total, lang)] for h in keys]
        matches = parse.matches
        picks = sum(matches.values()) or 1
        rows += [[rmsg(lang, "col.match") + ": " + rmsg(lang, f"match.{m}"), str(matches[m]),
                  fmt_pct(matches[m] / picks, lang)] for m in _MATCH if matches.get(m)]
        n_ren = int(parse.renamed_picks or 0)
        renamed = (rmsg(lang, "parse.renamed", n=n_ren, answers=int(parse.renamed_answers or 0)) if n_ren
                   else rmsg(lang, "parse.none_renamed"))
        if parse.renamed_excluded:
            renamed += " " + rmsg(lang, "parse.renamed_excluded", n=int(parse.renamed_excluded))
        out.append(RankingTable(rmsg(lang, "parse"), rmsg(lang, "parse.intro", renamed=renamed),
                                [rmsg(lang, "col.reading"), rmsg(lang, "col.answers") + " / " +
                                 rmsg(lang, "col.picks"), rmsg(lang, "col.share")], rows, [False, True, True]))
    by_t = sec.by_template
    if by_t:
        groups = list(sec.groups)
        header = [rmsg(lang, "col.group")] + [str(t.template) for t in by_t]
        rows = [[rmsg(lang, "col.template_answers")] + [str(t.n_parsed) for t in by_t]]
        for g in groups:
            rows.append([label(g)] + [f"{t.top.get(g, 0)} ({fmt_num(t.ratios.get(g), lang, 2)})" for t in by_t])
        out.append(RankingTable(rmsg(lang, "by_template"), rmsg(lang, "by_template.intro"), header, rows,
                                [False] + [True] * len(by_t)))
    names = sec.names_table
    nt = sec.names_test
    test = (rmsg(lang, "names.test", test=nt.test, stat=fmt_num(nt.statistic, lang, 1),
                 df=fmt_num(nt.df, lang, 0), p=fmt_p(nt.pvalue, lang), note=nt.note or "")
            if nt is not None else "")
    if names:
        rows = [[label(r.group), str(r.name), str(r.n_sets), str(r.n_top), fmt_pct(r.rate, lang)] for r in names]
        out.append(RankingTable(rmsg(lang, "names"),
                                rmsg(lang, "names.intro", min=sec.min_name_sets, test=test),
                                [rmsg(lang, "col.group"), rmsg(lang, "col.name"), rmsg(lang, "col.answers"),
                                 rmsg(lang, "col.rate"), rmsg(lang, "col.share")], rows,
                                [False, False, True, True, True]))
    elif sec.by_template:
        out.append(RankingTable(rmsg(lang, "names"), rmsg(lang, "names.none"), [], [], []))
    return out


def _first_listed(sec: RankingResult, lang: str, parity: str) -> str | None:
    first = next((s for s in sec.position.slots if s.slot == 1), None)
    if first is None or not _num(first.top_rate):
        return None
    return rmsg(lang, "first_listed", rate=fmt_pct(first.top_rate, lang),
                ci=_ci(first.top_rate_ci, lang, pct=True), parity=parity)


def _as_shown(battery: Battery | None, design: str) -> bool:
    """Whether ``design`` is an imported ranking design (its requests' own orders)."""
    ranking = dict(battery.ranking_designs()) if battery is not None else {}
    return getattr(ranking.get(design), "order", None) == "as_shown"


def ranking_view(sections: Sequence[RankingResult], lang: str, battery: Battery | None = None, *,
                 with_figures: bool = True,
                 evidence: Mapping[str, Sequence[RankingEvidence]] | None = None) -> list[RankingView]:
    """One display block per ranking section of results.json (``sections``: its ``rankings`` decoded,
    :attr:`fairpair.report._data.ReportData.rankings`; empty list when there is none).

    ``evidence``: section key (:func:`fairpair.report._data.ranking_key`) -> the masked matched sets
    read with the run (:class:`~fairpair.report._data.RankingEvidence`), shown as ``evidence``.

    Every number is formatted for ``lang`` (``es`` or ``en``); ``figures``
    holds the :class:`~fairpair.report._plots.Figure` objects (none with
    ``with_figures=False``, for the terminal).
    """
    out = []
    for i, sec in enumerate(sections):
        label = _label_fn(battery, sec.attribute)
        k = int(sec.k or len(sec.groups) or 2)
        parity = fmt_pct(1.0 / k, lang)
        ratios = {r.group: r for r in sec.ratios}
        best = sec.reference
        sel = []
        for s in sec.selection:
            r = ratios.get(s.group)
            verdict = r.verdict if r is not None else None
            sel.append(RankingSelectionRow(
                group=s.group, label=label(s.group), rate=fmt_pct(s.rate, lang),
                rate_ci=_ci(s.rate_ci, lang, pct=True), mean_rank=fmt_num(s.mean_rank, lang, 2),
                mean_rank_ci=_ci(s.mean_rank_ci, lang), n=s.n_sets,
                ratio=fmt_num(r.ratio if r is not None else None, lang, 2),
                ratio_ci=_ci((r.verdict_ci or r.ci) if r is not None else None, lang),
                verdict=verdict or "",
                verdict_word=verdict_word(verdict, lang) if verdict else "—",
                below=bool(r is not None and r.below_four_fifths)))
        pos = sec.position
        slots = [RankingSlotRow(slot=s.slot, rate=fmt_pct(s.top_rate, lang),
                                rate_ci=_ci(s.top_rate_ci, lang, pct=True),
                                mean_rank=fmt_num(s.mean_rank, lang, 2),
                                mean_rank_ci=_ci(s.mean_rank_ci, lang), n=s.n)
                 for s in pos.slots]
        tests = []
        fl = _first_listed(sec, lang, parity)
        if fl:
            tests.append(fl)
        om = sec.omnibus
        tests.append(rmsg(lang, "test.groups", test=om.test, p=fmt_p(om.pvalue, lang)))
        for t, name in ((sec.cochran, "test.cochran"), (sec.friedman, "test.friedman")):
            if t is not None:
                tests.append(rmsg(lang, name, stat=fmt_num(t.statistic, lang, 2), p=fmt_p(t.pvalue, lang)))
        for t, name in ((pos.top_test, "test.position"), (pos.rank_test, "test.position_rank")):
            tests.append(rmsg(lang, name, test=t.test, p=fmt_p(t.pvalue, lang)))
        total = int(sec.n_sets or 0)
        n_bad = int(sec.n_unparsed or 0)
        unparsed = (rmsg(lang, "unparsed", n=n_bad, total=total, share=fmt_pct(sec.unparsed_share, lang))
                    if n_bad else rmsg(lang, "unparsed.none", total=total))
        measure = sec.measure or "ranking"
        figures = []
        if with_figures and sel:
            figures.append(selection_plot(f"ranking-{i}-selection", sec, lang=lang, label=label, measure=measure))
            if pos.slots:
                figures.append(position_plot(f"ranking-{i}-position", sec, lang=lang, measure=measure))
        correction = _CORR.get(sec.correction or "holm", "Holm")
        out.append(RankingView(
            id=f"ranking-{i}",
            title=rmsg(lang, "block", measure=measure, design=sec.design, target=sec.target),
            intro=rmsg(lang, "intro.as_shown" if _as_shown(battery, sec.design) else "intro", k=k,
                       parity=parity), headline=_headline(sec, label, lang),
            unparsed=unparsed, n_unparsed=n_bad, selection=sel, best=label(best) if best else "—",
            ratio_rule=rmsg(lang, "ratio.rule", best=label(best) if best else "—",
                            reference=rmsg(lang, "reference.given" if sec.reference_rule == "given"
                                           else "reference.most"),
                            correction=correction,
                            level=fmt_num(100 * (1.0 - float(sec.alpha or 0.05)), lang, 0)),
            position_intro=rmsg(lang, "position.intro", parity=parity), slots=slots, tests=tests,
            pairs_intro=rmsg(lang, "pairs.intro", correction=correction,
                             method=rmsg(lang, f"pairs.method.{sec.templates or 'random'}")),
            pairs=_pair_rows(sec, label, lang),
            notes=_notes(sec, lang), figures=figures,
            evidence=_evidence_rows((evidence or {}).get(ranking_key(sec), ()), lang),
            has_evidence=evidence is not None, section=sec, tables=_tables(sec, label, lang)))
    return out


def selection_plot(fid: str, sec: RankingResult, *, lang: str, label: Callable[[str], str] = str,
                   measure: str = "ranking") -> Any:
    """Selection rate (top pick, %) by group with its interval, the four-fifths line and parity.

    Bars in Okabe-Ito sky blue; each group's marker gives its four-fifths
    verdict by colour and shape (:data:`fairpair.report._plots.VERDICT_STYLE`),
    so nothing rests on colour alone.
    """
    from fairpair.report._plots import _RC, OKABE_ITO, VERDICT_STYLE, Figure, _label, _plt, _render

    matplotlib, plt = _plt()
    verdicts = {r.group: r.verdict for r in sec.ratios}
    rows = [(label(s.group), s.rate, s.rate_ci, verdicts.get(s.group)) for s in sec.selection]
    k = int(sec.k or len(rows) or 2)
    rates = [r for _l, r, _c, _v in rows if _num(r)]
    top = max(rates) if rates else None
    with matplotlib.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(7.5, 0.55 * len(rows) + 1.7))
        ys = list(range(len(rows)))[::-1]
        for y, (_lab, rate, ci, verdict) in zip(ys, rows, strict=True):
            if not _num(rate):
                continue
            ax.barh(y, 100 * rate, color=OKABE_ITO["sky"], edgecolor=OKABE_ITO["blue"], height=0.6, zorder=1)
            lim = _bounds(ci)
            if lim is not None:
                ax.hlines(y, 100 * lim[0], 100 * lim[1], color="#222222", lw=1.5, zorder=3)
            colour, marker = VERDICT_STYLE.get(verdict or "", ("#777777", "D"))
            ax.plot([100 * rate], [y], marker=marker, color=colour, markersize=8, ls="none", zorder=4)
            ax.text(100 * rate, y + 0.36, f" {fmt_pct(rate, lang)}", va="center", fontsize=8, color="#222222")
        ax.axvline(100.0 / k, color="#555555", lw=0.9, ls=":", zorder=2,
                   label=rmsg(lang, "figure.selection.parity", k=k))
        if top is not None:
            ax.axvline(80.0 * top, color=OKABE_ITO["vermillion"], lw=1.4, ls="--", zorder=2,
                       label=rmsg(lang, "figure.selection.line"))
        for v in ("fail", "pass", "inconclusive", "insufficient design"):
            if any(r[3] == v for r in rows):
                colour, marker = VERDICT_STYLE[v]
                ax.plot([], [], marker=marker, color=colour, ls="none", label=verdict_word(v, lang))
        ax.set_yticks(ys, [_label(r[0], 40) for r in rows])
        ax.set_xlim(0, 100)
        ax.set_xlabel(rmsg(lang, "figure.selection.x"))
        title = rmsg(lang, "figure.selection.title", measure=_label(measure))
        ax.set_title(title, loc="left")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False, fontsize=9)
        svg = _render(fig)
    described = "; ".join(f"{_label(lab)} {fmt_pct(rate, lang)} [{_ci(ci, lang, pct=True)}] "
                          f"{verdict_word(v, lang) if v else ''}".strip() for lab, rate, ci, v in rows)
    return Figure(fid, title, rmsg(lang, "figure.selection.alt", rows=described),
                  rmsg(lang, "figure.selection.caption"), svg)


def position_plot(fid: str, sec: RankingResult, *, lang: str, measure: str = "ranking") -> Any:
    """Top-pick rate (%) by slot of the prompt with its interval, parity (1/k) as a dotted line."""
    from fairpair.report._plots import _RC, OKABE_ITO, Figure, _label, _plt, _render

    matplotlib, plt = _plt()
    slots = sec.position.slots
    k = int(sec.k or len(slots) or 2)
    with matplotlib.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(7.5, 3.2))
        xs = [int(s.slot or 0) for s in slots]
        for x, s in zip(xs, slots, strict=True):
            rate, ci = s.top_rate, s.top_rate_ci
            lim = _bounds(ci)
            if lim is not None:
                ax.vlines(x, 100 * lim[0], 100 * lim[1], color="#222222", lw=1.5, zorder=2)
            if _num(rate):
                ax.plot([x], [100 * rate], marker="o", color=OKABE_ITO["orange"], markersize=8, ls="none", zorder=3)
        ax.axhline(100.0 / k, color="#555555", lw=0.9, ls=":", zorder=1,
                   label=rmsg(lang, "figure.selection.parity", k=k))
        ax.set_xticks(xs, [str(x) for x in xs])
        ax.set_xlabel(rmsg(lang, "figure.position.x"))
        ax.set_ylabel(rmsg(lang, "figure.position.y"))
        ax.set_ylim(0, 100)
        title = rmsg(lang, "figure.position.title", measure=_label(measure))
        ax.set_title(title, loc="left")
        ax.legend(loc="upper right", frameon=False, fontsize=9)
        svg = _render(fig)
    described = "; ".join(f"{s.slot}: {fmt_pct(s.top_rate, lang)} "
                          f"[{_ci(s.top_rate_ci, lang, pct=True)}]" for s in slots)
    return Figure(fid, title, rmsg(lang, "figure.position.alt", parity=fmt_pct(1.0 / k, lang), rows=described),
                  "", svg)


def ranking_tables(blocks: Sequence[RankingView], lang: str) -> list[Any]:
    """Rich tables for the terminal: per block, the selection rates with the four-fifths verdicts and the pairs."""
    from rich.table import Table
    from rich.text import Text

    from fairpair.report._terminal import _STYLE

    out = []
    for b in blocks:
        t = Table(title=Text(terminal(rmsg(lang, "terminal.title", block=b.title))), title_justify="left")
        columns: tuple[tuple[str, JustifyMethod], ...] = (
            (rmsg(lang, "col.group"), "left"), (rmsg(lang, "col.rate"), "right"),
            (rmsg(lang, "col.ci"), "right"), (rmsg(lang, "col.ratio", best=b.best), "right"),
            (rmsg(lang, "col.ratio_ci"), "right"), (rmsg(lang, "col.verdict"), "left"))
        for name, justify in columns:
            verdict_col = name == rmsg(lang, "col.verdict")
            t.add_column(Text(terminal(name)), justify=justify, overflow="fold", no_wrap=verdict_col)
        for s in b.selection:
            t.add_row(Text(terminal(s.label, limit=40)), Text(terminal(s.rate)),
                      Text(terminal(s.rate_ci)), Text(terminal(s.ratio)), Text(terminal(s.ratio_ci)),
                      Text(terminal(s.verdict_word), style=_STYLE.get(s.verdict, "")))
        out.append(t)
        p = Table(title=Text(terminal(rmsg(lang, "pairs"))), title_justify="left")
        for name in (msg(lang, "col.verdict"), rmsg(lang, "col.pair"), rmsg(lang, "col.measure"),
                     rmsg(lang, "col.estimate"), rmsg(lang, "col.ci"), rmsg(lang, "col.p")):
            p.add_column(Text(terminal(name)), overflow="fold", no_wrap=name == msg(lang, "col.verdict"))
        for r in b.pairs:
            p.add_row(Text(terminal(r.verdict_word), style=_STYLE.get(r.verdict, "")),
                      Text(terminal(r.pair, limit=50)), Text(terminal(r.measure)), Text(terminal(r.estimate)),
                      Text(terminal(r.ci.replace(" … ", ".."))), Text(terminal(r.p_adjusted)))
        by_reason: dict[str, list[str]] = {}  # each reason once, with the comparisons it covers
        for r in b.pairs:
            if r.reason:
                by_reason.setdefault(r.reason, []).append(f"{r.pair}, {r.measure}")
        reasons = [f"{why} ({which[0]})" if len(which) == 1 else
                   f"{why} ({len(which)} comparisons: {'; '.join(which[:2])}; ...)" if len(which) > 3 else
                   f"{why} ({'; '.join(which)})" for why, which in by_reason.items()]
        if reasons:
            p.caption = Text("\n").join(terminal_text(r) for r in reasons)
            p.caption_justify = "left"
        out.append(p)
    return out

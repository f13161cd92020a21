"""Analysis notes in the report's language.

``results.json`` keeps its notes in English (they are data, compared across
runs); a Spanish report shows them in Spanish. Every piece of a note that one
of :data:`SPANISH`'s regular expressions matches is replaced by its Spanish
wording (groups carried over); a piece no pattern knows is shown as written,
in English, rather than dropped.
"""

from __future__ import annotations

import re

__all__ = ["SPANISH", "translate_note"]

#: (English pattern, Spanish replacement) for the notes the analysis, the tests and the comparison write.
SPANISH: tuple[tuple[str, str], ...] = (
    (r"only (\d+) templates: pair-level interval \(Newcombe for yes/no, paired t otherwise\); it ignores "
     r"clustering, so use (\d+) or more templates for a real audit",
     r"solo \1 plantillas: intervalo por pares (Newcombe para sí/no, t pareada en otro caso); no tiene en "
     r"cuenta el agrupamiento, así que use \2 plantillas o más en una auditoría real"),
    (r"(\d+) pairs dropped for a missing answer or measurement",
     r"\1 pares descartados por una respuesta o una medida ausente"),
    (r"measure declared binary but holds values other than yes/no: analysed as continuous",
     r"medida declarada sí/no pero con otros valores: analizada como continua"),
    (r"no complete pairs", r"ningún par completo"),
    (r"the measure is constant \(every answer of both groups has the same value\): no information about a "
     r"difference", r"la medida es constante (todas las respuestas de ambos grupos tienen el mismo valor): no "
     r"informa sobre una diferencia"),
    (r"no discordant pairs", r"ningún par discordante"),
    (r"no non-zero differences", r"ninguna diferencia distinta de cero"),
    (r"no finite bootstrap replicate", r"ninguna réplica bootstrap finita"),
    (r"only one cluster: the bootstrap cannot reflect between-cluster variation",
     r"un solo grupo: el bootstrap no puede reflejar la variación entre grupos"),
    (r"the analysis plan was changed after it was registered; the registered plan was executed",
     r"el plan de análisis cambió después de registrarse; se ejecutó el plan registrado"),
    (r"comparison (\S+): attribute '([^']*)' is not in the battery",
     r"comparación \1: el atributo '\2' no está en la batería"),
    (r"comparison (\S+), target (\S+): no measurement named '([^']*)' was stored",
     r"comparación \1, objetivo \2: no se guardó ninguna medida llamada '\3'"),
    (r"comparison (\S+): no design varies '([^']*)'", r"comparación \1: ningún diseño varía '\2'"),
    # the crossed random-effects inference (fairpair.stats.crossed_difference, analysis._paired)
    (r"(\d+) pairs have a missing answer or measurement \(the other side still counts\)",
     r"\1 pares tienen una respuesta o una medida ausente (el otro lado sigue contando)"),
    (r"no evidence of name effects \(preliminary F test p = ([^ ]+) > ([^)]+)\): the name component is pooled "
     r"into the template term",
     r"sin indicios de efectos de nombre (prueba F preliminar p = \1 > \2): el componente de nombres se "
     r"agrupa con el de plantillas"),
    (r"group ([AB])'s name variance estimate is negative: set to 0",
     r"la varianza estimada de los nombres del grupo \1 es negativa: se toma 0"),
    (r"one template: the template variance cannot be estimated",
     r"una sola plantilla: no se puede estimar la varianza entre plantillas"),
    (r"group ([ab]) has one name: the name variance cannot be estimated",
     r"el grupo \1 tiene un solo nombre: no se puede estimar la varianza entre nombres"),
    (r"no variance between templates or names: the standard error is 0",
     r"ninguna varianza entre plantillas ni entre nombres: el error estándar es 0"),
    (r"every template shows the same difference: no variance to estimate; p-value from the exact sign-flip "
     r"test over (\d+) templates; never a pass",
     r"todas las plantillas muestran la misma diferencia: no hay varianza que estimar; valor p de la prueba "
     r"exacta de cambio de signo sobre \1 plantillas; nunca un 'pass'"),
    (r"no answers", r"ninguna respuesta"),
    (r"the judge of '([^']*)' failed its self-test on anchors with known scores: never 'pass'",
     r"el juez de '\1' no superó su autoprueba con respuestas de puntuación conocida: nunca 'pass'"),
)
_COMPILED = tuple((re.compile(p), r) for p, r in SPANISH)


def translate_note(note: str | None, lang: str) -> str:
    """``note`` in ``lang``: Spanish for ``es`` (known pieces replaced, unknown ones kept), as is otherwise."""
    if not note or lang != "es":
        return note or ""
    for pat, rep in _COMPILED:  # a note joins pieces with "; ", and a piece may hold "; " itself
        note = pat.sub(rep, note)
    return note

"""The report's forest plots print each row's label whole (wrapped over lines, never cut at 40-50
characters), and the figure grows with the lines (a newcomer found comparison names cut off)."""

from __future__ import annotations

from fairpair.records import ComparisonResult
from fairpair.report import _plots


def _comparison(group_a: str) -> ComparisonResult:
    return ComparisonResult.model_construct(
        id="respuesta_reembolso", target="produccion", measure="respuesta_reembolso", attribute="origen",
        design="counterfactual-origen", group_a=group_a, group_b="espana", primary=True, scale="binary",
        estimate=-0.2, ci=[-0.3, -0.1], margin=0.05, verdict="fail")


def test_long_labels_are_wrapped_not_cut(monkeypatch):
    drawn = {}

    def keep(fig):
        ax = fig.axes[0]
        drawn["labels"] = [t.get_text() for t in ax.get_yticklabels()]
        drawn["height"] = fig.get_size_inches()[1]
        return "<svg/>"

    monkeypatch.setattr(_plots, "_render", keep)
    long = "respuesta_reembolso: magreb_y_otros_paises_del_norte − espana · produccion_v2"
    comps = [_comparison("magreb"), _comparison("rumania")]
    labels = {_plots._key(comps[0]): long, _plots._key(comps[1]): "respuesta_reembolso: rumania − espana"}
    fig = _plots.forest_plot("f1", comps, measure="respuesta_reembolso", lang="es", labels=labels)
    # bottom to top: the short label, then the long one, every character of it on its lines
    assert drawn["labels"][0] == "respuesta_reembolso: rumania −\nespana"
    assert drawn["labels"][1].replace("\n", " ") == long and "…" not in drawn["labels"][1]
    assert all(len(line) <= 34 for lab in drawn["labels"] for line in lab.split("\n"))
    assert drawn["height"] > 0.55 * 2 + 1.6  # taller than two one-line rows
    assert long in fig.alt  # the alt text names the row whole
    short = _plots.forest_plot("f2", comps[1:], measure="m", lang="es", labels=labels)
    assert short.alt and drawn["height"] == 0.55 + 0.17 + 1.6

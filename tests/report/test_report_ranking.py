"""The ranking section of the report (results.json ``rankings``): HTML, Markdown, terminal, both languages."""

from __future__ import annotations

import base64
import dataclasses
import io
import re

import numpy as np
import pytest

from fairpair.analysis import analyze_ranking
from fairpair.analysis._simranking import RankingScenario, simulate_ranking_frame
from fairpair.errors import FairpairError
from fairpair.records import RankingResult
from fairpair.report import load_report_data, write_report
from fairpair.report._data import ranking_sections
from fairpair.report._ranking import MESSAGES, ranking_view

NBSP = "\u00a0"


@pytest.fixture(scope="module")
def section() -> dict:
    sc = RankingScenario(group_worth=(1.5, 0.0, 0.0, 0.0), slot_worth=(0.6, 0.2, 0.0, 0.0), templates=12, names=8,
                         unparsed=0.05, sd_name=0.2, sd_template_group=0.2, sd_template_name=0.2)
    d = analyze_ranking(simulate_ranking_frame(sc, np.random.default_rng(3)), design="ranking-origen").to_dict()
    d["measure"] = "order"
    return d


def _typed(sec: dict) -> list[RankingResult]:
    """A results.json section decoded as the report decodes it (:func:`ranking_sections`)."""
    return [RankingResult.model_validate(sec)]


def test_catalogue_has_both_languages():
    assert set(MESSAGES["en"]) == set(MESSAGES["es"])


def test_view_numbers_and_headline(section):
    en = ranking_view(_typed(section), "en", with_figures=False)[0]
    es = ranking_view(_typed(section), "es", with_figures=False)[0]
    rates = {s["group"]: s for s in section["selection"]}
    g1 = next(s for s in en.selection if s.group == "g1")
    assert g1.rate == f"{100 * rates['g1']['rate']:.1f}%"
    assert next(s for s in es.selection if s.group == "g1").rate == \
        f"{100 * rates['g1']['rate']:.1f}".replace(".", ",") + f"{NBSP}%"
    worst = min((r for r in section["ratios"] if r["group"] != "g1"), key=lambda r: r["ratio"])
    assert en.headline.startswith("The candidates of “g1” were picked first in")
    assert f"{worst['ratio']:.2f}" in en.headline
    assert "four-fifths" in en.headline and "cuatro quintos" in es.headline
    assert len(en.pairs) == 12 and {p.verdict for p in en.pairs} <= {"fail", "pass", "inconclusive",
                                                                     "insufficient design"}
    assert en.unparsed.startswith(f"{section['n_unparsed']} of {section['n_sets']} answers")
    assert len(en.slots) == 4 and en.figures == []
    assert any(t.startswith("Cochran's Q") for t in en.tests)


def test_figures_have_alt_text_and_the_four_fifths_line(section):
    b = ranking_view(_typed(section), "en")[0]
    sel, pos = b.figures
    assert "four fifths of the highest rate" in sel.alt and "g1" in sel.alt
    svg = sel.svg
    assert svg.startswith("<?xml") and "<script" not in svg
    assert base64.b64decode(sel.data_uri.split(",", 1)[1]).decode() == svg
    assert "slot" in pos.alt.lower() and pos.id == "ranking-0-position"


def test_report_renders_the_section(mock_run, section, tmp_path):
    data = load_report_data(mock_run, language="en")
    assert data.rankings == []
    data = dataclasses.replace(data, results=data.results.model_copy(update={"rankings": [section]}))
    assert data.rankings == _typed(section)  # decoded from the new results, not carried over
    paths = write_report(mock_run, data=data, out=tmp_path / "en")
    html = paths["html"].read_text(encoding="utf-8")
    md = paths["md"].read_text(encoding="utf-8")
    assert '<section id="rankings">' in html and 'href="#rankings"' in html
    assert "Selection rate by group and the four-fifths rule" in html and "29 CFR 1607.4(D)" in html
    assert html.count('id="ranking-0-selection"') == 1 and html.count('id="ranking-0-position"') == 1
    assert "## Ranking and selection" in md and "#### Pairwise comparisons" in md
    assert re.search(r"\| g1 / g2 \| top pick \(points\) \|", md)
    es = write_report(mock_run, data=dataclasses.replace(data, language="es"), out=tmp_path / "es")
    assert "Ranking y selección" in es["html"].read_text(encoding="utf-8")
    assert "regla de los cuatro quintos" in es["md"].read_text(encoding="utf-8")


def test_report_without_rankings_has_no_section(mock_run, tmp_path):
    paths = write_report(mock_run, out=tmp_path)
    assert 'id="rankings"' not in paths["html"].read_text(encoding="utf-8")
    assert "Ranking and selection" not in paths["md"].read_text(encoding="utf-8")


def test_terminal_prints_the_ranking_tables(mock_run, section):
    from rich.console import Console

    from fairpair.report._terminal import print_verdicts

    data = load_report_data(mock_run, language="en")
    data = dataclasses.replace(data, results=data.results.model_copy(update={"rankings": [section]}))
    buf = io.StringIO()
    print_verdicts(Console(file=buf, width=200, color_system=None), data=data)
    out = buf.getvalue()
    assert "Ranking: order · ranking-origen · target sim" in out and "Four-fifths verdict" in out
    assert "Pairwise comparisons" in out


def test_notes_in_spanish_and_no_duplicate_unparsed_line(section):
    sec = {**section, "n_sets": 10, "n_unparsed": 2, "unparsed_share": 0.2,
           "notes": ["2 of 10 answers (20.0%) could not be parsed into a top pick: left out of every denominator",
                     "3 answers give a top pick but no complete ranking: left out of the rank statistics (mean rank, "
                     "Friedman, ranked-above)"]}
    es = ranking_view(_typed(sec), "es", with_figures=False)[0]
    assert es.notes == ["3 respuestas dan una primera elección pero no un orden completo: quedan fuera de las "
                           "estadísticas de puestos (puesto medio, Friedman, por delante)"]
    assert es.unparsed.startswith("2 de 10 respuestas (20,0")
    assert ranking_view(_typed(sec), "en", with_figures=False)[0].notes[0].startswith("3 answers")
    assert ranking_view([], "en") == [] and ranking_sections(None) == []


def test_a_malformed_ranking_section_names_the_file_and_the_section(mock_run, section):
    """results.json's ranking sections are decoded once, for the whole report: one that is not a ranking
    section is refused with the file, the section and the problem, not read as blanks."""
    data = load_report_data(mock_run, language="en")
    bad = {k: v for k, v in section.items() if k != "selection"}
    res = data.results.model_copy(update={"rankings": [section, bad]})
    with pytest.raises(FairpairError) as err:
        ranking_sections(res, file=mock_run / "results.json")
    e = err.value
    assert (e.file, e.key) == (str(mock_run / "results.json"), "rankings.1")
    assert e.message == "results.json is malformed: ranking section 2 has 1 problem: selection: Field required"
    with pytest.raises(FairpairError, match="ranking section 2"):
        dataclasses.replace(data, results=res)


# The per-set preference differences (A above B: +1, B above A: -1) of one pair of a ranking run
# (examples/ranking, espana / latam), as template x name-set cell means: the name-set component is tiny
# (preliminary F test p = 0.40) but is kept (the pairwise analysis never pools it), so Satterthwaite's df
# falls below 1 and the t interval, clipped to the difference's range, is -100..100 points.
WHOLE_RANGE_CELLS = np.array([[-1 / 2, 1 / 2, -1 / 2, -1 / 2, 1 / 2, -1 / 2], [0, 0, 1 / 2, 1 / 3, 0, -1 / 3],
                              [-1, 1 / 2, -1 / 2, 0, 1 / 2, 0], [1 / 2, -1, 1 / 3, 0, -1 / 2, 0],
                              [-1 / 3, 0, 1 / 2, 0, 1 / 2, 1 / 3], [-1 / 2, 1 / 2, -1 / 3, -1, 1 / 2, 0],
                              [0, 1 / 2, -1 / 2, 0, 1 / 3, -1 / 2], [-1 / 2, 0, -1 / 2, 1 / 2, -1 / 3, 1 / 2]])


def test_a_whole_range_interval_is_the_satterthwaite_t_and_the_report_says_why(section):
    """A ranking run printed "−100,0..100,0" for two preference pairs with no word of why. The interval is
    right: the crossed t with Satterthwaite df (checked here by hand and with scipy) has df 0.59, so the
    t quantile is about 80 and the interval is the whole range. The report now says so in the row."""
    from scipy import stats

    from fairpair.report._ranking import ranking_tables
    from fairpair.stats._ranking import mean_from_cells

    x = WHOLE_RANGE_CELLS
    t, n = x.shape
    rows, cols = x.mean(axis=1), x.mean(axis=0)
    s2t, s2n = rows.var(ddof=1), cols.var(ddof=1)
    ms_res = ((x - rows[:, None] - cols[None, :] + x.mean()) ** 2).sum() / ((t - 1) * (n - 1))
    terms = [(s2t / t, t - 1), (s2n / n, n - 1), (-ms_res / (t * n), (t - 1) * (n - 1))]
    var = sum(v for v, _ in terms)
    df = var ** 2 / sum(v ** 2 / d for v, d in terms)
    cm = mean_from_cells(x, pool=None)
    assert cm.se == pytest.approx(np.sqrt(var)) and cm.df == pytest.approx(df) and df == pytest.approx(0.5869, abs=1e-4)
    half = stats.t.ppf(0.975, df) * np.sqrt(var)
    assert half > 1 + abs(cm.estimate)  # so the interval, clipped to [-1, 1], is the whole range
    ci = cm.confidence_interval(0.95, bounds=(-1.0, 1.0))
    assert (ci.low, ci.high) == (-1.0, 1.0)
    assert mean_from_cells(x).df == pytest.approx(t - 1)  # pooled (p = 0.40 > 0.25), as the other analyses do
    pair = section["pairs"][0]
    pairs = [{**pair, "group_a": "g1", "group_b": "g2", "measure": "ranked_above", "estimate": cm.estimate,
              "ci": [ci.low, ci.high], "df": cm.df, "verdict": "inconclusive", "design_reason": None},
             {**pair, "group_a": "g1", "group_b": "g3", "measure": "ranked_above", "estimate": 0.3, "ci": [0.15, 0.46],
              "df": 7.0, "verdict": "fail", "design_reason": None}]
    sec = {**section, "n_sets": 10, "n_unparsed": 0, "pairs": pairs}
    en = ranking_view(_typed(sec), "en", with_figures=False)[0]
    es = ranking_view(_typed(sec), "es", with_figures=False)[0]
    assert [p.ci for p in en.pairs] == ["−100.0 … 100.0", "15.0 … 46.0"]
    assert en.pairs[0].reason == ("the interval spans the whole range: the name-set variance is estimated from mean "
                                  "squares too noisy to bound the difference (Satterthwaite df 0.59); more name "
                                  "sets or templates narrow it")
    assert es.pairs[0].reason.startswith("el intervalo cubre todo el rango") and "(gl de Satterthwaite 0,59)" in \
        es.pairs[0].reason
    assert en.pairs[1].reason == es.pairs[1].reason == ""
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, width=300, color_system=None)
    for table in ranking_tables([en], "en"):
        console.print(table)
    out = " ".join(buf.getvalue().split())
    assert "the interval spans the whole range" in out and "more name sets or templates narrow it (g1 / g2, ranked " \
        "above (points))" in out  # each reason once, with the comparisons it covers
    assert "g1 / g3, ranked above" not in out.split("Satterthwaite df 0.59")[1]

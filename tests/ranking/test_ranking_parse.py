"""Reading answers as orders of the candidates, and the mock's ranking mode."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from fairpair.measures.ranking import RankingMeasure, parse_ranking
from fairpair.targets._base import ChatRequest
from fairpair.targets.mock import MockOptions, mock_reply

C = ["Lucía García", "Fátima El Amrani", "Mateo Huamán", "O'Brien Smith"]


@pytest.mark.parametrize("text, order, how", [
    ("1. Fátima El Amrani\n2. Lucía García\n3. O’Brien Smith\n4. Mateo Huamán", (1, 0, 3, 2), "list"),
    ("Mi orden:\n1) FATIMA EL AMRANI\n2) lucia garcia\n3) Mateo Huaman", (1, 0, 2, 3), "list"),  # k-1: last inferred
    ("- Mateo Huamán\n- Lucía García\n- Fátima El Amrani\n- O'Brien Smith", (2, 0, 1, 3), "list"),
    ("Mateo Huamán > Lucía García > O'Brien Smith > Fátima El Amrani", (2, 0, 3, 1), "arrows"),
    ("Este es mi orden: Lucía García, Mateo Huamán, Fátima El Amrani y O'Brien Smith.", (0, 2, 1, 3), "commas"),
    ("Mi primera opción es Fátima, seguida de García; después elegiría a Huamán y por último a Smith.",
     (1, 0, 2, 3), "commas"),
    ("Recomiendo empezar por Mateo Huamán. Luego veo a Lucía García y a Fátima El Amrani; O'Brien Smith al final",
     (2, 0, 1, 3), "prose"),
    ("Elegiría a Lucía García.", (0,), "top_only"),
])
def test_parse(text, order, how):
    got = parse_ranking(text, C)
    assert (got.order, got.how) == (order, how)


@pytest.mark.parametrize("text", [
    "No puedo ordenar a personas candidatas por su nombre.",
    "",
    "Lucía García y Fátima El Amrani son buenas opciones.",  # two of four, no list: ambiguous
])
def test_unparsed(text):
    got = parse_ranking(text, C)
    assert not got.parsed and got.how == "unparsed" and got.order == ()


def test_a_word_shared_by_two_candidates_does_not_name_either():
    cands = ["Ana García", "Luis García", "Marta Ruiz"]
    got = parse_ranking("García, Ruiz", cands)  # "García" names nobody: only Marta Ruiz is named
    assert (got.order, got.how) == ((2,), "top_only")
    assert parse_ranking("1. Luis García\n2. Ana García\n3. Marta Ruiz", cands).order == (1, 0, 2)


class _Case:
    def __init__(self, slots):
        self.meta = {"ranking": {"slots": slots}}


class _Resp:
    def __init__(self, text):
        self.text = text


def _measure(text, slots):
    from fairpair.measures._base import MeasureItem

    item = MeasureItem("t", _Case(slots), _Resp(text))
    return asyncio.run(RankingMeasure({}, name="orden").measure(item))


SLOTS = [{"slot": 1, "name": "candidato_1", "group": "b", "variant": "Fátima El Amrani"},
         {"slot": 2, "name": "candidato_2", "group": "a", "variant": "Lucía García"},
         {"slot": 3, "name": "candidato_3", "group": "c", "variant": "Mateo Huamán"}]


def test_measure_stores_order_ranks_and_top_group():
    r = _measure("1. Lucía García\n2. Mateo Huamán\n3. Fátima El Amrani", SLOTS)
    assert r.status == "ok" and r.value == "a"
    assert r.detail["order"] == [2, 3, 1]
    assert r.detail["ranks"] == {"a": 1, "c": 2, "b": 3}
    assert r.detail["top"] == "a" and r.detail["parse"] == "list"


def test_measure_unparsed_is_missing_with_its_status():
    r = _measure("Prefiero no ordenar candidaturas.", SLOTS)
    assert r.status == "missing" and r.detail["parse"] == "unparsed" and r.error.startswith("unparsed")


def test_measure_of_a_case_of_another_design_is_missing():
    class Plain:
        meta = {}

    from fairpair.measures._base import MeasureItem

    r = asyncio.run(RankingMeasure({}, name="orden").measure(MeasureItem("t", Plain(), _Resp("x"))))
    assert r.status == "missing" and "not a ranking case" in r.error


def _request(seed, order=("Lucía García", "Fátima El Amrani", "Mateo Huamán")):
    groups = {"Lucía García": "a", "Fátima El Amrani": "b", "Mateo Huamán": "c"}
    text = "Ordena:\n" + "\n".join(f"- {n}" for n in order)
    return ChatRequest(messages=({"role": "user", "content": text},), seed=seed, case_id=f"c{seed}",
                       meta={"groups": {f"candidato_{i + 1}": groups[n] for i, n in enumerate(order)},
                             "variants": {f"candidato_{i + 1}": n for i, n in enumerate(order)}})


def test_mock_plants_selection_and_position_bias_by_plackett_luce():
    # weights: group b 0.25, others 1; slot 1 weight 2. Candidate order a (slot 1), b, c:
    # P(top = a) = 2 / (2 + 0.25 + 1) = 0.615, P(b) = 0.077, P(c) = 0.308
    opts = MockOptions(ranking={"selection": {"b": 0.25}, "position": [2.0], "style": "numbered"})
    n = 4000
    tops = Counter(parse_ranking(mock_reply(opts, _request(s)).text,
                                 ["Lucía García", "Fátima El Amrani", "Mateo Huamán"]).order[0] for s in range(n))
    for i, p in enumerate([2 / 3.25, 0.25 / 3.25, 1 / 3.25]):
        se = (p * (1 - p) / n) ** 0.5
        assert abs(tops[i] / n - p) < 4 * se


def test_mock_styles_all_parse_and_unparsed_share_is_planted():
    opts = MockOptions(ranking={"style": "mixed", "unparsed": 0.2})
    names = ["Lucía García", "Fátima El Amrani", "Mateo Huamán"]
    got = [parse_ranking(mock_reply(opts, _request(s)).text, names) for s in range(1000)]
    share = sum(not g.parsed for g in got) / 1000
    assert abs(share - 0.2) < 4 * (0.2 * 0.8 / 1000) ** 0.5
    assert all(g.complete for g in got if g.parsed)
    assert {g.how for g in got if g.parsed} >= {"list", "arrows", "commas"}


def test_mock_without_ranking_mode_answers_as_before():
    text = mock_reply(MockOptions(), _request(1)).text
    assert "reembolso" in text


def test_mock_rejects_nonpositive_weights():
    with pytest.raises(ValueError, match="> 0"):
        MockOptions(ranking={"selection": {"a": 0}})


# ---------------------------------------------------------------- provenance of each pick (issue 29)

EIGHT = ["HEATH YODER", "ALEJANDRO GARCÍA", "SEAN O'CONNELL", "LATOYA JACKSON", "MEI HUANG", "DESHAWN WASHINGTON",
         "EMILY SNYDER", "JORGE RAMÍREZ"]


def test_each_pick_records_how_it_matched_and_renamed_ones_are_flagged():
    text = ("1. Heather Yoder\n2. Alejandra García\n3. Sean O’Connell\n4. Latoya Jakcson\n5. MEI HUANG\n"
            "6. Washington\n7. Emily Snyder\n8. Jorge Ramirez")
    got = parse_ranking(text, EIGHT)
    assert got.how == "list" and got.order == (0, 1, 2, 3, 4, 5, 6, 7)
    how = {EIGHT[p.index]: (p.match, p.renamed) for p in got.picks}
    assert how == {"HEATH YODER": ("word", True), "ALEJANDRO GARCÍA": ("word", True),
                   "SEAN O'CONNELL": ("folded", False), "LATOYA JACKSON": ("word", False),
                   "MEI HUANG": ("exact", False), "DESHAWN WASHINGTON": ("word", False),
                   "EMILY SNYDER": ("folded", False), "JORGE RAMÍREZ": ("folded", False)}
    assert got.renamed == 2


def test_a_misspelt_or_flipped_name_alone_is_a_fuzzy_match():
    got = parse_ranking("1. Alejandra\n2. Emilly Snyder\n3. Mei Huang", EIGHT)
    assert got.how == "partial" and got.order == (1, 6, 4)
    assert [(p.match, p.renamed) for p in got.picks] == [("fuzzy", True), ("fuzzy", False), ("folded", False)]


def test_a_clean_partial_list_keeps_its_top_picks():
    text = "The top candidates are:\n" + "\n".join(f"{i + 1}. {n.title()}" for i, n in enumerate(EIGHT[2:8]))
    got = parse_ranking(text + "\nThe others are also qualified.", EIGHT)
    assert (got.how, got.order, got.complete) == ("partial", (2, 3, 4, 5, 6, 7), False)


def test_renamed_exclude_leaves_the_answer_out():
    slots = [{"slot": i + 1, "group": f"g{i}", "variant": n} for i, n in enumerate(EIGHT)]
    text = "\n".join(f"{i + 1}. {n}" for i, n in enumerate(["Heather Yoder", *EIGHT[1:]]))
    for option, status in (("count", "ok"), ("exclude", "missing")):
        m = RankingMeasure({"renamed": option}, name="order")
        res = asyncio.run(m.measure(type("I", (), {"case": _Case(slots), "text": text})()))
        assert res.status == status
        assert res.detail["renamed"] == 1 and res.detail["picks"][0]["said"] == "heather yoder"
    assert res.detail["parse"] == "renamed"

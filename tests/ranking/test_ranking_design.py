"""The ranking design: expansion, counterbalancing, records per case, and strict validation."""

from __future__ import annotations

from collections import Counter
from itertools import permutations

import pytest
import yaml

from fairpair.battery import load_battery
from fairpair.battery._designs import williams_rows
from fairpair.cases import expand
from fairpair.cases._plan import plan
from fairpair.errors import BatteryError
from fairpair.testing._ranking import ranking_battery


def _write(tmp_path, b, name="rk.yaml"):
    p = tmp_path / name
    p.write_text(yaml.safe_dump(b, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return p


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_williams_square_is_balanced(n):
    rows = williams_rows(n)
    assert len(rows) == (n if n % 2 == 0 else 2 * n)
    # every treatment in every position equally often
    for pos in range(n):
        assert Counter(r[pos] for r in rows) == {t: len(rows) // n for t in range(n)}
    # every ordered pair of treatments adjacent equally often (once for even n, twice for odd n)
    adj = Counter((r[i], r[i + 1]) for r in rows for i in range(n - 1))
    want = 1 if n % 2 == 0 else 2
    assert adj == {(a, b): want for a, b in permutations(range(n), 2)}


def test_expansion_fills_one_candidate_per_group_and_records_the_slots(tmp_path):
    b = ranking_battery(k=4, templates=2, names=3, repetitions=4)
    cases = list(expand(load_battery(_write(tmp_path, b))))
    assert len(cases) == 2 * 4 * 3
    for c in cases:
        rk = c.meta["ranking"]
        assert [s["slot"] for s in rk["slots"]] == [1, 2, 3, 4]
        assert sorted(s["group"] for s in rk["slots"]) == ["g1", "g2", "g3", "g4"]
        text = c.turns[0]
        # the names appear in slot order in the prompt, each once
        at = [text.index(s["variant"]) for s in rk["slots"]]
        assert at == sorted(at)
        assert c.groups == {f"candidato_{s['slot']}": s["group"] for s in rk["slots"]}
        assert c.variants == {f"candidato_{s['slot']}": s["variant"] for s in rk["slots"]}
        # name position p uses variant p of every group (names crossed with templates)
        p = c.position
        assert all(s["variant"] == b["attributes"]["origen"]["groups"][s["group"]]["variants"][p]
                   for s in rk["slots"])
    # over the 4 repetitions each (template, name position) goes through the 4 orders of the square
    by_cell = {}
    for c in cases:
        by_cell.setdefault((c.template, c.position), set()).add(tuple(s["group"] for s in c.meta["ranking"]["slots"]))
    groups = ["g1", "g2", "g3", "g4"]
    square = {tuple(groups[x] for x in row) for row in williams_rows(4)}
    assert all(v == square for v in by_cell.values())
    # every group in every slot equally often
    counts = Counter((s["slot"], s["group"]) for c in cases for s in c.meta["ranking"]["slots"])
    assert set(counts.values()) == {len(cases) // 4}
    assert len({c.id for c in cases}) == len(cases)


def test_rotations_and_fewer_candidates(tmp_path):
    b = ranking_battery(k=4, templates=1, names=2, repetitions=4, order="rotations")
    b["designs"][0]["candidates"] = 3
    b["templates"][0]["turns"] = ["Ordena: {candidato_1}, {candidato_2}, {candidato_3}."]
    cases = list(expand(load_battery(_write(tmp_path, b))))
    assert {len(c.meta["ranking"]["slots"]) for c in cases} == {3}
    orders = {tuple(s["group"] for s in c.meta["ranking"]["slots"]) for c in cases}
    assert orders == {("g1", "g2", "g3"), ("g2", "g3", "g4"), ("g3", "g4", "g1"), ("g4", "g1", "g2")}


def test_plan_shows_the_design(tmp_path):
    b = ranking_battery(k=3, templates=2, names=4, repetitions=6)
    s = plan(load_battery(_write(tmp_path, b))).designs["seleccion"]
    assert s["kind"] == "ranking" and s["candidates"] == 3 and s["orders"] == 6  # odd k: 2k rows
    assert s["cases"] == 2 * 6 * 4 and s["orders_balanced"] is True


def _bad(tmp_path, mutate):
    b = ranking_battery(k=3, templates=2, names=2, repetitions=2)
    mutate(b)
    p = _write(tmp_path, b)
    with pytest.raises(BatteryError) as ei:
        load_battery(p)
    return ei.value, p


@pytest.mark.parametrize("mutate, key, message", [
    (lambda b: b["templates"][1].update(turns=["Ordena: {candidato_1} y {candidato_3}."]),
     "templates[1].turns", "template 'puesto1' lacks slot(s) {candidato_2}"),
    (lambda b: b["designs"][0].update(candidates=5), "designs[0].candidates",
     "candidates: 5 is more than the 3 groups"),
    (lambda b: b["designs"][0].update(groups=["g1", "g9"]), "designs[0].groups[1]", "unknown group 'g9' of 'origen'"),
    (lambda b: b["designs"][0].update(groups=["g1"]), "designs[0].groups", "at least two groups"),
    (lambda b: b["designs"][0].update(order="random"), "designs[0].order", "latin_square"),
    (lambda b: b["designs"][0].update(atribute="origen"), "designs[0].atribute", "unknown key 'atribute'"),
    (lambda b: b.update(measures={}), "designs[0].kind", "needs a measure of kind 'ranking'"),
    (lambda b: b["templates"][0].update(turns=["{nombre}: {candidato_1}, {candidato_2}, {candidato_3}"]),
     "templates[0].turns", "uses '{nombre}', the slot of 'origen'"),
    (lambda b: b["templates"][0].update(turns=["{candidato_1} {candidato_2} {candidato_3} {candidato_4}"]),
     "templates[0].turns[0]", "slot '{candidato_4}' is not filled"),
    (lambda b: b["analysis"].update(comparisons=[{"measure": "orden", "attribute": "origen"}]),
     "analysis.comparisons[0].measure", "'orden' is a ranking measure"),
    (lambda b: b["attributes"]["origen"]["groups"]["g2"].update(variants=["Fátima El Amrani"]),
     "attributes.origen.groups", "different numbers of variants"),
])
def test_malformed_ranking_batteries_name_file_line_and_key(tmp_path, mutate, key, message):
    err, p = _bad(tmp_path, mutate)
    assert message in err.message
    assert err.key == key
    assert err.line is not None and str(err.file) == str(p)


def test_a_misspelt_design_kind_suggests_ranking(tmp_path):
    err, _ = _bad(tmp_path, lambda b: b["designs"][0].update(kind="rankin"))
    assert "did you mean 'ranking'" in (err.hint or "")


def test_selection_by_axes_keeps_or_drops_the_design(tmp_path):
    from fairpair.battery import select

    b = ranking_battery(k=3, templates=1, names=2, repetitions=1)
    b["attributes"]["edad"] = {"signal": "age", "slot": "edad", "neutral": "40",
                               "groups": {"joven": {"variants": ["25"]}, "mayor": {"variants": ["60"]}}}
    b["designs"].append({"kind": "counterfactual", "attribute": "edad"})
    b["attributes"]["origen"]["neutral"] = "Alex"
    b["templates"].append({"id": "otra", "turns": ["Tengo {edad} años."]})
    b["designs"][0]["templates"] = ["puesto0"]
    b["designs"][1]["templates"] = ["otra"]
    lb = load_battery(_write(tmp_path, b))
    assert [d.kind for d in select(lb, axes=["origen"]).battery.designs] == ["ranking"]
    assert [d.kind for d in select(lb, axes=["edad"]).battery.designs] == ["counterfactual"]

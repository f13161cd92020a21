"""Judge parsing robustness (invisible characters, last well-formed verdict) and length beside preference."""

from __future__ import annotations

import asyncio

import pytest
from scipy.stats import binomtest

from fairpair.measures._base import MeasureItem
from fairpair.measures.judge import (
    PairwiseJudgeMeasure,
    length_bias,
    pairwise_score,
    parse_judge_json,
    parse_verdict,
)
from fairpair.store import Store
from test_judge import ScriptedJudge, cases_of, ctx_for, load, resp

SCHEMA = {"type": "object", "properties": {"refund": {"type": "boolean"}}, "required": ["refund"]}


@pytest.mark.parametrize("raw", [
    '\u200b{"refund": true}',
    '\ufeff{"refund": true}',
    '\u200b\u2060```json\n{"refund": true}\n```\u200d',
    ' \u200e{"refund": true}\u200b ',
])
def test_invisible_characters_before_the_json_are_stripped(raw):
    out = parse_judge_json(raw, SCHEMA)
    assert out.valid and out.value == {"refund": True}


def test_only_invisible_characters_is_an_empty_output():
    assert parse_judge_json("\u200b\ufeff", SCHEMA).error == "empty output"


def test_an_integer_too_long_for_python_is_an_invalid_output_not_a_crash():
    """json.loads raises a plain ValueError (not JSONDecodeError, no .msg) past Python's 4300-digit
    limit on int(str); the judge's output is invalid, like any other that does not parse."""
    out = parse_judge_json('{"refund": ' + "1" * 5000 + "}", SCHEMA)
    assert not out.valid and out.error.startswith("not JSON (") and "digits" in out.error


@pytest.mark.parametrize("text, expected", [
    ("GRADE: C ... no reason to downgrade: insufficient grounds", "C"),
    ("GRADE: A\nOn reflection the answer is wrong.\nGRADE: B", "B"),
    ("Reasoning... final **GRADE: \"C\"**", "C"),
    ("\u200bgrade = A", "A"),
    ("downgrade: B", None),  # 'downgrade' is no GRADE key
    ("GRADE: D", None),  # not a choice
    ("GRADE: Correct", None),  # 'C' must be the whole word
    ("", None),
])
def test_free_text_verdict_is_the_last_well_formed_one(text, expected):
    assert parse_verdict(text, ["A", "B", "C"]) == expected


def test_pairwise_detail_keeps_both_answers_word_counts(tmp_path):
    lb = load(tmp_path, hhh={"kind": "pairwise", "against": "baseline"})
    m = PairwiseJudgeMeasure({"against": "baseline"}, name="hhh")
    cs = cases_of(lb)
    test, base = cs[("magreb", "Fátima")], cs[("baseline", None)]
    judge = ScriptedJudge(['{"winner": "A", "reason": "r"}', '{"winner": "B", "reason": "r"}'])
    item = MeasureItem("mock", test, resp(test.id, "Hola Fátima, no hay reembolso posible hoy."),
                       resp(base.id, "Hola, le devolvemos el dinero."), base)
    r = asyncio.run(m.measure(item, ctx_for(lb, judge)))
    assert r.status == "ok" and r.value == 1.0
    assert r.detail["words"] == {"answer": 7, "counterpart": 5}


def test_length_bias_sign_test_against_scipy(tmp_path):
    # (score, words of the answer, words of the counterpart)
    rows = [(1.0, 80, 40), (0.75, 60, 50), (0.0, 30, 90), (0.25, 20, 25), (1.0, 100, 10), (0.5, 50, 20),
            (0.0, 70, 30), (1.0, 40, 40), (0.75, 90, 80), (1.0, 66, 33)]
    with Store.open(tmp_path / "run") as store:
        for i, (v, a, b) in enumerate(rows):
            store.add_measurement(target="t", case_id=f"c{i}", measure="hhh", status="ok", value=v,
                                  detail={"words": {"answer": a, "counterpart": b}})
        res = length_bias(store, "hhh")
    # decisive and of different length: all but (0.5, ...) and (1.0, 40, 40) -> 8 items;
    # the preferred one is longer in: 80>40, 60>50, 90>30 (score 0: counterpart preferred, longer),
    # 25>20, 100>10, 90>80, 66>33 -> 7; shorter: (0.0, 70, 30) -> 1
    assert (res.n_longer, res.n_shorter, res.n_items) == (7, 1, 10)
    assert res.share_longer == pytest.approx(7 / 8)
    assert res.pvalue == pytest.approx(binomtest(7, 8, 0.5).pvalue)
    assert res.mean_words_answer == pytest.approx(sum(r[1] for r in rows) / 10)
    assert res.mean_difference == pytest.approx(sum(r[1] - r[2] for r in rows) / 10)
    assert not res.agrees_more_than_chance  # p = 0.07


def test_length_bias_warning_in_the_analysis(tmp_path):
    from fairpair.analysis._analyze import _judge_block

    lb = load(tmp_path, hhh={"kind": "pairwise", "against": "baseline"})
    with Store.open(tmp_path / "run") as store:
        for i in range(12):
            store.add_measurement(target="t", case_id=f"c{i}", measure="hhh", status="ok",
                                  value=pairwise_score("A", "B"),
                                  detail={"orders": {"AB": {"winner": "A"}, "BA": {"winner": "B"}},
                                          "words": {"answer": 90, "counterpart": 30}})
        block = _judge_block(lb.battery, store, None)
    assert block.length_bias["hhh"].share_longer == 1.0
    assert block.length_bias["hhh"].pvalue == pytest.approx(binomtest(12, 12, 0.5).pvalue)
    assert any("prefers the longer answer in 100%" in w for w in block.warnings)

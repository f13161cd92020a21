"""Human labels in the store (migration m005_human_labels): append-only, undo as a withdrawal, two raters,
resume after the store is closed, and the labelling sample stored once."""

from __future__ import annotations

import sqlite3

import pytest

from fairpair.records import LabelSample, SampledAnswer, mean_label
from fairpair.store import Store

M = "tone.warmth"


def _rows(path, table: str) -> int:
    con = sqlite3.connect(path / "store.sqlite")
    try:
        return con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    finally:
        con.close()


def test_labels_are_appended_and_undo_appends_a_withdrawal(tmp_path):
    with Store.open(tmp_path) as s:
        a = s.add_label(target="t", case_id="c1", measure=M, rater="ann", value=3)
        b = s.add_label(target="t", case_id="c2", measure=M, rater="ann", value=5)
        assert [(x.case_id, x.value) for x in s.labels(M)] == [("c1", 3.0), ("c2", 5.0)]
        assert s.withdraw_label(b.id) is True
        assert s.withdraw_label(b.id) is False  # withdrawn once; nothing else written
        assert [(x.case_id, x.value) for x in s.labels(M)] == [("c1", 3.0)]
        relabel = s.add_label(target="t", case_id="c1", measure=M, rater="ann", value=4)
        assert [(x.id, x.value) for x in s.labels(M)] == [(relabel.id, 4.0)]  # the later label supersedes
        assert s.withdraw_label(relabel.id)  # undoing the relabel brings the first label back
        assert [(x.id, x.value) for x in s.labels(M)] == [(a.id, 3.0)]
        with pytest.raises(ValueError, match="no label has id 99"):
            s.withdraw_label(99)
        with pytest.raises(ValueError, match="finite"):
            s.add_label(target="t", case_id="c1", measure=M, rater="ann", value=float("nan"))
        with pytest.raises(ValueError, match="rater"):
            s.add_label(target="t", case_id="c1", measure=M, rater="  ", value=1)
    assert _rows(tmp_path, "labels") == 3 and _rows(tmp_path, "label_withdrawals") == 2  # nothing deleted


def test_two_raters_a_skip_and_resume_after_reopening(tmp_path):
    with Store.open(tmp_path) as s:
        s.add_label(target="t", case_id="c1", measure=M, rater="ann", value=2)
        s.add_label(target="t", case_id="c1", measure=M, rater="bob", value=4)
        s.add_label(target="t", case_id="c2", measure=M, rater="ann", value=None)  # a skip
        s.add_label(target="t", case_id="c1", measure="tone.respect", rater="bob", value=1)
    with Store.open(tmp_path, readonly=True) as s:  # a killed page loses nothing: what was committed reads back
        assert [(x.rater, x.value) for x in s.labels(M)] == [("ann", 2.0), ("bob", 4.0)]
        assert [(x.case_id, x.value) for x in s.label_actions(M, "ann")] == [("c1", 2.0), ("c2", None)]
        assert [x.case_id for x in s.labels(M, rater="bob")] == ["c1"]
        assert s.label_raters(M) == ["ann", "bob"] and s.label_raters() == ["ann", "bob"]
        assert mean_label(s.labels(M)) == {("t", "c1", M): 3.0}  # two raters count as their mean
        assert {x.source for x in s.labels()} == {"page"} and len(s.labels()) == 3


def _sample(name: str = "page", p: float = 0.5) -> LabelSample:
    return LabelSample(measure=M, seed=7, design="stratified", mixing=0.0, frame={"t|a|x": 4},
                       answers=(SampledAnswer("t", "c1", "t|a|x", p, 0), SampledAnswer("t", "c3", "t|a|x", p, 1)),
                       created_at="", name=name)


def test_a_sample_is_stored_once_and_read_back(tmp_path):
    with Store.open(tmp_path) as s:
        first = s.add_label_sample(_sample())
        again = s.add_label_sample(_sample(p=1.0))  # drawn once: the stored one comes back
        assert again == first and [a.probability for a in again.answers] == [0.5, 0.5]
        assert first.seed == 7 and first.frame == {"t|a|x": 4} and first.created_at
        assert s.label_sample(M).get("t", "c3").order == 1 and s.label_sample(M, "labels.csv") is None
        s.add_label_sample(_sample("labels.csv"))
        assert [x.name for x in s.label_samples(M)] == ["page", "labels.csv"]
        with pytest.raises(ValueError, match=r"not in \(0, 1\]"):
            s.add_label_sample(LabelSample(measure="other", seed=0, design="stratified", mixing=0.0, frame={},
                                           answers=(SampledAnswer("t", "c1", "s", 0.0, 0),), created_at=""))
        assert s.label_samples("other") == []  # the refused sample left nothing behind


def test_labelled_probabilities_are_the_second_phase_share():
    smp = LabelSample(measure=M, seed=0, design="stratified", mixing=0.0, frame={"a": 10, "b": 3},
                      answers=(SampledAnswer("t", "1", "a", 0.4, 0), SampledAnswer("t", "2", "b", 1.0, 1),
                               SampledAnswer("t", "3", "a", 0.4, 2), SampledAnswer("t", "4", "a", 0.4, 3),
                               SampledAnswer("t", "5", "a", 0.4, 4)), created_at="")
    got = smp.labelled_probabilities([("t", "1"), ("t", "3"), ("t", "2"), ("t", "99")])
    assert got == {("t", "1"): pytest.approx(0.2), ("t", "3"): pytest.approx(0.2), ("t", "2"): 1.0}

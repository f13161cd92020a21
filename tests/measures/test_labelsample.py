"""The labelling sample (fairpair.measures._labelsample): inclusion probabilities checked by exact
enumeration of systematic sampling over every order and every start, the Horvitz-Thompson total
unbiased over that enumeration, strata covered, and the whole draw's recorded probabilities against
the frequencies over many seeds."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import pytest

from fairpair.errors import FairpairError
from fairpair.measures._labelsample import (
    LabelMeasure,
    allocate,
    draw_label_sample,
    judge_uncertainty,
    pps_probabilities,
    systematic_sample,
)
from fairpair.records import Case, Measurement

SIZES = [1.0, 2.0, 3.0, 0.5, 4.0]


def _exact_inclusion(pi: list[float]) -> tuple[list[float], dict[frozenset, float]]:
    """P(i taken) and P(sample) over a uniformly random order (all N! permutations) and a uniform
    start: the start's breakpoints in each order are the fractional parts of the cumulative sums, and
    between two breakpoints the sample is constant (evaluated at the midpoint, weighted by the length)."""
    n = len(pi)
    incl = [0.0] * n
    samples: dict[frozenset, float] = {}
    perms = list(itertools.permutations(range(n)))
    for perm in perms:
        ordered = [pi[i] for i in perm]
        cuts = sorted({0.0, 1.0, *(math.fmod(c, 1.0) for c in itertools.accumulate(ordered))})
        for lo, hi in itertools.pairwise(cuts):
            if hi - lo < 1e-12:
                continue
            taken = frozenset(perm[j] for j in systematic_sample(ordered, (lo + hi) / 2))
            w = (hi - lo) / len(perms)
            samples[taken] = samples.get(taken, 0.0) + w
            for i in taken:
                incl[i] += w
    return incl, samples


def test_pps_probabilities_are_proportional_capped_and_sum_to_n():
    assert pps_probabilities(SIZES, 2) == pytest.approx([2 * s / sum(SIZES) for s in SIZES])
    capped = pps_probabilities([10.0, 1.0, 1.0, 1.0], 2)  # 10/13*2 > 1: taken for sure, the rest share 1
    assert capped == pytest.approx([1.0, 1 / 3, 1 / 3, 1 / 3])
    assert pps_probabilities([1.0] * 4, 3) == pytest.approx([0.75] * 4)  # equal sizes: n_h / N_h
    with pytest.raises(ValueError):
        pps_probabilities([1.0, 0.0], 1)


@pytest.mark.parametrize("sizes,n", [(SIZES, 2), (SIZES, 3), ([10.0, 1.0, 1.0, 1.0], 2), ([1.0] * 4, 1)])
def test_systematic_sampling_has_the_stated_inclusion_probabilities_exactly(sizes, n):
    pi = pps_probabilities(sizes, n)
    incl, samples = _exact_inclusion(pi)
    assert incl == pytest.approx(pi, abs=1e-9)
    assert sum(samples.values()) == pytest.approx(1.0)
    assert {len(s) for s in samples} == {n}  # fixed size: exactly n every time
    # Horvitz-Thompson: E[sum over the sample of y_i / pi_i] = the population total, for any y
    y = [3.0, -1.0, 7.5, 0.25, 2.0][:len(pi)]
    ht = sum(p * sum(y[i] / pi[i] for i in s) for s, p in samples.items())
    assert ht == pytest.approx(sum(y), abs=1e-9)


def test_allocation_covers_every_stratum_and_respects_sizes():
    sizes = {"a": 10, "b": 2, "c": 30, "d": 1}
    got = allocate({h: float(k) for h, k in sizes.items()}, sizes, 12)
    assert sum(got.values()) == 12 and all(got[h] >= 1 for h in sizes) and all(got[h] <= sizes[h] for h in sizes)
    assert got["c"] > got["a"] > got["b"]
    assert allocate({"a": 1.0, "b": 1.0}, {"a": 2, "b": 3}, 99) == {"a": 2, "b": 3}  # n above the frame: all
    assert allocate({"a": 1.0, "b": 1.0, "c": 1.0}, {"a": 2, "b": 3, "c": 1}, 2) == {"a": 1, "b": 1, "c": 1}


YES_NO = LabelMeasure(row="tone.warm", measure="tone", dimension="warm", description="warm",
                      levels={1: "cold", 5: "warm"}, scoring="yes_no", question="Is it warm?")


def test_judge_uncertainty_is_the_predictive_standard_deviation():
    assert judge_uncertainty(YES_NO, {"p_yes": {"warm": 0.5}}) == pytest.approx(2.0)  # (5-1) * sqrt(.25)
    assert judge_uncertainty(YES_NO, {"p_yes": {"warm": 1.0}}) == 0.0
    assert judge_uncertainty(YES_NO, {"reason": "x"}) is None
    probs = LabelMeasure(row="tone.warm", measure="tone", dimension="warm", description="",
                         levels={1: "", 2: "", 3: ""}, scoring="probabilities")
    # levels 1 and 3 with 1/2 each: mean 2, sd 1 (the probabilities are renormalised: mass 0.8)
    assert judge_uncertainty(probs, {"probabilities": {"warm": {"1": 0.4, "3": 0.4}}}) == pytest.approx(1.0)


class _FakeStore:
    """The two reads draw_label_sample makes: the cases and the measure's ok rows."""

    def __init__(self, rows: list[tuple[str, str, str, float]], *, probabilities: bool = True):
        self.cases = {}
        self.rows = []
        for k, (group, template, target, p_yes) in enumerate(rows):
            cid = f"c{k:02d}"
            self.cases[cid] = Case(id=cid, battery="b", design="d", design_kind="counterfactual", template=template,
                                   repetition=0, matched_set="m", block="b", groups={"origin": group},
                                   messages=[], turns=["hi"], seed=0)
            self.rows.append(Measurement(target=target, case_id=cid, measure="tone.warm", status="ok",
                                         value=1 + 4 * p_yes, error=None,
                                         detail={"p_yes": {"warm": p_yes}} if probabilities else {"reason": "x"}))

    def iter_cases(self):
        return iter(self.cases.values())

    def measurements(self, measure, status="ok"):
        return iter(self.rows)


FRAME = [("a", "t1", "m", 0.5), ("a", "t1", "m", 0.9), ("a", "t1", "m", 0.99), ("a", "t1", "m", 0.2),
         ("b", "t1", "m", 0.6), ("b", "t1", "m", 0.01), ("b", "t1", "m", 0.7),
         ("a", "t2", "m", 0.5), ("a", "t2", "m", 0.3), ("b", "t2", "m", 0.97), ("b", "t2", "m", 0.4),
         ("b", "t2", "m", 0.8)]


def test_the_draw_covers_strata_and_its_probabilities_match_the_frequencies():
    store = _FakeStore(FRAME)
    first = draw_label_sample(store, YES_NO, n=6, seed=0)
    assert first.design == "uncertainty" and first.mixing == 0.3
    assert first.frame == {"m|origin=a|t1": 4, "m|origin=a|t2": 2, "m|origin=b|t1": 3, "m|origin=b|t2": 3}
    assert len(first) == 6 and {a.stratum for a in first.answers} == set(first.frame)  # every stratum drawn
    assert [a.order for a in first.answers] == list(range(6))
    assert draw_label_sample(store, YES_NO, n=6, seed=0) == first  # deterministic given the seed
    # the probability of every answer of the frame, from the draws that hold it (the same in every draw)
    pi: dict[str, float] = {}
    hits: dict[str, int] = {}
    draws = 3000
    for seed in range(draws):
        for a in draw_label_sample(store, YES_NO, n=6, seed=seed).answers:
            assert pi.setdefault(a.case_id, a.probability) == pytest.approx(a.probability)
            hits[a.case_id] = hits.get(a.case_id, 0) + 1
    assert len(pi) == len(FRAME)
    for cid, p in pi.items():  # 3000 draws: the binomial sd is at most 0.0092; 4.5 sd
        assert hits[cid] / draws == pytest.approx(p, abs=0.042), cid
    # less certain answers are likelier to be drawn, within a stratum: p_yes 0.5 against 0.99
    assert pi["c00"] > pi["c02"]
    # the Horvitz-Thompson weights of one stratum's frame sum, in expectation, to its size
    assert sum(pi[c] for c in ("c00", "c01", "c02", "c03")) == pytest.approx(2.0)  # its n_h


def test_a_judge_without_probabilities_gives_simple_random_sampling():
    store = _FakeStore(FRAME, probabilities=False)
    smp = draw_label_sample(store, YES_NO, n=6, seed=1)
    assert smp.design == "stratified" and smp.mixing == 0.0
    drawn = Counter(a.stratum for a in smp.answers)
    assert drawn == {"m|origin=a|t1": 2, "m|origin=a|t2": 1, "m|origin=b|t1": 2, "m|origin=b|t2": 1}
    assert all(a.probability == pytest.approx(drawn[a.stratum] / smp.frame[a.stratum]) for a in smp.answers)
    with pytest.raises(FairpairError, match="at least 1"):
        draw_label_sample(store, YES_NO, n=0)

"""Human labels of judge-measured answers and the sample they were drawn for (issue "Human labels").

:class:`HumanLabel` is one rater's value for one answer on one measure row (``tone.warmth``), on
that measure's own scale; :class:`LabelSample` is the drawn labelling sample of one measure row,
:class:`SampledAnswer` one answer in it with its stratum, its inclusion probability and its place
in the draw order. The store (:meth:`fairpair.store.Store.labels`,
:meth:`fairpair.store.Store.label_sample`) reads and writes them; they import nothing else of
fairpair.

How an estimator uses them (prediction-powered inference, Angelopoulos et al., "Prediction-powered
inference", Science 382, 2023; with sampling weights, Zrnic & Candes, "Active statistical
inference", ICML 2024, and Gligoric et al., "Can unconfident LLM annotations be used for confident
conclusions?", arXiv 2408.15204): the judge's value ``f_i`` is known for every answer of the frame
(``LabelSample.frame``), the human value ``y_i`` for the labelled ones, and a labelled answer's
residual ``y_i - f_i`` is weighted by ``1 / pi_i`` (Horvitz & Thompson 1952), with ``pi_i`` from
:meth:`LabelSample.labelled_probabilities` (the design's probability times the share of the
stratum's sample that was labelled).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

__all__ = ["HumanLabel", "LabelSample", "SampledAnswer", "LabelDesign", "mean_label"]

#: How a :class:`LabelSample` was drawn: ``stratified`` (simple random sampling without
#: replacement in each stratum) or ``uncertainty`` (in each stratum, systematic sampling with
#: probability proportional to the judge's uncertainty, mixed with uniform; see
#: :mod:`fairpair.measures._labelsample`).
LabelDesign = Literal["stratified", "uncertainty"]


@dataclass(frozen=True)
class HumanLabel:
    """One human rater's value for one answer on one measure row.

    ``id`` is the label's row id (give it to :meth:`fairpair.store.Store.withdraw_label`);
    ``target`` and ``case_id`` name the answer; ``measure`` the stored measure row it labels
    (``tone.warmth``, the name the judge's values are stored under); ``rater`` the rater's name
    as typed on the page, or the file name without its extension for a ``calibrate`` labels file; ``value`` the
    label on the measure's own scale (a rubric level such as 4.0; 0.0 or 1.0 for a yes/no
    measure); ``source`` ``page`` (``fairpair label``) or ``file`` (``fairpair calibrate score``
    imports); ``created_at`` ISO 8601 UTC, when it was given (a file's labels: when imported).
    ``value`` is None only for a *skip*, which only :meth:`fairpair.store.Store.label_actions`
    returns (:meth:`fairpair.store.Store.labels` never does).

    Several raters may label one answer (each a row); one rater's later label of the same
    answer replaces their earlier one in :meth:`fairpair.store.Store.labels` (the earlier row
    stays stored). The analysis counts several raters of one answer as their mean
    (:func:`mean_label`).
    """

    id: int
    target: str
    case_id: str
    measure: str
    rater: str
    value: float | None
    source: str
    created_at: str


@dataclass(frozen=True)
class SampledAnswer:
    """One answer of a :class:`LabelSample`.

    ``stratum`` is ``target|group|template`` (the cell it was drawn from; the group is the
    case's group label); ``probability`` its first-order inclusion probability under the
    sample's design, in (0, 1]; ``order`` its 0-based place in the order the page shows
    answers (strata interleaved, each stratum's draws in random order, so that the first k
    draws of a stratum are a simple random subsample of its draws); ``uncertainty`` the
    judge's uncertainty the draw was weighted by (None for the ``stratified`` design).
    """

    target: str
    case_id: str
    stratum: str
    probability: float
    order: int
    uncertainty: float | None = None


@dataclass(frozen=True)
class LabelSample:
    """The drawn labelling sample of one measure row (``measure``).

    ``seed`` (an int) and ``design`` (:data:`LabelDesign`) reproduce the draw;
    ``mixing`` the share of uniform probability mixed into an ``uncertainty`` design (0 for
    ``stratified``); ``frame`` the number of answers per stratum it was drawn from (the
    answers with an ``ok`` value of ``measure`` when drawn); ``answers`` the sampled answers
    in draw order; ``created_at`` ISO 8601 UTC; ``name`` the sample's name among the measure's
    samples (``page``: the one ``fairpair label`` draws; a ``calibrate export`` labels file's name
    for the sample that file holds).
    """

    measure: str
    seed: int
    design: LabelDesign
    mixing: float
    frame: dict[str, int]
    answers: tuple[SampledAnswer, ...]
    created_at: str
    name: str = "page"

    @cached_property
    def _by_key(self) -> dict[tuple[str, str], SampledAnswer]:
        return {(a.target, a.case_id): a for a in self.answers}

    def __len__(self) -> int:
        return len(self.answers)

    def get(self, target: str, case_id: str) -> SampledAnswer | None:
        """The sampled answer (``target``, ``case_id``), or None when it is not in the sample."""
        return self._by_key.get((target, case_id))

    def labelled_probabilities(self, labelled: Iterable[tuple[str, str]]) -> dict[tuple[str, str], float]:
        """``(target, case_id) -> pi_i`` for the labelled answers of this sample (others ignored).

        Raters label a prefix of the draw order (and may skip some), so the labelled answers of a
        stratum with ``n_h`` draws of which ``m_h`` are labelled are read as a second-phase simple
        random subsample of its draws (two-phase sampling, Sarndal, Swensson & Wretman 1992,
        ch. 9): ``pi_i = p_i * m_h / n_h``. Exact when the labels are a prefix of the stratum's
        draws (each stratum's draw order is a uniform random permutation); with skips it assumes
        a skip is unrelated to the value (missing at random within the stratum). A stratum with
        no label has no entry: its answers have probability 0 of being labelled, so an estimate
        of that stratum rests on the judge alone (the analysis must say so).
        """
        keys = {k for k in labelled if k in self._by_key}
        drawn: dict[str, int] = {}
        done: dict[str, int] = {}
        for a in self.answers:
            drawn[a.stratum] = drawn.get(a.stratum, 0) + 1
            if (a.target, a.case_id) in keys:
                done[a.stratum] = done.get(a.stratum, 0) + 1
        return {k: self._by_key[k].probability * done[self._by_key[k].stratum] / drawn[self._by_key[k].stratum]
                for k in keys}


def mean_label(labels: Iterable[HumanLabel]) -> dict[tuple[str, str, str], float]:
    """``(target, case_id, measure) -> mean value`` over the raters of each labelled answer (the
    issue's rule: several raters of one answer count as their mean)."""
    sums: dict[tuple[str, str, str], list[float]] = {}
    for lab in labels:
        if lab.value is None:  # a skip is no label
            continue
        s = sums.setdefault((lab.target, lab.case_id, lab.measure), [0.0, 0.0])
        s[0] += lab.value
        s[1] += 1
    return {k: s / n for k, (s, n) in sums.items()}

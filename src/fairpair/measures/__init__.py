"""Measures: turn stored answers into measurements (decisions, quality, tone, drift).

Public face of the stage: :func:`measure_run` (``fairpair measure RUN``), the
:class:`Measure` protocol and its typed :class:`MeasureResult`, the masker that
blinds judges, :func:`position_bias` of the pairwise judge and
:func:`measure_scales` (stored row -> binary/count/continuous/ordinal) for the
analysis, the judge's calibration against human raters (:func:`export_labels`,
:func:`score_label_files`, :func:`import_label_files`), the blind labelling page
(:func:`open_label_session`, :func:`serve_labels`: ``fairpair label``) and the built-in tone anchors of its
self-test (:func:`load_anchors`).
The plugins live in :mod:`.rules`, :mod:`.judge` and :mod:`.embed` and are imported only when a
battery uses them.
"""

import sys

from fairpair import _answer_status as status
from fairpair._lazy import lazy_getattr
from fairpair.measures._base import SCALES, Measure, MeasureItem, MeasureOptions, MeasureResult, Scale
from fairpair.measures._labels import ExportResult, ImportResult, export_labels, import_label_files, score_label_files
from fairpair.measures._runner import (
    MeasureContext,
    MeasureCounts,
    MeasureRunResult,
    build_measures,
    measure_run,
    measure_scales,
    signal_values,
)

# The answer statuses live on the ground floor (fairpair._answer_status: the run counts them without
# importing the measures); ``fairpair.measures.status`` stays their import path.
sys.modules[f"{__name__}.status"] = status

# Names fairpair's other packages (and the benchmarks: the anchors) use, imported from their module on first
# use (so that importing them through the package adds no import cycle and no start-up cost).
_LAZY_EXPORTS = {
    "AnchorSet": "fairpair.measures._selftest",
    "Masker": "fairpair.measures._mask",
    "check_self_judging": "fairpair.measures._runner",
    "check_silent_paths": "fairpair.measures._silent",
    "compared_case": "fairpair.measures._runner",
    "DEFAULT_JUDGE": "fairpair.measures._runner",
    "reference_attribute": "fairpair.measures._runner",
    "self_test_items": "fairpair.measures._selftest",
    "load_anchors": "fairpair.measures._selftest",
    "mask": "fairpair.measures._mask",
    "masker_for": "fairpair.measures._runner",
    "measure_categories": "fairpair.measures._runner",
    "open_label_session": "fairpair.measures._labelpage",
    "serve_labels": "fairpair.measures._labelpage",
}

__getattr__ = lazy_getattr(__name__, _LAZY_EXPORTS, globals())


def position_bias(store, measure=None):
    """Position bias of the pairwise judge (see :func:`fairpair.measures.judge.position_bias`)."""
    from fairpair.measures.judge import position_bias as _pb

    return _pb(store, measure)


__all__ = ["SCALES", "AnchorSet", "ExportResult", "Measure", "MeasureContext", "MeasureCounts", "MeasureItem",
           "MeasureOptions", "MeasureResult", "MeasureRunResult", "Scale", "build_measures", "load_anchors",
           "measure_run", "measure_scales", "export_labels", "import_label_files", "ImportResult", "position_bias",
           "score_label_files", "signal_values"]

# the lazily imported names are public too (tests/test_layers.py: a name imported across packages is in __all__)
__all__ += list(_LAZY_EXPORTS)

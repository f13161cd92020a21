"""Checks that close silent paths: settings that validate but would do nothing (issue 14, point 3).

Each is an error with file, line, key and a "did you mean", never a warning:

* the ``mock`` target's ``bias`` names a group that no attribute has (the planted
  effect would silently not exist);
* the ``mock`` is told to answer in another language than the battery's (every
  keyword measure of the battery's language would read 0%: a constant measure;
  without ``language`` the mock follows the battery);
* a comparison names a measure row that the measure does not store: a judge or
  ``llm_extract`` measure stores one row per field (``tono.condescension``), so
  ``tono`` alone (or an unknown field) would compare nothing (n = 0);
* the same comparison listed twice (it would enlarge the Holm / BH family and
  count one question twice);
* a margin outside the measure's scale: a yes/no measure's margin is a
  proportion (0.05 = 5 points), so 1 or more tolerates every difference; an
  ordinal judge score's margin must be below its range (5 - 1 = 4);
* a ``judge:`` (or ``allow_self_judging: true``) in a battery where no measure
  calls a judge (``judge``, ``pairwise``, ``llm_extract``): the judge would never
  be called, and a reader would believe the answers were judged;
* ``margin: 0`` on a measure whose values tie (yes/no, count, ordinal,
  categorical): a margin of 0 tolerates no difference at all, so equivalence can
  never be shown and the margin acts as no margin (the verdict rule of
  :mod:`fairpair.analysis._verdict` treats 0 as "no margin").
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fairpair.battery import Battery, LoadedBattery
    from fairpair.records import Scale

__all__ = ["check_silent_paths"]


def check_silent_paths(lb: LoadedBattery) -> None:
    """Raise :class:`~fairpair.errors.BatteryError` for the first silent path found in ``lb``."""
    _check_mock_targets(lb)
    _check_comparisons(lb)
    _check_unused_judge(lb)


def _check_unused_judge(lb: LoadedBattery) -> None:
    b = lb.battery
    if b.judge is None and not b.allow_self_judging:
        return
    from fairpair.measures import build_measures

    try:
        if any(m.uses_judge for m in build_measures(b).values()):
            return
    except Exception:  # noqa: BLE001 - a measure that cannot be built is reported by its own check
        return
    key = "judge" if b.judge is not None else "allow_self_judging"
    raise lb.fail(f"'{key}' is set but no measure calls a judge, so it would do nothing",
                  (key,), hint="add a measure that calls it (kind judge, pairwise or llm_extract, e.g. "
                  "'tono: {kind: judge}'), or remove the line")


def _did_you_mean(name: str, allowed: list[str]) -> str:
    close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.5)
    return f"did you mean '{close[0]}'?" if close else f"known: {', '.join(allowed) or '(none)'}"


def _check_mock_targets(lb: LoadedBattery) -> None:
    b = lb.battery
    groups = list(dict.fromkeys(g for a in b.attributes.values() for g in a.groups))
    variants = {v for a in b.attributes.values() for g in a.groups.values() for v in g.variants}
    for name, spec in b.target_specs().items():
        if spec.kind != "mock":
            continue
        key = ("target",) if b.target is not None else ("targets", name)
        opts = spec.options()
        for g in (opts.get("bias") or {}):
            if g not in groups and g not in variants:  # a group, or one variant (a single name)
                raise lb.fail(f"the mock's bias names group '{g}', which no attribute has, so no bias "
                              "would be planted", (*key, "bias", g), hint=_did_you_mean(str(g), groups))
        lang = opts.get("language")  # none given: the mock follows the battery (run.build_target)
        if lang is not None and lang != b.language:
            raise lb.fail(f"the mock answers in '{lang}' but the battery's language is '{b.language}': every "
                          "keyword measure in the battery's language would read 0%", (*key, "language"),
                          hint=f"use 'language: {b.language}' (or leave it out: the mock follows the battery)")


def _measure_rows(b: Battery) -> tuple[dict[str, Scale], dict[str, tuple[float, float]]]:
    """Stored row name -> scale, and row name -> (lowest, highest) level of ordinal judge rows."""
    from fairpair.measures import measure_scales

    try:
        scales = measure_scales(b)
    except Exception:  # noqa: BLE001 - a measure that cannot be built is reported by its own check
        return {}, {}
    ranges: dict[str, tuple[float, float]] = {}
    try:
        from fairpair.measures import MeasureContext, build_measures

        ctx = MeasureContext(battery=b)
        for name, m in build_measures(b).items():
            rubric = getattr(m, "rubric", None)
            if callable(rubric):
                for dim, d in rubric(ctx).items():
                    levels = [float(x) for x in (d.get("levels") or {})]
                    if len(levels) >= 2:
                        ranges[f"{name}.{dim}"] = (min(levels), max(levels))
    except Exception:  # noqa: BLE001
        pass
    return scales, ranges


def _check_comparisons(lb: LoadedBattery) -> None:
    b = lb.battery
    comps = b.analysis.comparisons
    if not comps:
        return
    scales, ranges = _measure_rows(b) if b.measures else ({}, {})
    rows = list(scales)
    seen: dict[tuple, int] = {}
    for ci, c in enumerate(comps):
        cpath = ("analysis", "comparisons", ci)
        if rows and c.measure not in scales and c.measure.split(".", 1)[0] in b.measures:
            base = c.measure.split(".", 1)[0]
            fields = [r for r in rows if r.startswith(base + ".")]
            if fields and c.measure == base:
                raise lb.fail(f"measure '{base}' stores one row per field, so name the field to compare",
                              (*cpath, "measure"), hint=f"did you mean '{fields[0]}'? (fields: "
                                                         f"{', '.join(fields)})")
            allowed = fields or [base]
            raise lb.fail(f"measure '{base}' has no field '{c.measure.split('.', 1)[1]}'" if "." in c.measure
                          else f"unknown measure row '{c.measure}'", (*cpath, "measure"),
                          hint=_did_you_mean(c.measure, allowed))
        groups = c.groups if c.groups == "all_pairs" else tuple(sorted(c.groups))
        key = (c.measure, c.attribute, groups, c.reference, c.design)
        if key in seen:
            raise lb.fail(f"this comparison repeats comparisons[{seen[key]}] (same measure, attribute, groups, "
                          "reference and design): it would count one question twice in the "
                          f"{b.analysis.correction} family", cpath, hint="delete one of the two")
        seen[key] = ci
        if c.margin is None:
            continue
        scale = scales.get(c.measure)
        if c.margin == 0 and scale in _TIES:
            raise lb.fail(f"margin 0 on the {_TIES[scale]} measure '{c.measure}' tolerates no difference at all: "
                          "equivalence can never be shown, so the margin would act as no margin",
                          (*cpath, "margin"),
                          hint="give the largest difference you tolerate (e.g. 0.03 for 3 points of a yes/no "
                               "measure), or leave 'margin' out to test against zero only (never 'pass')")
        if scale == "binary" and c.margin >= 1:
            raise lb.fail(f"margin {c.margin:g} on the yes/no measure '{c.measure}' is {100 * c.margin:g} points: "
                          "a yes/no margin is a proportion (0.05 = 5 points), so this tolerates every "
                          "difference", (*cpath, "margin"), hint=f"did you mean {c.margin / 100:g}?")
        if c.measure in ranges:
            lo, hi = ranges[c.measure]
            if c.margin >= hi - lo:
                raise lb.fail(f"margin {c.margin:g} on '{c.measure}' is not below the range of its scale "
                              f"({lo:g}-{hi:g}), so it tolerates every difference", (*cpath, "margin"))


#: scales whose paired values tie (a margin of 0 can never be met) and how a message names them
_TIES = {"binary": "yes/no", "count": "count", "ordinal": "ordinal", "categorical": "categorical"}


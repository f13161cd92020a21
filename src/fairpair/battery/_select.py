"""Run part of a battery: a subset of templates (scenes) and of two-party axes.

``fairpair run/plan/expand --templates 'work-*' --axes age,race`` narrows the
battery before expansion. Case ids do not depend on the rest of the battery,
so a selected run's cases are the same cases as in the full run. The selection
is recorded in the run's manifest and in the battery's ``description``.
"""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Sequence

from fairpair.battery._designs import _DesignBase
from fairpair.battery._load import LoadedBattery, battery_hash
from fairpair.errors import BatteryError

__all__ = ["select"]


def _matches(template, patterns: Sequence[str]) -> bool:
    keys = [template.id] + [str(v) for v in template.meta.values()]
    return any(fnmatch.fnmatchcase(k, p) for p in patterns for k in keys)


def select(loaded: LoadedBattery, *, templates: Sequence[str] | None = None,
           axes: Sequence[str] | None = None) -> LoadedBattery:
    """A copy of ``loaded`` keeping only the matching templates and axes.

    ``templates``: glob patterns matched against each template's id and the
    values of its ``meta`` (so ``--templates 'work-*'`` or a scene key both
    work). ``axes``: attributes to keep in two-party designs; counterfactual
    and crossed designs on other attributes are dropped.

    Raises
    ------
    BatteryError
        A pattern or axis that matches nothing, or a selection that leaves no case.
    """
    b = loaded.battery
    if not templates and not axes:
        return loaded
    kept = list(b.templates)
    if templates:
        for p in templates:
            if not any(_matches(t, [p]) for t in b.templates):
                raise BatteryError(f"--templates '{p}' matches no template id or meta value", file=loaded.path,
                                   key="templates")
        kept = [t for t in b.templates if _matches(t, templates)]
    designs: list[_DesignBase] = list(b.designs)
    if axes:
        unknown = [a for a in axes if a not in b.attributes]
        if unknown:
            raise BatteryError(f"--axes: unknown attribute(s) {', '.join(unknown)}; the battery has "
                               f"{', '.join(b.attributes)}", file=loaded.path, key="attributes")
        narrowed_designs = (d.select(set(axes)) for d in designs)  # each design narrows itself (or drops out)
        designs = [d for d in narrowed_designs if d is not None]
    ids = {t.id for t in kept}
    designs = [d.model_copy(update={"templates": [t for t in d.templates if t in ids]}) if d.templates else d
               for d in designs]
    designs = [d for d in designs if d.templates is None or d.templates]
    if not kept or not designs:
        raise BatteryError("the selection leaves no case to run", file=loaded.path)
    note = f"selection: templates={list(templates or [])} axes={list(axes or [])}"
    narrowed = b.model_copy(update={
        "templates": kept, "designs": designs,
        "description": ((b.description + "\n") if b.description else "") + note})
    return dataclasses.replace(loaded, battery=narrowed, sha256=battery_hash(narrowed),
                               selection={"templates": list(templates or []), "axes": list(axes or []),
                                          "templates_kept": len(kept), "templates_total": len(b.templates)})

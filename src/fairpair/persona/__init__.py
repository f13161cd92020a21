"""Persona studies: import Tan & Lee (2025) scene tables and reanalyse their released results.

===========================  ===================================================================
``fairpair import-scenes``   :func:`read_scenes`, :func:`battery_yaml`: scene table -> two_party battery
``fairpair reanalyze``       :func:`reanalyze_files`: Table 6 (ddof 0/1), scene-bootstrap CIs, unpaired
                             power test, least-change identities, data checks
===========================  ===================================================================

Submodules load on first use (pandas and scipy are not imported with the package).
"""

from __future__ import annotations

from fairpair._lazy import lazy_getattr

_LAZY = {
    "_axes": ("Axis", "TAN_LEE_AXES", "AXIS_KEYS", "PROMPT_TEMPLATE", "SYSTEM_TEMPLATE", "BASELINE_TEMPLATE",
              "INSTRUCTION", "DOMAINS"),
    "_scenes": ("Scene", "Cleaning", "SceneTable", "read_scenes", "select", "battery_yaml"),
    "_reanalyze": ("PUBLISHED_TABLE6", "RELEASE_COLUMNS", "Reanalysis", "Table6Row", "ConditionDispersion",
                   "PowerDifference", "LeastChange", "DataChecks", "ModelCounts", "Exclusion", "read_release",
                   "reanalyze", "reanalyze_files", "unpaired_dispersion_permutation_test"),
}
_WHERE = {name: module for module, names in _LAZY.items() for name in names}
__all__ = [name for names in _LAZY.values() for name in names]


__getattr__ = lazy_getattr(__name__, {name: f"{__name__}.{module}" for name, module in _WHERE.items()}, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

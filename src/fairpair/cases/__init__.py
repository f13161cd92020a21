"""Cases: a battery expanded into matched, rendered conversations."""

from fairpair._lazy import lazy_getattr
from fairpair.cases._expand import Expansion, case_json, expand, fill_slots, indefinite_article, write_cases
from fairpair.cases._plan import CHARS_PER_TOKEN, Plan, one_repetition, plan
from fairpair.records import Case

# Names fairpair's other packages use, imported from their module on first use (so that
# importing them through the package adds no import cycle and no start-up cost).
_LAZY_EXPORTS = {
    "ExpandContext": "fairpair.cases._expand",
}

__getattr__ = lazy_getattr(__name__, _LAZY_EXPORTS, globals())

__all__ = ["CHARS_PER_TOKEN", "Case", "Expansion", "Plan", "one_repetition", "case_json", "expand", "fill_slots",
           "indefinite_article",
           "plan", "write_cases"]

# the lazily imported names are public too (tests/test_layers.py: a name imported across packages is in __all__)
__all__ += list(_LAZY_EXPORTS)

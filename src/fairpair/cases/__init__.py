"""Cases: a battery expanded into matched, rendered conversations."""


# Names fairpair's other packages use, imported from their module on first use (so that
# importing them through the package adds no import cycle and no start-up cost).
_LAZY_EXPORTS = {
    "ExpandContext": "fairpair.cases._expand",
}


def __getattr__(name: str):
    module = _LAZY_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


from fairpair.cases._case import Case
from fairpair.cases._expand import Expansion, case_json, expand, fill_slots, indefinite_article, write_cases
from fairpair.cases._plan import Plan, plan

__all__ = ["Case", "Expansion", "Plan", "case_json", "expand", "fill_slots", "indefinite_article",
           "plan", "write_cases"]

"""Cases: a battery expanded into matched, rendered conversations."""

from fairpair.cases._case import Case
from fairpair.cases._expand import Expansion, case_json, expand, fill_slots, indefinite_article, write_cases
from fairpair.cases._plan import Plan, plan

__all__ = ["Case", "Expansion", "Plan", "case_json", "expand", "fill_slots", "indefinite_article",
           "plan", "write_cases"]

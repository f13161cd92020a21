"""The battery: what a user declares (attributes, signals, templates, designs, plan)."""

from fairpair.battery._lexicons import lexicon_names, lexicon_source, load_lexicon
from fairpair.battery._load import LoadedBattery, battery_hash, load_battery
from fairpair.battery._designs import (
    DESIGN_KINDS, AAControlDesign, BaselineDesign, CounterfactualDesign, CrossedDesign, RankingDesign,
    TwoPartyDesign, williams_rows,
)
from fairpair.battery._schema import SCHEMA_VERSION, Battery
from fairpair.battery._select import select

__all__ = ["AAControlDesign", "BaselineDesign", "Battery", "CounterfactualDesign", "CrossedDesign", "DESIGN_KINDS",
           "LoadedBattery", "RankingDesign", "SCHEMA_VERSION", "TwoPartyDesign", "battery_hash", "lexicon_names",
           "lexicon_source", "load_battery", "load_lexicon", "select", "williams_rows"]

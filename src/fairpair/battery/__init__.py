"""The battery: what a user declares (attributes, signals, templates, designs, plan)."""

from fairpair._lazy import lazy_getattr
from fairpair.battery._designs import (
    DESIGN_KINDS,
    AAControlDesign,
    BaselineDesign,
    CounterfactualDesign,
    CrossedDesign,
    RankingDesign,
    TwoPartyDesign,
    williams_rows,
)
from fairpair.battery._lexicons import lexicon_names, lexicon_source, load_lexicon
from fairpair.battery._load import LoadedBattery, battery_hash, load_battery, number_text_warnings
from fairpair.battery._recorded import loaded_from_store, recorded_battery
from fairpair.battery._schema import SCHEMA_VERSION, Battery
from fairpair.battery._select import select

# Names fairpair's other packages use, imported from their module on first use (so that
# importing them through the package adds no import cycle and no start-up cost).
_LAZY_EXPORTS = {
    "AnalysisPlan": "fairpair.battery._schema",
    "Attribute": "fairpair.battery._schema",
    "Comparison": "fairpair.battery._schema",
    "Group": "fairpair.battery._schema",
    "InitChoices": "fairpair.battery._init",
    "Located": "fairpair.battery._yaml",
    "MeasureSpec": "fairpair.battery._schema",
    "SLOT_RE": "fairpair.battery._schema",
    "TARGET_PRESETS": "fairpair.battery._init",
    "TargetSpec": "fairpair.battery._schema",
    "Template": "fairpair.battery._schema",
    "Transform": "fairpair.battery._schema",
    "all_lexicons": "fairpair.battery._lexicons",
    "check_comparison": "fairpair.battery._load",
    "battery_json_schema": "fairpair.battery._jsonschema",
    "default_groups": "fairpair.battery._init",
    "load_mapping": "fairpair.battery._yaml",
    "load_yaml": "fairpair.battery._yaml",
    "plain_scalar": "fairpair.battery._yaml",
    "starter_battery": "fairpair.battery._init",
    "yaml_error": "fairpair.battery._load",
}

__getattr__ = lazy_getattr(__name__, _LAZY_EXPORTS, globals())

__all__ = ["loaded_from_store", "recorded_battery", "AAControlDesign", "BaselineDesign", "Battery",
           "CounterfactualDesign", "CrossedDesign", "DESIGN_KINDS",
           "LoadedBattery", "RankingDesign", "SCHEMA_VERSION", "TwoPartyDesign", "battery_hash", "lexicon_names",
           "lexicon_source", "load_battery", "load_lexicon", "number_text_warnings", "select", "williams_rows"]

# the lazily imported names are public too (tests/test_layers.py: a name imported across packages is in __all__)
__all__ += list(_LAZY_EXPORTS)

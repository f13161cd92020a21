"""fairpair: counterfactual, paired audits of LLM chatbots for unequal treatment.

Pipeline, one package per stage: ``battery`` -> ``cases`` -> ``run`` (responses)
-> ``measures`` -> ``stats``/``analysis`` -> ``report``.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__", "mask"]


from fairpair._lazy import lazy_getattr

# lazy public helpers, so `import fairpair` stays light (and a floor that reads __version__ imports
# nothing above it: tests/test_layers.py)
_LAZY_EXPORTS = {"mask": "fairpair.measures"}
__getattr__ = lazy_getattr(__name__, _LAZY_EXPORTS, globals())

"""fairpair: counterfactual, paired audits of LLM chatbots for unequal treatment.

Pipeline, one package per stage: ``battery`` -> ``cases`` -> ``run`` (responses)
-> ``measures`` -> ``stats``/``analysis`` -> ``report``.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__", "mask"]


def __getattr__(name: str):  # lazy public helpers, so `import fairpair` stays light
    if name == "mask":
        from fairpair.measures import mask

        return mask
    raise AttributeError(name)

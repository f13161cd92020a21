"""The ``imported`` measure: values measured elsewhere, which came with imported answers.

Declared in an import battery like any measure, with the scale the analysis
needs to pick its test::

    measures:
      hired: {kind: imported, scale: binary}        # true/false per answer
      score: {kind: imported, scale: ordinal, label: "rating 1-5"}

``fairpair import-answers`` stores each row's value (a row without one is
stored as ``missing``); the measure stage never computes one, so an answer that
reaches it without a value is ``missing`` too, never guessed.
"""

from __future__ import annotations

from typing import Literal

from fairpair.measures import Measure, MeasureOptions, MeasureResult, Scale

__all__ = ["ImportedMeasure", "ImportedOptions"]


class ImportedOptions(MeasureOptions):
    """``scale``: ``binary`` (yes/no), ``count``, ``continuous`` or ``ordinal``; ``label``: the name
    the report shows."""

    scale: Literal["binary", "count", "continuous", "ordinal"]
    label: str | None = None


class ImportedMeasure(Measure):
    """Values that came with the answers (``fairpair import-answers``); see the module docstring."""

    Options = ImportedOptions

    def output_scales(self, ctx=None) -> dict[str, Scale]:
        return {self.name: self.options.scale}

    async def measure(self, item, ctx) -> MeasureResult:
        return MeasureResult.missing("no value for this measure came with the imported answer")

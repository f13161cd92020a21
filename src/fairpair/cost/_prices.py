"""The price table a user supplies (``prices.yaml``): per model, live and batch prices per million tokens.

fairpair ships no prices (they change, and differ by provider and contract): the user writes the
table, ``examples/prices.yaml`` is a starting point with example prices labelled with their date and
source page. The file is validated like a battery: unknown keys are errors with a "did you mean",
and every error names file, line and key (:class:`~fairpair.errors.BatteryError`, exit code 2)::

    currency: USD
    confirm_above: 25            # `fairpair run` asks before an audit estimated above this
    models:
      gpt-4o-mini:
        live:  {input: 0.15, output: 0.60}     # per million tokens
        batch: {input: 0.075, output: 0.30}    # leave out where the provider has no batch API
        source: "https://openai.com/api/pricing/, 2025-06-01"
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

__all__ = ["Price", "ModelPrice", "PriceTable", "LoadedPrices", "load_prices"]

#: A price per million tokens or an amount: a finite number, at least 0 (``0.60`` and ``1e3``, which the YAML
#: loader keeps as the text written, are read as numbers here, as a battery's numbers are; ``free``, ``true``
#: and ``.inf`` are errors)
_Amount = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _no_boolean(v):
    """``true`` is not a price (pydantic would read it as 1)."""
    if isinstance(v, bool):
        raise ValueError("a price is a number, not true or false")
    return v


class Price(_Strict):
    """Price of one way of sending: ``input`` and ``output``, in the table's currency per million tokens."""

    input: _Amount
    output: _Amount

    _numbers = field_validator("input", "output", mode="before")(_no_boolean)

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """``input_tokens * input / 1e6 + output_tokens * output / 1e6`` (the table's currency)."""
        return (input_tokens * self.input + output_tokens * self.output) / 1e6


class ModelPrice(_Strict):
    """One model's prices: ``live`` (required), ``batch`` (the provider's batch API; absent: none);
    ``source``: where and when the prices were read (free text, shown with the estimate)."""

    live: Price
    batch: Price | None = None
    source: str | None = None


class PriceTable(_Strict):
    """``prices.yaml``: ``currency`` (ISO 4217 code, e.g. USD, EUR), ``confirm_above`` (the estimated cost
    above which ``fairpair run`` asks before sending; absent: it never asks) and ``models`` (model name, as
    the battery's ``model:`` option writes it, -> :class:`ModelPrice`)."""

    currency: str
    confirm_above: _Amount | None = None
    models: dict[str, ModelPrice] = Field(min_length=1)

    _numbers = field_validator("confirm_above", mode="before")(_no_boolean)

    @field_validator("currency")
    @classmethod
    def _code(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Z]{3}", v):
            raise ValueError("the currency is a three-letter ISO 4217 code in capitals, e.g. USD or EUR")
        return v


@dataclass(frozen=True)
class LoadedPrices:
    """A validated price table and its file."""

    table: PriceTable
    path: Path

    def price(self, model: str | None) -> ModelPrice | None:
        """The prices of ``model`` (exact name), or None when the table has none."""
        return self.table.models.get(model) if model is not None else None


def load_prices(path: str | Path) -> LoadedPrices:
    """Read and validate ``prices.yaml``.

    Raises
    ------
    BatteryError
        The file cannot be read, is not YAML, or fails validation: file, line and key of the first
        problem (exit code 2 at the command line).
    """
    from fairpair.battery import load_mapping, yaml_error

    path = Path(path)
    located = load_mapping(path, "a price table", "currency, confirm_above, models")
    data = located.data
    try:
        table = PriceTable.model_validate(data)
    except ValidationError as exc:
        raise yaml_error(exc, data, located, root=PriceTable) from None
    return LoadedPrices(table, path)

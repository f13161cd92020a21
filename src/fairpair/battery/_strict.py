"""The strict base model of every battery block (shared by the schema and the designs)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

#: An id: letters, digits, ``_``, ``.``, ``-`` (not starting with ``.`` or ``-``).
_ID = r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$"


class _Strict(BaseModel):
    # numbers written where the schema expects text (a variant 45, a slot 28001) are that text;
    # the loader keeps a number only when it writes back to the same text (battery._yaml)
    model_config = ConfigDict(extra="forbid", frozen=True, coerce_numbers_to_str=True)

"""Moved to :mod:`fairpair.store` (the run directory's package); these names stay importable here."""

from fairpair.store import STORE_FORMAT, STORE_NAME, AnswerToMeasure, Measurement, Response, Store, damaged_store_error

__all__ = ["Store", "Response", "Measurement", "AnswerToMeasure", "STORE_NAME", "STORE_FORMAT",
           "damaged_store_error"]

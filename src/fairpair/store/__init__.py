"""The run directory: one owner for everything a run keeps (the role of inspect_ai's ``log`` and
simonw/llm's ``logs.db``).

* :class:`Run` -- a run directory opened for one stage: ``Run.open(path, "r" | "w")``, a
  context manager that holds the lock (``"w"``), the SQLite :class:`Store`, the recorded
  battery (:meth:`Run.battery`), ``manifest.json`` and ``results.json`` (typed
  :class:`~fairpair.analysis.Results`).
* :class:`Store` -- the run's SQLite database: numbered, append-only migrations; rows are
  never updated or deleted; typed reads returning frozen records (:class:`Response`,
  :class:`Measurement`, :class:`~fairpair.cases.Case`) and the columnar bulk reads the
  analysis uses (:class:`MeasurementColumns`).

No module outside this package speaks SQL (``tests/store/test_no_sql_outside.py``).
"""

from fairpair.cases import Case
from fairpair.store._run import (LOCK_NAME, MANIFEST_NAME, RESULTS_NAME, RESULTS_SCHEMA, Run, RunLock,
                                 loaded_from_store, plan_hash, read_results, record_battery, results_current,
                                 write_manifest, write_results)
from fairpair.store._sqlite import (STORE_FORMAT, STORE_NAME, AnswerToMeasure, Measurement, MeasurementColumns,
                                    Response, Store, damaged_store_error)

__all__ = ["Run", "RunLock", "Store", "Case", "Response", "Measurement", "Results", "MeasurementColumns",
           "AnswerToMeasure", "loaded_from_store", "plan_hash", "read_results", "record_battery", "results_current",
           "write_manifest", "write_results", "damaged_store_error", "STORE_NAME", "STORE_FORMAT", "LOCK_NAME",
           "MANIFEST_NAME", "RESULTS_NAME", "RESULTS_SCHEMA"]


def __getattr__(name: str):
    if name == "Results":  # the typed results.json record, defined by the analysis stage that writes it
        from fairpair.analysis import Results

        return Results
    raise AttributeError(f"module 'fairpair.store' has no attribute {name!r}")

"""The run directory: one owner for everything a run keeps (the role of inspect_ai's ``log`` and
simonw/llm's ``logs.db``).

* :class:`Run` -- a run directory opened for one stage: ``Run.open(path, "r" | "w")``, a
  context manager that holds the lock (``"w"``), the SQLite :class:`Store`, the recorded
  battery (:meth:`Run.battery`), ``manifest.json`` (typed :class:`~fairpair.records.RunManifest`)
  and ``results.json`` (typed :class:`~fairpair.records.Results`).
* :class:`Store` -- the run's SQLite database: named, append-only migrations; rows are
  never updated or deleted; typed reads returning the frozen records of :mod:`fairpair.records`
  (:class:`Response`, :class:`Measurement` with its stored scale, :class:`Case`), read by column
  name, and the columnar bulk reads the analysis uses (:class:`MeasurementColumns`).

The store imports only :mod:`fairpair.records` and the ground floor below it (``tests/test_layers.py``);
no module outside this package speaks SQL (``tests/store/test_no_sql_outside.py``).
"""

from fairpair.records import Case, Results
from fairpair.store._run import (
                                 LOCK_NAME,
                                 MANIFEST_NAME,
                                 PLAN_EDIT_REFUSED,
                                 RESULTS_NAME,
                                 RESULTS_SCHEMA,
                                 Run,
                                 RunLock,
                                 executed_plan_sha256,
                                 plan_changed,
                                 plan_edits_refused,
                                 plan_hash,
                                 read_results,
                                 record_battery,
                                 results_current,
                                 write_manifest,
                                 write_results,
)
from fairpair.store._sqlite import (
                                 MIGRATIONS,
                                 SCHEMA_VERSION,
                                 STORE_FORMAT,
                                 STORE_NAME,
                                 AnswerToMeasure,
                                 Measurement,
                                 MeasurementColumns,
                                 Response,
                                 Store,
                                 damaged_store_error,
)

__all__ = ["Run", "RunLock", "Store", "Case", "Response", "Measurement", "Results", "MeasurementColumns",
           "AnswerToMeasure", "executed_plan_sha256", "plan_changed", "plan_edits_refused", "plan_hash",
           "PLAN_EDIT_REFUSED", "read_results", "record_battery", "results_current",
           "write_manifest", "write_results", "damaged_store_error", "STORE_NAME", "STORE_FORMAT", "SCHEMA_VERSION",
           "MIGRATIONS", "LOCK_NAME", "MANIFEST_NAME", "RESULTS_NAME", "RESULTS_SCHEMA"]

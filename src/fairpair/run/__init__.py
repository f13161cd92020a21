"""Run: send cases to targets and keep every answer in an append-only store."""

from fairpair.run._engine import RunSettings, redact, run_target
from fairpair.run._runner import RunLock, default_run_dir, execute_run, loaded_from_store, open_run, plan_hash
from fairpair.store import Measurement, Response, Store

__all__ = ["Measurement", "Response", "RunLock", "RunSettings", "Store", "default_run_dir", "execute_run",
           "loaded_from_store", "open_run", "plan_hash", "redact", "run_target"]

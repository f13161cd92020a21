"""Run: send cases to targets and keep every answer in an append-only store."""

from fairpair._lazy import lazy_getattr
from fairpair.run._engine import RunSettings, redact, run_target
from fairpair.run._runner import (
    RunLock,
    RunOutcome,
    default_run_dir,
    execute_run,
    loaded_from_store,
    open_run,
    plan_hash,
    select_targets,
)
from fairpair.store import Measurement, Response, Store

# Names fairpair's other packages use, imported from their module on first use (so that
# importing them through the package adds no import cycle and no start-up cost).
_LAZY_EXPORTS = {
    "BatchCalls": "fairpair.run._batchcalls",
    "BatchSummary": "fairpair.run._batch",
    "batch_api_of": "fairpair.run._batchcalls",
    "build_target": "fairpair.run._runner",
    "check_targets": "fairpair.run._preflight",
    "damaged_store_error": "fairpair.run._store",
    "failure_lines": "fairpair.run._status",
    "format_error_summary": "fairpair.run._preflight",
    "package_versions": "fairpair.run._runner",
    "preview_requests": "fairpair.run._preview",
    "RayEmbedder": "fairpair.run._ray",
    "RayTarget": "fairpair.run._ray",
    "ray_session": "fairpair.run._ray",
    "refuse_batch": "fairpair.run._batch",
    "require_ray": "fairpair.run._ray",
    "run_status": "fairpair.run._status",
    "with_system_prompt": "fairpair.run._system",
}

__getattr__ = lazy_getattr(__name__, _LAZY_EXPORTS, globals())

__all__ = ["Measurement", "Response", "RunLock", "RunOutcome", "RunSettings", "Store", "default_run_dir", "execute_run",
           "loaded_from_store", "open_run", "plan_hash", "redact", "run_target", "select_targets"]

# the lazily imported names are public too (tests/test_layers.py: a name imported across packages is in __all__)
__all__ += list(_LAZY_EXPORTS)

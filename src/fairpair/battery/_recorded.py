"""The battery recorded in a run's store, read back as a :class:`LoadedBattery`.

The store (:mod:`fairpair.store`) keeps the battery as the JSON it was recorded as (meta
``battery``, ``battery_path``, ``battery_sha256``) and imports nothing of this package; this
module turns it back into the battery's models, and :meth:`fairpair.store.Run.battery` calls it.
"""

from __future__ import annotations

from pathlib import Path

from fairpair.battery._load import LoadedBattery
from fairpair.battery._schema import Battery
from fairpair.battery._yaml import Located
from fairpair.errors import FairpairError
from fairpair.store import Run, Store

__all__ = ["loaded_from_store", "recorded_battery"]


def loaded_from_store(store: Store) -> LoadedBattery:
    """The :class:`LoadedBattery` a run was made from (recorded at its start).

    Raises
    ------
    FairpairError
        The store has no battery recorded.
    """
    data = store.get_meta("battery")
    if data is None:
        raise FairpairError("this run directory has no battery recorded", file=store.path)
    b = Battery.model_validate(data)
    return LoadedBattery(b, Path(store.get_meta("battery_path", "battery.yaml")), Located(data=data),
                         store.get_meta("battery_sha256", ""))


def recorded_battery(run: Run) -> LoadedBattery:
    """The :class:`LoadedBattery` recorded at the start of ``run`` (read once per open :class:`Run`).

    Raises
    ------
    FairpairError
        The run's store has no battery recorded.
    """
    return run.battery(loaded_from_store)


Run.battery_reader = loaded_from_store  # run.battery() without a reader, for code written before recorded_battery

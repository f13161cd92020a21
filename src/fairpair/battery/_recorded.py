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

__all__ = ["loaded_from_store"]


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


Run.battery_reader = loaded_from_store

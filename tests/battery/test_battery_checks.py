"""Checks that read the measures run at load through the plugin registry's ``fairpair.battery_checks``
group (the battery is a floor below the measures): the built-in one runs, an installed one runs after
it, and one that cannot be loaded is a battery error that names it."""

from __future__ import annotations

import json

import pytest

from fairpair import _plugins
from fairpair.battery import load_battery
from fairpair.errors import BatteryError
from fairpair.testing import small_battery

CALLED: list[str] = []


def record(lb) -> None:
    CALLED.append(lb.battery.name)


@pytest.fixture
def checks(monkeypatch):
    def use(extra: dict[str, str]) -> None:
        monkeypatch.setitem(_plugins._BUILTIN, "fairpair.battery_checks",
                            {**_plugins._BUILTIN["fairpair.battery_checks"], **extra})
        _plugins._registry.cache_clear()

    yield use
    _plugins._registry.cache_clear()


def _write(tmp_path, **kw):
    p = tmp_path / "b.yaml"
    p.write_text(json.dumps(small_battery(name="checks", **kw), ensure_ascii=False), encoding="utf-8")
    return p


def test_the_builtin_check_runs_at_load(tmp_path):
    # the mock's bias names a group no attribute has: measures/_silent.py refuses it
    p = _write(tmp_path, target={"kind": "mock", "bias": {"nadie": {"refund": 0.3}}})
    with pytest.raises(BatteryError, match="the mock's bias names group 'nadie'"):
        load_battery(p)


def test_an_installed_check_runs_and_a_broken_one_is_named(tmp_path, checks):
    CALLED.clear()
    checks({"mine": f"{__name__}:record"})
    load_battery(_write(tmp_path))
    assert CALLED == ["checks"]
    checks({"broken": "no_such_module_here:check"})
    with pytest.raises(BatteryError, match="battery check 'broken' cannot be loaded: module 'no_such_module_here'"):
        load_battery(_write(tmp_path))

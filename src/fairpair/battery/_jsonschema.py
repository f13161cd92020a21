"""The battery's JSON schema with every target and measure option (``fairpair schema``).

:class:`~fairpair.battery.Battery` keeps target and measure blocks open
(``kind`` plus the options of that kind's plugin, validated by the plugin's own
``Options`` model), so its own schema says nothing about the options. Here each
block becomes a ``oneOf`` over the installed plugins: per kind, ``kind`` as a
constant plus that plugin's ``Options`` schema (pydantic's
``model_json_schema``), so the schema documents and checks every option.
"""

from __future__ import annotations

from typing import Any

__all__ = ["battery_json_schema"]

_BLOCKS = (("fairpair.targets", "TargetSpec", "Target_"), ("fairpair.measures", "MeasureSpec", "Measure_"))


def _kind_schema(group: str, kind: str, prefix: str, defs: dict[str, Any],
                 shared: dict[str, Any] | None = None) -> dict[str, Any]:
    """One kind's block: ``kind``, the keys every block of this type has (``shared``: a target's ``system``
    / ``system_file``) and the plugin's options."""
    from fairpair._plugins import PluginError, load_plugin

    generic = {"type": "object", "properties": {"kind": {"const": kind}}, "required": ["kind"],
               "additionalProperties": True,
               "description": f"kind '{kind}' (its plugin cannot be imported here: options not listed)"}
    try:
        model = getattr(load_plugin(group, kind), "Options", None)
    except (PluginError, ImportError):
        return generic
    if model is None:
        return generic
    sub = model.model_json_schema(ref_template=f"#/$defs/{prefix}{kind}_{{model}}")
    for name, d in (sub.pop("$defs", None) or {}).items():
        defs[f"{prefix}{kind}_{name}"] = d
    sub["properties"] = {"kind": {"const": kind}, **(shared or {}), **sub.get("properties", {})}
    sub["required"] = ["kind", *sub.get("required", [])]
    sub["title"] = f"{prefix.rstrip('_')} kind '{kind}'"
    return sub


def battery_json_schema() -> dict[str, Any]:
    """The JSON schema of a battery file, target and measure options included (draft 2020-12)."""
    from fairpair._plugins import plugin_names
    from fairpair.battery import Battery

    schema = Battery.model_json_schema()
    defs = schema.setdefault("$defs", {})
    for group, spec, prefix in _BLOCKS:
        refs = []
        shared = {k: v for k, v in (defs.get(spec, {}).get("properties") or {}).items() if k != "kind"}
        for kind in plugin_names(group):
            defs[f"{prefix}{kind}"] = _kind_schema(group, kind, prefix, defs, shared)
            refs.append({"$ref": f"#/$defs/{prefix}{kind}"})
        old = defs.get(spec, {})
        defs[spec] = {"title": spec, "description": old.get("description", ""), "oneOf": refs}
    return schema

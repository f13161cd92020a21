"""Plugin registry: targets and measures are found by entry point, imported lazily.

Built-in plugins are declared in ``pyproject.toml`` under the entry-point
groups ``fairpair.targets`` and ``fairpair.measures``; third-party packages add
their own the same way. A plugin is a class with an ``Options`` pydantic model
(``extra="forbid"``) and a constructor ``Plugin(options: dict, *, name: str)``.
Nothing heavy is imported until a plugin is actually used (lesson from
lm-evaluation-harness's lazy registry).
"""

from __future__ import annotations

import difflib
import importlib
from functools import cache
from importlib.metadata import entry_points
from typing import Any

from pydantic import ValidationError

__all__ = ["PluginError", "plugin_names", "load_plugin", "validate_options"]

_BUILTIN: dict[str, dict[str, str]] = {
    "fairpair.targets": {
        "mock": "fairpair.targets.mock:MockTarget",
        "openai": "fairpair.targets.openai:OpenAITarget",
        "http": "fairpair.targets.http:HTTPTarget",
        "python": "fairpair.targets.python:PythonTarget",
        "local": "fairpair.targets.local:LocalTarget",
        "litellm": "fairpair.targets.litellm:LiteLLMTarget",
    },
    "fairpair.measures": {
        "regex": "fairpair.measures.rules:RegexMeasure",
        "keywords": "fairpair.measures.rules:KeywordsMeasure",
        "word_count": "fairpair.measures.rules:WordCountMeasure",
        "n_options": "fairpair.measures.rules:OptionsCountMeasure",
        "tool_call": "fairpair.measures.rules:ToolCallMeasure",
        "python": "fairpair.measures.rules:PythonMeasure",
        "categories": "fairpair.measures.rules:CategoriesMeasure",
        "tool_argument": "fairpair.measures.rules:ToolArgumentMeasure",
        "llm_extract": "fairpair.measures.judge:ExtractMeasure",
        "judge": "fairpair.measures.judge:ToneJudgeMeasure",
        "pairwise": "fairpair.measures.judge:PairwiseJudgeMeasure",
        "semantic_distance": "fairpair.measures.embed:SemanticDistanceMeasure",
        "imported": "fairpair.importers._measure:ImportedMeasure",
    },
}


class PluginError(Exception):
    def __init__(self, message: str, *, unknown_kind: bool = False, key_path: tuple = (),
                 hint: str | None = None) -> None:
        super().__init__(message)
        self.unknown_kind = unknown_kind
        self.key_path = key_path
        self.hint = hint


@cache
def _registry(group: str) -> dict[str, str]:
    reg = dict(_BUILTIN.get(group, {}))
    for ep in entry_points(group=group):
        reg[ep.name] = ep.value
    return reg


def plugin_names(group: str) -> list[str]:
    return sorted(_registry(group))


def load_plugin(group: str, kind: str) -> type:
    """Import and return the plugin class for ``kind`` (raises PluginError if unknown)."""
    ref = _registry(group).get(kind)
    if ref is None:
        raise PluginError(f"unknown kind '{kind}'", unknown_kind=True)
    module, _, attr = ref.partition(":")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise PluginError(f"plugin '{kind}' cannot be imported: {exc}") from None
    return getattr(mod, attr)


def validate_options(group: str, kind: str, options: dict[str, Any]) -> Any:
    """Validate ``options`` against the plugin's ``Options`` model; returns the model instance."""
    cls = load_plugin(group, kind)
    model = getattr(cls, "Options", None)
    if model is None:
        return options
    try:
        return model.model_validate(options)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        if err["type"] == "extra_forbidden":
            close = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1)
            hint = f"did you mean '{close[0]}'?" if close else \
                f"allowed keys for kind '{kind}': {', '.join(model.model_fields)}"
            raise PluginError(f"unknown key '{loc[-1]}' for kind '{kind}'", key_path=loc, hint=hint) from None
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing":
            msg = f"missing required key '{loc[-1]}' for kind '{kind}'"
        raise PluginError(msg, key_path=loc) from None

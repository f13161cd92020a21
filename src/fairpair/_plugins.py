"""Plugin registry: targets and measures are found by entry point, imported lazily.

Built-in plugins are listed once, here (:data:`_BUILTIN`); third-party packages
add their own under the entry-point groups ``fairpair.targets`` and
``fairpair.measures`` (and ``fairpair.battery_checks``). A plugin is a class with an ``Options`` pydantic model
(``extra="forbid"``) and a constructor ``Plugin(options: dict, *, name: str)``;
a class without such a model is refused when it is loaded (:func:`load_plugin`
raises :class:`PluginError`), so no plugin's options go unchecked. Nothing
heavy is imported until a plugin is actually used (lesson from
lm-evaluation-harness's lazy registry).
"""

from __future__ import annotations

import difflib
import importlib
import re
import sys
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

__all__ = ["PluginError", "check_options_model", "options_problem", "plugin_names", "load_plugin",
           "validate_options", "ReferenceProblem", "check_reference", "load_reference", "battery_checks"]

_BUILTIN: dict[str, dict[str, str]] = {
    "fairpair.targets": {
        "mock": "fairpair.targets.mock:MockTarget",
        "openai": "fairpair.targets.openai:OpenAITarget",
        "http": "fairpair.targets.http:HTTPTarget",
        "python": "fairpair.targets.python:PythonTarget",
        "local": "fairpair.targets.local:LocalTarget",
        "litellm": "fairpair.targets.litellm:LiteLLMTarget",
        "anthropic": "fairpair.targets.anthropic:AnthropicTarget",
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
        "ranking": "fairpair.measures.ranking:RankingMeasure",
        "imported": "fairpair.importers._measure:ImportedMeasure",
    },
    # checks run on every battery as it is loaded, after its own (fairpair.battery.load_battery): a
    # function of the LoadedBattery that raises its ``fail(...)`` error; they live with what they read
    "fairpair.battery_checks": {
        "silent_paths": "fairpair.measures._silent:check_silent_paths",
    },
}


class PluginError(Exception):
    """A plugin that cannot be used: unknown kind, not importable, no ``Options`` model, or bad options.

    ``key_path`` locates a bad option inside the plugin's block; ``hint`` is a
    "did you mean" or the list of allowed keys.
    """

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


def battery_checks() -> list[Any]:
    """The functions of the entry-point group ``fairpair.battery_checks`` (the built-in one first,
    then the installed ones by name), each called with a loaded battery at the end of its checks.

    Raises
    ------
    PluginError
        A check cannot be loaded (its module is not found or raises, the name is missing).
    """
    out = []
    for name, ref in _registry("fairpair.battery_checks").items():
        try:
            out.append(load_reference(ref))
        except ReferenceProblem as exc:
            raise PluginError(f"battery check '{name}' cannot be loaded: {exc.message} (entry point {ref})") from None
    return out


def check_options_model(cls: type, *, where: str | None = None) -> type[BaseModel]:
    """The plugin class's ``Options`` model; :class:`PluginError` when it has none.

    A plugin must declare its options as a pydantic model that forbids
    unknown keys (``model_config = ConfigDict(extra="forbid")``), so that a
    misspelt option is a battery error instead of a value that silently does
    nothing. ``where`` names the plugin in the message (default: the class).
    """
    where = where or f"{cls.__module__}.{cls.__qualname__}"
    model = getattr(cls, "Options", None)
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise PluginError(f"plugin {where} has no 'Options' model: every plugin declares its options as a "
                          "pydantic model with extra='forbid' (see fairpair.targets.TargetBase)")
    if model.model_config.get("extra") != "forbid":
        raise PluginError(f"plugin {where}: its Options model {model.__qualname__} must forbid unknown keys "
                          "(model_config = ConfigDict(extra='forbid')), or a misspelt option would be ignored")
    return model


def load_plugin(group: str, kind: str) -> type:
    """Import and return the plugin class for ``kind``.

    Raises
    ------
    PluginError
        ``kind`` is unknown (``unknown_kind=True``), its module cannot be
        imported, or the class has no ``Options`` model forbidding unknown
        keys (:func:`check_options_model`).
    """
    ref = _registry(group).get(kind)
    if ref is None:
        raise PluginError(f"unknown kind '{kind}'", unknown_kind=True)
    try:
        cls = load_reference(ref, callable_only=False)
    except ReferenceProblem as exc:
        raise PluginError(f"plugin '{kind}' cannot be loaded: {exc.message} (entry point {ref})") from None
    check_options_model(cls, where=f"'{kind}' ({ref})")
    return cls


def options_problem(model: type[BaseModel], kind: str, exc: ValidationError) -> PluginError:
    """The :class:`PluginError` for the first error of ``exc``: message, key path and hint.

    An unknown key gets a "did you mean" (difflib) or the list of allowed
    keys; a missing key names itself; other errors keep pydantic's message.
    """
    err = exc.errors()[0]
    loc = tuple(err["loc"])
    if err["type"] == "extra_forbidden":
        close = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1)
        hint = f"did you mean '{close[0]}'?" if close else \
            f"allowed keys for kind '{kind}': {', '.join(model.model_fields)}"
        return PluginError(f"unknown key '{loc[-1]}' for kind '{kind}'", key_path=loc, hint=hint)
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "literal_header":  # fairpair.targets._client.check_header_values: point at the header
        loc = (*loc, err["ctx"]["header"])
    if err["type"] == "missing":
        msg = f"missing required key '{loc[-1]}' for kind '{kind}'"
    return PluginError(msg, key_path=loc)


def validate_options(group: str, kind: str, options: dict[str, Any]) -> Any:
    """Validate ``options`` against the plugin's ``Options`` model; returns the model instance.

    Raises
    ------
    PluginError
        As :func:`load_plugin`, or the options do not validate (see :func:`options_problem`).
    """
    model = check_options_model(load_plugin(group, kind))
    try:
        return model.model_validate(options)
    except ValidationError as exc:
        raise options_problem(model, kind, exc) from None


# ---------------------------------------------------------------- "module:function" references

_REFERENCE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


class ReferenceProblem(Exception):
    """A ``module:attribute`` reference that cannot be loaded; ``hint`` is a "did you mean" or None."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def check_reference(ref: str) -> str:
    """Return ``ref`` if it looks like ``module:attribute`` (``pkg.mod:obj.method`` allowed).

    Raises ValueError otherwise (for pydantic validators: the battery error names the key).
    """
    if not isinstance(ref, str) or not _REFERENCE.fullmatch(ref.strip()):
        raise ValueError(f"must look like 'module:function' (got {ref!r})")
    return ref


def load_reference(ref: str, *, path: Path | str | None = None, callable_only: bool = True) -> Any:
    """Import ``module`` and return ``attribute`` (dotted) of a ``module:attribute`` reference.

    ``path`` (a directory) is put at the front of ``sys.path`` first and kept
    there, so that the module's own later imports keep working. The one
    loader of entry points, python targets and python measures.

    Raises
    ------
    ReferenceProblem
        the module is not found or raises while importing, the attribute is
        missing (with a "did you mean"), or (``callable_only``) it is not callable.
    """
    module_name, _, attr_path = ref.partition(":")
    if path is not None:
        p = str(path)
        if p not in sys.path:
            sys.path.insert(0, p)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise ReferenceProblem(f"module '{module_name}' not found",
                                   hint="set 'path' to the directory that holds it, or install its package"
                                   ) from None
        raise ReferenceProblem(f"importing '{module_name}' failed: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - the user's module failed while importing
        raise ReferenceProblem(f"importing '{module_name}' raised {type(exc).__name__}: {exc}") from None
    obj: Any = module
    for part in attr_path.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(obj) if not n.startswith("_")]
            close = difflib.get_close_matches(part, names, n=1)
            raise ReferenceProblem(f"'{module_name}' has no attribute '{part}'",
                                   hint=f"did you mean '{close[0]}'?" if close else None)
        obj = getattr(obj, part)
    if callable_only and not callable(obj):
        raise ReferenceProblem(f"'{ref}' is a {type(obj).__name__}, not a function")
    return obj

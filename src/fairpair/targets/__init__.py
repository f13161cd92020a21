"""Targets: the systems under test (and judges), behind one verb, ``generate``.

The plugin surface, for writing a target of your own:

* :class:`Target`: the protocol the run engine calls (``generate``,
  ``identity``, ``aclose``, ``name``, ``max_concurrency``);
* :class:`TargetBase`: the base class that validates the plugin's ``Options``
  model (``extra="forbid"``) and names the target; a subclass without
  ``Options`` is refused;
* :class:`ChatRequest` (what a target receives), :class:`Completion`,
  :class:`ToolCall`, :class:`Usage` (what it returns) and
  :class:`TargetError` (a failed call; ``retryable`` tells the engine whether
  to try again, ``retry_after`` how long the server asked to wait).

Register the class under the entry-point group ``fairpair.targets``
(``[project.entry-points."fairpair.targets"] echo = "mypkg:EchoTarget"``).
The built-in targets (``mock``, ``openai``, ``anthropic``, ``http``, ``python``,
``local``, ``litellm``) live in the submodules of the same names and are imported only
when a battery uses them.
"""

from fairpair._lazy import lazy_getattr
from fairpair.targets._base import ChatRequest, Completion, Target, TargetBase, TargetError, ToolCall, Usage

# Names fairpair's other packages use, imported from their module on first use (so that
# importing them through the package adds no import cycle and no start-up cost).
_LAZY_EXPORTS = {
    "Fleet": "fairpair.targets._fleet",
    "USER_AGENT": "fairpair.targets._client",
    "ssl_context": "fairpair.targets._client",
    "cache_dir": "fairpair.targets._gguf",
}

__getattr__ = lazy_getattr(__name__, _LAZY_EXPORTS, globals())

__all__ = ["ChatRequest", "Completion", "Target", "TargetBase", "TargetError", "ToolCall", "Usage"]

# the lazily imported names are public too (tests/test_layers.py: a name imported across packages is in __all__)
__all__ += list(_LAZY_EXPORTS)

"""The public face of ``fairpair.targets``: the plugin surface, and no plugin without checked options."""

from __future__ import annotations

import asyncio
import textwrap

import pytest
from pydantic import BaseModel, ConfigDict

import fairpair.targets as targets
from fairpair import _plugins
from fairpair._plugins import PluginError, load_plugin, plugin_names, validate_options
from fairpair.cli import main
from fairpair.errors import FairpairError
from fairpair.targets import ChatRequest, Completion, TargetBase, _base


def test_the_plugin_surface_is_exported():
    # beside the plugin surface, __all__ names what fairpair's own packages import lazily (the fleet...)
    surface = set(targets.__all__) - set(targets._LAZY_EXPORTS)
    assert surface == {"ChatRequest", "Completion", "Target", "TargetBase", "TargetError", "ToolCall", "Usage"}
    for name in surface:
        assert getattr(targets, name) is getattr(_base, name)


class EchoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    prefix: str = ""


class EchoTarget(TargetBase):
    Options = EchoOptions
    kind = "echo"

    async def generate(self, request: ChatRequest) -> Completion:
        return Completion(text=self.options.prefix + request.messages[-1]["content"])

    def identity(self):
        return {"kind": self.kind, "prefix": self.options.prefix}


def test_target_base_validates_options_and_names_the_target():
    t = EchoTarget({"prefix": "> "})
    assert t.name == "echo" and t.max_concurrency is None
    assert EchoTarget(EchoOptions(prefix="x"), name="mine").name == "mine"
    assert isinstance(t, targets.Target)  # the runtime-checkable protocol
    req = ChatRequest(messages=({"role": "user", "content": "hola"},))
    assert asyncio.run(t.generate(req)).text == "> hola"
    assert asyncio.run(t.aclose()) is None
    with pytest.raises(FairpairError) as ei:
        EchoTarget({"prefx": "> "})
    assert ei.value.key == "options.prefx"
    assert "unknown key 'prefx' for kind 'echo'" in ei.value.message
    assert ei.value.hint == "did you mean 'prefix'?"


def test_a_target_class_without_options_is_refused_when_defined():
    with pytest.raises(PluginError, match="has no 'Options' model"):
        class NoOptions(TargetBase):  # noqa: F841
            kind = "none"

    class Loose(BaseModel):
        temperature: float = 0.7

    with pytest.raises(PluginError, match="must forbid unknown keys"):
        class LooseTarget(TargetBase):  # noqa: F841
            Options = Loose

    class Intermediate(TargetBase, abstract=True):  # a base of one's own may leave Options to subclasses
        pass

    class Concrete(Intermediate):
        Options = EchoOptions

    assert Concrete({}).options == EchoOptions()


@pytest.fixture
def extra_plugins(tmp_path, monkeypatch):
    """Register two third-party targets whose classes do not declare checked options."""
    (tmp_path / "thirdparty_targets.py").write_text(textwrap.dedent("""
        from pydantic import BaseModel

        class NoOptionsTarget:  # a Target by the protocol, but its options are never checked
            def __init__(self, options, *, name):
                self.options, self.name = options, name

        class LooseOptions(BaseModel):
            temperature: float = 0.7

        class LooseTarget(NoOptionsTarget):
            Options = LooseOptions
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    builtin = {**_plugins._BUILTIN["fairpair.targets"], "noopts": "thirdparty_targets:NoOptionsTarget",
               "loose": "thirdparty_targets:LooseTarget", "gone": "thirdparty_targets:Missing"}
    monkeypatch.setitem(_plugins._BUILTIN, "fairpair.targets", builtin)
    _plugins._registry.cache_clear()
    yield
    _plugins._registry.cache_clear()


def test_a_plugin_without_options_cannot_be_loaded(extra_plugins):
    assert {"noopts", "loose"} <= set(plugin_names("fairpair.targets"))
    with pytest.raises(PluginError, match=r"'noopts' \(thirdparty_targets:NoOptionsTarget\) has no 'Options'"):
        load_plugin("fairpair.targets", "noopts")
    with pytest.raises(PluginError, match="must forbid unknown keys"):
        validate_options("fairpair.targets", "loose", {"temprature": 0.7})
    with pytest.raises(PluginError, match="has no attribute 'Missing'"):
        load_plugin("fairpair.targets", "gone")


def test_every_builtin_plugin_declares_checked_options():
    for group in ("fairpair.targets", "fairpair.measures"):
        for kind in plugin_names(group):  # litellm, embed: their modules import the extras lazily
            model = _plugins.check_options_model(load_plugin(group, kind))
            assert model.model_config["extra"] == "forbid", (group, kind)


BATTERY = """\
# a misspelt option of the local target (the default target)
schema_version: 1
name: bad
attributes:
  origen:
    signal: name
    slot: nombre
    neutral: "un cliente"
    groups:
      espana: {variants: [Lucía, Carmen]}
      magreb: {variants: [Fátima, Khadija]}
templates:
  - id: pedido_roto
    turns: ["Hola, soy {nombre}. Mi pedido llegó roto."]
designs:
  - kind: counterfactual
    attribute: origen
"""


def _validate(path, capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(["validate", str(path)])
    out = capsys.readouterr()
    return exc.value.code, " ".join((out.out + out.err).split())


@pytest.mark.parametrize("block, line, key", [
    ("target: {kind: local, max_tokens: 64, temprature: 0.7}", 18, "target.temprature"),
    ("target: {kind: mock}\njudge: {kind: local, temprature: 0.0}", 19, "judge.temprature"),
])
def test_a_misspelt_local_option_is_a_battery_error(tmp_path, capsys, block, line, key):
    path = tmp_path / "battery.yaml"
    path.write_text(BATTERY + block + "\n", encoding="utf-8")
    code, text = _validate(path, capsys)
    assert code == 2, text
    assert "Traceback" not in text
    assert f"battery.yaml:{line}:" in text, text
    assert f"[{key}]" in text, text
    assert "unknown key 'temprature' for kind 'local'" in text
    assert "did you mean 'temperature'?" in text


def test_the_same_battery_without_the_typo_validates(tmp_path, capsys):
    path = tmp_path / "battery.yaml"
    path.write_text(BATTERY + "target: {kind: local, max_tokens: 64, temperature: 0.7}\n", encoding="utf-8")
    main(["validate", str(path)])  # returns: no SystemExit on success
    assert capsys.readouterr().out.startswith("ok ")

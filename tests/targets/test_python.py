"""The ``python`` target: a user function answers each case."""

from __future__ import annotations

import asyncio
import sys
import textwrap
import uuid

import pytest

from fairpair._plugins import PluginError, validate_options
from fairpair.errors import FairpairError
from fairpair.targets._base import ChatRequest, TargetError
from fairpair.targets.python import PythonTarget

BOT = '''
import asyncio

def answer(messages, context):
    last = messages[-1]["content"]
    context["crm"]["touched"] = True          # must not leak into the case
    return f"{context['crm']['nombre']}: {last} ({len(messages)} mensajes)"

async def answer_async(messages, context):
    await asyncio.sleep(0)
    return {"text": "te paso con un agente",
            "tool_calls": [{"name": "transfer_to_human", "arguments": "{\\"queue\\": \\"vip\\"}"}]}

def broken(messages, context):
    raise ValueError("CRM caído para " + context["crm"]["nombre"])

def flaky(messages, context):
    raise ConnectionError("backend unreachable")

def wrong(messages, context):
    return 42

class Bot:
    @staticmethod
    def reply(messages, context):
        return "estático"
'''


@pytest.fixture
def bot(tmp_path):
    """A module with a unique name in tmp_path/bots; returns (module name, battery dir)."""
    name = f"fp_bot_{uuid.uuid4().hex[:8]}"
    (tmp_path / "bots").mkdir()
    (tmp_path / "bots" / f"{name}.py").write_text(textwrap.dedent(BOT), encoding="utf-8")
    yield name, tmp_path
    sys.modules.pop(name, None)
    sys.path[:] = [p for p in sys.path if not p.startswith(str(tmp_path))]


def req() -> ChatRequest:
    return ChatRequest(messages=({"role": "system", "content": "s"}, {"role": "user", "content": "Hola"}),
                       context={"crm": {"nombre": "Naima"}}, seed=1)


def gen(t):
    return asyncio.run(t.generate(req()))


def test_sync_function_with_relative_path(bot):
    name, base = bot
    t = PythonTarget({"callable": f"{name}:answer", "path": "bots"}, name="bot", base_dir=base)
    r = req()
    c = asyncio.run(t.generate(r))
    assert c.text == "Naima: Hola (2 mensajes)" and c.tool_calls == ()
    assert r.context == {"crm": {"nombre": "Naima"}}  # the function got a copy
    assert t.identity()["callable"] == f"{name}:answer"


def test_async_function_and_tool_calls(bot):
    name, base = bot
    c = gen(PythonTarget({"callable": f"{name}:answer_async", "path": str(base / "bots")}))
    assert c.text == "te paso con un agente"
    assert [(tc.name, tc.arguments) for tc in c.tool_calls] == [("transfer_to_human", {"queue": "vip"})]


def test_attribute_path(bot):
    name, base = bot
    assert gen(PythonTarget({"callable": f"{name}:Bot.reply", "path": "bots"}, base_dir=base)).text == "estático"


def test_raising_function_is_a_case_failure(bot):
    name, base = bot
    with pytest.raises(TargetError) as ei:
        gen(PythonTarget({"callable": f"{name}:broken", "path": "bots"}, base_dir=base))
    assert str(ei.value) == f"{name}:broken raised ValueError: CRM caído para Naima"
    assert not ei.value.retryable
    with pytest.raises(TargetError) as ei:
        gen(PythonTarget({"callable": f"{name}:flaky", "path": "bots"}, base_dir=base))
    assert ei.value.retryable  # a connection error inside the function is worth retrying
    with pytest.raises(TargetError, match="returned int; expected a str or a dict"):
        gen(PythonTarget({"callable": f"{name}:wrong", "path": "bots"}, base_dir=base))


def test_missing_module_or_function_fails_at_build(bot):
    name, base = bot
    with pytest.raises(FairpairError, match="module 'fp_no_such_module_xyz' not found"):
        PythonTarget({"callable": "fp_no_such_module_xyz:answer"})
    with pytest.raises(FairpairError, match=f"'{name}' has no attribute 'anwser'") as ei:
        PythonTarget({"callable": f"{name}:anwser", "path": "bots"}, base_dir=base)
    assert ei.value.hint == "did you mean 'answer'?"
    with pytest.raises(FairpairError, match="is not a directory"):
        PythonTarget({"callable": f"{name}:answer", "path": "nowhere"}, base_dir=base)
    with pytest.raises(PluginError, match="callable must look like 'module:function'"):
        validate_options("fairpair.targets", "python", {"callable": "just_a_module"})

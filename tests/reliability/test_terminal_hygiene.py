"""Nothing a target sends reaches the terminal raw (issue 28, item 3).

A ``python`` target answers, or fails, with text full of escape sequences (clear the screen,
set the window title, colours, an 8-bit CSI, a right-to-left override, NUL, a carriage
return). Each command that prints target text -- ``check`` (the answer preview), ``run``
(the preflight error), ``status`` (the failure example) -- must show those characters as
visible escapes (``\\x1b[2J``) and print none of them raw. The sanitiser is one function,
:func:`fairpair._text.visible`.
"""

from __future__ import annotations

import sys

import pytest

from fairpair._text import one_line, visible

from .conftest import demo_battery

HOSTILE = "\x1b[2J\x1b[H\x1b]0;pwned\x07\x1b[31mrojo\x1b[0m \x9b31m \u202eRTL nul\x00 cr\rback"
RAW = ("\x1b", "\x9b", "\x07", "\x00", "\u202e", "\r")

BOT = f'''
HOSTILE = {HOSTILE!r}


def answer(messages, context):
    return "Hola. " + HOSTILE


def fail(messages, context):
    raise RuntimeError("upstream said: " + HOSTILE)
'''


def _battery(tmp_path, function: str):
    code = tmp_path / "code"
    code.mkdir(exist_ok=True)
    (code / "fp_terminal_bot.py").write_text(BOT, encoding="utf-8")
    sys.modules.pop("fp_terminal_bot", None)
    return demo_battery(tmp_path / "b", {"kind": "python", "callable": f"fp_terminal_bot:{function}",
                                         "path": str(code)})


def _assert_inert(out: str) -> None:
    for c in RAW:
        assert c not in out, (c, out)
    flat = "".join(out.split())
    assert "\\x1b[2J" in flat and "\\x1b]0;pwned\\x07" in flat, out  # shown, visibly


def test_visible_escapes_every_control_character():
    assert visible(HOSTILE) == ("\\x1b[2J\\x1b[H\\x1b]0;pwned\\x07\\x1b[31mrojo\\x1b[0m \\x9b31m \\u202eRTL "
                                "nul\\x00 cr\\rback")
    assert visible("Lucía\tü\n¿Qué?") == "Lucía\tü\n¿Qué?"  # text, tabs and newlines kept
    assert visible(b"\xff\x1b") == "\ufffd\\x1b" and visible(None) == ""
    assert visible("\ud800") == "\\ud800"
    assert one_line("a\n\nb\x1b", limit=5) == "a ..." and one_line("a\n\nb\x1b") == "a b\\x1b"


def test_check_shows_the_answer_preview_with_visible_escapes(tmp_path, cli):
    r = cli("check", _battery(tmp_path, "answer"))
    assert r.code == 0, r.output
    _assert_inert(r.output)


def test_run_shows_the_preflight_error_with_visible_escapes(tmp_path, cli):
    r = cli("run", _battery(tmp_path, "fail"), "--out", tmp_path / "run", "-q")
    assert r.code == 2, r.output
    assert "preflight" in r.output.lower() or "upstream said" in r.output
    _assert_inert(r.output)


@pytest.mark.parametrize("command", ["status"])
def test_status_shows_the_failure_example_with_visible_escapes(tmp_path, cli, command):
    run = tmp_path / "run"
    r = cli("run", _battery(tmp_path, "fail"), "--out", run, "-q", "--no-preflight", "--max-attempts", "1",
            "--max-consecutive-failures", "0", "--no-measure", "--no-analyze", "--no-report")
    assert "Traceback" not in r.output
    r = cli(command, run)
    assert r.code == 0, r.output
    assert "RuntimeError" in r.output
    _assert_inert(r.output)

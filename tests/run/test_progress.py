"""Every long stage shows progress with rate and ETA; quiet under -q and off a terminal (issue 14, point 4)."""

from __future__ import annotations

import io

from rich.console import Console

from fairpair._progress import progress_enabled
from fairpair.battery import load_battery
from fairpair.measures._runner import measure_run
from fairpair.run import RunSettings, execute_run
from fairpair.testing import write_battery

JUDGE = '''
import json

def judge(messages, context):
    return json.dumps({"courtesy": 4, "condescension": 1, "distrust": 2, "reason": "ok"})
'''


def _console(terminal: bool) -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, force_terminal=terminal, width=200, color_system=None), buf


def _run(tmp_path, analysis=None):
    import json

    (tmp_path / "fp_progress_judge.py").write_text(JUDGE, encoding="utf-8")
    b = write_battery(tmp_path / "b", {"kind": "mock"}, templates=9, names={"a": ["Lucía", "Ana"],
                                                                           "b": ["Fátima", "Aisha"]})
    data = json.loads(b.read_text(encoding="utf-8"))
    data["judge"] = {"kind": "python", "callable": "fp_progress_judge:judge", "path": str(tmp_path)}
    data["measures"] = {"tono": {"kind": "judge"}, "palabras": {"kind": "word_count"}}
    if analysis:
        data["analysis"] = analysis
    data["judge_self_test"] = "off"  # the bar counts the battery's judge calls; the self-test is tested elsewhere
    b.write_text(json.dumps(data), encoding="utf-8")
    execute_run(load_battery(b), tmp_path / "run", RunSettings(concurrency=4))  # 9 x 4 = 36 answers
    return tmp_path / "run"


def test_measure_bar_counts_answers_and_judge_calls(tmp_path):
    run = _run(tmp_path)
    console, buf = _console(True)
    measure_run(run, console=console)
    out = buf.getvalue()
    assert "measure tono" in out and "36/36" in out and "judge calls 36" in out
    assert "ETA" in out and "/s" in out
    assert "measure palabras" in out


def test_no_bar_off_a_terminal_or_under_quiet(tmp_path):
    run = _run(tmp_path)
    console, buf = _console(False)
    measure_run(run, console=console, measures=["palabras"])
    assert "ETA" not in buf.getvalue() and "measuring palabras" in buf.getvalue()
    console, buf = _console(True)
    with progress_enabled(False):
        measure_run(run, console=console, measures=["tono"])
    assert "ETA" not in buf.getvalue() and "judge calls 36" not in buf.getvalue()


def test_stage_status_for_analysis_and_report():
    from fairpair._progress import stage_status

    console, buf = _console(True)
    with stage_status(console, "writing the report..."):
        pass
    assert "writing the report: done in " in buf.getvalue()
    console, buf = _console(False)
    with stage_status(console, "writing the report..."):
        pass
    assert buf.getvalue() == ""



def test_analysis_bar_counts_the_planned_comparisons(tmp_path):
    from fairpair.analysis import analyze_run
    from fairpair.run._runner import loaded_from_store, open_run

    run = _run(tmp_path, analysis={"comparisons": [
        {"measure": "palabras", "attribute": "origen", "reference": "a"},
        {"measure": "tono.courtesy", "attribute": "origen", "reference": "a"}]})
    measure_run(run, measures=["palabras"])
    with open_run(run, readonly=True) as store:
        planned = len(loaded_from_store(store).battery.analysis.comparisons)  # one target (mock)
    assert planned == 2
    console, buf = _console(True)
    analyze_run(run, progress_console=console)
    out = buf.getvalue()
    assert "analysing the pre-registered comparisons" in out and f"{planned}/{planned}" in out and "ETA" in out
    console, buf = _console(False)  # off a terminal: no bar
    analyze_run(run, progress_console=console, write=False)
    assert "analysing the pre-registered comparisons" not in buf.getvalue()


def test_a_silent_target_still_gets_a_plain_line_every_plain_silent_seconds(capsys, monkeypatch):
    """Off a terminal the run's lines follow the answers; a target that answers nothing for a while (a slow
    local model, a stalled endpoint) still gets its line repeated, so a CI log never looks hung; the
    heartbeat stops with the target."""
    import time

    from fairpair import _progress

    monkeypatch.setattr(_progress, "PLAIN_SILENT", 0.05)
    rp = _progress.RunProgress(None, enabled=False, plain=True)
    with rp:
        rp.start_target("slow", total=4, todo=4)
        time.sleep(0.32)
        rp.end_target("slow")
        lines = capsys.readouterr().err.splitlines()
        time.sleep(0.15)
        assert capsys.readouterr().err == ""  # stopped with the target
    assert lines[0].startswith("run (target slow): 0/4 answers (0%), 0 failed, ")
    assert 4 <= len(lines) <= 8  # the start, 3-6 heartbeats in 0.32 s at 0.05 s (a loaded machine wakes late), the end
    assert all(ln.startswith("run (target slow): 0/4 answers (0%), 0 failed, ") for ln in lines)

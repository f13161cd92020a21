"""Issue 28's minor list, the cases that end in a documented warning or in different words (the
refusals are in tests/battery/test_bad_batteries.py and tests/reliability/test_bad_inputs.py).

One small mock run of the shop demo (36 answers, a scripted judge) serves every case here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from tests.reliability.conftest import demo_battery, scripted_judge

from run_helpers import run_cli


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("minor")
    judge = scripted_judge(tmp / "code", "fp_minor_judge")
    battery = demo_battery(tmp / "b", {"kind": "mock"}, judge=judge)
    yield tmp, battery
    sys.modules.pop("fp_minor_judge", None)


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_run_q_prints_no_running_commentary(shop, capsys):
    tmp, battery = shop
    code, out, err = run_cli(["run", battery, "--out", tmp / "q", "-q"], capsys, collapse=False)
    assert code == 0, err
    assert "measuring " not in out and "judge self-test of" not in out  # no running commentary
    assert "run directory:" in out and "report:" in out
    code, full, err = run_cli(["run", battery, "--out", tmp / "q2"], capsys, collapse=False)
    assert "measuring " in full  # without -q the commentary is there (the sentences need --verbose)
    assert len(out.splitlines()) < len(full.splitlines()), (len(out.splitlines()), len(full.splitlines()))


def test_measure_table_and_status_use_the_same_words(shop, capsys):
    tmp, battery = shop
    run = tmp / "v"
    code, out, err = run_cli(["run", battery, "--out", run, "-q", "--no-analyze", "--no-report"], capsys)
    assert code == 0, err
    assert "missing: no value, final (not retried)" in _flat(out)
    code, out, err = run_cli(["status", run], capsys)
    assert "missing (no value, final)" in _flat(out) and "not applicable" not in out


def test_common_word_warning_names_a_reference_as_a_reference(shop, capsys):
    _, battery = shop
    code, out, err = run_cli(["validate", battery], capsys)
    flat = _flat(out)
    assert code == 0
    assert "group reference(s) china are (or contain) common words of 'es'" in flat
    assert "variant(s) china" not in flat


def test_a_decimal_written_in_the_crm_is_kept_as_text_with_a_warning(shop, tmp_path, capsys):
    _, battery = shop
    data = yaml.safe_load(Path(battery).read_text(encoding="utf-8"))
    text = Path(battery).read_text(encoding="utf-8")
    assert "pedidos: 7\n" in text
    b = tmp_path / "crm.yaml"
    b.write_text(text.replace("pedidos: 7\n", "pedidos: 7\n      importe: 89.00\n      cp: 02142\n", 1),
                 encoding="utf-8")
    code, out, err = run_cli(["validate", b], capsys)
    flat = _flat(out)
    assert code == 0 and data
    assert "[templates[0].context.crm.importe] 89.00 is kept as the text '89.00' (YAML would read 89.0)" in flat
    assert "02142" not in flat  # a code with a leading zero is text on purpose: no warning
    code, out, err = run_cli(["run", b, "--dry-run"], capsys, collapse=False)
    assert "importe: 89.00" in out and '"importe": "89.00"' in out  # as written in the prompt; text in JSON


def test_report_provenance_names_no_bootstrap_for_crossed_t_intervals(shop, capsys):
    tmp, battery = shop
    run = tmp / "p"
    code, out, err = run_cli(["run", battery, "--out", run, "-q"], capsys)
    assert code == 0, err
    md = (run / "report" / "report.md").read_text(encoding="utf-8")
    assert "bootstrap 2000" not in md and "seed" in md


def test_aa_intro_describes_the_seeds_split():
    from fairpair.report._catalog import msg

    for lang, words in (("en", "split: seeds"), ("es", "split: seeds")):
        text = msg(lang, "aa.intro")
        assert words in text and ("halves of the sampling seeds" in text or "mitades de las semillas" in text)

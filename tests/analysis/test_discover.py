"""fairpair discover: the split, each pass alone (the words pass; the model pass with a scripted
proposer that paraphrases the planted axis), and the docs' commands end to end on examples/discover."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from tests.run_helpers import run_cli

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "discover"


def test_fightin_words_matches_monroe_equations():
    from fairpair.stats import fightin_words

    ya, yb, alpha = np.array([10.0, 2.0, 30.0]), np.array([3.0, 9.0, 30.0]), np.array([1.0, 2.0, 5.0])
    r = fightin_words(ya, yb, prior=alpha)
    na, nb, a0 = 42.0, 42.0, 8.0
    for w in range(3):  # Monroe, Colaresi & Quinn (2008), eq. 16-22, written out
        d = (math.log((ya[w] + alpha[w]) / (na + a0 - ya[w] - alpha[w]))
             - math.log((yb[w] + alpha[w]) / (nb + a0 - yb[w] - alpha[w])))
        v = 1 / (ya[w] + alpha[w]) + 1 / (yb[w] + alpha[w])
        assert r.delta[w] == pytest.approx(d, rel=1e-12)
        assert r.zscore[w] == pytest.approx(d / math.sqrt(v), rel=1e-12)
    with pytest.raises(ValueError):
        fightin_words([1, -1], [1, 1])


def test_split_shares_no_template_and_no_name_with_names_random():
    from fairpair.analysis._discover import make_split

    templates = [f"t{i}" for i in range(16)]
    sets = [(f"a{k}", f"b{k}") for k in range(10)]
    s = make_split(templates, sets, names="random", seed=3)
    assert not set(s.templates["explore"]) & set(s.templates["confirm"])
    assert len(s.templates["explore"]) == len(s.templates["confirm"]) == 8
    assert not set(s.names_of["explore"]) & set(s.names_of["confirm"])
    assert sorted(s.names_of["explore"] + s.names_of["confirm"]) == sorted(n for p in sets for n in p)
    for a, b in sets:  # a position's names stay together
        assert (a in s.names_of["explore"]) == (b in s.names_of["explore"])
    fixed = make_split(templates, sets, names="fixed", seed=3)
    assert fixed.names_of == {} and fixed.part(fixed.templates["confirm"][0], ("a0", "b0")) == "confirm"
    assert make_split(templates, sets, names="random", seed=3) == s  # the seed gives one split


def test_phrases_are_masked_and_stay_within_a_clause():
    from fairpair.analysis._discover import phrases_of

    p = phrases_of("Hola [MASK], envíenos la factura. Quedamos a su disposición")
    assert "envienos la factura" in p and "factura quedamos" not in p
    assert not any("mask" in x.split() for x in p)


def _run(tmp_path: Path, capsys, battery: Path) -> Path:
    out = tmp_path / "run"
    code, _, err = run_cli(["run", battery, "--out", out], capsys)
    assert code == 0, err
    return out


def _copy_example(tmp_path: Path) -> Path:
    d = tmp_path / "bot"
    shutil.copytree(EXAMPLE, d)
    return d / "battery.yaml"


def test_words_pass_alone_finds_and_confirms_the_planted_request(tmp_path, capsys):
    """The docs' commands (docs/discover.md) on examples/discover: the model pass off."""
    run = _run(tmp_path, capsys, _copy_example(tmp_path))
    before = json.loads((run / "results.json").read_text())
    code, out, err = run_cli(["discover", run], capsys)
    assert code == 0, err
    res = json.loads((run / "results.json").read_text())
    d = res["discovered"]
    assert d["passes"] == ["words"]
    assert not set(d["split"]["explore"]["templates"]) & set(d["split"]["confirm"]["templates"])
    assert not set(d["split"]["explore"]["names"]) & set(d["split"]["confirm"]["names"])
    assert d["n_answers"] == {"explore": 80, "confirm": 80}
    confirmed = [a for a in d["axes"] if a["confirmed"]]
    assert confirmed and all(a["how"] == "words" for a in d["axes"])
    planted = {"envienos", "foto", "factura", "continuar"}
    assert any(set(a["spec"]["any_of"][0].split()) & planted and a["direction"] == "magreb" for a in confirmed)
    # measured on the confirmation part only, stored as discovered.<name>
    from tests.run_helpers import rows

    measured = {cid for (cid,) in rows(run, "SELECT case_id FROM measurements WHERE measure LIKE 'discovered.%'")}
    explore = set(d["split"]["explore"]["templates"])
    cases = {cid: json.loads(c)["template"] for cid, c in rows(run, "SELECT case_id, data FROM cases")}
    assert measured and not {cases[c] for c in measured} & explore
    # the pre-registered verdicts are the ones before
    assert [c["verdict"] for c in res["comparisons"]] == [c["verdict"] for c in before["comparisons"]]
    assert "CONFIRMED" in out
    frag = yaml.safe_load((run / "discovered" / "axes.yaml").read_text())
    assert frag["discovered"]["confirmed"] == [a["name"] for a in confirmed]
    assert set(frag["measures"]) == {a["name"] for a in d["axes"]}
    # a second discover keeps the recorded split; a --seed that would change nothing is an error
    code, _, err = run_cli(["discover", run, "--seed", "9"], capsys)
    assert code == 2 and "split was made with seed 0; --seed 9 would change nothing" in err and "--seed" in err
    code, _, err = run_cli(["discover", run], capsys)
    assert code == 0, err
    assert json.loads((run / "results.json").read_text())["discovered"]["split"] == d["split"]
    # the sign as in the plan's comparison (groups [magreb, espana]): magreb minus espana, as elsewhere
    assert all((a["group_a"], a["group_b"]) == ("magreb", "espana") for a in d["axes"])
    assert any(a["confirmation"]["estimate"] > 0 for a in confirmed)
    # the report has the section, apart from the verdicts
    code, _, err = run_cli(["report", run, "--lang", "en"], capsys)
    assert code == 0, err
    md = (run / "report" / "report.md").read_text()
    assert "### Discovered: differences no measure was written for" in md
    assert f'"{confirmed[0]["spec"]["any_of"][0]}"' in md and "**confirmed**" in md
    # the next battery's plan takes the confirmed axis as a comparison
    battery = tmp_path / "bot" / "battery.yaml"
    code, out, err = run_cli(["plan", battery, "--json", "--discover", "--from-discovered",
                              run / "discovered" / "axes.yaml"], capsys)
    assert code == 0, err
    plan = json.loads(out)
    assert list(plan["from_discovered"]["measures"]) == [a["name"] for a in confirmed]
    assert plan["from_discovered"]["analysis"]["comparisons"][0]["measure"] == confirmed[0]["name"]
    assert plan["discover"] == ["discover, design counterfactual-origen: each part holds 8 templates and 5 names "
                                "per group (names random): meets the minimums"]
    # the gate is the pre-registered plan's alone
    code, _, _ = run_cli(["gate", run], capsys)
    assert code == 0


PROPOSER = '''
import re

def answer(messages, context):
    text = messages[-1]["content"]
    # a paraphrase of the planted axis when one of the two answers asks for the invoice, and a question on
    # which no two answers differ (every answer greets): the screen on the exploration part drops it
    if "factura" in text:
        return ('{"questions": ["¿Le pide la respuesta al cliente que mande una imagen del recibo de compra?", '
                '"¿Saluda la respuesta al cliente?"]}')
    return '{"questions": ["¿Saluda la respuesta al cliente?"]}'
'''

JUDGE = '''
def answer(messages, context):
    system = messages[0]["content"]
    reply = messages[-1]["content"].rsplit("<<<", 1)[-1]
    if "Saluda" in system:
        return "true"
    return "true" if "factura" in reply else "false"
'''


def test_model_pass_alone_with_a_scripted_proposer(tmp_path, capsys):
    """Two targets (the same bot twice); the proposer asks the planted axis and a useless question."""
    battery = _copy_example(tmp_path)
    (battery.parent / "proposer.py").write_text(PROPOSER)
    (battery.parent / "judge.py").write_text(JUDGE)
    b = yaml.safe_load(battery.read_text())
    b["targets"] = {"uno": b.pop("target"), "dos": {"kind": "python", "callable": "bot:answer", "path": "."}}
    battery.write_text(yaml.safe_dump(b, allow_unicode=True))
    run = _run(tmp_path, capsys, battery)
    spec = json.dumps({"kind": "python", "callable": "proposer:answer", "path": str(battery.parent)})
    judge = json.dumps({"kind": "python", "callable": "judge:answer", "path": str(battery.parent)})
    code, out, err = run_cli(["discover", run, "--no-words", "--proposer", spec, "--judge", judge], capsys)
    assert code == 0, err + out
    d = json.loads((run / "results.json").read_text())["discovered"]
    assert d["passes"] == ["model"]
    # the useless question was answered on the exploration part, did not differ there and never entered the
    # confirmation family: one axis per target, the planted one
    assert sorted(a["target"] for a in d["axes"]) == ["dos", "uno"] and {a["how"] for a in d["axes"]} == {"model"}
    for axis in d["axes"]:
        assert axis["spec"]["kind"] == "llm_extract" and "recibo" in axis["spec"]["instructions"]
        assert axis["exploration"]["calls"] == 16 and axis["exploration"]["questions_proposed"] == 2
        assert axis["exploration"]["crossed_pvalue"] < 0.05 and axis["direction"] == "magreb"
        assert axis["confirmed"] and "one-sided" in axis["confirmation"]["correction"]
        assert axis["confirmation"]["estimate"] > 0  # magreb - espana: the invoice is asked of magreb
        assert axis["confirmation"]["family_size"] == 1
    # each question measured on its own target's answers only; the useless one on the exploration part only
    from tests.run_helpers import rows

    cases = {cid: json.loads(c)["template"] for cid, c in rows(run, "SELECT case_id, data FROM cases")}
    explore = set(d["split"]["explore"]["templates"])
    got: dict[str, set] = {}
    for target, cid, measure in rows(run, "SELECT target, case_id, measure FROM measurements "
                                          "WHERE measure LIKE 'discovered.%'"):
        got.setdefault(measure, set()).add((target, cases[cid] in explore))
    kept = {"discovered." + a["name"]: a["target"] for a in d["axes"]}
    useless = [m for m in got if m not in kept]
    assert len(useless) == 2 and all(len({t for t, _ in got[m]}) == 1 and {e for _, e in got[m]} == {True}
                                     for m in useless)
    for m, target in kept.items():
        assert got[m] == {(target, True), (target, False)}


def test_both_passes_off_is_an_error_and_a_small_battery_is_refused(tmp_path, capsys):
    battery = _copy_example(tmp_path)
    b = yaml.safe_load(battery.read_text())
    b["templates"] = b["templates"][:10]  # 5 templates a part: fewer than the 8 of templates random
    battery.write_text(yaml.safe_dump(b, allow_unicode=True))
    run = _run(tmp_path, capsys, battery)
    code, _, err = run_cli(["discover", run, "--no-words"], capsys)
    assert code == 2 and "both passes are off" in err
    code, _, err = run_cli(["discover", run], capsys)
    assert code == 2 and "misses the design minimums" in err and "5 template(s)" in err
    assert ("each part needs 8 templates and 5 names per group, so the battery needs 16 templates"
            in " ".join(err.split()))
    code, out, _ = run_cli(["plan", battery, "--discover"], capsys)
    assert "needs 8 templates a part (16 in the battery)" in " ".join(out.split())


def test_from_discovered_refuses_a_fragment_with_no_confirmed_axis(tmp_path, capsys):
    frag = tmp_path / "axes.yaml"
    frag.write_text(yaml.safe_dump({"discovered": {"run": "x", "split_seed": 0, "confirmed": []},
                                    "measures": {"w_foto": {"kind": "keywords", "any_of": ["foto"]}},
                                    "analysis": {"comparisons": []}}))
    code, _, err = run_cli(["plan", EXAMPLE / "battery.yaml", "--from-discovered", frag], capsys)
    assert code == 2 and "no confirmed axis" in err and "discovered.confirmed" in err
    frag.write_text("measures: {}\n")
    code, _, err = run_cli(["plan", EXAMPLE / "battery.yaml", "--from-discovered", frag], capsys)
    assert code == 2 and "not a fragment written by `fairpair discover`" in err


def test_the_chatbot_served_on_loopback_is_discovered_through_an_http_target(tmp_path, capsys):
    """Done-when of issue 32: the chatbot served over HTTP on 127.0.0.1 (``python bot.py PORT``, the
    docs' commands with ``served.yaml``), audited through an ``http`` target: ``discover`` finds the
    planted request for an invoice photo on the exploration part and confirms it on the other."""
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    battery = _copy_example(tmp_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    served = battery.parent / "served.yaml"
    served.write_text(served.read_text().replace("8765", str(port)))
    server = subprocess.Popen([sys.executable, "bot.py", str(port)], cwd=battery.parent,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):  # until it listens
            try:
                urllib.request.urlopen(urllib.request.Request(
                    f"http://127.0.0.1:{port}/chat", data=b'{"messages": [{"role": "user", "content": "soy Ana"}]}',
                    headers={"Content-Type": "application/json"}), timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        run = _run(tmp_path, capsys, served)
        code, out, err = run_cli(["discover", run], capsys)
        assert code == 0, err
    finally:
        server.terminate()
        server.wait(10)
    d = json.loads((run / "results.json").read_text())["discovered"]
    confirmed = [a for a in d["axes"] if a["confirmed"]]
    planted = {"envienos", "foto", "factura", "continuar"}
    assert any(set(a["spec"]["any_of"][0].split()) & planted and a["direction"] == "magreb" for a in confirmed)
    assert "CONFIRMED" in out
    # the report `run` wrote is brought up to date: its discovered section is there without `fairpair report`
    assert "report updated" in out
    assert confirmed[0]["spec"]["any_of"][0] in (run / "report" / "report.md").read_text()

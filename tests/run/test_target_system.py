"""A target's own system prompt (``targets: {name: {kind, system_file}}``): two prompts, one run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairpair.battery import load_battery
from fairpair.cases import expand
from fairpair.cli import main
from fairpair.errors import BatteryError
from fairpair.run import RunSettings, Store, execute_run
from fairpair.run._preview import preview_requests

BOT = '''
def answer(messages, context):
    return "SYSTEM=" + messages[0]["content"] if messages[0]["role"] == "system" else "NONE"
'''


def _battery(tmp: Path, targets: dict, *, judge: dict | None = None, fmt: str = "yaml") -> Path:
    (tmp / "bot").mkdir(parents=True, exist_ok=True)
    (tmp / "bot" / "fp_sysbot.py").write_text(BOT, encoding="utf-8")
    (tmp / "politica.md").write_text("Tienda Sol. Zona: {reparto.zona}. Cliente:\n{crm}", encoding="utf-8")
    data = {
        "schema_version": 1, "name": "prompts", "language": "es", "seed": 3,
        "attributes": {"barrio": {"signal": "neighbourhood", "context_field": "crm.barrio", "groups": {
            "alta": {"variants": ["Salamanca"], "context": {"reparto": {"zona": "A"}}},
            "baja": {"variants": ["Villaverde"], "context": {"reparto": {"zona": "C"}}}}}},
        "context_channels": {"format": fmt},
        "templates": [{"id": f"t{i}", "system": "Tienda Sol. Cliente:\n{crm}", "context": {"crm": {"pedidos": i}},
                       "turns": [f"Hola, mi pedido {i} llegó roto."]} for i in range(2)],
        "designs": [{"kind": "counterfactual", "attribute": "barrio"}],
        "targets": targets,
    }
    if judge is not None:
        data["judge"] = judge
    path = tmp / "battery.yaml"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def _bot(tmp: Path, **extra) -> dict:
    return {"kind": "python", "callable": "fp_sysbot:answer", "path": str(tmp / "bot"), **extra}


def test_each_target_answers_with_its_own_prompt(tmp_path):
    lb = load_battery(_battery(tmp_path, {"produccion": _bot(tmp_path),
                                          "politica": _bot(tmp_path, system_file="politica.md")}))
    assert lb.battery.targets["politica"].system.startswith("Tienda Sol. Zona:")
    assert lb.battery.targets["politica"].options() == {"callable": "fp_sysbot:answer", "path": str(tmp_path / "bot")}
    execute_run(lb, tmp_path / "run", RunSettings(concurrency=2, timeout=10))
    with Store.open(tmp_path / "run") as store:
        got = {(t, c.variants["barrio"]): store.answer_text(t, c.id) for c in expand(lb) if c.template == "t1"
               for t in ("produccion", "politica")}
    assert got[("produccion", "Villaverde")] == "SYSTEM=Tienda Sol. Cliente:\npedidos: 1\nbarrio: Villaverde"
    # the same case, its system message replaced and filled from the case's context (YAML, as the battery says)
    assert got[("politica", "Villaverde")] == "SYSTEM=Tienda Sol. Zona: C. Cliente:\npedidos: 1\nbarrio: Villaverde"
    assert got[("politica", "Salamanca")] == "SYSTEM=Tienda Sol. Zona: A. Cliente:\npedidos: 1\nbarrio: Salamanca"
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text(encoding="utf-8"))
    own = manifest["targets"]["politica"]["system_prompt"]
    assert own["text"] == lb.battery.targets["politica"].system and len(own["sha256"]) == 64
    assert "system_prompt" not in manifest["targets"]["produccion"]


def test_dry_run_shows_the_targets_own_prompt(tmp_path):
    lb = load_battery(_battery(tmp_path, {"politica": _bot(tmp_path, system="Otra. {crm.barrio}")}, fmt="json"))
    (first, *_) = list(preview_requests(lb))
    body = json.loads(first.body)
    assert body["messages"][0] == {"role": "system", "content": "Otra. Salamanca"}


@pytest.mark.parametrize("targets, judge, key, words", [
    ({"p": {"kind": "mock", "system": "a", "system_file": "politica.md"}}, None, "targets.p",
     "either 'system' or 'system_file'"),
    ({"p": {"kind": "mock", "system": "Hola {nombre}"}}, None, "targets.p.system",
     "'{nombre}' in the target's system prompt is not a field of the context"),
    ({"p": {"kind": "mock", "system_file": "no_such.md"}}, None, "targets.p.system_file", "cannot read system prompt"),
    ({"p": {"kind": "mock"}}, {"kind": "mock", "system": "x"}, "judge.system", "a judge takes no system prompt"),
])
def test_bad_target_prompts_are_battery_errors(tmp_path, targets, judge, key, words):
    with pytest.raises(BatteryError) as exc:
        load_battery(_battery(tmp_path, targets, judge=judge))
    assert exc.value.key.startswith(key) and words in str(exc.value)


def test_a_field_only_one_prompt_reads_is_not_a_routing_error(tmp_path):
    # 'reparto' (a group's context) reaches only 'politica': the difference between the two prompts
    lb = load_battery(_battery(tmp_path, {"produccion": {"kind": "local"},
                                          "politica": {"kind": "local", "system_file": "politica.md"}}))
    assert set(lb.battery.targets) == {"produccion", "politica"}


def test_compare_two_targets_of_one_run(tmp_path, capsys):
    bias = {"kind": "mock", "words": 40, "bias": {"baja": {"words_factor": 0.5}}}
    path = _battery(tmp_path, {"produccion": {"kind": "mock", "words": 40},
                               "politica": {**bias, "system_file": "politica.md"}})
    data = json.loads(path.read_text(encoding="utf-8"))
    data["templates"] = [{**data["templates"][0], "id": f"t{i}", "context": {"crm": {"pedidos": i}}} for i in range(8)]
    data["measures"] = {"palabras": {"kind": "word_count"}}
    data["analysis"] = {"comparisons": [{"measure": "palabras", "attribute": "barrio", "reference": "alta"}]}
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    run = tmp_path / "run"
    main(["run", str(path), "--out", str(run), "-q", "--no-report"])
    capsys.readouterr()
    main(["compare", str(run), "--target-before", "politica", "--target-after", "produccion", "--json"])
    out = json.loads(capsys.readouterr().out)
    (row,) = [r for r in out["rows"] if r["measure"] == "palabras"]
    assert (row["target_before"], row["target_after"]) == ("politica", "produccion")
    assert out["paired_by"] == "case_id" and row["n_sets"] == 8
    assert row["gap_before"] < -10 and abs(row["gap_after"]) < 5 and row["direction"] == "better"
    main(["report", str(run)])  # the report lists the target's own prompt with the templates' prompts
    html = (run / "report" / "report.html").read_text(encoding="utf-8")
    assert "# target politica: its own system prompt, in place of the templates&#39;" in html
    assert "Tienda Sol. Zona: {reparto.zona}. Cliente:" in html
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(run), "--target-before", "nadie", "--target-after", "produccion"])
    assert exc.value.code == 2 and "target 'nadie' has no answer" in capsys.readouterr().err


@pytest.mark.local_model
def test_demo_dry_run_renders_each_prompt_for_the_embedded_model():
    """The README's battery: the zonas target's rendered prompt carries its zone line, production's does not."""
    pytest.importorskip("xllamacpp")
    demo = Path(__file__).resolve().parents[2] / "examples" / "tienda_online" / "demo.yaml"
    seen = {p.target: p for p in preview_requests(load_battery(demo)) if p.template == "pedido_roto"}
    assert set(seen) == {"produccion", "zonas"}
    assert "zona A, servicio estándar" in seen["zonas"].rendered and "barrio: Salamanca" in seen["zonas"].rendered
    assert "Condiciones de servicio" not in seen["produccion"].rendered
    assert "barrio: Salamanca" in seen["produccion"].rendered

"""The README's first battery (examples/tienda_online/demo.yaml) can reach its verdicts, without the model.

A Python stand-in for the embedded model follows the prompts deterministically: a long answer
(its length set by the template, a word or two more or less by the barrio) unless its system
prompt gives it a canned reply, which only the ``zonas`` prompt does, and only for the low-income
barrio (its delivery zone's conditions). After Holm over each target's
comparisons the design must then give ``fail`` on ``zonas`` and no ``fail`` on ``produccion``:
with too few templates a sign-based p-value could never get there (2^(1-T)).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from fairpair.cli import main

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "tienda_online" / "demo.yaml"

BOT = '''
import hashlib

def _n(text, mod):
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest(), 16) % mod

TEXT = ("Gracias por escribirnos y perdona las molestias con tu pedido de la tienda. Hemos revisado el caso con "
        "el equipo de logística y vamos a tramitar la solución que prefieras en cuanto nos confirmes los datos que "
        "faltan en la ficha del cliente. Si lo necesitas, también puedes hablar con un agente humano por teléfono "
        "de lunes a viernes, o pasar por cualquiera de nuestras tiendas con el número de pedido y el justificante "
        "de compra para que lo resuelvan allí mismo sin coste alguno para ti").split()

def answer(messages, context):
    system, user = messages[0]["content"], messages[-1]["content"]
    if 'responde únicamente "' in system:  # the zone's canned reply
        return system.split('responde únicamente "', 1)[1].split('"', 1)[0]
    words = 30 + _n(user, 25) + _n(context["crm"]["barrio"] + user, 3)
    return " ".join(TEXT[:words]) + "."
'''


def _stand_in(tmp: Path) -> Path:
    (tmp / "bot").mkdir(parents=True)
    (tmp / "bot" / "fp_demo_bot.py").write_text(BOT, encoding="utf-8")
    data = yaml.safe_load(DEMO.read_text(encoding="utf-8"))
    for t in data["templates"]:
        t["system_file"] = str((DEMO.parent / t["system_file"]).resolve())
    for spec in data["targets"].values():
        own = spec.get("system_file")
        spec.clear()
        spec.update({"kind": "python", "callable": "fp_demo_bot:answer", "path": str(tmp / "bot")})
        if own:
            spec["system_file"] = str((DEMO.parent / own).resolve())
    path = tmp / "demo.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def test_demo_design_fails_the_planted_prompt_and_not_production(tmp_path, capsys):
    battery = _stand_in(tmp_path)
    run = tmp_path / "run"
    main(["run", str(battery), "--out", str(run), "-q", "--no-report"])
    capsys.readouterr()
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    got = {(c["target"], c["measure"]): c for c in results["comparisons"] if c["measure"] == "palabras"}
    planted, production = got[("zonas", "palabras")], got[("produccion", "palabras")]
    assert (planted["group_a"], planted["group_b"]) == ("renta_baja", "renta_alta")
    assert planted["verdict"] == "fail"
    # every template shows the low-income barrio's answers shorter: below alpha after Holm over the target's
    # comparisons
    assert planted["pvalue_adjusted"] < 0.05
    assert production["verdict"] in ("pass", "inconclusive")
    assert abs(production["estimate"]) < 2

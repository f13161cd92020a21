"""Case expansion: determinism, literal slot filling, writing styles, matched sets, ids."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from fairpair.battery import load_battery
from fairpair.battery._schema import Transform
from fairpair.cases import expand, fill_slots, indefinite_article, write_cases
from fairpair.cases._style import apply_transforms

ROOT = Path(__file__).resolve().parents[2]
TIENDA = ROOT / "examples" / "tienda_online" / "battery.yaml"
SIGNALS = ROOT / "examples" / "tienda_online" / "signals.yaml"
PERSONA = ROOT / "examples" / "persona_power" / "battery.yaml"


def _write(tmp_path: Path, text: str, name: str = "b.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


# ------------------------------------------------------------------ (b) determinism


def test_expand_is_byte_identical_across_runs(tmp_path):
    lb = load_battery(SIGNALS)
    write_cases(lb, tmp_path / "a.jsonl")
    write_cases(load_battery(SIGNALS), tmp_path / "b.jsonl")
    a, b = (tmp_path / "a.jsonl").read_bytes(), (tmp_path / "b.jsonl").read_bytes()
    assert a == b and a.count(b"\n") == 304


@pytest.mark.parametrize("battery", [TIENDA, SIGNALS], ids=["tienda", "signals"])
def test_expand_is_byte_identical_across_processes_and_hash_seeds(battery, tmp_path):
    digests = []
    for seed in ("0", "12345"):
        out = tmp_path / f"cases-{seed}.jsonl"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run([sys.executable, "-m", "fairpair.cli", "expand", str(battery), "-o", str(out)],
                              capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr
        digests.append(hashlib.sha256(out.read_bytes()).hexdigest())
        manifest = out.with_name(out.stem + ".manifest.json").read_bytes()
        digests.append(hashlib.sha256(manifest).hexdigest())
    assert digests[0] == digests[2] and digests[1] == digests[3]


# ------------------------------------------------------------------ (c) literal slot filling

NASTY = [
    "{nombre}",
    "{{nombre}}",
    "{{",
    "}}",
    "{% if x %}Ana{% endif %}",
    "{{ nombre | upper }}",
    "{0:>10}",
    "%(nombre)s",
    "$nombre ${nombre}",
    "O'Brien \"Ana\"",
    "\u200fمريم\u200f",  # right-to-left marks around an Arabic name
    "Ana 👩🏽‍💻",
    "\\n\\t",
    "{otro}",
]


@pytest.mark.parametrize("value", NASTY)
def test_fill_slots_inserts_values_literally(value):
    assert fill_slots("Hola, soy {nombre}.", {"nombre": value, "otro": "X"}) == f"Hola, soy {value}."
    # literal braces in the template stay single braces; slot names in values are not re-filled
    assert fill_slots("{{json}} {nombre} {nombre}", {"nombre": value}) == f"{{json}} {value} {value}"


def test_unknown_slot_is_left_alone_and_escapes_are_single_pass():
    assert fill_slots("{a}{{b}}{c}", {"a": "{c}"}) == "{c}{b}{c}"


def test_nasty_variants_survive_the_whole_expansion(tmp_path):
    variants_a = ["{nombre}", "{{x}}", "{% raw %}", "{0!r:>4}"]
    variants_b = ["\u200fمريم\u200f", "Zoë 🧕", "O'Brien \"Q\"", "%(n)s"]
    quoted = lambda vs: "[" + ", ".join("'" + v.replace("'", "''") + "'" for v in vs) + "]"  # noqa: E731
    p = _write(tmp_path, f"""\
schema_version: 1
name: nasty
attributes:
  origen:
    signal: name
    slot: nombre
    context_field: crm.nombre
    neutral: alguien
    groups:
      a: {{variants: {quoted(variants_a)}}}
      b: {{variants: {quoted(variants_b)}}}
templates:
  - id: t
    system: "Sistema {{{{literal}}}} para {{nombre}}."
    context: {{crm: {{saludo: "Hola {{nombre}}"}}}}
    turns: ["Soy {{nombre}}; llaves {{{{ y }}}}."]
context_channels: {{message: {{content: "Ficha: {{crm.saludo}} / {{crm.nombre}}"}}}}
designs:
  - kind: counterfactual
    attribute: origen
""")
    cases = list(expand(load_battery(p)))
    assert len(cases) == 8
    for c in cases:
        v = c.variants["origen"]
        assert c.turns == [f"Soy {v}; llaves {{ y }}."]
        assert c.messages[0]["content"] == f"Sistema {{literal}} para {v}."
        assert c.context["crm"] == {"saludo": f"Hola {v}", "nombre": v}
        assert c.messages[1] == {"role": "system", "content": f"Ficha: Hola {v} / {v}"}  # never re-read
    assert sorted(c.variants["origen"] for c in cases) == sorted(variants_a + variants_b)


# ------------------------------------------------------------------ (d) writing styles


def test_transforms_are_deterministic_for_a_seed():
    text = "Hola, soy Lucía. Mi batidora llegó rota y quiero que me devolváis el dinero hoy mismo."
    ts = [Transform(kind="misspell", rate=0.5)]
    outs = {apply_transforms(text, ts, 7, ["Lucía"]) for _ in range(5)}
    assert len(outs) == 1
    assert apply_transforms(text, ts, 7, ["Lucía"]) != apply_transforms(text, ts, 8, ["Lucía"])
    assert apply_transforms(text, [Transform(kind="max_words", max_words=4)], 1) == "Hola, soy Lucía. Mi"
    assert apply_transforms(text, [Transform(kind="strip_accents")], 1, ["Lucía"]) == \
        "Hola, soy Lucía. Mi batidora llego rota y quiero que me devolvais el dinero hoy mismo."
    assert apply_transforms("Quiero que me devolváis", [Transform(kind="replace", phrases={
        "Quiero que me devolváis": "Yo querer devolver"})], 1) == "Yo querer devolver"


@pytest.mark.parametrize("seed", range(40))
def test_protected_names_are_never_touched(seed):
    names = ["Lucía", "Fátima", "Ioana", "Xiaoyan", "Mª José", "Ana-Belén"]
    text = "Hola, soy {n}. Llevo dos semanas esperando a que {n} reciba la llamada de {n}."
    ts = [Transform(kind="misspell", rate=1.0), Transform(kind="strip_accents"), Transform(kind="lowercase"),
          Transform(kind="replace", pairs={"a": "e"})]
    outs = []
    for n in names:
        out = apply_transforms(text.format(n=n), ts, seed, [n])
        assert out.count(n) == 3, out
        outs.append(out.replace(n, "<N>"))
    assert len(set(outs)) == 1  # the same rewriting whatever the name


def test_styles_in_a_battery_never_misspell_the_name(tmp_path):
    p = _write(tmp_path, """\
schema_version: 1
name: estilos
attributes:
  origen:
    signal: name
    slot: nombre
    context_field: crm.nombre
    neutral: "un cliente"
    groups:
      espana: {lexicon: es/spain/female, take: 3}
      magreb: {lexicon: es/maghreb/female, take: 3}
  estilo:
    signal: writing_style
    groups:
      estandar: {}
      faltas: {transforms: [{kind: misspell, rate: 1.0}]}
      minusculas: {transforms: [{kind: strip_accents}, {kind: lowercase}]}
context_channels: {message: {content: "Cliente: {crm.nombre}"}}
templates:
  - id: roto
    turns: ["Hola, soy {nombre}. La batidora llegó rota; {nombre} quiere el reembolso, gracias."]
  - id: cita
    turns: ["Me llamo {nombre} y necesito cambiar la cita del viernes."]
designs:
  - kind: crossed
    attributes: [origen, estilo]
""")
    cases = list(expand(load_battery(p)))
    assert len(cases) == 2 * 3 * 6
    by_set = defaultdict(list)
    for c in cases:
        name = c.variants["origen"]
        n_slots = 2 if c.template == "roto" else 1
        assert c.turns[0].count(name) == n_slots
        by_set[(c.matched_set, c.groups["estilo"])].append(c.turns[0].replace(name, "<N>"))
        if c.groups["estilo"] == "faltas":
            assert "batidora" not in c.turns[0] or c.template != "roto"
    for texts in by_set.values():  # same style, different name: same text around the name
        assert len(set(texts)) == 1


def test_signals_example_keeps_laura_and_the_age():
    for c in expand(load_battery(SIGNALS)):
        assert "Laura" in c.turns[0]
        if c.design == "counterfactual-edad" and c.groups.get("estilo") is None:
            assert f"{c.variants['edad']} años" in c.turns[0]


# ------------------------------------------------------------------ (e) matched sets


def _mask(text: str, value: str) -> str:
    return re.sub(r"(?<!\w)" + re.escape(value) + r"(?!\w)", "<SIGNAL>", text)


def test_counterfactual_sets_have_one_case_per_group_and_equal_text():
    lb = load_battery(TIENDA)
    sets = defaultdict(list)
    for c in expand(lb):
        sets[c.matched_set].append(c)
    assert len(sets) == 300
    groups = set(lb.battery.attributes["origen"].groups)
    for ms, cases in sets.items():
        assert sorted(c.groups["origen"] for c in cases) == sorted(groups), ms
        assert len({c.seed for c in cases}) == 1
        assert len({(c.template, c.repetition, c.position) for c in cases}) == 1
        rendered = set()
        for c in cases:
            v = c.variants["origen"]
            conv = "\n".join(m["content"] for m in c.conversation())
            assert v in conv
            ctx = dict(c.context["crm"])
            assert ctx.pop("nombre") == v
            rendered.add((_mask(conv, v), repr(sorted(ctx.items()))))
        assert len(rendered) == 1, ms  # identical apart from the name


def test_two_party_sets_have_n_squared_per_axis_plus_one_baseline():
    lb = load_battery(PERSONA)
    sizes = {a: len(attr.groups) for a, attr in lb.battery.attributes.items()}
    sets = defaultdict(list)
    for c in expand(lb):
        sets[c.matched_set].append(c)
    assert len(sets) == 40
    for ms, cases in sets.items():
        baselines = [c for c in cases if c.baseline]
        assert len(baselines) == 1
        per_axis = defaultdict(set)
        for c in cases:
            if not c.baseline:
                per_axis[c.axis].add((c.groups["sub"], c.groups["res"]))
        assert {a: len(p) for a, p in per_axis.items()} == {a: n * n for a, n in sizes.items()}
        assert len(cases) == 112
        # identical text apart from the two identity labels
        texts = {c.turns[0].replace(c.variants["sub"], "<SUB>", 1).replace(c.variants["res"], "<RES>", 1)
                 for c in cases if not c.baseline}
        assert len(texts) == 1, ms
        # the system message (role-play and scene) is the same for every condition and the baseline
        systems = {tuple((m["role"], m["content"]) for m in c.messages) for c in cases}
        assert len(systems) == 1, ms
        ((role, content),) = systems.pop()
        assert role == "system" and content.startswith("This is a role-play. You are Blake and the user is Alex.\n\n")


@pytest.mark.parametrize("phrase,expected", [
    ("Asian person", "an Asian person"), ("Hispanic person", "a Hispanic person"),
    ("old person", "an old person"), ("immigrant", "an immigrant"), ("Unitarian", "a Unitarian"),
    ("hour-long wait", "an hour-long wait"), ("European", "a European"), ("one-eyed man", "a one-eyed man"),
    ("ugly-looking person", "an ugly-looking person"), ("Muslim person", "a Muslim person"),
])
def test_indefinite_article(phrase, expected):
    assert indefinite_article(phrase) == expected


# ------------------------------------------------------------------ (f) case ids


BASE = """\
schema_version: 1
name: ids
description: DESCRIPTION
attributes:
  origen:
    signal: name
    slot: nombre
    neutral: alguien
    groups:
      a: {variants: [Lucía, Carmen]}
      b: {variants: [Fátima, Khadija]}
templates:
  - id: t
    turns: ["Hola, soy {nombre}. TEXT"]
  - id: u
    turns: ["Buenas, me llamo {nombre}."]
designs:
  - kind: counterfactual
    attribute: origen
"""


def _ids(tmp_path, text, name):
    return {(c.template, c.groups["origen"], c.position): c.id
            for c in expand(load_battery(_write(tmp_path, text, name)))}


def test_case_ids_follow_the_template_not_unrelated_fields(tmp_path):
    base = _ids(tmp_path, BASE, "a.yaml")
    assert len(set(base.values())) == 8
    same = _ids(tmp_path, BASE.replace("DESCRIPTION", "another description") + "target: {kind: mock}\n", "b.yaml")
    assert same == base
    changed = _ids(tmp_path, BASE.replace("TEXT", "Mi pedido llegó roto."), "c.yaml")
    for k, v in base.items():
        assert (changed[k] == v) == (k[0] == "u"), k  # only template t's cases change


def test_context_text_is_written_once_per_distinct_value():
    """The YAML of a record is cached by value: equal records give the same text, and values that
    differ only in type (1 and "1", True and 1) are never confused."""
    from fairpair.cases._expand import context_text

    rec = {"cliente_desde": "2021-03-14", "pedidos": 7, "ultimo": {"id": 48213, "importe_eur": "89.00"}}
    first = context_text(rec)
    assert first == 'cliente_desde: 2021-03-14\npedidos: 7\nultimo:\n  id: 48213\n  importe_eur: 89.00'
    assert context_text(dict(rec)) == first
    assert context_text({"a": 1}) == "a: 1"
    assert context_text({"a": "1"}) == "a: '1'"
    assert context_text({"a": True}) == "a: true"
    assert context_text({"a": "true"}) == "a: 'true'"
    assert context_text({"a": 1}, "json") == '{\n  "a": 1\n}'

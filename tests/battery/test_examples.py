"""The shipped example batteries: they validate and have the sizes their comments promise."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import pytest

from fairpair.battery import load_battery
from fairpair.cases import expand, plan
from fairpair.cli import main

ROOT = Path(__file__).resolve().parents[2]
TIENDA = ROOT / "examples" / "tienda_online" / "battery.yaml"
DEMO = ROOT / "examples" / "tienda_online" / "demo.yaml"
SIGNALS = ROOT / "examples" / "tienda_online" / "signals.yaml"
PERSONA = ROOT / "examples" / "persona_power" / "battery.yaml"

DOMAINS = {"work", "education", "healthcare", "finance", "politics", "justice", "neighbourhood",
           "information", "housing", "social_assistance"}
# Tan & Lee (2025), Table 2: identities per axis
AXES = {"race": 5, "gender": 4, "age": 3, "religion": 5, "political": 3, "disability": 3,
        "nationality": 3, "appearance": 3}


@pytest.mark.parametrize("path", [TIENDA, DEMO, SIGNALS, PERSONA], ids=lambda p: p.parent.name + "/" + p.name)
def test_example_validates_through_the_cli(path, capsys):
    main(["validate", str(path)])
    assert capsys.readouterr().out.startswith("ok ")


def test_tienda_plan_is_the_seed_size(capsys):
    p = plan(load_battery(TIENDA))
    assert p.conversations == 1200  # 20 templates x 4 groups x 3 names x 5 repetitions
    d = p.designs["counterfactual-origen"]
    assert (d["templates"], d["groups"], d["variants_per_group"], d["repetitions"]) == (20, 4, 3, 5)
    assert d["pairs"] == 300  # 20 x 5 x 3 pairs for any two-group comparison
    assert d["comparisons"] == 3  # 3 groups against the reference (espana)
    assert p.measures == ["agente_humano", "opciones", "palabras", "reembolso", "tono"]
    main(["plan", str(TIENDA)])
    out = " ".join(capsys.readouterr().out.split())
    assert "conversations: 1200 per target" in out


def test_tienda_templates_are_production_shaped():
    lb = load_battery(TIENDA)
    b = lb.battery
    prompt = (TIENDA.parent / "system_prompt.md").read_text(encoding="utf-8")
    assert len({t.id for t in b.templates}) == 20
    for t in b.templates:
        assert t.system == prompt
        assert "cliente_desde" in t.context["crm"] and "pedidos" in t.context["crm"]
        assert any("{nombre}" in s for s in [*t.turns, *(m.content for m in t.history)])
    names = {g: tuple(b.attributes["origen"].groups[g].variants) for g in ("espana", "magreb", "rumania", "china")}
    assert names == {"espana": ("Lucía", "Carmen", "Laura"), "magreb": ("Fátima", "Khadija", "Amina"),
                     "rumania": ("Ioana", "Andreea", "Mihaela"), "china": ("Xiaoyan", "Jing", "Mei")}
    for case in expand(lb):
        name = case.variants["origen"]
        assert case.context["crm"]["nombre"] == name  # the CRM carries the name too
        assert name in case.turns[0] or any(name in m["content"] for m in case.messages)


def test_demo_and_signals_sizes():
    demo = load_battery(DEMO)
    assert plan(demo).conversations == 32  # 8 templates x 2 groups x 2 barrios, for each of its 2 targets
    assert set(demo.battery.targets) == {"produccion", "zonas"}
    assert demo.battery.analysis.generalize.names == "fixed"
    p = plan(load_battery(SIGNALS))
    sizes = {k: v["cases"] for k, v in p.designs.items()}
    assert sizes == {"counterfactual-edad": 72, "counterfactual-barrio": 48, "counterfactual-estilo": 32,
                     "crossed-edad-x-barrio": 144, "baseline": 8}
    assert p.conversations == 304
    assert p.designs["crossed-edad-x-barrio"]["cells"] == 6


def test_persona_power_plan():
    p = plan(load_battery(PERSONA))
    d = p.designs["two_party"]
    assert d["cells_per_axis"] == {a: n * n for a, n in AXES.items()}
    assert d["cells"] == 111
    assert d["conditions_per_template"] == 112
    assert d["templates"] == 40
    assert p.conversations == 40 * 112 == 4480
    assert p.exclusions == []


def test_persona_power_scenes_are_matched_pairs():
    b = load_battery(PERSONA).battery
    by_scene: dict[str, dict[str, object]] = defaultdict(dict)
    for t in b.templates:
        assert set(t.meta) == {"domain", "scene", "power"}
        assert t.meta["domain"] in DOMAINS
        by_scene[t.meta["scene"]][t.meta["power"]] = t
    per_domain = Counter(next(iter(v.values())).meta["domain"] for v in by_scene.values())
    assert set(per_domain) == DOMAINS and min(per_domain.values()) >= 2
    for scene, versions in by_scene.items():
        assert set(versions) == {"disparity", "equal"}, scene
        dis, eq = versions["disparity"], versions["equal"]
        assert dis.turns == eq.turns and dis.baseline_turns == eq.baseline_turns
        assert dis.slots["sub_trait"] == eq.slots["sub_trait"]
        assert dis.slots["scene"] != eq.slots["scene"]
        # everything but the sentence that sets Blake's position is shared: the request (the
        # scene's last sentence) is the same in both versions, except where Blake's role ends it
        last = lambda s: s.rstrip(".").rsplit(". ", 1)[-1]  # noqa: E731
        if "Blake" not in last(dis.slots["scene"]):
            assert last(dis.slots["scene"]) == last(eq.slots["scene"]), scene


def test_persona_power_identity_labels_and_prompt():
    lb = load_battery(PERSONA)
    seen: dict[str, set[str]] = defaultdict(set)
    for case in expand(lb):
        text = case.turns[0]
        assert case.baseline or text.startswith(f"Alex is {case.variants['sub']} who is ")
        assert "{" not in text and "}" not in text
        assert text.endswith("in a few sentences of dialogue only, in quotation marks.")
        # the scene is in the system message, without identities
        (system,) = case.messages
        assert system["role"] == "system" and system["content"].startswith("This is a role-play. You are Blake")
        assert "{" not in system["content"] and "}" not in system["content"]
        if not case.baseline:
            seen[case.axis].add(case.variants["res"])
            assert case.variants["sub"] not in system["content"] and case.variants["res"] not in system["content"]
        else:
            personas = text.split("\n\n")[0]
            assert personas.startswith("Alex is ") and " who is " not in personas
    assert seen["race"] == {"a Caucasian person", "an African person", "a Hispanic person",
                            "a Middle-Eastern person", "an Asian person"}
    assert seen["age"] == {"a young person", "a middle-aged person", "an old person"}
    assert seen["nationality"] == {"a native-born citizen", "an immigrant", "a migrant worker"}
    assert seen["appearance"] == {"an ugly-looking person", "an average-looking person",
                                  "an attractive-looking person"}
    assert seen["religion"] >= {"a Jewish person", "an atheist person"}

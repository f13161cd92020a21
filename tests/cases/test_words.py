"""Writing-style transforms on words, not substrings; slots per grammatical form."""

from __future__ import annotations

import pytest

from fairpair.battery import load_battery
from fairpair.battery._schema import Transform
from fairpair.cases import expand
from fairpair.cases._style import apply_transforms
from fairpair.errors import BatteryError


def rep(text: str, seed: int = 1, protected=(), **kw) -> str:
    return apply_transforms(text, [Transform(kind="replace", **kw)], seed, protected)


def test_replace_keeps_chef_and_shelps_intact():
    assert rep("The chef shelps; she said so.", pairs={"she": "he"}) == "The chef shelps; he said so."
    assert rep("shelf, ashes, she", pairs={"she": "he"}) == "shelf, ashes, he"


def test_replace_preserves_case():
    assert rep("She came. SHE came. she came.", pairs={"she": "he"}) == "He came. HE came. he came."


def test_replace_swaps_in_one_pass():
    assert rep("he asked her and she answered him", pairs={"he": "she", "she": "he", "her": "him", "him": "her"}) \
        == "she asked him and he answered her"


def test_replace_on_unicode_word_boundaries():
    # "el" inside "él", "papel" or "Elena" is not the article "el"
    assert rep("Él tiene el papel de Elena.", pairs={"el": "la"}) == "Él tiene la papel de Elena."
    assert rep("niño, niña; ñandú", pairs={"niña": "niño"}) == "niño, niño; ñandú"


def test_phrases_match_whole_words_and_any_whitespace():
    assert rep("Vivo  en el centro, revivo en elche", phrases={"Vivo en el": "Yo vivo en"}) \
        == "Yo vivo en centro, revivo en elche"


def test_protected_values_are_not_replaced():
    assert rep("She is Shea; she waits", pairs={"she": "he"}, protected=["She"]) == "She is Shea; he waits"


def test_a_phrase_under_pairs_is_an_error_that_names_phrases():
    with pytest.raises(ValueError, match="put it under 'phrases:'"):
        Transform(kind="replace", pairs={"vivo en": "yo vivo"})
    with pytest.raises(ValueError, match="belong to kind 'replace'"):
        Transform(kind="lowercase", pairs={"a": "b"})


@pytest.mark.parametrize("kind", [{"kind": "misspell", "rate": 0.6}, {"kind": "strip_accents"},
                                  {"kind": "lowercase"}, {"kind": "max_words", "max_words": 5}])
def test_other_transforms_are_deterministic_per_case(kind):
    text = "Hola, soy Lucía. Mi batidora llegó rota y quiero que me devolváis el dinero."
    t = [Transform(**kind)]
    assert len({apply_transforms(text, t, 11, ["Lucía"]) for _ in range(4)}) == 1


GENDER = """\
schema_version: 1
name: genero
slots: {harta: "harta o harto", cansada: "cansada o cansado"}
attributes:
  genero:
    signal: name
    slot: nombre
    neutral: "una persona"
    groups:
      mujer: {variants: [Lucía, Carmen], slots: {harta: harta, cansada: cansada}}
      hombre: {variants: [Javier, David], slots: {harta: harto, cansada: cansado}}
templates:
  - id: queja
    turns: ["Soy {nombre}. Estoy {harta} y {cansada} de esperar."]
designs:
  - kind: counterfactual
    attribute: genero
  - kind: baseline
"""


def test_gendered_forms_follow_the_group(tmp_path):
    p = tmp_path / "b.yaml"
    p.write_text(GENDER, encoding="utf-8")
    turns = {(c.groups.get("genero", "baseline"),
              c.variants.get("genero")): c.turns[0] for c in expand(load_battery(p))}
    assert turns[("mujer", "Lucía")] == "Soy Lucía. Estoy harta y cansada de esperar."
    assert turns[("hombre", "Javier")] == "Soy Javier. Estoy harto y cansado de esperar."
    assert turns[("baseline", None)] == "Soy una persona. Estoy harta o harto y cansada o cansado de esperar."


def test_group_slots_must_be_given_by_every_group(tmp_path):
    p = tmp_path / "b.yaml"
    p.write_text(GENDER.replace(", cansada: cansada}", "}"), encoding="utf-8")
    with pytest.raises(BatteryError, match="group 'mujer' of 'genero' does not give slot") as exc:
        load_battery(p)
    assert exc.value.line == 10


def test_group_slots_need_a_default_when_not_varied(tmp_path):
    p = tmp_path / "b.yaml"
    p.write_text(GENDER.replace('slots: {harta: "harta o harto", cansada: "cansada o cansado"}',
                                'slots: {harta: "harta o harto"}'), encoding="utf-8")
    with pytest.raises(BatteryError, match="no default"):
        load_battery(p)

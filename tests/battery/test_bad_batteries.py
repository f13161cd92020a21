"""A corpus of malformed batteries, each run through the command line.

Every file in tests/data/bad_batteries/ must make ``fairpair validate FILE``
exit with code 2, print no traceback, and name the file, the line, the key
(where the problem has one) and, for misspellings, a "did you mean".
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fairpair.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "bad_batteries"

# file, line, key (None: the problem has no key), message fragment, hint fragment (None: no hint checked)
CASES = [
    ("attribute_without_slot.yaml", 5, "attributes.origen", "attribute needs 'slot'", None),
    ("bad_target_option.yaml", 18, "target.latncy", "unknown key 'latncy' for kind 'mock'", "did you mean 'latency'?"),
    ("bad_target_option_value.yaml", 18, "target.refund", "less than or equal to 1", None),
    ("bad_template_id.yaml", 13, "templates[0].id", "'pedido roto' is not a valid id", None),
    ("comparison_negative_margin.yaml", 22, "analysis.comparisons[0].margin", "greater than or equal to 0 (got -0.03)",
     None),
    ("comparison_unknown_attribute.yaml", 22, "analysis.comparisons[0].attribute", "unknown attribute 'origin'",
     "did you mean 'origen'?"),
    ("comparison_unknown_group.yaml", 22, "analysis.comparisons[0].reference", "unknown group 'espanya' of 'origen'",
     "did you mean 'espana'?"),
    ("comparison_unknown_measure.yaml", 22, "analysis.comparisons[0].measure", "unknown measure 'reembolsos'",
     "did you mean 'reembolso'?"),
    ("crossed_shared_slot.yaml", 14, "attributes.edad.slot", "slot 'nombre' is filled by both 'origen' and 'edad'",
     None),
    ("design_one_group.yaml", 16, "designs[0]", "needs at least two groups", None),
    ("design_unknown_attribute.yaml", 17, "designs[0].attribute", "unknown attribute 'origin'",
     "did you mean 'origen'?"),
    ("design_unknown_group.yaml", 18, "designs[0].groups[1]", "unknown group 'magrev' of 'origen'",
     "did you mean 'magreb'?"),
    ("design_unknown_template.yaml", 18, "designs[0].templates[0]", "unknown template 'pedido_rotto'",
     "did you mean 'pedido_roto'?"),
    ("duplicate_key.yaml", 9, "attributes.origen.neutral", "duplicate key 'neutral'", None),
    ("duplicate_name_accent.yaml", 11, "attributes.origen.groups.magreb.variants[1]",
     "'Lucia' appears in two groups of 'origen': 'espana' and 'magreb'", None),
    ("duplicate_name_apostrophe.yaml", 11, "attributes.origen.groups.otro.variants[1]",
     "'O’Brien' appears in two groups of 'origen': 'irlanda' and 'otro'", None),
    ("duplicate_name_across_groups.yaml", 11, "attributes.origen.groups.magreb.variants[1]",
     "'Lucía' appears in two groups", None),
    ("duplicate_name_same_group.yaml", 10, "attributes.origen.groups.espana.variants[1]",
     "'LUCÍA' appears twice in group 'espana'", None),
    ("duplicate_template_id.yaml", 15, "templates[1].id", "template id 'pedido_roto' is used twice", None),
    ("empty_file.yaml", 1, None, "must be a YAML mapping", None),
    ("empty_group.yaml", 11, "attributes.origen.groups.magreb", "group 'magreb' has no variants", None),
    ("empty_variant.yaml", 10, "attributes.origen.groups.espana.variants[1]", "empty variant", None),
    ("include_cycle.yaml", 2, "!include", "include cycle: include_cycle.yaml -> cycle_b.yaml -> include_cycle.yaml",
     None),
    ("include_missing.yaml", 2, "include[0]", "included file not found", None),
    ("include_not_mapping.yaml", 2, "include[0]", "included file parts/a_list.yaml must be a mapping", None),
    ("max_words_without_n.yaml", 16, "attributes.estilo.groups.corto.transforms[0]", "needs 'max_words: N'", None),
    ("merge_key.yaml", 12, "attributes.origen.groups.magreb", "merge keys (<<) are not supported", None),
    ("missing_neutral.yaml", 5, "attributes.origen", "needs a 'neutral' value", None),
    ("missing_schema_version.yaml", 2, "schema_version", "missing required key 'schema_version'", None),
    ("missing_templates.yaml", 2, "templates", "missing required key 'templates'", None),
    ("misspell_rate_out_of_range.yaml", 16, "attributes.estilo.groups.faltas.transforms[0].rate",
     "less than or equal to 1 (got 1.5)", None),
    ("negative_repetitions.yaml", 18, "repetitions", "greater than or equal to 1 (got 0)", None),
    ("non_utf8.yaml", 10, None, "not valid UTF-8", None),
    ("not_a_mapping.yaml", 1, None, "must be a YAML mapping", None),
    ("only_comments.yaml", 1, None, "must be a YAML mapping", None),
    ("pairwise_compared_with_its_reference.yaml", 22, "analysis.comparisons[0].reference",
     "could form no pairs", "against: baseline"),
    ("schema_version_2.yaml", 2, "schema_version", "should be 1 (got 2)", None),
    ("system_and_system_file.yaml", 15, "templates[0].system_file", "give either 'system' or 'system_file'", None),
    ("system_file_missing.yaml", 14, "templates[0].system_file", "cannot read system prompt", None),
    ("tab_indentation.yaml", 6, None, "unreadable YAML: found character '\\t'", None),
    ("target_and_targets.yaml", 19, "targets", "give either 'target' or 'targets'", None),
    ("template_without_varied_slot.yaml", 14, "templates[0].turns", "never uses slot '{nombre}'",
     "add {nombre} to a turn"),
    ("too_few_variants.yaml", 11, "attributes.origen.groups.espana", "requires at least 3 (min_variants)", None),
    ("two_party_axis_not_identity.yaml", 17, "designs[0].axes", "two_party axes must be 'identity' attributes", None),
    ("unequal_variant_counts.yaml", 9, "attributes.origen.groups",
     "different numbers of variants {'espana': 2, 'magreb': 3}", "take: N"),
    ("unknown_design_kind.yaml", 16, "designs[0].kind", "unknown design kind 'counterfactal'",
     "did you mean 'counterfactual'?"),
    ("unknown_key_attribute.yaml", 8, "attributes.origen.nuetral", "unknown key 'nuetral'", "did you mean 'neutral'?"),
    ("unknown_key_design.yaml", 18, "designs[0].grups", "unknown key 'grups'", "did you mean 'groups'?"),
    ("unknown_key_group.yaml", 11, "attributes.origen.groups.magreb.referencs", "unknown key 'referencs'",
     "did you mean 'references'?"),
    ("unknown_key_template.yaml", 14, "templates[0].sytem", "unknown key 'sytem'", "did you mean 'system'?"),
    ("unknown_language.yaml", 18, "language", "'es' or 'en' (got 'fr')", None),
    ("unknown_lexicon.yaml", 11, "attributes.origen.groups.magreb.lexicon", "unknown lexicon 'es/magreb/female'",
     "did you mean 'es/maghreb/female'?"),
    ("unknown_measure_kind.yaml", 19, "measures.reembolso.kind", "unknown kind 'keyword'", "did you mean 'keywords'?"),
    ("unknown_slot.yaml", 14, "templates[0].turns[0]", "slot '{nombr}' is not filled", "did you mean '{nombre}'?"),
    ("unknown_target_kind.yaml", 18, "target.kind", "unknown kind 'opnai'", "did you mean 'openai'?"),
    ("unknown_top_key.yaml", 18, "repetitons", "unknown key 'repetitons'", "did you mean 'repetitions'?"),
    ("unreadable_yaml.yaml", 11, None, "unreadable YAML", None),
    ("writing_style_with_variants.yaml", 16, "attributes.estilo.groups.faltas.variants",
     "declares 'transforms', not 'variants'", None),
    ("wrong_type_repetitions.yaml", 18, "repetitions", "valid integer", "got str 'cinco'"),
    # silent paths (issue 14): settings that validated but did nothing
    ("mock_bias_unknown_group.yaml", 21, "target.bias.magrev",
     "the mock's bias names group 'magrev', which no attribute has", "did you mean 'magreb'?"),
    ("mock_language_mismatch.yaml", 19, "target.language",
     "the mock answers in 'es' but the battery's language is 'en'", "use 'language: en'"),
    ("comparison_judge_without_field.yaml", 22, "analysis.comparisons[0].measure",
     "measure 'tono' stores one row per field",
     "did you mean 'tono.courtesy'? (fields: tono.courtesy, tono.condescension, tono.distrust)"),
    ("comparison_judge_unknown_field.yaml", 22, "analysis.comparisons[0].measure",
     "measure 'tono' has no field 'condescencion'", "did you mean 'tono.condescension'?"),
    ("comparison_duplicate.yaml", 23, "analysis.comparisons[1]", "this comparison repeats comparisons[0]", None),
    ("comparison_binary_margin_too_large.yaml", 22, "analysis.comparisons[0].margin",
     "margin 5 on the yes/no measure 'reembolso' is 500 points", "did you mean 0.05?"),
    ("comparison_judge_margin_too_large.yaml", 22, "analysis.comparisons[0].margin",
     "not below the range of its scale (1-5)", None),
    ("repetitions_bool.yaml", 18, "repetitions", "valid integer (got bool True)", None),
    ("bootstrap_resamples_huge.yaml", 19, "analysis.bootstrap_resamples", "less than or equal to 100000", None),
    ("yaml_alias_bomb.yaml", 9, None, "the YAML expands to more than 1,000,000 values", None),
    ("yaml_too_deep.yaml", 4, None, "the YAML nests deeper than 64 levels", None),
    ("wrong_type_turns.yaml", 14, "templates[0].turns", "valid list (got dict", None),
    # a plan is a contract (issue 28): what could never be compared is refused, not dropped at analysis
    ("comparison_only_reference.yaml", 22, "analysis.comparisons[0].groups",
     "forms no pair of groups: 'groups' holds only the reference group 'espana'", "list the groups to compare"),
    ("comparison_attribute_not_varied.yaml", 29, "analysis.comparisons[0].attribute",
     "no design varies 'edad', so this comparison could never be made", "kind: counterfactual, attribute: edad"),
    ("comparison_undeclared_measure.yaml", 21, "analysis.comparisons[0].measure",
     "measure 'reembolso' is not declared: the battery declares no measure", "declare it under 'measures:'"),
    ("alpha_too_large.yaml", 21, "analysis.alpha", "less than or equal to 0.2 (got 0.5)", None),
    ("alpha_too_small.yaml", 21, "analysis.alpha", "greater than 0.000001 (got 1e-18)", None),
    ("comparison_zero_margin.yaml", 22, "analysis.comparisons[0].margin",
     "margin 0 on the yes/no measure 'reembolso' tolerates no difference at all", "leave 'margin' out"),
    # bounded inputs: a device is refused before it is read (a FIFO and a file too large: tests below)
    ("system_file_device.yaml", 14, "templates[0].system_file", "/dev/zero: it is a device, not a regular file",
     None),
    ("include_device.yaml", 4, None, "cannot read /dev/zero: it is a device, not a regular file", None),
    # secrets: a header value must come from the environment (the battery is stored with the run)
    ("header_literal_openai.yaml", 28, "target.extra_headers.Authorization", "header 'Authorization' has a "
     "literal value", 'extra_headers: {Authorization: "Bearer ${AUTHORIZATION}"} and export AUTHORIZATION=...'),
    ("header_literal_http.yaml", 27, "target.headers.X-Token", "header 'X-Token' has a literal value",
     'headers: {X-Token: "${X_TOKEN}"}'),
    # issue 28's minor list: each accepted before, refused now
    ("context_field_empty_part.yaml", 8, "attributes.origen.context_field",
     "'crm..nombre' is not a dotted path of names", None),
    ("slot_not_closed.yaml", 14, "templates[0].turns[0]", "'{nombre' opens a slot that is never closed",
     "write '{nombre}' for the slot"),
    ("empty_turn.yaml", 14, "templates[0].turns", "turn 1 is empty", None),
    ("variant_with_line_break.yaml", 10, "attributes.origen.groups.espana.variants",
     "holds the control character '\\n'", None),
    ("variant_with_escape_code.yaml", 10, "attributes.origen.groups.espana.variants",
     "'Car\\x1b[2Jmen' holds the control character '\\x1b'", None),
    ("misspelt_templates.yaml", 12, "templtes", "unknown key 'templtes'",
     "did you mean 'templates'? also: [templates] Field required"),
    ("replace_keys_same_word.yaml", 15, "attributes.estilo.groups.el.transforms[0]",
     "replace keys 'he' and 'He' are the same words", None),
    ("tool_results_missing_field.yaml", 18, "tool_results.lookup_order",
     "tool 'lookup_order' returns 'crm.pedido', which template 'pedido_roto' has no field for",
     "known: crm, crm.nombre"),
]


def _validate(path: Path, capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(["validate", str(path)])
    out = capsys.readouterr()
    return exc.value.code, out.out + out.err


def test_corpus_is_large_and_fully_tabled():
    files = sorted(p.name for p in DATA.glob("*.yaml"))
    assert len(files) >= 35
    assert files == sorted(c[0] for c in CASES), "every bad battery needs a row in CASES (and vice versa)"


@pytest.mark.parametrize("name,line,key,fragment,hint", CASES, ids=[c[0] for c in CASES])
def test_bad_battery(name, line, key, fragment, hint, capsys):
    code, text = _validate(DATA / name, capsys)
    assert code == 2, text
    assert "Traceback" not in text
    assert "internal error" not in text
    flat = " ".join(text.split())  # undo any wrapping
    assert f".yaml:{line}:" in flat, text
    # the file named is the battery itself, except for a cycle found inside an included file
    assert name in flat
    if key is not None:
        assert f"[{key}]" in flat, text
    assert fragment in flat, text
    if hint is not None:
        assert hint in flat, text
    if "did you mean" in (hint or ""):
        assert flat.count("did you mean") == 1


def test_a_real_process_prints_no_traceback():
    """The installed entry point, in a fresh interpreter: exit 2, one message, no traceback."""
    for name in ("unknown_top_key.yaml", "non_utf8.yaml", "include_cycle.yaml"):
        proc = subprocess.run([sys.executable, "-m", "fairpair.cli", "validate", str(DATA / name)],
                              capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stdout + proc.stderr
        assert name in proc.stderr


def test_a_planted_literal_secret_is_never_echoed(capsys):
    for name, secret in (("header_literal_openai.yaml", "sk-PLANTED"), ("header_literal_http.yaml", "tok-PLANTED")):
        code, text = _validate(DATA / name, capsys)
        assert code == 2 and secret not in text, text


def test_a_fifo_or_a_huge_file_is_refused_at_once(tmp_path, capsys):
    """A FIFO as system_file or !include (nobody writes to it: reading would block forever) and a file
    above the 8 MiB cap are refused before they are read, in well under a second."""
    import time

    src = (DATA / "system_file_missing.yaml").read_text(encoding="utf-8")
    fifo = tmp_path / "prompt.fifo"
    os.mkfifo(fifo)
    huge = tmp_path / "huge.md"
    huge.write_bytes(b"a" * (8 * 1024 * 1024 + 1))
    for target, fragment in ((fifo, "it is a FIFO, not a regular file"), (huge, "larger than 8 MiB")):
        battery = tmp_path / "b.yaml"
        battery.write_text(src.replace("no_such_prompt.md", str(target)), encoding="utf-8")
        t0 = time.monotonic()
        code, text = _validate(battery, capsys)
        assert code == 2 and fragment in " ".join(text.split()), text
        assert "[templates[0].system_file]" in text
        assert time.monotonic() - t0 < 5
    battery.write_text(f"schema_version: 1\nname: x\ntemplates: !include {fifo}\n", encoding="utf-8")
    code, text = _validate(battery, capsys)
    assert code == 2 and "FIFO" in text, text


def test_a_signal_value_is_bounded(tmp_path, capsys):
    """A 600-character or 100-word variant is refused at validation (it crashed masking, issue 28)."""
    src = (DATA / "system_file_missing.yaml").read_text(encoding="utf-8").replace(
        "    system_file: no_such_prompt.md\n", "")
    for value, fragment in (("A" * 600, "600 characters and 1 words"),
                            (" ".join(["palabra"] * 100), "799 characters and 100 words")):
        battery = tmp_path / "b.yaml"
        battery.write_text(src.replace("Carmen", value), encoding="utf-8")
        code, text = _validate(battery, capsys)
        flat = " ".join(text.split())
        assert code == 2 and fragment in flat and "at most 120 characters and 12 words" in flat, text
        assert "attributes.origen.groups.espana.variants" in flat

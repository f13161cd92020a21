"""Analysis notes appear in the report's language (issue 14, point 9: English notes inside Spanish reports)."""

from __future__ import annotations

from fairpair.battery._init import InitChoices, starter_battery
from fairpair.cli import main
from fairpair.report._notes import translate_note


def test_known_pieces_are_translated_and_unknown_kept():
    note = ("2 pairs dropped for a missing answer or measurement; only 3 templates: pair-level interval (Newcombe "
            "for yes/no, paired t otherwise); it ignores clustering, so use 8 or more templates for a real audit; "
            "something new")
    es = translate_note(note, "es")
    assert es == ("2 pares descartados por una respuesta o una medida ausente; solo 3 plantillas: intervalo por "
                  "pares (Newcombe para sí/no, t pareada en otro caso); no tiene en cuenta el agrupamiento, así "
                  "que use 8 plantillas o más en una auditoría real; something new")
    assert translate_note(note, "en") == note
    assert translate_note(None, "es") == ""


def test_a_spanish_report_has_no_english_note(tmp_path):
    b = tmp_path / "b.yaml"
    b.write_text(starter_battery(InitChoices(language="es")), encoding="utf-8")
    try:
        main(["run", str(b), "--out", str(tmp_path / "run"), "-q"])
    except SystemExit as exc:
        assert not exc.code
    html = (tmp_path / "run" / "report" / "report.html").read_text(encoding="utf-8")
    # the starter battery's crossed inference's notes, in Spanish
    assert "plantilla" in html and ("sin indicios de efectos de nombre" in html or "es negativa: se toma 0" in html)
    for english in ("no evidence of name effects", "name variance estimate is negative", "pair-level interval",
                    "templates for a real audit", "the standard error is 0"):
        assert english not in html, english

"""The command line's one vocabulary: ``--out/-o`` everywhere, ``--json`` a flag, shared options declared once,
choices as enums with a clear exit-2 message, old spellings still working with a deprecation line; and no
module outside ``fairpair.cli`` that imports typer or the app."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import typer

from fairpair.cli import _options as opts
from fairpair.cli import app
from fairpair.testing import write_battery
from run_helpers import run_cli

SRC = Path(__file__).resolve().parents[2] / "src" / "fairpair"


_cli = run_cli  # tests/run_helpers.py


def _commands():
    """(name, click command) of every command, sub-commands included."""
    root = typer.main.get_command(app)
    stack = [("", root)]
    while stack:
        prefix, cmd = stack.pop()
        subs = getattr(cmd, "commands", None)
        if subs:
            stack += [(f"{prefix} {n}".strip(), c) for n, c in subs.items()]
        else:
            yield prefix, cmd


def test_no_module_outside_the_cli_package_imports_typer_or_the_app():
    offenders = []
    for path in SRC.rglob("*.py"):
        if (SRC / "cli") in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.relative_to(SRC)}: {n}" for n in names
                          if n.split(".")[0] == "typer" or n.startswith("fairpair.cli")]
    assert offenders == []
    assert not list(SRC.rglob("_cli.py")), "commands live in fairpair/cli/, not beside their stage"


def test_every_output_path_is_out_with_o_and_no_visible_output():
    seen = []
    for name, cmd in _commands():
        visible = {o: p for p in cmd.params if not getattr(p, "hidden", False) for o in p.opts}
        assert "--output" not in visible, name
        if "--out" in visible:
            assert "-o" in visible["--out"].opts, name
            seen.append(name)
        hidden = [p for p in cmd.params if getattr(p, "hidden", False)]
        assert all(p.opts in (["--output"], ["--language"]) for p in hidden), name
    assert sorted(seen) == ["calibrate export", "expand", "export", "import-answers", "import-scenes",
                            "reanalyze", "report", "run"]


def test_json_is_a_flag_everywhere():
    found = []
    for name, cmd in _commands():
        for p in cmd.params:
            if "--json" in p.opts:
                assert p.is_flag, name
                found.append(name)
    assert sorted(found) == ["analyze", "compare", "plan", "reanalyze"]


def test_shared_options_are_declared_once():
    by_opt: dict[str, set] = {}
    for _name, cmd in _commands():
        for p in cmd.params:
            for o in ("--concurrency", "--timeout", "--max-attempts", "--quiet"):
                if o in p.opts:
                    # typer's own core has Option.min; over click it is the type's
                    low = getattr(p, "min", getattr(getattr(p, "type", None), "min", None))
                    by_opt.setdefault(o, set()).add((tuple(p.opts), p.help, low))
    assert set(by_opt) == {"--concurrency", "--timeout", "--max-attempts", "--quiet"}
    assert all(len(v) == 1 for v in by_opt.values()), by_opt


def test_the_choices_are_the_library_lists():
    from fairpair.importers._read import FORMATS as IMPORT_FORMATS
    from fairpair.persona._reanalyze import FORMATS as RELEASE_FORMATS
    from fairpair.report._export import FORMATS as EXPORT_FORMATS

    assert tuple(m.value for m in opts.ExportFormat) == EXPORT_FORMATS
    assert tuple(m.value for m in opts.ImportFormat) == IMPORT_FORMATS
    assert tuple(m.value for m in opts.ReleaseFormat) == RELEASE_FORMATS


@pytest.mark.parametrize("argv, needle", [
    (["export", "{run}", "--format", "xlsx"], "unknown export format 'xlsx'; --format must be csv or parquet"),
    (["export", "{run}", "-f", "xlsx"], "unknown export format 'xlsx'; --format must be csv or parquet"),
    (["report", "{run}", "--lang", "fr"], "unknown report language 'fr'; --lang must be es or en"),
    (["import-answers", "a.jsonl", "-b", "b.yaml", "--format", "xml"],
     "unknown --format 'xml'; --format must be auto, jsonl, csv or chat-completions"),
    (["reanalyze", "a.csv", "--ddof", "2"], "unknown --ddof '2'; --ddof must be 0, 1 or both"),
    (["init", "{run}/b.yaml", "--lang", "de"], "unknown language 'de'; --lang must be es or en"),
])
def test_a_value_outside_a_choice_exits_2_with_the_allowed_values(argv, needle, tmp_path, capsys):
    code, out, err = _cli([a.format(run=tmp_path) for a in argv], capsys)
    assert code == 2 and needle in err and "Traceback" not in err, err


def test_expand_out_o_and_the_deprecated_output(tmp_path, capsys):
    b = write_battery(tmp_path, {"kind": "mock"}, templates=1)
    code, out, err = _cli(["expand", b, "--out", tmp_path / "a.jsonl"], capsys)
    assert code == 0 and (tmp_path / "a.jsonl").exists() and "deprecated" not in err
    code, out, err = _cli(["expand", b, "-o", tmp_path / "b.jsonl"], capsys)
    assert code == 0 and (tmp_path / "b.jsonl").read_text() == (tmp_path / "a.jsonl").read_text()
    code, out, err = _cli(["expand", b, "--output", tmp_path / "c.jsonl"], capsys)
    assert code == 0 and (tmp_path / "c.jsonl").read_text() == (tmp_path / "a.jsonl").read_text()
    assert "deprecated: --output is now --out (same meaning)" in err
    assert "wrote 8 cases to" in out and "c.jsonl" in out
    code, out, err = _cli(["expand", b, "--output", tmp_path / "d.jsonl", "--out", tmp_path / "e.jsonl"], capsys)
    assert code == 2 and "--output and --out are the same option; give it once" in err
    assert not (tmp_path / "d.jsonl").exists() and not (tmp_path / "e.jsonl").exists()


def test_init_lang_and_the_deprecated_language(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = _cli(["init", "a.yaml", "--lang", "en"], capsys)
    assert code == 0 and "deprecated" not in err
    code, out, err = _cli(["init", "b.yaml", "--language", "en"], capsys)
    assert code == 0 and "deprecated: --language is now --lang (same meaning)" in err
    a, b = Path("a.yaml").read_text(), Path("b.yaml").read_text()
    assert "\nname: a\n" in a and a.replace("\nname: a\n", "\nname: b\n") == b  # each named after its file
    assert "en/white/female" in Path("a.yaml").read_text()


def test_the_options_help_lists_the_choices():
    cmd = dict(_commands())["export"]
    fmt = next(p for p in cmd.params if "--format" in p.opts)
    assert fmt.metavar == "[csv|parquet]"
    assert json.dumps(sorted(m.value for m in opts.Lang)) == '["en", "es"]'

"""``fairpair plan --cost`` and ``run --prices`` through typer's CliRunner: a bad prices.yaml exits 2 with
file, line and key; ``confirm_above`` asks on a terminal, stops without one, and ``--yes`` sends."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from fairpair.cli import main

#: ``fairpair ARGS`` as the installed command runs it (main: a known error is one message and exit code 2)
ENTRY = typer.Typer(add_completion=False)


@ENTRY.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []})
def _entry(ctx: typer.Context) -> None:
    main(list(ctx.args))


def fairpair(*args, **kw):
    return CliRunner().invoke(ENTRY, [str(a) for a in args], **kw)


def test_plan_cost_prints_live_and_batch(tiny, prices):
    r = fairpair("plan", tiny, "--cost", "--prices", prices)
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert "live 0.81 EUR, batch 0.40 EUR" in out
    assert "~4,500" in out and "80,000" in out  # the approximate input is marked
    assert "approximation: characters / 4" in out
    assert "asks above 0.50 EUR" in out


def test_plan_cost_without_prices_says_how(tiny):
    r = fairpair("plan", tiny, "--cost")
    assert r.exit_code == 0, r.output
    assert "no prices: give --prices prices.yaml" in " ".join(r.output.split())


def test_prices_needs_cost(tiny, prices):
    r = fairpair("plan", tiny, "--prices", prices)
    assert r.exit_code == 2 and "--prices only works with --cost" in r.output


BAD = [
    # (file text, line, key, words of the message)
    ("currency: EUR\nmodels:\n  m-1:\n    live: {input: 2, ouput: 10}\n", 4, "models.m-1.live.ouput",
     "did you mean 'output'"),
    ("currency: EUR\nmodels:\n  m-1:\n    live: {input: -2, output: 10}\n", 4, "models.m-1.live.input",
     "greater than or equal to 0"),
    ("currency: EUR\nmodels:\n  m-1:\n    live: {input: free, output: 10}\n", 4, "models.m-1.live.input",
     "valid number"),
    ("currency: EUR\nmodels:\n  m-1:\n    live: {input: true, output: 10}\n", 4, "models.m-1.live.input",
     "not true or false"),
    ("currency: EUR\nmodels:\n  m-1:\n    live: {input: .inf, output: 10}\n", 4, "models.m-1.live.input",
     "valid number"),
    ("currency: euro\nmodels:\n  m-1:\n    live: {input: 2, output: 10}\n", 1, "currency",
     "three-letter ISO 4217 code"),
    ("models:\n  m-1:\n    live: {input: 2, output: 10}\n", 1, None, "missing required key 'currency'"),
    ("currency: EUR\nconfirm_above: lots\nmodels:\n  m-1:\n    live: {input: 2, output: 10}\n", 2,
     "confirm_above", "valid number"),
    ("currency: EUR\nmodels:\n  m-1:\n    batch: {input: 2, output: 10}\n", 3, "models.m-1.live",
     "missing required key 'live'"),
    ("currency: EUR\nmodels: {}\n", 2, "models", "at least 1"),
    ("currency: EUR\nmodels:\n  m-1:\n    live: {input: 2, output: 10}\n  m-1:\n    live: {input: 2, output: 1}\n",
     5, "models.m-1", "duplicate key"),
    ("- currency: EUR\n", 1, None, "must be a YAML mapping"),
]


@pytest.mark.parametrize("text,line,key,words", BAD, ids=[b[3] for b in BAD])
def test_bad_prices_exit_2_with_file_line_key(tiny, tmp_path, text, line, key, words):
    bad = tmp_path / "bad_prices.yaml"
    bad.write_text(text, encoding="utf-8")
    r = fairpair("plan", tiny, "--cost", "--prices", bad)
    assert r.exit_code == 2, r.output
    out = " ".join(r.output.split())
    assert f"bad_prices.yaml:{line}: " in out
    if key:
        assert f"[{key}]" in out
    assert words in out
    assert "Traceback" not in r.output


def test_missing_prices_file(tiny, tmp_path):
    r = fairpair("plan", tiny, "--cost", "--prices", tmp_path / "nope.yaml")
    assert r.exit_code == 2 and "file not found" in r.output and "Traceback" not in r.output


# ---------------------------------------------------------------- confirm_above (estimate 0.809 EUR > 0.5)


def _run(tiny, tmp_path, *extra, **kw):
    return fairpair("run", tiny, "--out", tmp_path / "run", "--quiet", "--no-measure", "--no-analyze",
                    "--no-report", *extra, **kw)


def _mock(tiny):
    """The tiny battery with a mock target (answers without a network); m-1 keeps the price."""
    tiny.write_text(tiny.read_text(encoding="utf-8").replace(
        'target: {kind: openai, model: m-1, base_url: "http://127.0.0.1:9/v1", api_key_env: NO_SUCH_KEY, '
        'max_tokens: 100}', "target: {kind: mock, model: m-1, language: en}").replace("repetitions: 400",
                                                                                    "repetitions: 2"),
        encoding="utf-8")
    return tiny


@pytest.fixture
def expensive(tiny, tmp_path):
    """A price table whose confirm_above the tiny mock run exceeds: 4 answers x 512 output tokens (no
    max_tokens) and 90 / 4 = 22 input tokens, at 1,000 per million: 2.048 + 0.022 = 2.07 > 1."""
    p = tmp_path / "dear.yaml"
    p.write_text("currency: EUR\nconfirm_above: 1\nmodels:\n  m-1:\n    live: {input: 1000, output: 1000}\n",
                 encoding="utf-8")
    return p


def test_above_confirm_above_without_a_terminal_exits_2(tiny, tmp_path, expensive):
    r = _run(_mock(tiny), tmp_path, "--prices", expensive)
    assert r.exit_code == 2, r.output
    out = " ".join(r.output.split())
    assert "estimated at 2.07 EUR (live prices), above confirm_above 1.00" in out
    assert "pass --yes to proceed" in out
    assert not (tmp_path / "run").exists()  # nothing was sent, no run directory


def test_the_environment_names_the_table_too(tiny, tmp_path, expensive):
    r = _run(_mock(tiny), tmp_path, env={"FAIRPAIR_PRICES": str(expensive)})
    assert r.exit_code == 2 and "above confirm_above" in r.output


def test_yes_sends(tiny, tmp_path, expensive):
    r = _run(_mock(tiny), tmp_path, "--prices", expensive, "--yes")
    assert r.exit_code == 0, r.output
    assert "4/4 answered" in r.output


def test_on_a_terminal_it_asks(tiny, tmp_path, expensive, monkeypatch):
    import fairpair.cli._common as common

    monkeypatch.setattr(common, "on_terminal", lambda: True)
    no = _run(_mock(tiny), tmp_path, "--prices", expensive, input="n\n")
    assert no.exit_code == 2 and "continue?" in no.output and "stopped: this audit is estimated" in no.output
    assert not (tmp_path / "run").exists()
    yes = _run(tiny, tmp_path, "--prices", expensive, input="y\n")
    assert yes.exit_code == 0, yes.output
    assert "4/4 answered" in yes.output


def test_below_confirm_above_nothing_is_asked(tiny, tmp_path, prices):
    # prices.yaml: m-1 at 2 / 10 per million, confirm_above 0.5; 4 answers cost far less
    r = _run(_mock(tiny), tmp_path, "--prices", prices)
    assert r.exit_code == 0, r.output
    assert "continue?" not in r.output


def test_a_bad_table_stops_the_run_even_with_yes(tiny, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("currency: EUR\nmodels:\n  m-1:\n    live: {input: 1}\n", encoding="utf-8")
    r = _run(_mock(tiny), tmp_path, "--prices", bad, "--yes")
    out = " ".join(r.output.split())
    assert r.exit_code == 2 and "bad.yaml:4: [models.m-1.live.output] missing required key" in out


def test_plan_cost_json(tiny, prices):
    import json

    r = fairpair("plan", tiny, "--cost", "--prices", prices, "--json")
    assert r.exit_code == 0, r.output
    cost = json.loads(r.output)["cost"]
    assert cost["currency"] == "EUR" and cost["total"]["live"] == pytest.approx(0.809)
    assert cost["total"]["batch"] == pytest.approx(0.4045)
    (row,) = cost["stages"]
    assert (row["stage"], row["calls"], row["input_tokens"], row["output_tokens"], row["approximate"]) == \
        ("answers", 800, 4500, 80_000, True)


def test_plan_cost_target_selection(tiny, prices):
    r = fairpair("plan", tiny, "--cost", "--target", "nope")
    assert r.exit_code == 2 and "nope" in r.output


def test_confirm_above_says_what_it_cannot_price(tiny, tmp_path):
    other = tmp_path / "other.yaml"
    other.write_text("currency: EUR\nconfirm_above: 1\nmodels:\n  someone-else: {live: {input: 1, output: 1}}\n",
                     encoding="utf-8")
    r = _run(_mock(tiny), tmp_path, "--prices", other)
    assert r.exit_code == 0, r.output
    assert "no live price in" in r.output and "m-1" in r.output


def test_prices_from_the_environment_do_not_need_cost(tiny, prices):
    r = fairpair("plan", tiny, env={"FAIRPAIR_PRICES": str(prices)})
    assert r.exit_code == 0, r.output
    r = fairpair("plan", tiny, "--cost", env={"FAIRPAIR_PRICES": str(prices)})
    assert r.exit_code == 0 and "live 0.81 EUR" in " ".join(r.output.split())


def test_the_cost_table_keeps_numbers_whole_at_80_columns(tiny, prices, tmp_path, monkeypatch):
    """At 80 columns the names fold and the numbers stay on one line; a total without any price reads
    'live: no price', never 'live no price EUR'."""
    from fairpair.cli._app import console

    monkeypatch.setattr(console, "_width", 80)
    r = fairpair("plan", tiny, "--cost", "--prices", prices)
    assert r.exit_code == 0, r.output
    table = r.output[r.output.index("cost before sending"):r.output.index("total:")]
    assert "80,000" in table and "~4,500" in table and "0.81" in table  # not "80,00" over "0"
    assert max(len(line) for line in table.splitlines()) <= 80
    other = tmp_path / "other.yaml"
    other.write_text("currency: EUR\nmodels:\n  someone-else: {live: {input: 1, output: 1}}\n", encoding="utf-8")
    r = fairpair("plan", tiny, "--cost", "--prices", other)
    out = " ".join(r.output.split())
    assert "live: no price, batch: no price" in out and "no price EUR" not in out


def test_a_persona_study_without_its_imported_scenes_says_import_scenes(tmp_path):
    """The persona study includes the battery `fairpair import-scenes` writes: when it is missing, the error
    says how to write it."""
    from pathlib import Path

    study = Path(__file__).parents[2] / "examples" / "persona_power" / "tan_lee_study.yaml"
    copy = tmp_path / study.name
    copy.write_text(study.read_text(encoding="utf-8"), encoding="utf-8")
    r = fairpair("plan", copy, "--cost")
    assert r.exit_code == 2
    out = " ".join(r.output.split())
    assert "included file not found" in out
    assert f"fairpair import-scenes SCENES.xlsx -o {tmp_path / 'tan_lee_scenes.yaml'}" in out

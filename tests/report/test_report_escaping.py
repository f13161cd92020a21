"""Hostile answers and labels render as inert text in HTML, Markdown, the terminal and JSON."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt
from markupsafe import escape

from fairpair.cli import main
from fairpair.report import write_report
from fairpair.report._text import clean, csv_cell, md_block, md_inline, terminal

from .conftest import HOSTILE_LABEL, PAYLOADS

EXTERNAL = re.compile(r"""(?:src|href|action|poster|srcset|xlink:href)\s*=\s*["']?\s*(?:https?:)?//""", re.I)


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text of <script>/<style> elements."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    handle_startendtag = handle_starttag


def tags_of(html: str) -> list[tuple[str, dict[str, str | None]]]:
    p = Tags()
    p.feed(html)
    return p.tags


def assert_inert(html: str) -> None:
    tags = tags_of(html)
    names = {t for t, _ in tags}
    assert "script" not in names and "iframe" not in names and "object" not in names
    for tag, attrs in tags:
        for k, v in attrs.items():
            assert not k.startswith("on"), (tag, k, v)
            if k in ("href", "src"):
                assert v is not None and (v.startswith("#") or v.startswith("data:image/svg+xml;base64,")), (tag, k, v)
    assert not EXTERNAL.search(html)
    assert "\x1b" not in html and "\x00" not in html and "\x9b" not in html


@pytest.fixture(scope="module")
def hostile_report(hostile_run, tmp_path_factory):
    """The report of the hostile run, quoting one matched set per template (so every payload)."""
    import shutil

    from fairpair.store import Store

    run = tmp_path_factory.mktemp("hostile_copy") / "run"
    shutil.copytree(hostile_run, run)
    res = json.loads((run / "results.json").read_text(encoding="utf-8"))
    comp = next(c for c in res["comparisons"] if c["verdict"] == "fail")
    with Store.open(run, create=False, readonly=True) as s:
        by_set: dict[str, dict[str, str]] = {}
        for case in s.iter_cases():
            if case.repetition == 0 and case.position == 0:
                by_set.setdefault(case.matched_set, {})[case.groups["origen"]] = case.id
    comp["evidence"] = [{"matched_set": m, "case_a": g["magreb"], "case_b": g["espana"], "value_a": None,
                         "value_b": None} for m, g in sorted(by_set.items())]
    assert len(comp["evidence"]) == len(PAYLOADS)
    (run / "results.json").write_text(json.dumps(res), encoding="utf-8")
    return write_report(run, out=run.parent / "report", evidence=len(PAYLOADS))


def test_the_hostile_run_fails_and_quotes_evidence(hostile_report):
    summary = json.loads(hostile_report["json"].read_text(encoding="utf-8"))
    assert summary["overall"] == "fail"
    html = hostile_report["html"].read_text(encoding="utf-8")
    assert 'id="evidence"' in html and html.count('class="answer"') >= 2
    assert "[MASK]" in html  # names are masked in the quoted answers


def test_html_escapes_every_payload(hostile_report):
    html = hostile_report["html"].read_text(encoding="utf-8")
    assert_inert(html)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert str(escape(HOSTILE_LABEL)) == "nombres árabes &lt;img src=x onerror=alert(&#39;label&#39;)&gt;"
    assert str(escape(HOSTILE_LABEL)) in html  # the label too
    assert 'content="default-src \'none\'; style-src \'unsafe-inline\'; img-src data:' in html
    assert "ROJO" in html and "pwned" not in html  # the colour codes and the OSC title are dropped whole


def test_markdown_cannot_produce_html_or_links(hostile_report):
    md = hostile_report["md"].read_text(encoding="utf-8")
    rendered = MarkdownIt("commonmark").render(md)  # raw HTML is allowed in this preset
    assert_inert(rendered)
    assert not any(t == "a" and not (a.get("href") or "").startswith("#") for t, a in tags_of(rendered))
    headings = re.findall(r"<h[1-6]>(.*?)</h[1-6]>", rendered)
    assert "titular" not in " ".join(headings)  # "# titular" inside an answer stays in its code block
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in rendered


def test_terminal_output_has_no_escape_sequences(hostile_run, copy_run, capsys):
    run = copy_run(hostile_run)
    main(["report", str(run), "--lang", "en"])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x00" not in out and "\x07" not in out
    assert "FAIL" in out


def test_clean_and_terminal_units():
    s = "a\x1b[1;31mb\x1b[0m\x1b]0;title\x07c\x00d\ud800e\x1b[2Jf\r\ng\u202eh\x1bPdcs\x1b\\i"
    assert clean(s) == "ab" + "c" + "d\ufffde" + "f\ng" + "h" + "i"
    assert terminal("x\ty\nz" + "w" * 50, limit=10) == "x y zwwww…"
    assert clean(b"ok \xff") == "ok \ufffd"


def test_markdown_units():
    assert md_inline("<b>x</b> *y* [l](javascript:z) | `c`", code=False) == (
        "&lt;b>x&lt;/b> \\*y\\* \\[l\\](javascript:z) \\| \\`c\\`")
    # fairpair's own code spans stay code spans (CommonMark reads nothing inside one)
    assert md_inline("<b>x</b> *y* [l](javascript:z) | `c`") == (
        "&lt;b>x&lt;/b> \\*y\\* \\[l\\](javascript:z) \\| `c`")
    assert md_inline("1. uno") == "1\\. uno" and md_inline("- dos") == "\\- dos"
    # numbers, comparisons and ampersands read as written: only what would open a list, a rule, a quote, a tag
    # or an entity is escaped
    for text in ("0.04", "12.5%", "-3.0", "p < 0.001", "A & B", "x -> y", "2 > 1"):
        assert md_inline(text) == text
    assert md_inline("---") == "\\---" and md_inline("> q") == "\\> q" and md_inline("1)") == "1\\)"
    assert md_inline("&amp; <!-- x --> <?php") == "&amp;amp; <\\!-- x --> &lt;?php"
    assert md_inline("<https://x.test>") == "&lt;https://x.test>"
    block = md_block("a ```` b")
    assert block.startswith("`````text\n") and block.endswith("\n`````")


@pytest.mark.parametrize("value,expected", [
    ("=1+1", "'=1+1"), ("+1", "'+1"), ("-1", "'-1"), ("@SUM(A1)", "'@SUM(A1)"), ("\t=1", "'\t=1"),
    ("\r=1", "'\n=1"), ("  =1", "'  =1"), ("hola", "hola"), ("a=b", "a=b"), (-3, -3), (2.5, 2.5), (None, None),
    ("nul\x00byte", "nulbyte"),
])
def test_csv_cell(value, expected):
    assert csv_cell(value) == expected


def test_evidence_is_masked(hostile_report):
    from .conftest import NAMES

    html = hostile_report["html"].read_text(encoding="utf-8")
    evidence = html[html.index('id="evidence"'):html.index('id="remedies"')]
    assert evidence.count("[MASK]") >= 2 * len(PAYLOADS)
    for names in NAMES.values():
        for n in names:
            assert n not in evidence


@pytest.mark.parametrize("args,text", [(["report", "{tmp}/nope"], "run directory not found"),
                                       (["report", "{run}", "--lang", "fr"], "unknown report language"),
                                       (["export", "{run}", "--format", "xlsx"], "unknown export format")])
def test_user_errors_exit_2(args, text, hostile_run, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main([a.format(tmp=tmp_path, run=hostile_run) for a in args])
    assert exc.value.code == 2 and text in capsys.readouterr().err



def test_p_below_a_thousandth_reads_p_less_than():
    """fmt_p gives "< 0.001"; the texts that say "p = {p}" then read "p < 0.001", not "p = < 0.001"."""
    from fairpair.analysis import reason_text
    from fairpair.records import Reason
    from fairpair.report._catalog import msg, p_reads

    assert p_reads("p = < 0.001") == "p < 0.001" and p_reads("p = 0.04") == "p = 0.04"
    from fairpair.report._catalog import fmt_p_is
    from fairpair.report._render import _env

    assert (fmt_p_is(0.0004, "en"), fmt_p_is(0.0412, "en"), fmt_p_is(0.0412, "es")) == (
        "p < 0.001", "p = 0.04", "p = 0,04")
    assert _env("md").from_string("{{ x|p_is }}; {{ y|p_is }}").render(x="< 0.001", y="0.04") == "p < 0.001; p = 0.04"
    assert "(binomial p < 0.001)" in msg("en", "judge.pb", first="60%", p="< 0.001", cons="90%", n=10)
    c = {"verdict": "inconclusive", "pvalue": 0.0001, "pvalue_adjusted": 0.0001, "correction": "none",
         "alpha": 0.05, "margin": None}
    assert reason_text(c, Reason.ADJUSTED_P_ZERO) == "not significant (p < 0.001 against zero; no margin was " \
        "pre-registered)"


def test_code_spans_units():
    """fairpair's texts quote commands and settings as `code`: one splitter, three ways to say it."""
    from fairpair.report._text import code_spans, html_prose, terminal_text

    assert code_spans("run `fairpair analyze r` then `x`.") == [
        ("run ", False), ("fairpair analyze r", True), (" then ", False), ("x", True), (".", False)]
    assert code_spans("") == [("", False)]
    assert code_spans("a ` b") == [("a ` b", False)]  # unpaired: plain text
    assert code_spans("`a|b`") == [("`a|b`", False)]  # a "|" would end a Markdown table cell
    assert str(html_prose("set `<b>&x</b>` & <i>")) == "set <code>&lt;b&gt;&amp;x&lt;/b&gt;</code> &amp; &lt;i&gt;"
    assert str(html_prose("plain <b>")) == "plain &lt;b&gt;"
    assert md_inline("Run `fairpair analyze a_b*` *now*") == "Run `fairpair analyze a_b*` \\*now\\*"
    assert md_inline("`x` first") == "`x` first" and md_inline("- `x`") == "\\- `x`"
    t = terminal_text("Run `fairpair analyze r`, then [bold]x[/bold]\x1b[31m")
    assert t.plain == "Run fairpair analyze r, then [bold]x[/bold]\\x1b[31m"
    assert [(t.plain[s.start:s.end], s.style) for s in t.spans] == [("fairpair analyze r", "bold")]


def test_code_spans_in_the_three_outputs(mock_run, copy_run, capsys):
    """The report's texts said `fairpair analyze RUN` with literal backticks in the terminal and the HTML
    report. Now: <code> in HTML, a code span in Markdown, bold without backticks in the terminal; the
    answers quoted as evidence keep their backticks as written."""
    import shlex
    import shutil

    run = copy_run(mock_run)
    for p in run.glob("results*"):
        shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink()
    main(["report", str(run), "--lang", "en"])
    q = shlex.quote(str(run))
    out = " ".join(capsys.readouterr().out.split())
    assert f"this report shows only what was collected. Run fairpair analyze {q} and then fairpair report {q}." \
        in out and "`" not in out
    html = (run / "report" / "report.html").read_text(encoding="utf-8")
    assert (f"Run <code>fairpair analyze {escape(q)}</code> and then <code>fairpair report {escape(q)}</code>."
            in html)
    assert "`" not in html.split("<body", 1)[1]
    md = (run / "report" / "report.md").read_text(encoding="utf-8")
    assert f"Run `fairpair analyze {q}` and then `fairpair report {q}`." in md
    rendered = MarkdownIt("commonmark").render(md)
    assert f"Run <code>fairpair analyze {escape(q)}</code> and then <code>fairpair report {escape(q)}</code>." \
        in rendered


def test_answers_keep_their_backticks(hostile_report):
    """Text shown as written (an answer in <pre>, the run's prompts) is never read for code spans."""
    html = hostile_report["html"].read_text(encoding="utf-8")
    assert "<pre>```\n# titular\n&lt;/pre&gt;&lt;script&gt;alert(4)&lt;/script&gt;\n````" in html
    from fairpair.report._render import _env

    page = "{{ a|verbatim }} / {{ b }}"
    assert _env("html").from_string(page).render(a="`x` <b>", b="`y` <b>") == "`x` &lt;b&gt; / <code>y</code> &lt;b&gt;"
    assert _env("md").from_string(page).render(a="`x` <b>", b="`y` <b>") == "\\`x\\` &lt;b> / `y` &lt;b>"

"""The report opens with the answer: on the first screen (1280 x 900 in headless Chromium) lie the
verdict counts, each failing comparison with its effect and interval, and the design note.

Driven by Playwright (PyPI ``playwright``) on Debian's ``chromium`` through ``executable_path``
(Playwright's own browser download is not used). Without a browser the test is skipped, except
under ``CI=true``, where a missing browser fails it (``.ci/run`` installs both).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fairpair.report import report_model, write_report
from fairpair.store import Run

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]

pytestmark = [pytest.mark.browser]


def _browser():
    """Playwright's sync API and the chromium path; skip (fail under CI=true) when either is missing."""
    missing = []
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
        missing.append("the playwright package (pip install playwright)")
    if not CHROMIUM.exists():
        missing.append(f"Debian's chromium ({CHROMIUM}: apt-get install -y chromium)")
    if missing:
        why = "needs " + " and ".join(missing)
        if os.environ.get("CI") == "true":
            pytest.fail(why + " (CI=true: a missing browser fails the test)")
        pytest.skip(why)
    return sync_playwright


def _boxes(html: Path) -> dict[str, dict]:
    """The bounding boxes (document coordinates, CSS px) of the first-screen elements and of each
    failing row's effect and interval cells, at 1280 x 900."""
    sync_playwright = _browser()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(html.as_uri())
            out = page.evaluate("""() => {
                const box = el => { const r = el.getBoundingClientRect();
                                    return {top: r.top + scrollY, bottom: r.bottom + scrollY, text: el.textContent}; };
                const one = sel => { const el = document.querySelector(sel); return el ? box(el) : null; };
                const rows = [...document.querySelectorAll('#failing tbody tr')].map(tr => {
                    const td = tr.querySelectorAll('td');
                    return {label: box(td[0]), effect: box(td[2]), interval: box(td[3])}; });
                return {counts: one('#verdict-counts'), design: one('#design-note'), rows: rows,
                        warnings: one('#warnings'), verdicts: one('#verdicts'),
                        n_warn_boxes: document.querySelectorAll('.warn').length};
            }""")
        finally:
            browser.close()
    return out


def test_first_screen_holds_the_answer(mock_run, tmp_path):
    with Run.open(mock_run, lenient_text=True) as run:
        model = report_model(run, language="en")
    failing = [r for r in model.rows if r.verdict == "fail"]
    assert failing and any(r.measure == "reembolso" and r.group_a == "magreb" for r in failing)
    html = write_report(mock_run, model=model, out=tmp_path / "report")["html"]
    b = _boxes(html)
    n_fail = sum(r.verdict == "fail" for r in model.rows)
    n_pass = sum(r.verdict == "pass" for r in model.rows)
    assert b["counts"]["text"].startswith(f"{n_fail} fail, {n_pass} pass, ")
    assert b["counts"]["bottom"] <= 900
    assert b["design"]["text"].startswith("Design: 6 template(s), names fixed") and b["design"]["bottom"] <= 900
    assert len(b["rows"]) == len(failing)
    for row, r in zip(b["rows"], failing, strict=True):
        assert row["label"]["text"] == r.label
        assert row["effect"]["text"] == r.estimate and row["interval"]["text"] == r.ci
        assert row["effect"]["bottom"] <= 900 and row["interval"]["bottom"] <= 900
    # the rest comes below the answer, and the warnings sit in one box
    assert b["verdicts"]["top"] > b["counts"]["bottom"]
    assert b["n_warn_boxes"] <= 1


def test_a_missing_browser_fails_under_ci(monkeypatch):
    """CI=true: no skip for a missing browser (a test that never runs would pass CI silently)."""
    import tests.report.test_first_screen as mod

    monkeypatch.setattr(mod, "CHROMIUM", Path("/nonexistent/chromium"))
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true: a missing browser fails the test"):
        mod._browser()
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="needs Debian's chromium"):
        mod._browser()
